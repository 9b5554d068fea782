"""The store checks each finished task's files on read; sweep options and sizes are checked up front."""

from __future__ import annotations

import json

import pytest
from conftest import write_study
from typer.testing import CliRunner

from densim.cli.main import app
from densim.errors import InputError
from densim.tools.sweep import load_sweep, run_sweep, store_files
from densim.tools.sweep.query import run_query
from densim.tools.sweep.store import verify_store
from densim.tools.sweep.expand import estimate_runs

runner = CliRunner()


def _store(tmp_path, toy_env, name="a"):
    path = write_study(tmp_path)
    out = tmp_path / name
    res = run_sweep(load_sweep(path), out=out, backend="inprocess")
    assert res.ok and res.done == 8
    return path, out, out / "toy"


def test_task_json_lists_each_file_with_size_and_digest(tmp_path, toy_env):
    _, _, root = _store(tmp_path, toy_env)
    d = next(root.glob("scenario=*/seed=*"))
    meta = json.loads((d / "task.json").read_text())
    assert set(meta["files"]) == {"hosts.parquet", "summary.json", "summary.parquet"}
    for name, info in meta["files"].items():
        assert info["bytes"] == (d / name).stat().st_size and len(info["sha256"]) == 64
    verify_store(root, deep=True)


@pytest.mark.parametrize("damage", ["delete", "truncate"])
def test_damaged_finished_task_is_reported_by_query_and_rerun_on_resume(tmp_path, toy_env, damage):
    path, out, root = _store(tmp_path, toy_env)
    ref = store_files(root)
    rows = run_query(root, "SELECT count(*) FROM summary")[1]
    assert rows == [(8,)]
    victim = sorted(root.glob("scenario=*/seed=*"))[3] / "summary.parquet"
    if damage == "delete":
        victim.unlink()
    else:
        victim.write_bytes(victim.read_bytes()[:100])
    # never silently fewer rows: the query names the damaged task and file
    with pytest.raises(InputError) as exc:
        run_query(root, "SELECT count(*) FROM summary")
    msg = exc.value.one_line()
    assert str(victim.parent) in msg and "summary.parquet" in msg and ("missing" if damage == "delete" else "truncated") in msg
    r = runner.invoke(app, ["query", str(path), "--out", str(out), "SELECT count(*) FROM summary"])
    assert r.exit_code == 1 and len(r.stderr.strip().splitlines()) == 1 and "finished task damaged" in r.stderr
    r = runner.invoke(app, ["report", str(path), "--out", str(out)])
    assert r.exit_code == 1 and "finished task damaged" in r.stderr
    # resuming runs that task again and gives the store of the undamaged run
    again = run_sweep(load_sweep(path), out=out, backend="inprocess")
    assert again.done == 1 and again.skipped == 7 and len(again.rerun) == 1
    assert store_files(root) == ref
    assert run_query(root, "SELECT count(*) FROM summary")[1] == [(8,)]


def test_task_folder_deleted_but_recorded_done_in_the_manifest(tmp_path, toy_env):
    import shutil

    _, _, root = _store(tmp_path, toy_env)
    d = sorted(root.glob("scenario=*/seed=*"))[0]
    shutil.rmtree(d)
    with pytest.raises(InputError, match="the task folder is missing"):
        run_query(root, "SELECT 1")


def test_runs_are_estimated_before_the_study_is_expanded(tmp_path):
    axes = "".join(f"  placement.params.p{i}: [{', '.join(str(v) for v in range(10))}]\n" for i in range(12))
    path = write_study(tmp_path, axes=axes, reps=3, runner="engine")
    with pytest.raises(InputError) as exc:
        load_sweep(path)  # 10^12 x 3 points: refused at once, not expanded
    assert "expands to 3,000,000,000,000 runs" in exc.value.one_line() and "--max-runs" in exc.value.one_line()
    small = write_study(tmp_path, axes="  placement.cpu_overcommit: [1, 2, 3]\n", reps=2, runner="engine")
    assert estimate_runs(load_sweep(small).spec) == 6
    r = runner.invoke(app, ["sweep", str(small), "--out", str(tmp_path / "r"), "--max-runs", "5"])
    assert r.exit_code == 1 and "expands to 6 runs" in r.stderr and "raise it with --max-runs" in r.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("reps", ["1000000000", "18446744073709551616", "1.5", "true"])
