"""Whole-process time of the 100k PlanetLab rung, its imports and its trace reading, one or more source trees side by side.

Each round runs, for every tree in turn (so a change of load on this shared machine hits every tree
alike), three fresh processes:

* the peer benchmark's densim side (``benchmarks/peers/densim_side.py``, 10,000 hosts, 100,000 VMs):
  process wall and CPU (wait4), and what it prints: ``import_s`` (``densim.engine``, ``densim.plant``,
  ``densim.spec.loader``), ``setup_s`` (building the run's inputs, which includes importing numba and
  the stage plug-ins, and placing the VMs), ``run_s`` (the engine);
* trace reading alone: a process that imports the PlanetLab reader, then times reading the folder
  once (as a run does, with the trace cache as the environment sets it);
* the same process under ``python -X importtime``: the imports of a run, summed by top-level package.

    python benchmarks/startup_bench.py [--src SRC_DIR[,nocache] ...] [--runs 5] [--traces DIR]

A warm-up round, not counted, runs first (it writes the modules' bytecode, which
``PYTHONDONTWRITEBYTECODE`` in the environment is removed for, and fills the trace cache).
Prints one JSON line per tree: the median of every figure over the runs, and the ranges.
``--src DIR,nocache`` measures a tree with the trace cache off (``DENSIM_TRACE_CACHE=0``).
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

READ = """
import time, sys
from pathlib import Path
t0 = time.perf_counter()
from densim.workloads.readers.planetlab import PlanetLabTrace
t1 = time.perf_counter()
tr = PlanetLabTrace(Path(sys.argv[1]))
t2 = time.perf_counter()
print('{"import_reader_s": %.4f, "read_s": %.4f, "shape": "%s"}' % (t1 - t0, t2 - t1, tr.util_pct.shape))
"""


def default_traces() -> Path:
    for cand in (ROOT.parent / "shared" / "traces" / "planetlab-20110303", Path("/work/shared/traces/planetlab-20110303")):
        if cand.is_dir():
            return cand
    raise SystemExit("PlanetLab traces not found; pass --traces DIR")


def measured(cmd: list[str], env: dict) -> tuple[str, str, float, float]:
    with tempfile.TemporaryFile() as errf:  # not a pipe: -X importtime writes more than a pipe holds
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errf, env=env)
        out = proc.stdout.read()
        _, status, ru = os.wait4(proc.pid, 0)  # reaped here, for the child's own rusage
        wall = time.perf_counter() - t0
        errf.seek(0)
        err = errf.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd} failed: {err.decode()[-2000:]}")
    return out.decode(), err.decode(), wall, ru.ru_utime + ru.ru_stime


def import_profile(stderr: str) -> dict[str, float]:
    """``-X importtime`` lines summed by top-level package (densim by sub-package), in seconds of self time."""
    agg: dict[str, float] = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = line[len("import time:"):].split("|")
        mod = name.strip()
        top = ".".join(mod.split(".")[:2]) if mod.startswith("densim.") else mod.split(".")[0]
        # a module imported by another thread meanwhile (the kernel preload) can make its parent's self time negative
        agg[top] = agg.get(top, 0.0) + max(int(self_us), 0) / 1e6
    return agg


def one_round(src: Path, traces: Path, hosts: int, vms: int) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    if str(src).endswith(",nocache"):  # the same tree with the trace cache off
        src, env["DENSIM_TRACE_CACHE"] = Path(str(src)[: -len(",nocache")]), "0"
    env["PYTHONPATH"] = str(src)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # start-up as installed: modules load from their bytecode (written by the warm-up round)
    out, _, wall, cpu = measured([sys.executable, str(HERE / "peers" / "densim_side.py"), str(traces), str(hosts), str(vms)], env)
    side = json.loads([ln for ln in out.splitlines() if ln.startswith("{")][-1])
    out, _, _, _ = measured([sys.executable, "-c", READ, str(traces)], env)
    rd = json.loads(out.strip().splitlines()[-1])
    _, err, _, _ = measured([sys.executable, "-X", "importtime", str(HERE / "peers" / "densim_side.py"), str(traces),
                             str(hosts), str(vms)], env)
    prof = import_profile(err)
    return {"process_wall_s": wall, "process_cpu_s": cpu, "import_s": side["import_s"], "setup_s": side["setup_s"],
            "run_s": side["run_s"], "read_s": rd["read_s"], "imports_total_s": sum(prof.values()),
            "energy_kwh": side["energy_kwh"], "profile": prof}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", action="append", type=Path, help="a source tree (the folder holding densim/); default: this tree's src")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--traces", type=Path, default=None)
    ap.add_argument("--hosts", type=int, default=10000)
    ap.add_argument("--vms", type=int, default=100000)
    args = ap.parse_args()
    srcs = args.src or [ROOT / "src"]
    traces = args.traces or default_traces()
    rounds: dict[Path, list[dict]] = {s: [] for s in srcs}
    loads = []
    for s in srcs:  # warm-up, not counted: bytecode written, page cache and trace cache filled
        one_round(s, traces, args.hosts, args.vms)
    for _ in range(args.runs):
        loads.append(os.getloadavg()[0])
        for s in srcs:
            rounds[s].append(one_round(s, traces, args.hosts, args.vms))
    for s in srcs:
        rs = rounds[s]
        keys = [k for k in rs[0] if k not in ("profile", "energy_kwh")]
        med = {k: round(statistics.median(r[k] for r in rs), 4) for k in keys}
        rng = {k: [round(min(r[k] for r in rs), 4), round(max(r[k] for r in rs), 4)] for k in keys}
        tops = sorted(rs[0]["profile"], key=lambda k: -statistics.median(r["profile"].get(k, 0.0) for r in rs))[:12]
        prof = {k: round(statistics.median(r["profile"].get(k, 0.0) for r in rs), 4) for k in tops}
        print(json.dumps({"src": str(s), "runs": len(rs), "load_1min": [round(min(loads), 2), round(max(loads), 2)],
                          "median": med, "range": rng, "energy_kwh": rs[0]["energy_kwh"], "imports_by_package_s": prof}),
              flush=True)


if __name__ == "__main__":
    main()
