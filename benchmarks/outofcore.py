"""Out-of-core run: 1,000,000 VMs x 2,016 five-minute steps (one week) streamed through the engine.

The trace is synthetic (:mod:`densim.workloads.synthetic_trace`): 2.0 billion VM-steps, 8 GB as
float32, never held in memory. The engine takes it ``--chunk-steps`` steps at a time (all VMs);
the generator fills each window VM block by VM block (``--vm-block``). Peak memory is bounded by
the chunk, not by the trace: roughly 10 float32 arrays of chunk_steps x VMs plus per-VM totals.

    PYTHONPATH=src python benchmarks/outofcore.py                      # the full 1M x 2,016 run
    PYTHONPATH=src python benchmarks/outofcore.py --vms 100000 --steps 288   # a quick one

Prints one JSON line: wall time, VM-steps/s, peak RSS, energy and utilisation.
Hosts: 32 cores at 1,000 MHz, 128 GiB, linear 100-250 W (the peer benchmark's hosts); VMs: 2 vCPUs
at 1,000 MHz, 2 GiB; first-fit; enough hosts for 16 VMs each plus 4 % spare.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import time


def main() -> None:
    ap = argparse.ArgumentParser(description="densim out-of-core benchmark")
    ap.add_argument("--vms", type=int, default=1_000_000)
    ap.add_argument("--steps", type=int, default=2016)
    ap.add_argument("--hosts", type=int, default=None, help="default: ceil(VMs / 16 x 1.04)")
    ap.add_argument("--chunk-steps", type=int, default=24, help="engine time chunk (steps x all VMs)")
    ap.add_argument("--vm-block", type=int, default=131072, help="generator VM block inside a chunk")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--overcommit", type=float, default=1.0)
    args = ap.parse_args()

    t0 = time.perf_counter()
    from densim.engine import simulate
    from densim.spec.loader import scenario_from_dict
    from densim.plant import resolve
    from densim.workloads.synthetic_trace import SyntheticTrace, SyntheticTraceSpec

    hosts = args.hosts or math.ceil(args.vms / 16 * 1.04)
    spec = SyntheticTraceSpec(n_vms=args.vms, n_steps=args.steps, step_s=300.0, seed=args.seed)
    trace = SyntheticTrace(spec, vm_block=args.vm_block)
    sc = scenario_from_dict({
        "name": f"outofcore-{args.vms}x{args.steps}",
        "cluster": {"hosts": [{"name": "pm", "count": hosts, "cpu": {"cores_per_socket": 32, "base_clock": "1000 MHz"},
                               "memory": "128 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "250 W"}}]},
        "vms": [{"name": "placeholder", "count": 1, "vcpus": 2, "memory": "2 GiB", "profile": {"mean": 0.1}}],
        "placement": {"policy": "first-fit", "cpu_overcommit": args.overcommit},
        "simulation": {"step": "300 s", "horizon": args.steps * 300.0, "chunk_steps": args.chunk_steps, "seed": args.seed},
        "output": {"vm_timeseries": "off", "host_timeseries": "off"},
    }, source="outofcore")
    t_setup = time.perf_counter()
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.perf_counter()
        if now - last[0] > 30 or done == total:
            last[0] = now
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
            print(f"  step {done}/{total}  {now - t_setup:.0f} s  peak RSS {rss:.2f} GiB", file=sys.stderr, flush=True)

    res = simulate(resolve(sc), source=trace, progress=progress)
    s = res.summary
    t_end = time.perf_counter()
    vm_steps = args.vms * args.steps
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # bytes (ru_maxrss is KiB)
    print(json.dumps({
        "benchmark": "outofcore",
        "vms": args.vms,
        "steps": args.steps,
        "hosts": hosts,
        "vm_steps": vm_steps,
        "trace_gb_float32": round(vm_steps * 4 / 1e9, 2),
        "chunk_steps": args.chunk_steps,
        "vm_block": args.vm_block,
        "wall_s": round(t_end - t0, 1),
        "engine_s": round(res.timings.get("engine_s", float("nan")), 1),
        "vm_steps_per_s": round(vm_steps / (t_end - t_setup)),
        "peak_rss_gib": round(peak / 1024**3, 3),
        "under_8_gib": peak < 8 * 1024**3,
        "vms_placed": s["vms_placed"],
        "hosts_used": s["hosts_used"],
        "energy_kwh": round(s["totals"]["energy_kwh"], 1),
        "mean_vm_utilisation": round(s["totals"]["cpu_demand_mhz_s"] / (vm_steps * 300.0 * 2000.0), 4),
        "expected_mean_vm_utilisation": round(spec.expected_mean, 4),
    }), flush=True)


if __name__ == "__main__":
    main()
