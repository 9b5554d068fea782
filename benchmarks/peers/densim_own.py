"""The densim side of CloudSim Plus's own benchmarks (see CloudSimPlusOwnBenchmarks.java for the peer's side).

Usage: python benchmarks/peers/densim_own.py pr341|perfpage SCALE; prints one JSON line.
SCALE 1.0 is the published size (pr341: 50,000 hosts / 100,000 VMs / 100,000 cloudlets; perfpage: 20,000 hosts /
40,000 VMs / 50,000 cloudlets); a smaller SCALE shrinks every count by that factor.

How CloudSim Plus's set-up maps onto densim's terms (1 MIPS of a CloudSim Plus PE = 1 MHz of a core here, MB = MiB):

* pr341 (CloudSim Plus PR #341's PerformanceExample): hosts of 64 cores at 1,000 MHz with 2,048 MiB; VMs of 4 vCPUs
  at 1,000 MHz with 512 MiB; one cloudlet per VM of 1e10 MI on 2 PEs with UtilizationModelFull, i.e. 2 of the VM's
  4 vCPUs busy all the time: a constant profile of 0.5. densim's tasks run for a given time (OpenDC's semantics),
  not until a given work is done, so each VM lives the time the cloudlet needs at that rate when nothing contends
  for the host: 1e10 MI / 1,000 MIPS per PE = 1e7 s. Whether that holds is checked, not assumed: densim's CPU Ready
  must be 0 and its delivered CPU must equal the cloudlets' 2e10 MI each (run.py compares both). The VMs arrive in
  the first 0.1 s (CloudSim Plus starts them at 0.1 s); the step is CloudSim Plus's 1 h scheduling interval.
* perfpage (docs/performance.md, scenario6.yml of cloud-simulation-comparison): hosts of 8 cores at 50,000 MHz with
  1,000,000 MiB; VMs of 4 vCPUs at 1,000 MHz with 2,000 MiB. 50,000 cloudlets of 10,000 MI on 2 PEs go to the
  40,000 VMs cyclically, so VMs 0..9,999 run two (all 4 vCPUs) and the rest one (2 vCPUs); CPU utilisation is
  UtilizationModelStochastic, uniform on [0, 1) per cloudlet and sample: densim's random profile with mean = noise =
  0.5 (two cloudlets) or 0.25 (one), uniform per VM and 1 s step. A cloudlet needs 10,000 MI per PE at
  1,000 x u MIPS, E[u] = 0.5: 20 s expected, the tasks' run time here. CloudSim Plus's time-shared VM scheduler
  admits VMs up to the host's MIPS (400,000 / 4,000 = 100 VMs = 400 vCPUs on 8 cores), hence cpu_overcommit 50.

Mode ``static`` (third argument; pr341 only): the same hosts, VMs, work and simulated time, but the VMs are present
for the whole run (``scheduling.lifetimes: off``, horizon 1e7 s) instead of being tasks that arrive and leave, so
densim's plain engine path runs it. A cloudlet counts as finished when its VM's delivered CPU reaches the cloudlet's
work (1e10 MI x 2 PEs); the simulated end is then the run's horizon, an input, not a result.

Energy (both sides, neither peer scenario has a power model): every host on for the whole run at a linear
100 W idle to 250 W peak in its CPU utilisation.
"""

from __future__ import annotations

import json
import sys
import time

SCENARIOS = {"pr341": (50_000, 100_000, 100_000), "perfpage": (20_000, 40_000, 50_000)}
POWER = {"model": "linear", "idle": "100 W", "peak": "250 W"}


def counts(name: str, scale: float) -> tuple[int, int, int]:
    """(hosts, VMs, cloudlets) at ``scale`` of the published size (the Java side gets the same numbers)."""
    if name not in SCENARIOS:
        raise SystemExit(f"unknown scenario {name!r}: one of {', '.join(SCENARIOS)}")
    if not 0 < scale <= 1:
        raise SystemExit(f"scale {scale} must be in (0, 1]")
    h, v, c = SCENARIOS[name]
    return max(1, round(h * scale)), max(1, round(v * scale)), max(1, round(c * scale))


