"""Tasks that arrive and leave (issue 14): whole-process time and peak memory.

Cases (each run as its own ``densim run`` process, timed with wait4 rusage):

* ``surf-week``: OpenDC's surf_week (6,295 tasks, 2.3 M fragments) on OpenDC's 277 hosts
  (examples/opendc/surf-week.yaml). Target: under 2 s whole process.
* ``100k-tasks``: the shape of OpenDC's ``100K_tasks`` (100,000 one-hour tasks of 1,000 MHz arriving
  over 31 days, as its ``1K_tasks`` x 100), generated as OpenDC v4 Parquet, on 10,000 one-core hosts.
  Target: under 1 GiB.
* ``1m-30d``: 1,000,000 synthetic VMs (``vms[].arrivals``) arriving over 30 days (Poisson), lifetimes
  log-normal (median 6 h, sigma 1), 2 vCPUs, diurnal demand with noise, on 10,000 hosts of 32 cores,
  5-minute steps, online placement (first-fit, FIFO). Target: under 60 s and 4 GiB.
* ``1m-30d-trace``: the same shape as an OpenDC trace with a fragment every 5 minutes (119 M
  fragments): what a trace that size costs to read and replay.

    PYTHONPATH=src python benchmarks/lifetimes_bench.py [--cases surf-week,100k-tasks,1m-30d]

Prints one JSON line per case. Generated traces are kept in --workdir (default /tmp/densim-lifetimes).
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
T0_MS = 1_700_000_000_000


def _write_opendc(folder: Path, submit_s, cpu_count, mhz_per_core, mem_kb, frag_task, frag_dur_s, frag_mhz) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    n = submit_s.size
    dur = np.bincount(frag_task, weights=frag_dur_s, minlength=n)
    pq.write_table(pa.table({
        "id": pa.array(np.arange(n, dtype=np.int32)),
        "submission_time": pa.array((T0_MS + submit_s * 1000).astype(np.int64)),
        "duration": pa.array((dur * 1000).astype(np.int64)),
        "cpu_count": pa.array(cpu_count.astype(np.int32)),
        "cpu_capacity": pa.array((cpu_count * mhz_per_core).astype(np.float64)),
        "mem_capacity": pa.array(mem_kb.astype(np.int64)),
    }), folder / "tasks.parquet")
    pq.write_table(pa.table({
        "id": pa.array(frag_task.astype(np.int32)),
        "duration": pa.array((frag_dur_s * 1000).astype(np.int64)),
        "cpu_usage": pa.array(frag_mhz.astype(np.float64)),
    }), folder / "fragments.parquet")


SYNTHETIC_1M = """name: synthetic-1m-30d
cluster:
  hosts:
    - name: h
      count: 10000
      cpu: {sockets: 2, cores_per_socket: 16, base_clock: 2000 MHz}
      memory: 256 GiB
      power: {model: linear, idle: 100 W, peak: 250 W}
vms:
  - name: vm
    count: 1000000
    vcpus: 2
    vcpu_speed: 2000 MHz
    memory: 4 GiB
    profile: {kind: diurnal, mean: 0.3, amplitude: 0.2, noise: 0.1}
    arrivals: {over: 30 d, lifetime: 6 h, lifetime_sigma: 1.0}
