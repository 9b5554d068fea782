"""densim vs CloudSim Plus on the same workload; one JSON line per size.

Workload (both sides): the PlanetLab CoMon day 2011-03-03 (1,052 traces, 300 s samples);
hosts of 32 cores at 1,000 MIPS/MHz, 128 GiB, linear power 100 W idle -> 250 W peak; VMs of
2 cores at 1,000 MIPS/MHz and 2 GiB, VM i driven by trace (i mod 1,052) in sorted file-name
order; first-fit placement; 300 s steps; 24 h. Sizes: small = 1,000 hosts / 10,000 VMs,
large = 10,000 hosts / 100,000 VMs.

Each simulator runs in its own process; peak memory is that process's peak RSS (wait4
ru_maxrss). ``wall_s`` is measured inside the process from reading the traces to the final
energy (runtime start-up excluded: JVM start, Python imports); ``process_wall_s`` is the whole
process. The speed-up is CloudSim Plus wall / densim wall.

    make -C benchmarks/peers                       # build the Java driver (Maven)
    PYTHONPATH=src python benchmarks/peers/run.py  # both sizes
    ... run.py --sizes small                       # one size
    ... run.py --reuse-peer                        # reuse CloudSim Plus results saved in out/
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SIZES = {"small": (1000, 10000), "large": (10000, 100000)}


def default_traces() -> Path:
    for cand in (ROOT.parent / "shared" / "traces" / "planetlab-20110303", Path("/work/shared/traces/planetlab-20110303")):
        if cand.is_dir():
            return cand
    raise SystemExit("PlanetLab traces not found; pass --traces DIR")


def measured(cmd: list[str], env: dict | None = None) -> tuple[dict, float, float, float]:
    """Run ``cmd``; return (its last JSON stdout line, process wall s, peak RSS MiB, CPU s user+system)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    # read stdout fully, then reap with wait4 to get the child's own rusage
    out, err = proc.stdout.read(), proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {err.decode()[-2000:]}")
    lines = [ln for ln in out.decode().splitlines() if ln.startswith("{")]
    # ru_maxrss is KiB on Linux; CPU time counts every thread (JIT, GC) and is less sensitive than
    # wall time to other load on the machine
    return json.loads(lines[-1]), wall, ru.ru_maxrss / 1024.0, ru.ru_utime + ru.ru_stime


def run_java(traces: Path, hosts: int, vms: int, java_opts: list[str]) -> dict:
    jar = HERE / "target" / "cloudsimplus-peer-1.0.jar"
    if not jar.exists():
        subprocess.run(["mvn", "-q", "-B", "package"], cwd=HERE, check=True)
    cp = f"{jar}{os.pathsep}{HERE / 'target' / 'lib' / '*'}"
    res, wall, rss, cpu = measured(["java", *java_opts, "-cp", cp, "densim.peers.PlanetLabPeer", str(traces), str(hosts), str(vms)])
    res.update(process_wall_s=round(wall, 3), process_cpu_s=round(cpu, 3), peak_rss_mib=round(rss, 1), java_opts=java_opts)
    return res


def run_densim(traces: Path, hosts: int, vms: int) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    res, wall, rss, cpu = measured([sys.executable, str(HERE / "densim_side.py"), str(traces), str(hosts), str(vms)], env=env)
    res.update(process_wall_s=round(wall, 3), process_cpu_s=round(cpu, 3), peak_rss_mib=round(rss, 1))
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="small,large")
    ap.add_argument("--traces", type=Path, default=None)
    ap.add_argument("--reuse-peer", action="store_true", help="use CloudSim Plus results saved in out/ when present")
    ap.add_argument("--java-opt", action="append", default=[], help="extra JVM option (repeatable), e.g. -Xmx8g")
    ap.add_argument("--only", choices=["both", "cloudsimplus", "densim"], default="both")
    args = ap.parse_args()
    traces = args.traces or default_traces()
    outdir = HERE / "out"
    outdir.mkdir(exist_ok=True)
    for size in [s.strip() for s in args.sizes.split(",") if s.strip()]:
        hosts, vms = SIZES[size]
        saved = outdir / f"cloudsimplus-{size}.json"
        csp = None
        if args.only in ("both", "cloudsimplus"):
            if args.reuse_peer and saved.exists():
                csp = json.loads(saved.read_text())
                csp["reused_from"] = str(saved.relative_to(ROOT))
            else:
                csp = run_java(traces, hosts, vms, args.java_opt)
                saved.write_text(json.dumps(csp) + "\n")
        ds = None
        if args.only in ("both", "densim"):
            ds = run_densim(traces, hosts, vms)
            (outdir / f"densim-{size}.json").write_text(json.dumps(ds) + "\n")
        line: dict = {"size": size, "hosts": hosts, "vms": vms, "steps": 288}
        if ds:
            line["densim"] = ds
        if csp:
            line["cloudsimplus"] = csp
        if ds and csp:
            line["speedup_wall"] = round(csp["wall_s"] / ds["wall_s"], 1)
            line["speedup_process_wall"] = round(csp["process_wall_s"] / ds["process_wall_s"], 1)
            line["speedup_process_cpu"] = round(csp["process_cpu_s"] / ds["process_cpu_s"], 1)
            line["memory_ratio_cloudsimplus_over_densim"] = round(csp["peak_rss_mib"] / ds["peak_rss_mib"], 2)
            line["energy_kwh"] = {"densim": round(ds["energy_kwh"], 4), "cloudsimplus": round(csp["energy_kwh"], 4)}
            line["energy_rel_diff"] = (ds["energy_kwh"] - csp["energy_kwh"]) / csp["energy_kwh"]
            line["meets_40x"] = line["speedup_wall"] >= 40
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
