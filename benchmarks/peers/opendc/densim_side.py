"""The densim side of OpenDC's CI benchmark (see opendc_run.py): runs one densim example in this process.

Usage: python benchmarks/peers/opendc/densim_side.py SCENARIO.yaml [REPEATS]; prints one JSON line.

The scenario is loaded, resolved and simulated REPEATS times (default 1) in this one process, as the OpenDC side
runs its experiment several times in one JVM; the first run is the cold one (numba kernels loaded from the cache or
compiled), the others are warm. The figures reported (tasks, simulated end, energy) are those of the last run; all
runs give the same, which is checked.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    import atexit
    import gc

    atexit.register(gc.freeze)  # as the densim CLI does (cli/main.py)
    if len(sys.argv) not in (2, 3):
        raise SystemExit("usage: densim_side.py SCENARIO.yaml [REPEATS]")
    path = sys.argv[1]
    repeats = int(sys.argv[2]) if len(sys.argv) == 3 else 1
    if repeats < 1:
        raise SystemExit(f"REPEATS must be >= 1, got {repeats}")
    t0 = time.perf_counter()
    from densim.engine import simulate
    from densim.plant import resolve
    from densim.spec.loader import load_scenario

    t_import = time.perf_counter()
    walls, runs, setups, figures = [], [], [], []
    for _ in range(repeats):
        t1 = time.perf_counter()
        sc = load_scenario(path)
        plant = resolve(sc)
        t2 = time.perf_counter()
        res = simulate(plant, seed=sc.simulation.seed)
        t3 = time.perf_counter()
        s = res.summary
        sched = s["scheduling"]
        figures.append((sched["completed"], sched["failed"], sched["simulated_end_s"], s["totals"]["energy_kwh"]))
        setups.append(round(t2 - t1, 3))
        runs.append(round(t3 - t2, 3))
        walls.append(round(t3 - t1, 3))
    if len(set(figures)) != 1:
        raise SystemExit(f"densim's repeated runs disagree: {figures}")
    grid = res.ctx.grid
    print(json.dumps({
        "simulator": "densim",
        "scenario": path,
        "tasks_total": sched["tasks_total"],
        "tasks_completed": sched["completed"],
        "tasks_failed": sched["failed"],
        "simulated_end_s": sched["simulated_end_s"],
        "energy_kwh": s["totals"]["energy_kwh"],
        "hosts": s.get("hosts_total", None),
        "steps": grid.n_steps,
        "step_s": grid.step_s,
        "import_s": round(t_import - t0, 3),
        "repeats": repeats,
        "setup_s": setups,
        "run_s": runs,
        "wall_s": walls,
    }))


if __name__ == "__main__":
    main()
