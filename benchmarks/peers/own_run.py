"""CloudSim Plus's own benchmarks, CloudSim Plus (built from source) and densim side by side; one JSON line each.

Scenarios (set-ups in CloudSimPlusOwnBenchmarks.java and densim_own.py):
  pr341     CloudSim Plus PR #341 / PerformanceExample: 50,000 hosts, 100,000 VMs, 100,000 cloudlets, 1e7 s
  perfpage  CloudSim Plus docs/performance.md, scenario6.yml: 20,000 hosts, 40,000 VMs, 50,000 cloudlets

Each simulator runs in its own process (peak RSS from wait4, CPU = user + system of the process and its
threads); ``wall_s`` is measured inside each process from building the scenario to the results (JVM start and
Python imports excluded), ``process_wall_s`` is the whole process. Speed-ups are CloudSim Plus / densim.

    make -C benchmarks/peers own                                   # both scenarios at full size
    PYTHONPATH=src python benchmarks/peers/own_run.py --scenarios pr341 --scale 0.1
    ... --reuse-peer    reuse CloudSim Plus results saved in benchmarks/peers/out/ for the same scenario and scale
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from densim_own import counts  # noqa: E402
from run import ROOT, measured  # noqa: E402


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run_java(name: str, scale: float, java_opts: list[str]) -> dict:
    jar = HERE / "target" / "cloudsimplus-peer-1.0.jar"
    if not jar.exists():
        subprocess.run(["mvn", "-q", "-B", "package"], cwd=HERE, check=True)
    cp = f"{jar}{os.pathsep}{HERE / 'target' / 'lib' / '*'}"
    h, v, c = counts(name, scale)
    before = load()
    res, wall, rss, cpu = measured(["java", *java_opts, "-cp", cp, "densim.peers.CloudSimPlusOwnBenchmarks", name,
                                    str(h), str(v), str(c)])
    res.update(process_wall_s=round(wall, 3), process_cpu_s=round(cpu, 3), peak_rss_mib=round(rss, 1),
               java_opts=java_opts, load_before=before, load_after=load())
    return res


def run_densim(name: str, scale: float, mode: str = "tasks") -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    before = load()
    res, wall, rss, cpu = measured([sys.executable, str(HERE / "densim_own.py"), name, repr(scale), mode], env=env)
    res.update(process_wall_s=round(wall, 3), process_cpu_s=round(cpu, 3), peak_rss_mib=round(rss, 1),
               load_before=before, load_after=load())
    return res


def compare(ds: dict, csp: dict) -> dict:
    """What both computed, side by side, and the speed-ups."""
    return {
        "speedup_wall": round(csp["wall_s"] / ds["wall_s"], 1),
        "speedup_process_wall": round(csp["process_wall_s"] / ds["process_wall_s"], 1),
        "speedup_process_cpu": round(csp["process_cpu_s"] / ds["process_cpu_s"], 1),
        "memory_ratio_cloudsimplus_over_densim": round(csp["peak_rss_mib"] / ds["peak_rss_mib"], 2),
        "meets_100x_process_wall": csp["process_wall_s"] / ds["process_wall_s"] >= 100,
        # densim's tasks = VMs; a CloudSim Plus VM is done when all its cloudlets are
        "vms_placed": {"densim": ds["vms_placed"], "cloudsimplus": csp["vms_placed"]},
        "hosts_used": {"densim": ds["hosts_used"], "cloudsimplus": csp["hosts_used"]},
        "finished": {"densim_tasks_completed": ds["tasks_completed"], "cloudsimplus_cloudlets_finished": csp["cloudlets_finished"],
                     "cloudlets": csp["cloudlets"]},
        "work_mi": {"densim_delivered": ds["delivered_mhz_s"], "cloudsimplus_finished": csp["finished_mi"],
                    "rel_diff": (ds["delivered_mhz_s"] - csp["finished_mi"]) / csp["finished_mi"]},
        "simulated_end_s": {"densim": ds["simulated_end_s"], "densim_grid_end": ds["grid_end_s"],
                            "cloudsimplus": csp["simulated_end_s"]},
        "energy_kwh": {"densim": ds["energy_kwh"], "cloudsimplus_derived": csp["energy_kwh"],
                       "rel_diff": (ds["energy_kwh"] - csp["energy_kwh"]) / csp["energy_kwh"]},
        "densim_cpu_ready_s": ds["cpu_ready_s"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default="pr341,perfpage")
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the published host/VM/cloudlet counts")
    ap.add_argument("--reuse-peer", action="store_true")
    ap.add_argument("--java-opt", action="append", default=[])
    ap.add_argument("--densim-mode", choices=["tasks", "static"], default="tasks",
                    help="pr341 only: static runs its VMs for the whole run instead of as tasks (densim_own.py)")
    ap.add_argument("--only", choices=["both", "cloudsimplus", "densim"], default="both")
    args = ap.parse_args()
    outdir = HERE / "out"
    outdir.mkdir(exist_ok=True)
    for name in [s.strip() for s in args.scenarios.split(",") if s.strip()]:
        h, v, c = counts(name, args.scale)
        tag = f"{name}-{args.scale:g}"
        saved = outdir / f"cloudsimplus-{tag}.json"
        csp = ds = None
        if args.only in ("both", "cloudsimplus"):
            if args.reuse_peer and saved.exists():
                csp = json.loads(saved.read_text())
                csp["reused_from"] = str(saved.relative_to(ROOT))
            else:
                csp = run_java(name, args.scale, args.java_opt)
                saved.write_text(json.dumps(csp) + "\n")
        if args.only in ("both", "densim"):
            ds = run_densim(name, args.scale, args.densim_mode)
            (outdir / f"densim-{tag}-{args.densim_mode}.json").write_text(json.dumps(ds) + "\n")
        line: dict = {"scenario": name, "scale": args.scale, "densim_mode": args.densim_mode, "hosts": h, "vms": v, "cloudlets": c}
        if ds:
            line["densim"] = ds
        if csp:
            line["cloudsimplus"] = csp
        if ds and csp:
            line["comparison"] = compare(ds, csp)
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