def scenario_mapping(name: str, scale: float, mode: str = "tasks") -> dict:
    if mode not in ("tasks", "static") or (mode == "static" and name != "pr341"):
        raise SystemExit(f"mode {mode!r}: 'tasks', or 'static' for pr341")
    hosts, vms, cloudlets = counts(name, scale)
    common = {
        "placement": {"policy": "first-fit"},
        "output": {"vm_timeseries": "off", "host_timeseries": "off"},
        "scheduling": {"lifetimes": "on", "queue": "fifo", "idle_hosts": "on"},
    }
    if name == "pr341" and mode == "static":
        return {
            "name": f"peer-cloudsimplus-pr341-static-{hosts}h-{vms}v",
            "cluster": {"hosts": [{"name": "pm", "count": hosts, "memory": "2048 MiB", "power": POWER,
                                   "cpu": {"sockets": 1, "cores_per_socket": 64, "base_clock": "1000 MHz"}}]},
            "vms": [{"name": "vm", "count": vms, "vcpus": 4, "vcpu_speed": "1000 MHz", "memory": "512 MiB",
                     "profile": {"kind": "constant", "mean": 0.5}}],
            # 2,778 steps of 3,599.71 s (CloudSim Plus's 1 h interval, shortened by 0.3 s so the steps end at 1e7 s)
            "simulation": {"step": f"{1e7 / 2778!r} s", "horizon": "1e7 s", "seed": 42},
            "placement": common["placement"],
            "output": common["output"],
            "scheduling": {"lifetimes": "off"},
        }
    if name == "pr341":
        return {
            "name": f"peer-cloudsimplus-pr341-{hosts}h-{vms}v",
            "cluster": {"hosts": [{"name": "pm", "count": hosts, "memory": "2048 MiB", "power": POWER,
                                   "cpu": {"sockets": 1, "cores_per_socket": 64, "base_clock": "1000 MHz"}}]},
            "vms": [{"name": "vm", "count": vms, "vcpus": 4, "vcpu_speed": "1000 MHz", "memory": "512 MiB",
                     "profile": {"kind": "constant", "mean": 0.5},
                     "arrivals": {"over": "0.1 s", "lifetime": "1e7 s", "lifetime_sigma": 0.0}}],
            "simulation": {"step": "3600 s", "seed": 42},
            **common,
        }
    two = cloudlets - vms if cloudlets > vms else 0  # VMs 0..two-1 run two cloudlets (cyclic mapping)
    groups = []
    if two:
        groups.append({"name": "two-cloudlets", "count": two, "vcpus": 4, "vcpu_speed": "1000 MHz", "memory": "2000 MiB",
                       "profile": {"kind": "random", "mean": 0.5, "noise": 0.5},
                       "arrivals": {"over": "0.1 s", "lifetime": "20 s", "lifetime_sigma": 0.0}})
    groups.append({"name": "one-cloudlet", "count": vms - two, "vcpus": 4, "vcpu_speed": "1000 MHz", "memory": "2000 MiB",
                   "profile": {"kind": "random", "mean": 0.25, "noise": 0.25},
                   "arrivals": {"over": "0.1 s", "lifetime": "20 s", "lifetime_sigma": 0.0}})
    common["placement"] = {"policy": "first-fit", "cpu_overcommit": 50.0}
    return {
        "name": f"peer-cloudsimplus-perfpage-{hosts}h-{vms}v",
        "cluster": {"hosts": [{"name": "pm", "count": hosts, "memory": "1000000 MiB", "power": POWER,
                               "cpu": {"sockets": 1, "cores_per_socket": 8, "base_clock": "50000 MHz"}}]},
        "vms": groups,
        "simulation": {"step": "1 s", "seed": 42},
        **common,
    }


def main() -> None:
    import atexit
    import gc

    atexit.register(gc.freeze)  # as the densim CLI does (cli/main.py)
    name, scale = sys.argv[1], float(sys.argv[2])
    mode = sys.argv[3] if len(sys.argv) > 3 else "tasks"
    hosts, vms, cloudlets = counts(name, scale)
    t0 = time.perf_counter()
    from densim.engine import simulate
    from densim.plant import resolve
    from densim.spec.loader import scenario_from_dict

    t_import = time.perf_counter()
    sc = scenario_from_dict(scenario_mapping(name, scale, mode), source="peer")
    res = simulate(resolve(sc), seed=42)
    s = res.summary
    grid = res.ctx.grid
    if mode == "static":  # a VM's cloudlet is done when the VM has delivered its 1e10 MI x 2 PEs
        delivered = res.vm_acc.sum["cpu_delivered_mhz"] * grid.step_s
        sched = {"completed": int((delivered >= 2e10 * (1 - 1e-9)).sum()), "simulated_end_s": grid.n_steps * grid.step_s}
    else:
        sched = s["scheduling"]
    t_end = time.perf_counter()
    tot = s["totals"]
    print(json.dumps({
        "simulator": "densim",
        "scenario": name,
        "mode": mode,
        "hosts": hosts,
        "vms": vms,
        "cloudlets": cloudlets,
        "vms_placed": s["vms_placed"],
        "hosts_used": s["hosts_used"],
        "tasks_completed": sched["completed"],
        "simulated_end_s": sched["simulated_end_s"],
        "delivered_mhz_s": tot["cpu_delivered_mhz_s"],
        "cpu_ready_s": tot["cpu_ready_s"],
        "energy_kwh": tot["energy_kwh"],
        "steps": grid.n_steps,
        "grid_end_s": grid.n_steps * grid.step_s,
        "import_s": round(t_import - t0, 3),
        "run_s": round(res.timings.get("engine_s", 0.0), 3),
        "wall_s": round(t_end - t_import, 3),
    }))


if __name__ == "__main__":
    main()
