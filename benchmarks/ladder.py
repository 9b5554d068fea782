"""Benchmark ladder: the PlanetLab day (288 steps of 300 s) replicated to 1k, 10k and 100k VMs.

Each rung runs in a fresh process (so peak RSS is the rung's own) and prints one JSON line:
``vms, hosts, steps, wall_s, peak_rss_gib, vm_steps_per_s`` plus a breakdown. ``wall_s`` covers
loading the scenario, reading the 1,052 trace files, placement and the engine; module imports and
loading numba's cached placement kernel are process start-up and reported apart (``startup_s``).
Writing results is reported apart too (``write_s``).

    python benchmarks/ladder.py [--rungs 1000,10000,100000] [--section 'memory={"model": "vsphere-like"}'] [--overcommit 1.5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "planetlab.yaml"


def rung(vms: int, extra: dict, write: bool, overcommit: float | None = None) -> dict:
    t_start = time.perf_counter()
    import numpy as np

    from densim.engine import simulate

    from densim.plant import resolve
    from densim.placement import place
    from densim.spec.loader import load_mapping, scenario_from_dict

    place("first-fit", np.ones(2), np.ones(2), np.ones(1) * 4, np.ones(1) * 4)  # load the cached JIT kernel
    from densim.units import parse

    parse("1 GiB", "byte")  # the units module (pint itself is imported only for units outside its fast table)
    from densim.engine.stages import load_plugins

    load_plugins()  # import the resource-model stages
    startup = time.perf_counter() - t_start

    t0 = time.perf_counter()
    d = load_mapping(EXAMPLE)
    d["cluster"]["hosts"][0]["count"] = vms // 10
    d["vms"][0]["count"] = vms
    d["output"] = {"vm_timeseries": "off"}
    if overcommit:
        # 16 VMs of 2 vCPUs fill a 32-core host; size them so that they allocate `overcommit` x its memory
        d["vms"][0]["memory"] = f"{overcommit * 128 / 16:g} GiB"
        d["placement"]["memory_overcommit"] = overcommit * 1.001
    for key, value in extra.items():
        d[key] = value
    sc = scenario_from_dict(d, source=EXAMPLE, base_dir=EXAMPLE.parent)
    res = simulate(resolve(sc))
    wall = time.perf_counter() - t0
    out = {
        "vms": vms,
        "hosts": vms // 10,
        "steps": res.ctx.grid.n_steps,
        "wall_s": round(wall, 3),
        "peak_rss_gib": None,
        "vm_steps_per_s": round(vms * res.ctx.grid.n_steps / wall),
        "startup_s": round(startup, 3),
        "breakdown_s": {k: round(v, 3) for k, v in res.timings.items()},
        "energy_kwh": round(res.summary["totals"]["energy_kwh"], 3),
        "hosts_used": res.summary["hosts_used"],
        "stages": res.summary["models"]["stages"],
        "extra": extra,
        "overcommit": overcommit,
    }
    mem = res.summary.get("memory")
    if mem:
        out["memory"] = {k: v for k, v in mem.items() if not isinstance(v, (list, dict))}
    if write:
        import tempfile

        t1 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            res.write(tmp)
        out["write_s"] = round(time.perf_counter() - t1, 3)
    out["peak_rss_gib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rungs", default="1000,10000,100000")
    ap.add_argument("--section", action="append", default=[], help="scenario section as JSON, e.g. memory={\"model\": \"...\"}")
    ap.add_argument("--write", action="store_true", help="also time writing the result files")
    ap.add_argument("--overcommit", type=float, help="size VMs so each host allocates this x its memory (e.g. 1.5)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    extra = {}
    for s in args.section:
        k, v = s.split("=", 1)
        extra[k] = json.loads(v)
    if args.child:
        print(json.dumps(rung(args.child, extra, args.write, args.overcommit)))
        return
    for n in (int(x) for x in args.rungs.split(",")):
        cmd = [sys.executable, __file__, "--child", str(n)] + sum((["--section", s] for s in args.section), []) + (["--write"] if args.write else []) + (["--overcommit", str(args.overcommit)] if args.overcommit else [])
        r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
            raise SystemExit(r.returncode)
        print(r.stdout.strip(), flush=True)


if __name__ == "__main__":
    main()
