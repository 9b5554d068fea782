"""Results store: atomic task folders, deterministic files, resume after a kill, worker loss."""

import os
import signal
import subprocess
import sys
import time

import duckdb
from conftest import write_study

from densim.tools.sweep import load_sweep, run_sweep, store_files


def _run(study_path, out, **kw):
    return run_sweep(load_sweep(study_path), out=out, **kw)


def test_inprocess_store_layout_and_rerun_is_a_no_op(tmp_path, toy_env):
    path = write_study(tmp_path)
    out = tmp_path / "results"
    first = _run(path, out, backend="inprocess")
    assert first.ok and first.done == 8 and first.skipped == 0
    root = out / "toy"
    dirs = sorted(p.relative_to(root).as_posix() for p in root.glob("scenario=*/seed=*"))
    assert len(dirs) == 8
    before = store_files(root)
    again = _run(path, out, backend="inprocess")
    assert again.done == 0 and again.skipped == 8  # nothing recomputed
    assert store_files(root) == before
    # the store is queryable in place: mean host load rises with fewer hosts? no - it falls with overcommit
    con = duckdb.connect()
    rows = con.sql(
        f"""select s."placement.cpu_overcommit" as oc, avg(m.mean_host_load) as load
            from read_parquet('{root}/scenario=*/seed=*/summary.parquet', hive_partitioning=true) m
            join read_parquet('{root}/scenarios.parquet') s using (scenario)
            group by oc order by oc"""
    ).fetchall()
    # toy runner divides the load by the overcommit ratio: load(oc=1) = 2 x load(oc=2)
    assert rows[0][0] == 1 and rows[1][0] == 2
    assert abs(rows[0][1] - 2 * rows[1][1]) < 1e-12


def test_process_pool_equals_inprocess_and_survives_a_dead_worker(tmp_path, toy_env):
    path = write_study(tmp_path)
    a = _run(path, tmp_path / "a", backend="inprocess")
    die = tmp_path / "die"
    die.mkdir()
    toy_env.setenv("DENSIM_TOY_DIE_DIR", str(die))
    b = _run(path, tmp_path / "b", backend="process", workers=2)
    assert (die / "died").exists()  # one worker really was killed mid-task
    assert b.ok and b.retries >= 1 and b.done == 8
    assert store_files(tmp_path / "a" / "toy") == store_files(tmp_path / "b" / "toy")
    assert a.ok


_DRIVER = """
import sys
from densim.tools.sweep import load_sweep, run_sweep
run_sweep(load_sweep(sys.argv[1]), out=sys.argv[2], backend="process", workers=2)
"""


def test_killed_sweep_resumes_to_the_same_store_file_for_file(tmp_path, toy_env):
    path = write_study(tmp_path, reps=3)  # 12 tasks
    ref = _run(path, tmp_path / "ref", backend="inprocess")
    assert ref.done == 12
    toy_env.setenv("DENSIM_TOY_SLEEP", "0.4")
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-c", _DRIVER, str(path), str(out)], start_new_session=True, env=os.environ.copy())
    root = out / "toy"
    deadline = time.monotonic() + 180  # a hang guard only: 3 results come after ~5 s (12 tasks of 0.4 s, 2 workers)
    while len(list(root.glob("scenario=*/seed=*"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its pool workers, mid-sweep
    proc.wait()
    partial = len(list(root.glob("scenario=*/seed=*")))
    assert 3 <= partial < 12, partial
    # every visible task folder is complete (folders appear by rename only)
    for d in root.glob("scenario=*/seed=*"):
        assert {p.name for p in d.iterdir()} == {"task.json", "hosts.parquet", "summary.json", "summary.parquet"}
    toy_env.setenv("DENSIM_TOY_SLEEP", "0")
    resumed = _run(path, out, backend="process", workers=2)
    assert resumed.skipped == partial and resumed.done == 12 - partial
    assert not list(root.rglob(".*"))  # no temporaries left
    # file for file, byte for byte (runs.json, the timed run log, is excluded by store_files)
    assert store_files(root) == store_files(tmp_path / "ref" / "toy")
    assert (root / "runs.json").exists()