placement: {policy: first-fit}
scheduling: {lifetimes: "on", queue: fifo}
simulation: {step: 5 min, seed: 1}
output: {vm_timeseries: "off", host_timeseries: "off"}
"""


def make_100k(folder: Path) -> None:
    import numpy as np

    if (folder / "fragments.parquet").exists():
        return
    rng = np.random.default_rng(2026)
    n = 100_000
    submit = np.sort(rng.uniform(0, 31 * 86400, n)).round()
    _write_opendc(folder, submit, np.ones(n), 1000.0, np.full(n, 10_000), np.arange(n), np.full(n, 3600.0), np.full(n, 1000.0))


def make_1m(folder: Path) -> None:
    import numpy as np

    if (folder / "fragments.parquet").exists():
        return
    rng = np.random.default_rng(2027)
    n = 1_000_000
    submit = np.sort(rng.uniform(0, 30 * 86400, n)).round()
    life = np.minimum(np.ceil(rng.lognormal(np.log(6 * 3600), 1.0, n) / 300) * 300, 10 * 86400)
    cores = rng.choice([1, 2, 4, 8], n, p=[0.4, 0.3, 0.2, 0.1])
    nfr = (life // 300).astype(np.int64)
    frag_task = np.repeat(np.arange(n), nfr)
    frag_mhz = (rng.uniform(0.05, 0.6, frag_task.size) * cores[frag_task] * 2000.0).round(1)
    _write_opendc(folder, submit, cores, 2000.0, cores * 4 * 1024 * 1024, frag_task, np.full(frag_task.size, 300.0), frag_mhz)


def scenario(folder: Path, hosts: int, cores: int, memory: str, out: Path, name: str) -> Path:
    text = f"""name: {name}
cluster:
  hosts:
    - name: h
      count: {hosts}
      cpu: {{sockets: 1, cores_per_socket: {cores}, base_clock: 2000 MHz}}
      memory: {memory}
      power: {{model: linear, idle: 100 W, peak: 200 W}}
vms:
  - name: task
    trace: {{format: opendc, path: {folder}}}
placement: {{policy: first-fit}}
scheduling: {{lifetimes: "on", queue: fifo}}
simulation: {{step: 5 min, seed: 1}}
output: {{vm_timeseries: "off", host_timeseries: "off"}}
"""
    p = out / f"{name}.yaml"
    p.write_text(text)
    return p


def run(scenario_path: Path, out: Path) -> dict:
    densim = [sys.executable, "-m", "densim.cli.main"]
    t = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([*densim, "run", str(scenario_path), "--out", str(out), "--no-report", "--no-progress"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip()[-400:]}
    s = json.loads((out / "summary.json").read_text())
    sch = s.get("scheduling", {})
    return {
        "process_wall_s": round(wall, 3),
        "process_cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 3),
        "peak_rss_gib": round(after.ru_maxrss / 2**20, 3),
        "vm_steps": s["vms_total"] * s["grid"]["n_steps"],
        "energy_kwh": round(s["totals"]["energy_kwh"], 3),
        "completed": sch.get("completed"), "failed": sch.get("failed"), "waiting_at_end": sch.get("waiting_at_end"),
        "delay_total_h": round(sch.get("scheduling_delay_total_s", 0) / 3600, 2),
        "delay_max_h": round(sch.get("scheduling_delay_max_s", 0) / 3600, 2),
        "peak_concurrent": sch.get("peak_concurrent"),
        "simulated_end_h": round(sch.get("simulated_end_s", 0) / 3600, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="surf-week,100k-tasks,1m-30d", help="also: 1m-30d-trace")
    ap.add_argument("--workdir", default="/tmp/densim-lifetimes")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    for case in args.cases.split(","):
        if case == "surf-week":
            sc = REPO / "examples" / "opendc" / "surf-week.yaml"
        elif case == "100k-tasks":
            make_100k(work / "100k")
            sc = scenario(work / "100k", 10_000, 1, "64 GiB", work, "opendc-100k-tasks-shape")
        elif case == "1m-30d":
            sc = work / "synthetic-1m-30d.yaml"
            sc.write_text(SYNTHETIC_1M)
        elif case == "1m-30d-trace":
            make_1m(work / "1m")
            sc = scenario(work / "1m", 10_000, 32, "256 GiB", work, "synthetic-1m-30d")
        else:
            raise SystemExit(f"unknown case {case!r}")
        res = run(sc, work / f"out-{case}")
        print(json.dumps({"case": case, "load_avg_1m": round(load, 2), **res}), flush=True)


if __name__ == "__main__":
    main()
