"""A results store may come from someone else (a shared folder): its file and column names are data,
never SQL (issue 29). A hostile name is refused with one line naming the file, and nothing it
spells out is executed."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import write_study
from typer.testing import CliRunner

from densim.cli.main import app
from densim.errors import InputError
from densim.tools.sweep import load_sweep, run_sweep
from densim.tools.sweep.query import connect, run_query

runner = CliRunner()

HOSTILE = "x\" AS SELECT 1; COPY (SELECT 42) TO 'qinj.csv'; CREATE VIEW \"y"


def _store(tmp_path, toy_env):
    path = write_study(tmp_path, axes="  placement.cpu_overcommit: [1, 2]\n", reps=1)
    out = tmp_path / "results"
    assert run_sweep(load_sweep(path), out=out, backend="inprocess").ok
    return path, out, out / "toy"


@pytest.mark.parametrize("command", ["query", "report"])
def test_hostile_result_file_name_is_refused_not_executed(tmp_path, toy_env, monkeypatch, command):
    path, out, root = _store(tmp_path, toy_env)
    task = sorted(root.glob("scenario=*/seed=*"))[0]
    shutil.copy(task / "summary.parquet", task / f"{HOSTILE}.parquet")
    monkeypatch.chdir(tmp_path)  # where the injected COPY would write qinj.csv
    args = ["query", str(path), "--out", str(out), "SELECT count(*) FROM summary"] if command == "query" else \
        ["report", str(path), "--out", str(out), "--html", str(tmp_path / "r.html")]
    r = runner.invoke(app, args)
    assert not (tmp_path / "qinj.csv").exists()
    assert r.exit_code == 1, r.output
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "not a result file densim writes" in err[0] and "qinj.csv" in err[0], r.stderr
    assert not (tmp_path / "r.html").exists()


def test_hostile_column_names_are_quoted_not_executed(tmp_path, toy_env, monkeypatch):
    # a column in both scenarios.parquet and summary.parquet goes into the results view's EXCLUDE list
    _, _, root = _store(tmp_path, toy_env)
    # spliced raw, the old code ran: CREATE VIEW results AS SELECT s.*, m.* EXCLUDE ("scenario") FROM ...;
    # COPY (SELECT 42) TO 'qinj2.csv'; SELECT ("seed", "scenario") FROM ...
    col = "scenario\") FROM summary m JOIN scenarios s USING (scenario); COPY (SELECT 42) TO 'qinj2.csv'; SELECT (\"seed"
    for f in [root / "scenarios.parquet", *root.glob("scenario=*/seed=*/summary.parquet")]:
        t = pq.read_table(f)
        pq.write_table(t.append_column(col, pa.array([7] * t.num_rows, pa.int64())), f)
    monkeypatch.chdir(tmp_path)
    con = connect(root, verify=False)  # the task files changed size: skip that check here
    try:
        # the clashing column is kept once (from scenarios): 2 points x 1 replication
        assert con.execute(f'SELECT count(*), sum("{col.replace(chr(34), 2 * chr(34))}") FROM results').fetchall() == [(2, 14)]
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    finally:
        con.close()
    assert not (tmp_path / "qinj2.csv").exists()
    assert tables == {"scenarios", "summary", "hosts", "results"}


def test_result_file_that_links_outside_the_store_is_refused(tmp_path, toy_env):
    _, _, root = _store(tmp_path, toy_env)
    secret = tmp_path / "secret.parquet"
    pq.write_table(pa.table({"secret": ["TOPSECRET"]}), secret)
    task = sorted(root.glob("scenario=*/seed=*"))[0]
    (task / "evil.parquet").symlink_to(secret)
    with pytest.raises(InputError, match="not a regular file inside the results store"):
        run_query(root, "SELECT * FROM evil")


def test_result_file_named_like_a_join_view_is_refused(tmp_path, toy_env):
    # a runner's results.parquet would silently shadow (or clash with) the results join view
    _, _, root = _store(tmp_path, toy_env)
    task = sorted(root.glob("scenario=*/seed=*"))[0]
    shutil.copy(task / "summary.parquet", task / "results.parquet")
    with pytest.raises(InputError, match=r"results\.parquet.*not a result file densim writes"):
        run_query(root, "SELECT 1")


def test_plain_and_hyphenated_result_names_are_views(tmp_path, toy_env):
    _, _, root = _store(tmp_path, toy_env)
    for task in root.glob("scenario=*/seed=*"):
        shutil.copy(task / "hosts.parquet", task / "host-loads.v2.parquet")
    # the toy runner writes 2 hosts per task (BASE: one host group of count 2); 2 tasks -> 4 rows
    assert run_query(root, 'SELECT count(*) FROM "host-loads.v2"')[1] == [(4,)]
    assert run_query(root, "SELECT count(*) FROM hosts")[1] == [(4,)]
