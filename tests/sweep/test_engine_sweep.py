"""A sweep over the real engine, and the command line: sweep, query, report."""

import json

from conftest import write_study
from typer.testing import CliRunner

from densim.cli.main import app
from densim.tools.sweep import load_sweep, run_sweep, store_files


def test_engine_sweep_through_the_cli(tmp_path):
    # 2 over-commit ratios x 1 replication on the tiny base: 6 VMs x 2 vCPUs = 12 vCPUs, 2 hosts x 8 cores.
    path = write_study(tmp_path, axes="  placement.cpu_overcommit: [0.5, 1.0]\n", reps=1, runner="engine")
    out = tmp_path / "results"
    r = CliRunner().invoke(app, ["sweep", str(path), "--out", str(out), "--backend", "inprocess", "--no-progress"])
    assert r.exit_code == 0, r.output
    root = out / "toy"
    names = {p.name for p in root.glob("scenario=*/seed=*/*")}
    assert {"summary.json", "summary.parquet", "hosts.parquet", "vms.parquet", "task.json"} <= names
    # at over-commit 0.5 a host takes 4 vCPUs = 2 VMs: 2 hosts hold 4 of the 6 VMs; at 1.0 all 6 fit
    r = CliRunner().invoke(app, ["query", str(path), "--out", str(out), "--format", "json",
                                 'select "placement.cpu_overcommit" as oc, vms_unplaced from results order by oc'])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == [{"oc": 0.5, "vms_unplaced": 2}, {"oc": 1.0, "vms_unplaced": 0}]
    # the summary keeps its seed, which is the replication seed spawned from the root seed
    study = load_sweep(path)
    seeds = {json.loads(p.read_text())["seed"] for p in root.glob("scenario=*/seed=*/summary.json")}
    assert seeds == set(study.seeds)
    # rerun: nothing recomputed, same bytes
    before = store_files(root)
    again = run_sweep(study, out=out, backend="inprocess")
    assert again.done == 0 and store_files(root) == before
    # report: tables and plots, plotly.js loaded once from plotly.min.js beside it (issue 31)
    r = CliRunner().invoke(app, ["report", str(path), "--out", str(out), "-m", "vms_unplaced", "-m", "totals.energy_kwh"])
    assert r.exit_code == 0, r.output
    html = (root / "report.html").read_text()
    assert html.count('<script src="plotly.min.js">') == 1 and "plotly.js v" not in html
    assert "plotly.js v" in (root / "plotly.min.js").read_text()
    assert html.count("Plotly.newPlot") == 2  # one figure per metric
    # readable labels, the field names (for densim query) as the headers' titles
    assert '<th title="vms_unplaced">VMs unplaced</th>' in html
    assert '<th title="placement.cpu_overcommit">CPU over-commit</th>' in html
    assert "infeasible: 2 VMs unplaced" in html  # over-commit 0.5


def test_bad_study_is_one_line_and_exit_1(tmp_path):
    path = write_study(tmp_path, axes="  placement.cpu_overcommit: [1, 1]\n")
    r = CliRunner().invoke(app, ["sweep", str(path), "--out", str(tmp_path / "r"), "--no-progress"])
    assert r.exit_code == 1
    assert "study.yaml:axes: axis 'placement.cpu_overcommit' repeats a value" in r.output


def test_query_is_read_only_unless_allowed(tmp_path):
    # a query from someone else must not write outside the store: COPY/ATTACH/INSTALL/CREATE/SET are refused
    path = write_study(tmp_path, axes="  placement.cpu_overcommit: [1.0]\n", reps=1, runner="engine")
    out = tmp_path / "results"
    assert CliRunner().invoke(app, ["sweep", str(path), "--out", str(out), "--backend", "inprocess", "--no-progress"]).exit_code == 0
    target = tmp_path / "stolen.csv"
    for sql in (f"COPY (SELECT * FROM results) TO '{target}'", f"ATTACH '{tmp_path / 'x.db'}' AS x",
                "INSTALL httpfs", "CREATE TABLE t AS SELECT 1", "SET threads = 1",
                f"SELECT 1; COPY (SELECT 1) TO '{target}'"):
        r = CliRunner().invoke(app, ["query", str(path), "--out", str(out), sql])
        assert r.exit_code == 1, (sql, r.output)
        assert "read-only" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not target.exists()
    # reading is fine, and so is writing when the user says so
    r = CliRunner().invoke(app, ["query", str(path), "--out", str(out), "--format", "json", "SELECT count(*) AS n FROM results"])
    assert r.exit_code == 0 and json.loads(r.output) == [{"n": 1}]
    r = CliRunner().invoke(app, ["query", str(path), "--out", str(out), "--allow-writes",
                                 f"COPY (SELECT 1 AS one) TO '{target}' (HEADER)"])
    assert r.exit_code == 0, r.output
    assert target.read_text().split() == ["one", "1"]