def test_replications_out_of_range(tmp_path, reps):
    path = write_study(tmp_path, runner="engine")
    path.write_text(path.read_text().replace("replications: 2", f"replications: {reps}"))
    r = runner.invoke(app, ["sweep", str(path), "--out", str(tmp_path / "r")])
    assert r.exit_code == 1 and "study.yaml:replications" in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args,code,words", [
    (["--workers", "0"], 2, "--workers"), (["-j", "-1"], 2, "-j"), (["--retries", "-1"], 2, "--retries"),
    (["--backend", "nope"], 2, "unknown backend 'nope'"), (["--max-runs", "0"], 2, "--max-runs"),
])
def test_bad_sweep_options(tmp_path, args, code, words):
    path = write_study(tmp_path, runner="engine")
    r = runner.invoke(app, ["sweep", str(path), "--out", str(tmp_path / "r"), *args])
    assert r.exit_code == code and words in r.output + r.stderr
    assert not (tmp_path / "r").exists()


def test_study_name_too_long_and_out_that_is_a_file(tmp_path):
    path = write_study(tmp_path, runner="engine")
    path.write_text(path.read_text().replace("name: toy", "name: " + "x" * 300))
    r = runner.invoke(app, ["sweep", str(path), "--out", str(tmp_path / "r")])
    assert r.exit_code == 1 and "study.yaml:name" in r.stderr
    path.write_text(path.read_text().replace("name: " + "x" * 300, "name: toy"))
    (tmp_path / "file").write_text("x")
    r = runner.invoke(app, ["sweep", str(path), "--out", str(tmp_path / "file"), "--backend", "inprocess"])
    assert r.exit_code == 1 and "cannot create the results store" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_query_on_a_store_without_results(tmp_path):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "manifest.json").write_text("{}")
    r = runner.invoke(app, ["query", str(tmp_path / "s"), "SELECT * FROM summary"])
    assert r.exit_code == 1 and len(r.stderr.strip().splitlines()) == 1 and "densim: error:" in r.stderr


# ------------------------------------------------------------ registry names and where it runs, up front


@pytest.mark.parametrize("axes,where,words", [
    ('  placement.policy: [first-fit, "no-such-policy"]\n', 'axes[placement.policy="no-such-policy"]:placement.policy',
     "unknown placement policy 'no-such-policy'; valid: best-fit, first-fit"),
    ('  cluster.hosts[0].power.model: [linear, "no-such-model"]\n',
     'axes[cluster.hosts[0].power.model="no-such-model"]:cluster.hosts[0].power.model', "Input should be 'linear'"),
])
def test_unknown_model_or_policy_in_an_axis_is_refused_before_anything_runs(tmp_path, axes, where, words):
    path = write_study(tmp_path, axes=axes, runner="engine")
    r = runner.invoke(app, ["sweep", str(path), "--out", str(tmp_path / "r"), "--backend", "inprocess"])
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 1 and len(lines) == 1 and lines[0].startswith(f"densim: error: {path}:{where}: ")
    assert words in lines[0], lines[0]
    assert not (tmp_path / "r").exists()


def test_unknown_runner_is_named_before_the_base_scenario_is_read(tmp_path):
    path = write_study(tmp_path, runner="no-such-runner")
    (tmp_path / "base.yaml").unlink()  # the runner's name is checked first
    r = runner.invoke(app, ["sweep", str(path), "--out", str(tmp_path / "r")])
    assert r.exit_code == 1 and r.stderr.startswith(f"densim: error: {path}:runner: unknown runner 'no-such-runner'")


@pytest.mark.parametrize("args,words", [
    (["--scheduler", "nope"], "--scheduler: 'nope' is not a Dask scheduler address such as tcp://HOST:8786: "
                              "missing port number in address 'nope'"),
    (["--scheduler", "tcp://host:99999"], "port 99999 is not in 1..65535"),
    (["--scheduler", "carrier://host:8786"], "unknown scheme 'carrier'"),
    (["--backend", "inprocess", "--scheduler", "tcp://host:8786"],
     "--scheduler: runs the sweep on Dask, not with --backend inprocess; drop one of them"),
    (["--backend", "process", "--dask-local", "2"], "--dask-local: runs the sweep on Dask, not with --backend process"),
])
def test_where_it_runs_is_checked_before_the_study_is_read(tmp_path, args, words):
    # the address used to be tried after the study was expanded and its store folder made
    path = write_study(tmp_path, runner="engine")
    path.write_text("not: [a study")  # never read: the options fail first
    r = runner.invoke(app, ["sweep", str(path), "--out", str(tmp_path / "r"), *args])
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("densim: error: --") and words in lines[0], r.stderr
    assert not (tmp_path / "r").exists()
