"""Benchmark: ``densim plan`` over the 250 real Bitbrains Rnd VMs (30 days, 300 s) with three candidates.

Target (issue 7): the whole command finishes in under a minute on the project's 2-core machine.
Runs the real CLI in a fresh process and prints one JSON line with the wall time, plus a breakdown
(read, plan per candidate, write) measured in-process in a second run.

    python benchmarks/plan_bench.py [--trace ../shared/traces/gwa-t-12-rnd-2013-8-first250]
                                    [--candidates examples/planning/candidates.yaml]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACE = Path("../shared/traces/gwa-t-12-rnd-2013-8-first250")  # relative to the repository root
CANDIDATES = Path("examples/planning/candidates.yaml")
TARGET_S = 60.0


def breakdown(trace: Path, candidates: Path, out: Path) -> dict:
    from densim.tools.plan.capacity import load_plan_spec, plan
    from densim.tools.plan.report import write_outputs
    from densim.workloads.formats import load_inventory

    t0 = time.perf_counter()
    inv = load_inventory(trace)
    t1 = time.perf_counter()
    res = plan(inv, load_plan_spec(candidates))
    t2 = time.perf_counter()
    write_outputs(res, out)
    t3 = time.perf_counter()
    return {
        "read_s": round(t1 - t0, 2), "plan_s": round(t2 - t1, 2), "write_s": round(t3 - t2, 2),
        "candidates": [{"name": r.name, "hosts": r.n_hosts, "lower_bound": r.lower_bound_hosts,
                        "ready_pct_worst": round(r.ready_pct_worst, 3), "tco_per_vm_year_usd": round(r.tco.get("per_vm_usd", float("nan")), 1),
                        "wall_s": round(r.wall_s, 2)} for r in res.ranked()],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", type=Path, default=TRACE)
    ap.add_argument("--candidates", type=Path, default=CANDIDATES)
    ap.add_argument("--no-breakdown", action="store_true")
    a = ap.parse_args()
    os.chdir(REPO)
    env = dict(os.environ, PYTHONPATH=str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "densim.cli.main", "plan", str(a.trace), "--candidates",
                               str(a.candidates), "--out", tmp], env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            sys.stderr.write(proc.stdout + proc.stderr)
            raise SystemExit(proc.returncode)
        out = {"bench": "plan-gwa-t-12-rnd-250", "wall_s": round(wall, 2), "target_s": TARGET_S,
               "met": wall < TARGET_S, "cpus": os.cpu_count()}
        if not a.no_breakdown:
            sys.path.insert(0, str(REPO / "src"))
            out["breakdown"] = breakdown(a.trace, a.candidates, Path(tmp) / "again")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
