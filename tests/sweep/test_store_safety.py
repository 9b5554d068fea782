"""The store acts only on its own folder, and never skips a point made from other inputs (issue 29).

* ``--fresh`` deletes, and a resumed sweep writes into, only a folder that carries the store's
  marker (``densim-store.json``, written when the store is created); any other folder is refused with
  one line naming it.
* Every finished task records what its results depend on (the resolved scenario's hash, the data
  files it reads, the runner, densim's version) in its ``task.json``: a task is skipped as done only
  when that matches the study now, with or without ``manifest.json``.
* An axis cannot set a loader field (``imports``, ``base_dir``), and ``1`` and ``1.0`` on one axis
  are one number listed twice (refused, as ``[1, 1]`` is).
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import BASE, write_study
from typer.testing import CliRunner

import densim
from densim.cli.main import app
from densim.errors import InputError
from densim.tools.sweep import load_sweep, run_sweep
from densim.tools.sweep.store import MANIFEST

MARKER = "densim-store.json"  # the store's marker file (densim.tools.sweep.store.MARKER)

runner = CliRunner()


def _sweep_cli(path, out, *extra):
    return runner.invoke(app, ["sweep", str(path), "--out", str(out), "--backend", "inprocess", "--no-progress", *extra])


def _one_error_line(r) -> str:
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("densim: error: "), r.stderr
    return err[0]


# ------------------------------------------------------------------------------ the store's marker


@pytest.mark.parametrize("fresh", [True, False], ids=["fresh", "resume"])
def test_a_users_folder_at_the_store_path_is_neither_deleted_nor_written(tmp_path, toy_env, fresh):
    path = write_study(tmp_path)
    out = tmp_path / "results"
    mine = out / "toy"  # the study is named toy: OUT/toy is where its store would go
    mine.mkdir(parents=True)
    (mine / "thesis.tex").write_text("four years of work\n")
    r = _sweep_cli(path, out, *(["--fresh"] if fresh else []))
    assert r.exit_code == 1, r.output
    line = _one_error_line(r)
    assert str(mine) in line and f"not a densim results store (no {MARKER} marker)" in line
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]  # untouched: no manifest, no scenario folders
    assert (mine / "thesis.tex").read_text() == "four years of work\n"


def test_fresh_deletes_a_store_and_an_empty_folder_is_used(tmp_path, toy_env):
    path = write_study(tmp_path)
    out = tmp_path / "results"
    (out / "toy").mkdir(parents=True)  # an empty folder: nothing to lose, it becomes the store
    assert run_sweep(load_sweep(path), out=out, backend="inprocess").done == 8  # 2 x 2 points x 2 replications
    root = out / "toy"
    assert json.loads((root / MARKER).read_text())["study"] == "toy"
    (root / "leftover.txt").write_text("x")
    again = run_sweep(load_sweep(path), out=out, backend="inprocess", fresh=True)
    assert again.done == 8 and again.skipped == 0
    assert not (root / "leftover.txt").exists() and (root / MARKER).is_file()


def test_a_store_written_before_the_marker_is_resumed(tmp_path, toy_env):
    path = write_study(tmp_path)
    out = tmp_path / "results"
    assert run_sweep(load_sweep(path), out=out, backend="inprocess").done == 8
    (out / "toy" / MARKER).unlink()  # as written by densim before the marker: its manifest names the study
    again = run_sweep(load_sweep(path), out=out, backend="inprocess")
    assert again.done == 0 and again.skipped == 8
    assert (out / "toy" / MARKER).is_file()


# ------------------------------------------------------------------------------ recorded inputs


@pytest.mark.parametrize("manifest", ["kept", "deleted"])
def test_changed_base_scenario_is_never_skipped_as_done(tmp_path, toy_env, manifest):
    path = write_study(tmp_path)
    out = tmp_path / "results"
    assert run_sweep(load_sweep(path), out=out, backend="inprocess").done == 8
    if manifest == "deleted":
        (out / "toy" / MANIFEST).unlink()
    (tmp_path / "base.yaml").write_text(BASE.replace("count: 6", "count: 9"))  # 9 VMs instead of 6: other results
    with pytest.raises(InputError, match="holds results of other inputs: the scenario changed"):
        run_sweep(load_sweep(path), out=out, backend="inprocess")
    r = _sweep_cli(path, out)
    assert r.exit_code == 1 and "--fresh" in _one_error_line(r)
    assert _sweep_cli(path, out, "--fresh").exit_code == 0  # what the message says to do


def test_changed_data_file_is_never_skipped_as_done(tmp_path, toy_env):
    # the base scenario names a data file (a 'file' key: resolved by the loader): its bytes are recorded
    path = write_study(tmp_path)
    (tmp_path / "base.yaml").write_text(BASE + "notes: {file: hosts.csv}\n")
    (tmp_path / "hosts.csv").write_text("name,cores\na,8\n")
    out = tmp_path / "results"
    assert run_sweep(load_sweep(path), out=out, backend="inprocess").done == 8
    (out / "toy" / MANIFEST).unlink()
    assert run_sweep(load_sweep(path), out=out, backend="inprocess").skipped == 8  # unchanged: all done
    (tmp_path / "hosts.csv").write_text("name,cores\na,16\n")
    with pytest.raises(InputError, match=r"the data file .*hosts\.csv changed"):
        run_sweep(load_sweep(path), out=out, backend="inprocess")


def test_other_densim_version_is_never_skipped_as_done(tmp_path, toy_env, monkeypatch):
    path = write_study(tmp_path)
    out = tmp_path / "results"
    assert run_sweep(load_sweep(path), out=out, backend="inprocess").done == 8
    (out / "toy" / MANIFEST).unlink()
    made_by = densim.__version__
    monkeypatch.setattr(densim, "__version__", "99.0.0")
    with pytest.raises(InputError, match=rf"made by densim {re.escape(made_by)}, this is densim 99\.0\.0"):
        run_sweep(load_sweep(path), out=out, backend="inprocess")


def test_task_without_recorded_inputs_is_never_skipped_as_done(tmp_path, toy_env):
    path = write_study(tmp_path)
    out = tmp_path / "results"
    assert run_sweep(load_sweep(path), out=out, backend="inprocess").done == 8
    tf = sorted((out / "toy").glob("scenario=*/seed=*/task.json"))[0]
    meta = json.loads(tf.read_text())
    del meta["inputs"]
    tf.write_text(json.dumps(meta))
    with pytest.raises(InputError, match="records no inputs"):
        run_sweep(load_sweep(path), out=out, backend="inprocess")


def test_inputs_are_recorded_per_point_and_per_task(tmp_path, toy_env):
    path = write_study(tmp_path)
    out = tmp_path / "results"
    study = load_sweep(path)
    assert run_sweep(study, out=out, backend="inprocess").done == 8
    for p in study.points:
        want = {"scenario_sha256": p.sha256, "data_sha256": {}, "runner": "toy", "densim": densim.__version__}
        assert p.inputs == want
        assert json.loads((out / "toy" / f"scenario={p.id}" / "scenario.json").read_text())["inputs"] == want
        for tf in (out / "toy" / f"scenario={p.id}").glob("seed=*/task.json"):
            assert json.loads(tf.read_text())["inputs"] == want


# ------------------------------------------------------------------------------ axes


@pytest.mark.parametrize(("axis", "values"), [("imports", '[["other.yaml"]]'), ("imports[0]", '["other.yaml"]'),
                                              ("base_dir", '["/tmp"]')])
def test_axis_cannot_set_a_loader_field(tmp_path, toy_env, axis, values):
    path = write_study(tmp_path, axes=f"  {axis}: {values}\n")
    r = _sweep_cli(path, tmp_path / "results")
    assert r.exit_code == 1, r.output
    line = _one_error_line(r)
    assert f"study.yaml:axes.{axis}: sets '{axis.split('[')[0]}'" in line
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("values", ["[1, 2, 1.0]", "[2.0, 2]", "[{a: 1}, {a: 1.0}]"])
def test_one_number_written_twice_on_an_axis_is_refused(tmp_path, toy_env, values):
    # 1 and 1.0 set the same over-commit: two scenario ids for one scenario, run twice and plotted twice
    path = write_study(tmp_path, axes=f"  placement.cpu_overcommit: {values}\n")
    with pytest.raises(InputError, match=r"axes\.placement\.cpu_overcommit: repeats a value: .* are the same number"):
        load_sweep(path)


def test_distinct_numbers_and_types_are_distinct_points(tmp_path, toy_env):
    path = write_study(tmp_path, axes="  placement.cpu_overcommit: [1, 1.5, 2]\n  placement.policy: [\"1\", first_fit]\n",
                       reps=1)
    assert len(load_sweep(path).points) == 6  # "1" (a string) is not the number 1


def test_fresh_refuses_a_link_to_a_store(tmp_path, toy_env):
    path = write_study(tmp_path)
    assert run_sweep(load_sweep(path), out=tmp_path / "real", backend="inprocess").done == 8
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "toy").symlink_to(tmp_path / "real" / "toy")
    r = _sweep_cli(path, tmp_path / "results", "--fresh")
    assert r.exit_code == 1 and "is a link" in _one_error_line(r)
    assert len(list((tmp_path / "real" / "toy").glob("scenario=*/seed=*"))) == 8  # the store behind it is kept
