"""The densim side of the peer benchmark: the PlanetLab day on HOSTS x 32-core hosts, VMS x 2-vCPU VMs.

Usage: python benchmarks/peers/densim_side.py TRACE_DIR HOSTS VMS [HOURS]; prints one JSON line.
The workload is the one PlanetLabPeer.java gives CloudSim Plus (see run.py).
"""

from __future__ import annotations

import json
import sys
import time


def scenario_mapping(trace_dir: str, hosts: int, vms: int, hours: float = 24.0) -> dict:
    return {
        "name": f"peer-planetlab-{hosts}h-{vms}v",
        "cluster": {
            "hosts": [
                {
                    "name": "pm",
                    "count": hosts,
                    "cpu": {"sockets": 1, "cores_per_socket": 32, "base_clock": "1000 MHz"},
                    "memory": "128 GiB",
                    "power": {"model": "linear", "idle": "100 W", "peak": "250 W"},
                }
            ],
            "unused_hosts": "idle",  # CloudSim Plus hosts are active (idle power) without VMs
        },
        "vms": [
            {
                "name": "pl",
                "count": vms,
                "vcpus": 2,
                "vcpu_speed": "1000 MHz",
                "memory": "2 GiB",
                "trace": {"format": "planetlab", "path": trace_dir, "assign": "cycle"},
            }
        ],
        "placement": {"policy": "first-fit"},
        "simulation": {"step": "300 s", "horizon": f"{hours} h", "seed": 42},
        "output": {"vm_timeseries": "off", "host_timeseries": "off"},
    }


def main() -> None:
    import atexit
    import gc

    atexit.register(gc.freeze)  # as the densim CLI does (cli/main.py): no final collection over the run's objects
    trace_dir, hosts, vms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    hours = float(sys.argv[4]) if len(sys.argv) > 4 else 24.0
    t0 = time.perf_counter()
    from densim.engine import simulate
    from densim.plant import resolve
    from densim.spec.loader import scenario_from_dict

    t_import = time.perf_counter()
    sc = scenario_from_dict(scenario_mapping(trace_dir, hosts, vms, hours), source="peer")
    res = simulate(resolve(sc), seed=42)
    summary = res.summary
    t_end = time.perf_counter()
    print(
        json.dumps(
            {
                "simulator": "densim",
                "hosts": hosts,
                "vms": vms,
                "placed_vms": summary["vms_placed"],
                "hosts_with_vms": summary["hosts_used"],
                "import_s": round(t_import - t0, 3),
                "setup_s": round(res.timings.get("build_s", 0.0) + res.timings.get("placement_s", 0.0), 3),
                "run_s": round(res.timings.get("engine_s", 0.0), 3),
                "wall_s": round(t_end - t_import, 3),
                "energy_kwh": summary["totals"]["energy_kwh"],
                "vm_steps": vms * res.ctx.grid.n_steps,
            }
        )
    )


if __name__ == "__main__":
    main()
