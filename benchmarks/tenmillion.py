"""Issue 34: 10,000,000 VMs arriving and leaving over 30 days on 100,000 hosts (whole process, wait4 rusage).

The scenario is the ``1m-30d`` case of ``lifetimes_bench.py`` scaled by ``--vms`` (hosts = VMs / 100):
synthetic VMs (``vms[].arrivals``: Poisson over 30 days, log-normal lifetimes with median 6 h and
sigma 1), 2 vCPUs, 4 GiB, a diurnal profile with noise, on hosts of 32 cores and 256 GiB, 5-minute
steps, online first-fit with a FIFO queue, no time series. The VMs are two groups: ``vm`` (90 %) and
``mem`` (10 %, the memory-model subset: ``workload.memory_profile``).

``--memory on`` switches ``memory.model: vsphere-like`` on. The memory model is a scenario-wide
stage (there is no per-group switch); with it on, the VMs of the ``mem`` group are the ones whose
memory behaviour is modelled beyond full residency only if their hosts are short of memory, so the
``mem`` group is 16 GiB VMs (4x the others) to make that happen on some hosts; with first-fit and no
memory over-commit no host is short (every VM fully resident: the vCPUs bind first), ``--mem-overcommit
1.3`` makes hosts admit 8 vCPUs per core and 30 % more memory than they have, so that the model
reclaims and swaps. The memory stage and
carbon take chunks of the VMs alive in them only (the active-set path, ``accepts_active_rows``), see
RESULTS.md.

    PYTHONPATH=src python benchmarks/tenmillion.py --vms 2000000,5000000,10000000 [--memory off|on] [--cprofile]

Prints one JSON line per run: process wall, CPU, peak RSS (KiB from wait4, as GiB), VM-steps of
the horizon and per second, the summary's timings and scheduling figures. ``--cprofile`` runs the
process under cProfile and writes ``<workdir>/<case>.prof`` (and prints the top 25 by cumulative time).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def scenario_text(n_vms: int, memory: bool, overcommit: float | None = None) -> str:
    n_mem = n_vms // 10
    n_hosts = max(1, n_vms // 100)
    mem_section = "memory: {model: vsphere-like}\n" if memory else ""
    # vCPUs bind first at 1 vCPU per core (16 VMs of 2 vCPUs per host, 84-256 GiB): 8 per core lets memory bind
    oc = f", cpu_overcommit: 8, memory_overcommit: {overcommit}" if overcommit else ""
    return f"""name: tenmillion-{n_vms}{'-mem' if memory else ''}
cluster:
  hosts:
    - name: h
      count: {n_hosts}
      cpu: {{sockets: 2, cores_per_socket: 16, base_clock: 2000 MHz}}
      memory: 256 GiB
      power: {{model: linear, idle: 100 W, peak: 250 W}}
vms:
  - name: vm
    count: {n_vms - n_mem}
    vcpus: 2
    vcpu_speed: 2000 MHz
    memory: 4 GiB
    profile: {{kind: diurnal, mean: 0.3, amplitude: 0.2, noise: 0.1}}
    arrivals: {{over: 30 d, lifetime: 6 h, lifetime_sigma: 1.0}}
  - name: mem
    count: {n_mem}
    vcpus: 2
    vcpu_speed: 2000 MHz
    memory: 16 GiB
    profile: {{kind: diurnal, mean: 0.3, amplitude: 0.2, noise: 0.1}}
    arrivals: {{over: 30 d, lifetime: 6 h, lifetime_sigma: 1.0}}
    workload: {{memory_profile: oltp-sql}}
placement: {{policy: first-fit{oc}}}
scheduling: {{lifetimes: "on", queue: fifo}}
simulation: {{step: 5 min, seed: 1}}
{mem_section}output: {{vm_timeseries: "off", host_timeseries: "off"}}
"""


def run(scenario_path: Path, out: Path, prof: Path | None, src: Path) -> dict:
    cmd = [sys.executable]
    if prof is not None:
        cmd += ["-m", "cProfile", "-o", str(prof)]
    cmd += ["-m", "densim.cli.main", "run", str(scenario_path), "--out", str(out), "--no-report", "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(src)}
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    _, status, ru = os.wait4(proc.pid, 0)  # this child's own rusage (CPU, peak RSS in KiB on Linux)
    wall = time.perf_counter() - t
    err = proc.stderr.read()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        return {"error": err.strip()[-600:]}
    s = json.loads((out / "summary.json").read_text())
    sch = s.get("scheduling", {})
    vm_steps = s["vms_total"] * s["grid"]["n_steps"]
    cpu = ru.ru_utime + ru.ru_stime
    return {
        "process_wall_s": round(wall, 2),
        "process_cpu_s": round(cpu, 2),
        "peak_rss_gib": round(ru.ru_maxrss / 2**20, 3),
        "n_steps": s["grid"]["n_steps"],
        "vm_steps": vm_steps,
        "vm_steps_per_s_wall": round(vm_steps / wall),
        "timings": {k: round(v, 2) for k, v in (s.get("timings") or {}).items()},
        "energy_kwh": round(s["totals"]["energy_kwh"], 3),
        "completed": sch.get("completed"), "failed": sch.get("failed"), "waiting_at_end": sch.get("waiting_at_end"),
        "peak_concurrent": sch.get("peak_concurrent"),
        **({"memory": {"hosts_short": len(m["hosts_short_of_memory"]), "hosts_swapping": len(m["hosts_swapping"]),
                       "vms_slowed": m["vms_slowed"], "worst_vm_slowdown": round(m["worst_vm_slowdown"], 6)}}
           if (m := s.get("memory")) else {}),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vms", default="10000000", help="comma-separated VM counts (hosts = VMs / 100)")
    ap.add_argument("--memory", choices=["off", "on"], default="off")
    ap.add_argument("--mem-overcommit", type=float, default=None,
                    help="placement.memory_overcommit, with cpu_overcommit 8 (e.g. 1.3: hosts admit more memory than "
                         "they have, so the memory model reclaims and swaps; without it no host is short of memory)")
    ap.add_argument("--cprofile", action="store_true")
    ap.add_argument("--workdir", default="/tmp/densim-tenmillion")
    ap.add_argument("--src", default=str(REPO / "src"), help="densim sources to run (a copy of another commit's src/)")
    ap.add_argument("--tag", default="", help="suffix for the output folder and profile (before/after)")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    for n in (int(x) for x in args.vms.split(",")):
        oc = f"-oc{args.mem_overcommit:g}" if args.mem_overcommit else ""
        case = f"{n}{'-mem' if args.memory == 'on' else ''}{oc}{args.tag}"
        sc = work / f"{case}.yaml"
        sc.write_text(scenario_text(n, args.memory == "on", args.mem_overcommit))
        load = os.getloadavg()
        prof = work / f"{case}.prof" if args.cprofile else None
        res = run(sc, work / f"out-{case}", prof, Path(args.src))
        print(json.dumps({"case": case, "vms": n, "hosts": max(1, n // 100), "memory": args.memory,
                          "mem_overcommit": args.mem_overcommit,
                          "load_avg_1m_5m": [round(load[0], 2), round(load[1], 2)], **res}), flush=True)
        if prof is not None and prof.exists():
            import pstats

            pstats.Stats(str(prof)).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
