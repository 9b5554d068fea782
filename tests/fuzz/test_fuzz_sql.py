"""Hostile SQL through ``densim query`` (issue 29): every statement that could write a file, read a
file outside the store, load code or change DuckDB's settings is refused with one line
``densim: error: ...`` and exit status 1, and leaves no file behind; a runaway query is stopped by
the time, memory or row limit. Benign queries of every read-only form still run.

The cases are a fixed list per class (not random): each is a known way round a naive check, e.g.
``EXPLAIN ANALYZE COPY ...`` (EXPLAIN ANALYZE executes its statement) or ``read_text`` of a file
outside the store inside a plain SELECT (only the locked connection stops that one).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from densim.cli.main import app
from densim.tools.sweep.store import store_files
from tests.fuzz.inputs import _store_template

SECRET = "TOPSECRET-4711"


def _classes(t: Path, store: Path) -> dict[str, list[str]]:
    """Hostile statements by class; ``t`` is a scratch folder outside the store, ``store`` the store."""
    out = t / "stolen.csv"
    secret = t / "secret.txt"
    writes = {
        "copy": [f"COPY (SELECT 42) TO '{out}'", f"COPY results TO '{out}' (FORMAT parquet)",
                 f"COPY (SELECT * FROM summary) TO '{store}/x.csv'", f"COPY summary TO '{out}' (USE_TMP_FILE false)",
                 f"copy (select 1) to '{out}'"],
        "export": [f"EXPORT DATABASE '{t / 'exp'}'", f"EXPORT DATABASE '{t / 'exp'}' (FORMAT parquet)"],
        "attach": [f"ATTACH '{t / 'x.db'}' AS x", "ATTACH ':memory:' AS m", "DETACH memory",
                   f"COPY FROM DATABASE memory TO '{t / 'y.db'}'"],
        "extension": ["INSTALL httpfs", "LOAD httpfs", "FORCE INSTALL json", f"LOAD '{t / 'x.duckdb_extension'}'",
                      "INSTALL httpfs FROM community"],
        "set": ["SET threads = 1", "SET enable_external_access = true", "RESET enable_external_access",
                "SET GLOBAL allowed_paths = ['/']", "SET lock_configuration = false", "SET memory_limit = '100TB'",
                "SET VARIABLE x = 1"],
        "pragma": ["PRAGMA enable_profiling", "PRAGMA version", "PRAGMA threads = 1", "CALL pragma_version()",
                   "PRAGMA show_tables"],
        "create": ["CREATE TABLE t AS SELECT 1", "CREATE VIEW v AS SELECT 1", "CREATE MACRO m() AS 1",
                   "CREATE OR REPLACE VIEW results AS SELECT 1", "DROP VIEW summary", "INSERT INTO summary VALUES (1)",
                   "CREATE SECRET (TYPE s3, KEY_ID 'a', SECRET 'b')", "CHECKPOINT", "VACUUM", "BEGIN TRANSACTION",
                   "PREPARE p AS SELECT 1", "UPDATE summary SET seed = 0", "DELETE FROM summary"],
        "outside-read": [f"SELECT * FROM read_csv('{secret}')", f"SELECT * FROM read_text('{secret}')",
                         f"SELECT * FROM read_blob('{secret}')", f"SELECT * FROM read_csv_auto('{secret}')",
                         f"SELECT * FROM '{secret}'", f"FROM '{secret}'", "SELECT * FROM read_csv('/etc/passwd')",
                         "SELECT * FROM read_text('/etc/passwd')", "SELECT * FROM glob('/*')", "SELECT * FROM glob('/')",
                         f"SELECT * FROM glob('{store}/*')", f"SELECT * FROM read_text('{store}/manifest.json')",
                         f"SELECT * FROM read_text('{store}/../secret.txt')",
                         f"SELECT * FROM read_json('{t / 'secret.json'}')",
                         f"SELECT * FROM read_parquet('{t / '*.parquet'}')",
                         f"WITH s AS (SELECT * FROM read_text('{secret}')) SELECT * FROM s",
                         f"SELECT (SELECT content FROM read_text('{secret}')) AS c FROM summary",
                         f"SELECT * FROM query('SELECT * FROM read_text(''{secret}'')')",
                         "SELECT getenv('HOME')"],
        "multiple": ["SELECT 1; SELECT 2", f"SELECT 1; COPY (SELECT 1) TO '{out}'", "SELECT 1;; SELECT 2",
                     f"SELECT * FROM summary; ATTACH '{t / 'x.db'}'", "SET threads = 1; SELECT 1"],
    }
    explained = {}
    for cls in ("copy", "export", "attach", "extension", "set", "pragma", "create", "multiple"):
        stmts = writes[cls]
        explained[f"explain-{cls}"] = [f"EXPLAIN ANALYZE {s}" for s in stmts] + [f"EXPLAIN {s}" for s in stmts[:2]] + \
            [f"/* hidden */ EXPLAIN (ANALYZE, FORMAT json) {stmts[0]}", f"-- c\nexplain analyse {stmts[0]}"]
    explained["explain-outside-read"] = [f"EXPLAIN ANALYZE {s}" for s in writes["outside-read"]]
    return {**writes, **explained}


# the classes above, listed once so that each case is its own test id (the paths are filled in per run)
_CLASS_SIZES = {k: len(v) for k, v in _classes(Path("/t"), Path("/s")).items()}
CASES = [(cls, i) for cls, n in _CLASS_SIZES.items() for i in range(n)]


@pytest.fixture(scope="module")
def store():
    return _store_template()


def _query(store: Path, sql: str, *extra: str):
    return CliRunner().invoke(app, ["query", str(store / "study.yaml"), "--out", str(store / "results"),
                                    "--format", "csv", *extra, "--", sql])


@pytest.mark.parametrize(("cls", "i"), CASES, ids=[f"{c}-{i}" for c, i in CASES])
def test_hostile_statement_is_refused_and_writes_nothing(store, tmp_path, cls, i):
    t = tmp_path
    (t / "secret.txt").write_text(f"{SECRET}\n")
    (t / "secret.json").write_text(f'{{"k": "{SECRET}"}}\n')
    root = store / "results" / "toy"
    sql = _classes(t, root)[cls][i]
    before_scratch = sorted(p.name for p in t.iterdir())
    before_store = store_files(root)
    r = _query(store, sql)
    assert r.exit_code == 1, (sql, r.output)
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("densim: error: "), (sql, r.stderr)
    assert SECRET not in r.output and "root:" not in r.output and r.stdout == "", (sql, r.output)
    assert sorted(p.name for p in t.iterdir()) == before_scratch, sql  # no file written next to the secret
    assert store_files(root) == before_store, sql  # and none in the store


BENIGN = [
    ("SELECT count(*) AS n FROM results", "n\n2\n"),
    ("FROM scenarios SELECT count(*) AS n", "n\n2\n"),
    ("SELECT count(*) AS n FROM summary;", "n\n2\n"),
    ("/* a comment */ WITH a AS (SELECT * FROM hosts) SELECT count(DISTINCT scenario) AS n FROM a", "n\n2\n"),
    ("SELECT count(*) AS n FROM (DESCRIBE results) WHERE column_name = 'placement.cpu_overcommit'", "n\n1\n"),
    ("SELECT count(*) AS n FROM (SHOW TABLES) WHERE name IN ('results', 'scenarios', 'summary')", "n\n3\n"),
    ("SELECT count(*) AS n FROM (SUMMARIZE summary) WHERE column_name = 'seed'", "n\n1\n"),
]


@pytest.mark.parametrize(("sql", "want"), BENIGN)
def test_read_only_forms_still_run(store, sql, want):
    r = _query(store, sql)
    assert r.exit_code == 0, (sql, r.output)
    assert r.stdout == want


@pytest.mark.parametrize("sql", ["EXPLAIN SELECT * FROM results", "EXPLAIN ANALYZE SELECT count(*) FROM summary",
                                 "DESCRIBE summary", "SHOW TABLES", "SUMMARIZE results"])
def test_explain_and_describe_of_a_select_run(store, sql):
    r = _query(store, sql)
    assert r.exit_code == 0, (sql, r.output)
    assert r.stdout.count("\n") >= 2


RUNAWAY = [
    # 10^6 x 10^6 rows counted: about 10^12 row pairs, hours of work; the 1 s limit stops it
    ("SELECT count(*) FROM range(1000000) a, range(1000000) b", ["--timeout", "1"], "time limit of 1 s"),
    # a 2 x 10^8-element list is 1.6 GB, over a 64 MB limit (and nothing may spill to disk)
    ("SELECT list(range) FROM range(200000000)", ["--memory-limit", "64MB", "--timeout", "600"], "memory"),
    # 6 rows against a cap of 5: refused, not cut to 5
    ("SELECT * FROM range(6)", ["--max-rows", "5"], "more than 5 rows"),
    # an unbounded cross join is never fetched past the cap
    ("SELECT * FROM range(1000000) a, range(1000000) b", ["--max-rows", "10", "--timeout", "600"], "more than 10 rows"),
    ("SELECT 1", ["--memory-limit", "lots"], "--memory-limit"),
    ("SELECT 1", ["--timeout", "0"], "--timeout"),
]


@pytest.mark.parametrize(("sql", "opts", "msg"), RUNAWAY)
def test_runaway_query_is_stopped_by_a_limit(store, sql, opts, msg):
    r = _query(store, sql, *opts)
    assert r.exit_code == 1, (sql, r.output)
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("densim: error: ") and msg in err[0], r.stderr
    assert r.stdout == ""


def test_case_counts():
    # the classes the report lists, and that each holds cases (a class emptied by an edit is a lost check)
    assert all(n >= 2 for n in _CLASS_SIZES.values()), _CLASS_SIZES
