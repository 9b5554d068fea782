"""One run over a local Dask cluster against the same run in one process (densim.tools.distributed).

    python benchmarks/distributed_bench.py [--vms 200000] [--hosts 12500] [--days 7] [--workers 2] [--repeat 3]
    python benchmarks/distributed_bench.py --planetlab 100000      # the ladder's 100k rung instead

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
    args = ap.parse_args()

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

    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None)
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
