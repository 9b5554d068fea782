"""OpenDC's CI benchmark workload, OpenDC (built from source) and densim side by side; one JSON line per scenario.

Scenarios:
  surf_week  OpenDC's CI benchmark (CIBenchmark.surfWeekBenchmark, .github/workflows/benchmark.yml): 6,295 tasks
             over 7 days on surf.json (277 hosts of 16 cores), allocation policy Mem; densim:
             examples/opendc/surf-week.yaml
  1K_tasks   OpenDC's TaskScalingBenchmark.taskScalingBenchmark1K (not in CI): 1,000 tasks on 100 one-core
             hosts; densim: examples/opendc/1k-tasks.yaml
(surf_month and surf_halfyear, the other two CI workloads, are not in the stored snapshot of OpenDC.)

OpenDC is built from its sources (benchmarks/peers/opendc: extract.sh + pom.xml, Maven, JDK >= 21) on first use and
runs OpenDC's own experiment file through OpenDC's own experiment runner (opendc/src/.../CiRun.kt). Each simulator
runs in its own process twice: a cold process with one run, measured from outside (process wall, CPU = user + system
of all threads, peak RSS from wait4), and a process with 1 warm-up + N timed runs (JMH's CI set-up is single-shot,
1 warm-up + 5 measured iterations, in one JVM); densim repeats its run in one Python process the same way.
What both computed comes from each one's own results: OpenDC's exported host.parquet (energy_usage summed over
hosts; the experiment's export interval of 9,999,999 s means the only export is the one OpenDC's ComputeService
makes when the last task is done, covering the whole run) and service.parquet (tasks completed / terminated, its
timestamp = the simulated end, counted from the first submission); densim's run summary.

    make -C benchmarks/peers opendc          # both scenarios
    PYTHONPATH=src python benchmarks/peers/opendc_run.py --scenarios surf_week --warm 5
    ... --reuse-peer    reuse OpenDC results saved in benchmarks/peers/out/ for the same scenario and --warm
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import ROOT, measured  # noqa: E402

ODC = HERE / "opendc"
CI_RUN = ODC / "build" / "ci-run"  # OpenDC's module folder as far as the runs need it (extract.sh)
MAIN_CLASS = "densim.peers.opendc.CiRunKt"
DRIVER_CLASS = ODC / "target" / "classes" / "densim" / "peers" / "opendc" / "CiRunKt.class"
DEFAULT_GIT_DIR = "/work/.mirror/atlarge-research+opendc/repo"
DEFAULT_JDKS = ["/usr/lib/jvm/temurin-25-jdk-amd64", "/usr/lib/jvm/temurin-21-jdk-amd64", "/usr/lib/jvm/java-21-openjdk-amd64"]
JMH = "src/jmh/resources"
SCENARIOS = {
    "surf_week": {"experiment": f"{JMH}/experiments/workloadScaling/surf_week.json",
                  "trace": f"{JMH}/workloadTraces/workloadScaling/surf_week",
                  "example": "examples/opendc/surf-week.yaml", "opendc_benchmark": "CIBenchmark.surfWeekBenchmark"},
    "1K_tasks": {"experiment": f"{JMH}/experiments/taskScaling/experiment_1K.json",
                 "trace": f"{JMH}/workloadTraces/taskScaling/1K_tasks",
                 "example": "examples/opendc/1k-tasks.yaml", "opendc_benchmark": "TaskScalingBenchmark.taskScalingBenchmark1K"},
}


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def java_version(java_home: Path) -> int:
    out = subprocess.run([str(java_home / "bin" / "java"), "-XshowSettings:properties", "-version"],
                         capture_output=True, text=True, check=True).stderr
    for line in out.splitlines():
        if "java.specification.version" in line:
            return int(line.split("=")[1].strip().split(".")[0])
    raise SystemExit(f"cannot tell the Java version of {java_home}")


def pick_java_home(arg: str | None) -> Path:
    """A JDK >= 21 (OpenDC's gradle/libs.versions.toml: java = "21"): --java-home, $OPENDC_JAVA_HOME, a known one, $JAVA_HOME."""
    for explicit in (arg, os.environ.get("OPENDC_JAVA_HOME")):  # one that was asked for is used or refused
        if explicit:
            if not (Path(explicit) / "bin" / "java").exists():
                raise SystemExit(f"no JDK at {explicit} (no bin/java)")
            if (v := java_version(Path(explicit))) < 21:
                raise SystemExit(f"OpenDC needs a JDK >= 21; {explicit} is Java {v}")
            return Path(explicit)
    for c in [*DEFAULT_JDKS, os.environ.get("JAVA_HOME")]:
        if c and (Path(c) / "bin" / "java").exists() and java_version(Path(c)) >= 21:
            return Path(c)
    raise SystemExit("OpenDC needs a JDK >= 21: none found; give one with --java-home or OPENDC_JAVA_HOME")


def ensure_built(git_dir: str, java_home: Path) -> str:
    """Extract OpenDC's sources (once) and build them with Maven (when the driver's classes are missing or stale)."""
    commit_file = ODC / "build" / "src" / "COMMIT"
    if not commit_file.exists() or not (CI_RUN / JMH).exists():
        if not Path(git_dir).exists():
            raise SystemExit(f"no git copy of atlarge-research/opendc at {git_dir}: give one with --opendc-git or OPENDC_GIT_DIR")
        subprocess.run(["sh", str(ODC / "extract.sh"), git_dir], check=True)
    inputs = [ODC / "pom.xml", *(ODC / "src").rglob("*.kt"), commit_file]
    if not DRIVER_CLASS.exists() or DRIVER_CLASS.stat().st_mtime < max(p.stat().st_mtime for p in inputs):
        env = dict(os.environ, JAVA_HOME=str(java_home))
        # one thread: Kotlin compilation is heavy and the machine is shared
        subprocess.run(["mvn", "-q", "-B", "-T", "1", "package"], cwd=ODC, check=True, env=env)
    return commit_file.read_text().strip()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def densim_trace_dir(example: Path) -> Path:
    import yaml

    doc = yaml.safe_load(example.read_text())
    return (example.parent / doc["vms"][0]["trace"]["path"]).resolve()


def same_trace(name: str) -> bool:
    """OpenDC's trace files (from its source tree) and the densim example's are the same bytes."""
    peer = CI_RUN / SCENARIOS[name]["trace"]
    ours = densim_trace_dir(ROOT / SCENARIOS[name]["example"])
    return all(sha256(peer / f) == sha256(ours / f) for f in ("fragments.parquet", "tasks.parquet"))


def opendc_outputs(folder: Path) -> dict:
    """Tasks, simulated end and energy from OpenDC's own exported parquet files."""
    import duckdb

    runs = sorted(folder.glob("raw-output/*/seed=*"))
    if len(runs) != 1:
        raise SystemExit(f"expected one OpenDC run under {folder}/raw-output, found {len(runs)}")
    d = runs[0]
    total, completed, terminated, end_ms, exports = duckdb.sql(
        f"select arg_max(tasks_total, timestamp), arg_max(tasks_completed, timestamp), arg_max(tasks_terminated, timestamp),"
        f" max(timestamp), count(*) from '{d}/service.parquet'").fetchall()[0]
    host_j, hosts, host_rows = duckdb.sql(
        f"select sum(energy_usage), count(distinct host_name), count(*) from '{d}/host.parquet'").fetchall()[0]
    (source_j,) = duckdb.sql(f"select sum(energy_usage) from '{d}/powerSource.parquet'").fetchall()[0]
    return {"tasks_total": total, "tasks_completed": completed, "tasks_terminated": terminated,
            "simulated_end_s": end_ms / 1000.0, "energy_kwh": host_j / 3.6e6,
            "energy_kwh_power_source": source_j / 3.6e6, "hosts": hosts, "host_rows": host_rows, "service_exports": exports}


def run_opendc(name: str, iterations: int, java_home: Path, java_opts: list[str], keep: Path | None) -> dict:
    cp = f"{ODC / 'target' / 'classes'}{os.pathsep}{ODC / 'target' / 'lib' / '*'}"
    cmd = [str(java_home / "bin" / "java"), *java_opts, "-cp", cp, MAIN_CLASS,
           "--experiment", SCENARIOS[name]["experiment"], "--iterations", str(iterations)]
    if keep is not None:
        shutil.rmtree(keep, ignore_errors=True)
        cmd += ["--keep-output", str(keep)]
    before = load()
    cwd = os.getcwd()
    os.chdir(CI_RUN)  # the experiment file names its topology and trace relative to OpenDC's module folder
    try:
        res, wall, rss, cpu = measured(cmd)
    finally:
        os.chdir(cwd)
    res.update(process_wall_s=round(wall, 3), process_cpu_s=round(cpu, 3), peak_rss_mib=round(rss, 1),
               java_opts=java_opts, load_before=before, load_after=load())
    if keep is not None:
        res["results"] = opendc_outputs(CI_RUN / res["output_folder"])
    return res


def run_densim(name: str, repeats: int) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    before = load()
    res, wall, rss, cpu = measured([sys.executable, str(ODC / "densim_side.py"), str(ROOT / SCENARIOS[name]["example"]),
                                    str(repeats)], env=env)
    res.update(process_wall_s=round(wall, 3), process_cpu_s=round(cpu, 3), peak_rss_mib=round(rss, 1),
               load_before=before, load_after=load())
    return res


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def rel(a: float, b: float) -> float:
    """(a - b) / b, densim against OpenDC."""
    return (a - b) / b if b else float("nan")


def compare(ds_cold: dict, odc_cold: dict, ds_warm: dict | None, odc_warm: dict | None) -> dict:
    """What both computed, side by side, and the speed-ups (OpenDC / densim)."""
    r = odc_cold["results"]
    out = {
        "speedup_process_wall_cold": round(odc_cold["process_wall_s"] / ds_cold["process_wall_s"], 1),
        "speedup_process_cpu_cold": round(odc_cold["process_cpu_s"] / ds_cold["process_cpu_s"], 1),
        "speedup_in_process_cold": round((odc_cold["setup_s"][0] + odc_cold["run_s"][0]) / ds_cold["wall_s"][0], 1),
        "memory_ratio_opendc_over_densim": round(odc_cold["peak_rss_mib"] / ds_cold["peak_rss_mib"], 2),
        "tasks_completed": {"densim": ds_cold["tasks_completed"], "opendc": r["tasks_completed"],
                            "opendc_terminated": r["tasks_terminated"], "tasks": r["tasks_total"]},
        "simulated_end_s": {"densim": ds_cold["simulated_end_s"], "opendc": r["simulated_end_s"],
                            "rel_diff": rel(ds_cold["simulated_end_s"], r["simulated_end_s"])},
        "energy_kwh": {"densim": ds_cold["energy_kwh"], "opendc": r["energy_kwh"],
                       "rel_diff": rel(ds_cold["energy_kwh"], r["energy_kwh"])},
    }
    if ds_warm and odc_warm:
        # iteration 1 is the warm-up (JMH: @Warmup(iterations = 1)); the rest are timed
        odc_t = [s + x for s, x in zip(odc_warm["setup_s"][1:], odc_warm["run_s"][1:], strict=True)]
        ds_t = ds_warm["wall_s"][1:]
        out.update(opendc_warm_mean_s=round(mean(odc_t), 3), opendc_warm_min_s=round(min(odc_t), 3),
                   densim_warm_mean_s=round(mean(ds_t), 3), densim_warm_min_s=round(min(ds_t), 3),
                   speedup_warm_mean=round(mean(odc_t) / mean(ds_t), 1))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default="surf_week,1K_tasks")
    ap.add_argument("--warm", type=int, default=5, help="timed runs after one warm-up in one process (0: cold runs only)")
    ap.add_argument("--reuse-peer", action="store_true")
    ap.add_argument("--java-opt", action="append", default=[])
    ap.add_argument("--java-home", help="a JDK >= 21 for building and running OpenDC")
    ap.add_argument("--opendc-git", default=os.environ.get("OPENDC_GIT_DIR", DEFAULT_GIT_DIR),
                    help="a git copy (bare or not) of atlarge-research/opendc holding commit 691036de")
    ap.add_argument("--only", choices=["both", "opendc", "densim"], default="both")
    args = ap.parse_args()
    if args.warm < 0:
        raise SystemExit(f"--warm must be >= 0, got {args.warm}")
    names = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    for n in names:
        if n not in SCENARIOS:
            raise SystemExit(f"unknown scenario {n!r}: one of {', '.join(SCENARIOS)}")
    outdir = HERE / "out"
    outdir.mkdir(exist_ok=True)
    commit = None
    java_home = None
    if args.only != "densim":
        java_home = pick_java_home(args.java_home)
        commit = ensure_built(args.opendc_git, java_home)
    for name in names:
        saved = outdir / f"opendc-{name}-warm{args.warm}.json"
        odc = ds = None
        if args.only in ("both", "opendc"):
            if args.reuse_peer and saved.exists():
                odc = json.loads(saved.read_text())
                odc["reused_from"] = str(saved.relative_to(ROOT))
            else:
                cold = run_opendc(name, 1, java_home, args.java_opt, keep=ODC / "build" / f"out-{name}")
                warm = run_opendc(name, 1 + args.warm, java_home, args.java_opt, keep=None) if args.warm else None
                odc = {"commit": commit, "benchmark": SCENARIOS[name]["opendc_benchmark"],
                       "java": cold["java"], "cold": cold, "warm": warm}
                saved.write_text(json.dumps(odc) + "\n")
        if args.only in ("both", "densim"):
            ds = {"cold": run_densim(name, 1), "warm": run_densim(name, 1 + args.warm) if args.warm else None}
            (outdir / f"densim-opendc-{name}-warm{args.warm}.json").write_text(json.dumps(ds) + "\n")
        line: dict = {"scenario": name, "warm_iterations": args.warm, "densim_example": SCENARIOS[name]["example"]}
        if ds:
            line["densim"] = ds
        if odc:
            line["opendc"] = odc
            line["same_trace_bytes"] = same_trace(name)
        if ds and odc:
            line["comparison"] = compare(ds["cold"], odc["cold"], ds["warm"], odc["warm"])
            (outdir / f"opendc-vs-densim-{name}.json").write_text(json.dumps(line) + "\n")
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
