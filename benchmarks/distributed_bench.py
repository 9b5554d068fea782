"""One run over a local Dask cluster against the same run in one process (densim.tools.distributed).

    python benchmarks/distributed_bench.py [--vms 200000] [--hosts 12500] [--days 7] [--workers 2] [--repeat 3]
    python benchmarks/distributed_bench.py --planetlab 100000      # the ladder's 100k rung instead
    python benchmarks/distributed_bench.py --stages --workers-list 1,2,4,8   # issue 34: the stages on

``--stages`` (issue 34) turns on the stages a split run accepts (VMs arriving and leaving with
log-normal lifetimes, a host failure with HA restarts, memory, virtualization, carbon), runs the
scenario once in one process (one thread) and then over a fresh local cluster of each worker count
in ``--workers-list`` (one part per worker), and reports per configuration the wall, the per-worker
work (VM-steps, host-steps, compute seconds) and bytes moved (pickled tasks in, pickled part
results out), the speed-up over one process, and whether the summary is the one process's. It then
fits the scaling model of docs/background/split-runs.md from the 1- and 2-worker points and
prints its prediction for the others next to the measurement.

The default workload is a synthetic one whose demand every part computes for its own VMs only
(a diurnal profile with per-(VM, step) noise: 200,000 VMs x 2,016 five-minute steps = 403 million
VM-steps), so the work divides between workers; the PlanetLab rung shows the fixed costs instead
(its engine part takes a few tens of milliseconds). Prints one JSON line per configuration:

* ``single_1t`` / ``single_2t``: one process, the CPU kernel on 1 / 2 threads (after a warm-up run);
* ``dask``: ``workers`` single-threaded worker processes of one local cluster, the wall time from
  planning to the merged result on warm workers (``compute_s`` is the part of it between submitting
  and the last part back; starting the cluster, ``cluster_s``, and the first run on fresh workers,
  which import densim and load the kernels, are reported apart), per part its hosts, VMs,
  VM-steps, time, and the bytes sent to it (the pickled plan) and back (its sums and series);
* every result's energy and whether the summary is identical to the single process's.

Medians over ``--repeat`` runs; the load average is printed with every line (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def scenario(args):
    from densim.plant import resolve
    from densim.spec.loader import load_mapping, scenario_from_dict

    if args.planetlab:
        ex = REPO / "examples" / "planetlab.yaml"
        d = load_mapping(ex)
        d["cluster"]["hosts"][0]["count"] = args.planetlab // 10
        d["vms"][0]["count"] = args.planetlab
        d["output"] = {"vm_timeseries": "off", "host_timeseries": "off"}
        return resolve(scenario_from_dict(d, source=ex, base_dir=ex.parent))
    d = {
        "name": f"dask-bench-{args.vms}x{args.days}d",
        "cluster": {"hosts": [{"name": "pm", "count": args.hosts, "cpu": {"cores_per_socket": 32, "base_clock": "1000 MHz"},
                               "memory": "128 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "250 W"}}]},
        "vms": [{"name": "web", "count": args.vms, "vcpus": 2, "vcpu_speed": "1000 MHz", "memory": "2 GiB",
                 "profile": {"kind": "diurnal", "mean": 0.3, "amplitude": 0.2, "noise": 0.2}}],
        "placement": {"policy": "first-fit"},
        "simulation": {"step": "5 min", "horizon": f"{args.days * 24} h", "seed": 7},
        "output": {"vm_timeseries": "off", "host_timeseries": "off"},
    }
    return resolve(scenario_from_dict(d, source="distributed_bench"))


def stages_scenario(args):
    """The synthetic run with every stage issue 34 names on: lifetimes, failures, memory, virtualization, carbon."""
    from densim.plant import resolve
    from densim.spec.loader import scenario_from_dict

    d = {
        "name": f"dask-stages-{args.vms}x{args.days}d",
        "cluster": {"hosts": [{"name": "pm", "count": args.hosts, "cpu": {"cores_per_socket": 32, "base_clock": "2000 MHz"},
                               "memory": "256 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "250 W"}}]},
        "vms": [{"name": "web", "count": args.vms, "vcpus": 2, "vcpu_speed": "2000 MHz", "memory": "8 GiB",
                 "profile": {"kind": "diurnal", "mean": 0.3, "amplitude": 0.2, "noise": 0.2},
                 "arrivals": {"over": f"{args.days * 12} h", "lifetime": f"{args.days * 8} h", "lifetime_sigma": 0.5}}],
        "placement": {"policy": "first-fit", "memory_overcommit": 1.5},
        "simulation": {"step": "5 min", "horizon": f"{args.days * 24} h", "seed": 7},
        "memory": {"model": "vsphere-like"},
        "virtualization": {"model": "kvm", "hypervisor": {"paging": "ept"}},
        "carbon": {"grid_gco2_per_kwh": 250},
        "failures": {"events": [{"time": f"{args.days * 6} h", "target": "pm-0", "duration": "2 h"},
                                {"time": f"{args.days * 15} h", "target": f"pm-{args.hosts // 2}", "duration": "4 h"}]},
        "output": {"vm_timeseries": "off", "host_timeseries": "off"},
    }
    return resolve(scenario_from_dict(d, source="distributed_bench --stages"))


def _canon(summary) -> str:
    d = dict(summary.to_dict() if hasattr(summary, "to_dict") else summary)
    d.pop("partition", None)
    return json.dumps(d, sort_keys=True, default=str)


def fit_model(points: dict[int, dict], cores: int) -> dict:
    """The scaling model T(p) = D + (W0 + r p) / min(p, C) + o p (docs/background/split-runs.md) from the
    1- and 2-worker points: D the driver's plan and merge, W0 + r p the parts' CPU seconds (r: what
    each part repeats, rebuilding the run's tables), o the rest per task (scheduling, shipping the
    plan and the result, unpickling), C the cores the workers share (here the machine's)."""
    p1, p2 = points[1], points[2]
    D = (p1["driver_s"] + p2["driver_s"]) / 2
    r = p2["part_cpu_s"] - p1["part_cpu_s"]  # CPU seconds, not the parts' walls (those include waiting for a core)
    W0 = p1["part_cpu_s"] - r
    o1 = p1["wall_s"] - D - (W0 + r) / min(1, cores)
    o2 = (p2["wall_s"] - D - (W0 + 2 * r) / min(2, cores)) / 2
    return {"D_s": D, "W0_s": W0, "r_s": r, "o_s": (o1 + o2) / 2, "C": cores}


def predict(m: dict, p: int, cores: int | None = None) -> float:
    c = m["C"] if cores is None else cores
    return m["D_s"] + (m["W0_s"] + m["r_s"] * p) / min(p, c) + m["o_s"] * p


def bench_stages(args) -> None:
    from distributed import LocalCluster

    from densim.tools.distributed import LOCAL_DASHBOARD

    from densim._jit import set_threads
    from densim.engine import simulate
    from densim.tools.distributed import simulate_distributed

    plant = stages_scenario(args)
    set_threads(1)
    simulate(plant)  # warm-up: kernels loaded
    walls, loads = [], []
    for _ in range(args.repeat):
        loads.append(load())
        t0 = time.perf_counter()
        one = simulate(plant)
        walls.append(time.perf_counter() - t0)
    set_threads(None)
    ref = _canon(one.summary)
    T1 = statistics.median(walls)
    print(json.dumps({"config": "one_process_1t", "vms": one.summary["vms_total"], "rows": one.ctx.vms.n,
                      "hosts": one.ctx.hosts.n, "steps": one.ctx.grid.n_steps, "stages": one.summary["models"]["stages"],
                      "restarts": one.summary["failures"]["restarts"], "wall_s": round(T1, 3),
                      "walls_s": [round(w, 3) for w in walls], "engine_s": round(one.timings.get("engine_s", 0.0), 3),
                      "energy_kwh": round(one.summary["totals"]["energy_kwh"], 3), "load_avg": loads,
                      "uptime": os.popen("uptime").read().strip()}), flush=True)
    points: dict[int, dict] = {}
    for p in [int(x) for x in args.workers_list.split(",")]:
        t0 = time.perf_counter()
        cluster = LocalCluster(n_workers=p, threads_per_worker=1, processes=True, dashboard_address=LOCAL_DASHBOARD)
        cluster_s = time.perf_counter() - t0
        runs, loads = [], []
        try:
            t0 = time.perf_counter()
            simulate_distributed(plant, scheduler=cluster.scheduler_address, parts=p)  # warm-up: imports, kernels
            first_s = time.perf_counter() - t0
            for _ in range(args.repeat):
                loads.append(load())
                t0 = time.perf_counter()
                res, info = simulate_distributed(plant, scheduler=cluster.scheduler_address, parts=p)
                runs.append((time.perf_counter() - t0 - info.cluster_s, res, info))
        finally:
            cluster.close()
        runs.sort(key=lambda x: x[0])
        wall, res, info = runs[len(runs) // 2]
        d = info.as_dict()
        part_compute = sum(x.part_s for x in info.parts)
        part_cpu = sum(x.cpu_s for x in info.parts)
        points[p] = {"wall_s": wall, "driver_s": info.plan_s + info.merge_s, "part_cpu_s": part_cpu}
        print(json.dumps({"config": f"dask_{p}w", "workers": info.workers, "parts": d["parts"],
                          "wall_s_without_cluster_start": round(wall, 3), "walls_s": sorted(round(w, 3) for w, _, _ in runs),
                          "speedup_vs_one_process": round(T1 / wall, 3), "compute_s": round(info.compute_s, 3),
                          "plan_s": round(info.plan_s, 3), "merge_s": round(info.merge_s, 3), "cluster_s": round(cluster_s, 3),
                          "first_run_on_fresh_workers_s": round(first_s, 3), "parts_compute_s": round(part_compute, 3),
                          "parts_cpu_s": round(part_cpu, 3),
                          "bytes_in": d["bytes_in"], "bytes_out": d["bytes_out"],
                          "by_worker": {w: {k: (round(v, 3) if isinstance(v, float) else v) for k, v in x.items()}
                                        for w, x in d["by_worker"].items()},
                          "energy_kwh": round(res.summary["totals"]["energy_kwh"], 3),
                          "identical_to_one_process": _canon(res.summary) == ref, "load_avg": loads,
                          "uptime": os.popen("uptime").read().strip()}), flush=True)
    if 1 in points and 2 in points:
        cores = os.cpu_count() or 1
        m = fit_model(points, cores)
        print(json.dumps({"config": "model", **{k: round(v, 4) if isinstance(v, float) else v for k, v in m.items()},
                          "predicted_vs_measured": {p: {"predicted_s": round(predict(m, p), 3), "measured_s": round(x["wall_s"], 3),
                                                        "error_pct": round(100 * (x["wall_s"] / predict(m, p) - 1), 1),
                                                        "one_core_per_worker_s": round(predict(m, p, cores=p), 3)}
                                                    for p, x in sorted(points.items())}}), flush=True)


def load() -> float:
    return round(os.getloadavg()[0], 2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vms", type=int, default=200_000)
    ap.add_argument("--hosts", type=int, default=12_500)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--planetlab", type=int, default=0, help="VMs of the PlanetLab ladder rung instead of the synthetic run")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--parts", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--stages", action="store_true", help="issue 34: lifetimes, failures, memory, virtualization, carbon on")
    ap.add_argument("--workers-list", default="1,2,4,8", help="with --stages: worker counts, one local cluster each")
    args = ap.parse_args()
    if args.stages:
        bench_stages(args)
        return

    from densim._jit import set_threads
    from densim.engine import simulate
    from densim.tools.distributed import simulate_distributed

    plant = scenario(args)
    simulate(plant)  # warm-up: kernels loaded, trace files in the page cache
    ref = None
    for threads in (1, 2):
        set_threads(threads)
        walls, loads = [], []
        for _ in range(args.repeat):
            loads.append(load())
            t0 = time.perf_counter()
            res = simulate(plant)
            walls.append(time.perf_counter() - t0)
        ref = ref or json.dumps(res.summary, sort_keys=True, default=str)
        vm_steps = res.ctx.vms.n * res.ctx.grid.n_steps
        print(json.dumps({"config": f"single_{threads}t", "vms": res.ctx.vms.n, "steps": res.ctx.grid.n_steps, "vm_steps": vm_steps,
                          "wall_s": round(statistics.median(walls), 3), "walls_s": [round(w, 3) for w in walls],
                          "engine_s": round(res.timings["engine_s"], 3), "build_s": round(res.timings["build_s"], 3),
                          "energy_kwh": round(res.summary["totals"]["energy_kwh"], 3), "load_avg": loads}), flush=True)
    set_threads(None)
    from distributed import LocalCluster

    from densim.tools.distributed import LOCAL_DASHBOARD

    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=LOCAL_DASHBOARD)
    cluster_s = time.perf_counter() - t0
    walls, computes, loads, infos = [], [], [], []
    try:
        t0 = time.perf_counter()
        simulate_distributed(plant, scheduler=cluster.scheduler_address, parts=args.parts)  # warm-up: imports, kernels on the workers
        first_s = time.perf_counter() - t0
        for _ in range(args.repeat):
            loads.append(load())
            t0 = time.perf_counter()
            res, info = simulate_distributed(plant, scheduler=cluster.scheduler_address, parts=args.parts)
            walls.append(time.perf_counter() - t0 - info.cluster_s)
            computes.append(info.compute_s)
            infos.append(info)
    finally:
        cluster.close()
    info = infos[len(infos) // 2]
    info.cluster_s = cluster_s
    d = info.as_dict()
    print(json.dumps({"config": "dask", "workers": info.workers, "parts": len(info.parts),
                      "wall_s_without_cluster_start": round(statistics.median(walls), 3), "walls_s": [round(w, 3) for w in walls],
                      "compute_s": round(statistics.median(computes), 3), "cluster_s": round(info.cluster_s, 3),
                      "first_run_on_fresh_workers_s": round(first_s, 3),
                      "plan_s": round(info.plan_s, 3), "merge_s": round(info.merge_s, 3),
                      "bytes_in": d["bytes_in"], "bytes_out": d["bytes_out"],
                      "parts_detail": [{"hosts": p.hosts, "vms": p.vms, "vm_steps": p.vm_steps, "part_s": round(p.part_s, 3),
                                        "engine_s": round(p.engine_s, 3), "bytes_in": p.bytes_in, "bytes_out": p.bytes_out,
                                        "worker": p.worker} for p in info.parts],
                      "energy_kwh": round(res.summary["totals"]["energy_kwh"], 3),
                      "identical_to_single": json.dumps(res.summary, sort_keys=True, default=str) == ref, "load_avg": loads}), flush=True)


if __name__ == "__main__":
    main()
