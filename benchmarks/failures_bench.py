"""The ladder's 100k-VM rung (benchmarks/ladder.py: the PlanetLab day on 10,000 hosts) with host failures.

Host MTBF 100 days (about 1 % of hosts fail per day: P(fail in a day) = 1 - exp(-1/100) = 0.995 %),
MTTR 4 h, HA restarts (30 s detection, 120 s boot), N+1 admission on. Each case runs in a fresh
process; the first call of a case in a process compiles nothing new (numba kernels are cached on
disk by a warm-up run). Prints one JSON line per case and the ratio of walls.

    PYTHONPATH=src python benchmarks/failures_bench.py [--vms 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "planetlab.yaml"
FAILURES = {"random": {"host": {"mtbf": "100 d", "mttr": "4 h"}},
            "ha": {"admission": "n_plus_k", "host_failures": 1, "detection": "30 s", "boot_delay": "2 min"}}


def case(vms: int, failures: bool) -> dict:
    from densim.engine import simulate
    from densim.plant import resolve
    from densim.spec.loader import load_mapping, scenario_from_dict

    t0 = time.perf_counter()
    d = load_mapping(EXAMPLE)
    d["cluster"]["hosts"][0]["count"] = vms // 10
    d["vms"][0]["count"] = vms
    d["output"] = {"vm_timeseries": "off"}
    if failures:
        d["failures"] = FAILURES
    sc = scenario_from_dict(d, source=EXAMPLE, base_dir=EXAMPLE.parent)
    res = simulate(resolve(sc))
    s = res.summary
    wall = time.perf_counter() - t0
    out = {"vms": vms, "hosts": vms // 10, "failures": failures, "wall_s": round(wall, 3),
           "breakdown_s": {k: round(v, 3) for k, v in res.timings.items()},
           "energy_kwh": round(s["totals"]["energy_kwh"], 3), "engine_rows": int(res.ctx.vms.n)}
    if failures:
        f = s["failures"]
        out["failures_summary"] = {k: f[k] for k in ("events", "hosts_failed", "vms_interrupted", "restarts", "waited_for_capacity",
                                                     "vm_minutes_down", "restart_delay_s_max", "reservation_held",
                                                     "power_ons_refused", "cpu_ready_pct_during_failures")}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vms", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", default=None)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(case(args.vms, args.child == "failures")))
        return
    walls: dict[str, list[float]] = {"plain": [], "failures": []}
    for label in ("plain", "failures"):  # warm-up: compile and cache the kernels
        subprocess.run([sys.executable, __file__, "--vms", "1000", "--child", label], check=True, capture_output=True)
    for _ in range(args.repeat):
        for label in ("plain", "failures"):
            p = subprocess.run([sys.executable, __file__, "--vms", str(args.vms), "--child", label], check=True,
                               capture_output=True, text=True)
            row = json.loads(p.stdout.strip().splitlines()[-1])
            walls[label].append(row["wall_s"])
            print(json.dumps(row))
    best = {k: min(v) for k, v in walls.items()}
    print(json.dumps({"best_wall_s": best, "ratio": round(best["failures"] / best["plain"], 2), "target": "<= 2x"}))


if __name__ == "__main__":
    main()
