"""Start-up of the ``densim`` command: imports and whole process, for ``densim run --help`` and the 100k PlanetLab rung.

Cases (each a fresh ``densim`` process, started as the ``densim`` entry point does):

* ``help``: ``densim run --help``;
* ``run-cli``: ``densim run`` of the rung below, ended where the command hands the run to the library
  (``densim.cli.main._simulate_and_write``): the interpreter, the CLI's imports, building the command and
  parsing its options, i.e. what the command line itself costs;
* ``rung``: ``densim run`` of the ladder's 100k rung (``benchmarks/ladder.py``: ``examples/planetlab.yaml``
  with 10,000 hosts and 100,000 VMs, ``output.vm_timeseries: off``) with ``--no-report --no-progress -q``,
  so the host time series (2.88 M rows) and the tables are written;
* ``rung-lean``: the same run as the peer benchmark's densim side gives it (``benchmarks/peers/densim_side.py``:
  ``host_timeseries: off`` too, unused hosts idle): start-up, traces, placement, engine, summary and two small tables.

Per case, source tree and round: the process's wall (by the clock), CPU and peak RSS (``os.wait4``), the
CPU time of a bare ``python -c pass`` (``python_cpu_s``: the interpreter's own start-up), and
``imports_cpu_s``: a second run of the same command with every outermost import (``__import__``,
``importlib.import_module``) timed by the CPU clock of the thread running it (the kernel preload thread
imports too) and summed over threads. Module-level work counts as import: numba's target registries,
which ``densim._jit`` loads when imported, are in it; loading the cached kernels is not. Once per case
and tree, ``python -X importtime`` of the command: the 20 modules with the largest cumulative import
time, and self time summed by top-level package (densim by sub-package); ``-X importtime`` inflates
every figure, so the totals to compare are ``imports_cpu_s``.

    python benchmarks/startup.py [--src SRC_DIR ...] [--runs 7] [--cases help,run-cli,rung,rung-lean] [--traces DIR]
    python benchmarks/startup.py --floor [--runs 15]   # the libraries' own import CPU: the floor of a run's imports

Trees named by ``--src`` (the folder holding ``densim/``) run in turn within each round, so a change of
load on this shared machine hits them alike. A warm-up round, not counted, writes the modules'
bytecode (``PYTHONDONTWRITEBYTECODE`` is removed from the children's environment: start-up as
installed), numba's kernel cache and the trace cache. Prints one JSON line per case and tree: medians,
ranges, the 1-minute load before each round, and the import profile.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
EXAMPLE = ROOT / "examples" / "planetlab.yaml"
CASES = ("help", "run-cli", "rung", "rung-lean")

# the console script's own start (``densim = densim.cli.main:main``); given a file name, it writes there the
# CPU time its imports took: every outermost import statement (``__import__``) and ``importlib.import_module``
# call, timed by the CPU clock of the thread that runs it (the kernel preload thread imports too), summed
ENTRY = """
import sys
if sys.argv[1]:
    import atexit, builtins, importlib, json, threading, time
    _path, _local, _spent = sys.argv[1], threading.local(), {}

    def _timed(fn):
        def timed(*args, **kwargs):
            depth = getattr(_local, "depth", 0)
            _local.depth = depth + 1
            t0 = time.thread_time() if depth == 0 else 0.0
            try:
                return fn(*args, **kwargs)
            finally:
                _local.depth = depth
                if depth == 0:
                    key = threading.get_ident()
                    _spent[key] = _spent.get(key, 0.0) + time.thread_time() - t0
        return timed

    builtins.__import__ = _timed(builtins.__import__)
    importlib.import_module = _timed(importlib.import_module)
    atexit.register(lambda: json.dump({"imports_cpu_s": sum(_spent.values()), "threads": len(_spent),
                                       "modules": len(sys.modules)}, open(_path, "w")))
if sys.argv[2] == "--stop-at-library":  # case run-cli: end where the command hands the run to the library
    import densim.cli.main as _cli

    _cli._simulate_and_write = lambda *args, **kwargs: sys.exit(0)
    del sys.argv[2]
sys.argv = ["densim", *sys.argv[2:]]
from densim.cli.main import main
main()
"""


def default_traces() -> Path:
    for cand in (ROOT.parent / "shared" / "traces" / "planetlab-20110303", Path("/work/shared/traces/planetlab-20110303")):
        if cand.is_dir():
            return cand
    raise SystemExit("PlanetLab traces not found; pass --traces DIR")


def scenarios(folder: Path, traces: Path) -> dict[str, Path]:
    """The rung's two scenario files, written into ``folder``."""
    import yaml

    d = yaml.safe_load(EXAMPLE.read_text())
    d["cluster"]["hosts"][0]["count"] = 10_000  # as ladder.py's rung: VMs / 10
    d["vms"][0]["count"] = 100_000
    d["vms"][0]["trace"]["path"] = str(traces)
    d["output"] = {"vm_timeseries": "off"}
    rung = folder / "rung100k.yaml"
    rung.write_text(yaml.safe_dump(d, sort_keys=False))
    sys.path.insert(0, str(HERE / "peers"))
    from densim_side import scenario_mapping  # the peer benchmark's own mapping

    lean = folder / "rung100k-lean.yaml"
    lean.write_text(yaml.safe_dump(scenario_mapping(str(traces), 10_000, 100_000), sort_keys=False))
    return {"rung": rung, "rung-lean": lean}


def command(case: str, files: dict[str, Path], out: Path) -> list[str]:
    if case == "help":
        return ["run", "--help"]
    if case == "run-cli":
        return ["--stop-at-library", *command("rung", files, out)]
    return ["run", str(files[case]), "--out", str(out), "--no-report", "--no-progress", "-q"]


def measured(cmd: list[str], env: dict) -> tuple[str, float, float, float]:
    """(stderr, wall s, CPU s, peak RSS GiB) of one process; its own rusage from wait4."""
    with tempfile.TemporaryFile() as errf:  # not a pipe: -X importtime writes more than a pipe holds
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errf, env=env)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        errf.seek(0)
        err = errf.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd} failed: {err[-2000:]}")
    return err, wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 2**20


def child_env(src: Path) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(src)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # modules load from their bytecode, as installed
    return env


def one_round(src: Path, case: str, files: dict[str, Path], tmp: Path) -> dict:
    env = child_env(src)
    args = command(case, files, tmp / "out")
    _, wall, cpu, rss = measured([sys.executable, "-c", ENTRY, "", *args], env)
    _, _, bare, _ = measured([sys.executable, "-c", "pass"], env)
    timed = tmp / "imports.json"
    measured([sys.executable, "-c", ENTRY, str(timed), *args], env)  # the same command, its imports timed
    imp = json.loads(timed.read_text())
    return {"process_wall_s": wall, "process_cpu_s": cpu, "peak_rss_gib": rss, "imports_cpu_s": imp["imports_cpu_s"],
            "python_cpu_s": bare, "modules": imp["modules"]}


def import_profile(src: Path, case: str, files: dict[str, Path], tmp: Path) -> dict:
    """``-X importtime`` of the command: top 20 modules by cumulative time, self time by package (seconds)."""
    err, _, _, _ = measured([sys.executable, "-X", "importtime", "-c", ENTRY, "", *command(case, files, tmp / "out")],
                            child_env(src))
    by_pkg: dict[str, float] = {}
    cumulative: dict[str, float] = {}
    total = 0.0
    for line in err.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cum_us, name = line[len("import time:"):].split("|")
        mod = name.strip()
        top = ".".join(mod.split(".")[:2]) if mod.startswith("densim.") else mod.split(".")[0]
        s = max(int(self_us), 0) / 1e6  # the preload thread's imports can make a parent's self time negative
        by_pkg[top] = by_pkg.get(top, 0.0) + s
        cumulative[mod] = max(cumulative.get(mod, 0.0), int(cum_us) / 1e6)
        total += s
    top20 = sorted(cumulative.items(), key=lambda kv: -kv[1])[:20]
    pkgs = sorted(by_pkg.items(), key=lambda kv: -kv[1])[:15]
    return {"importtime_total_s": round(total, 4), "top20_cumulative_s": {k: round(v, 4) for k, v in top20},
            "self_by_package_s": {k: round(v, 4) for k, v in pkgs}}


# the libraries a run cannot do without, added one at a time (densim._jit: numba and its target registries,
# which loading any cached kernel needs: numba.core.caching refreshes the target context)
FLOOR = (("python", "pass"), ("numpy", "import numpy"), ("+ numba", "import numpy, numba"),
         ("+ numba's registries", "import densim._jit"), ("+ polars", "import densim._jit, polars"),
         ("+ pydantic, yaml", "import densim._jit, polars, pydantic, yaml"),
         ("+ typer", "import densim._jit, polars, pydantic, yaml, typer"))


def floor(src: Path, runs: int) -> dict:
    """CPU of fresh processes importing the libraries of a run, cumulatively (medians and minima of ``runs``)."""
    env = child_env(src)
    cpu: dict[str, list[float]] = {name: [] for name, _ in FLOOR}
    for _ in range(runs + 1):  # the first round writes bytecode, not counted
        for name, code in FLOOR:
            cpu[name].append(measured([sys.executable, "-c", code], env)[2])
    return {"floor_cpu_s": {name: {"median": round(statistics.median(v[1:]), 4), "min": round(min(v[1:]), 4)}
                            for name, v in cpu.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", action="append", type=Path, help="a source tree (the folder holding densim/); default: this tree's src")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--traces", type=Path, default=None)
    ap.add_argument("--floor", action="store_true", help="only the CPU of importing a run's libraries, one at a time added")
    args = ap.parse_args()
    srcs = [s.resolve() for s in (args.src or [ROOT / "src"])]
    if args.floor:
        print(json.dumps({"src": str(srcs[0]), "runs": args.runs, "load_1min": round(os.getloadavg()[0], 2),
                          **floor(srcs[0], args.runs)}))
        return
    cases = [c for c in args.cases.split(",") if c]
    for c in cases:
        if c not in CASES:
            raise SystemExit(f"unknown case {c!r}: {', '.join(CASES)}")
    with tempfile.TemporaryDirectory(prefix="densim-startup-") as tmpname:
        tmp = Path(tmpname)
        files = scenarios(tmp, (args.traces or default_traces()).resolve())
        for case in cases:
            for s in srcs:  # warm-up, not counted
                one_round(s, case, files, tmp)
            rounds: dict[Path, list[dict]] = {s: [] for s in srcs}
            loads = []
            for _ in range(args.runs):
                loads.append(round(os.getloadavg()[0], 2))
                for s in srcs:
                    rounds[s].append(one_round(s, case, files, tmp))
            for s in srcs:
                rs = rounds[s]
                med = {k: round(statistics.median(r[k] for r in rs), 4) for k in rs[0]}
                rng = {k: [round(min(r[k] for r in rs), 4), round(max(r[k] for r in rs), 4)] for k in rs[0]}
                print(json.dumps({"case": case, "src": str(s), "command": "densim " + " ".join(command(case, files, Path("OUT"))),
                                  "runs": len(rs), "load_1min": loads, "median": med, "range": rng,
                                  **import_profile(s, case, files, tmp)}), flush=True)


if __name__ == "__main__":
    main()
