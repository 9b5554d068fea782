"""DuckDB over a results store, in place.

Views (one per result file name found in the store, plus two joins):

* ``scenarios``: one row per sweep point: ``scenario`` id, ``point`` and one column per axis.
* ``summary``, ``hosts``, ``vms``, ``host_steps``, ``vm_steps``, ...: every ``<name>.parquet`` of
  every task, with the ``scenario`` and ``seed`` columns of its folder (Hive partitioning).
* ``results``: ``summary`` joined with ``scenarios``: one row per task, axis values first.
"""

from __future__ import annotations

from pathlib import Path

from densim.errors import InputError
from densim.tools.sweep.store import MANIFEST, SCENARIOS, read_manifest, verify_store


def resolve_store(study: str | Path, out: str | Path = "results") -> Path:
    """A study file, a store folder, or a study name under ``out``."""
    p = Path(study)
    try:
        p.exists()
    except OSError as exc:  # a name too long for the file system
        raise InputError(str(study)[:80], "", f"not a usable file name: {exc.strerror}") from None
    if p.is_dir() and (p / MANIFEST).exists():
        return p
    if p.exists() and not p.is_dir() and not p.is_file():
        raise InputError(p, "", "is not a regular file (a device or FIFO), expected a study file or a store folder")
    if p.is_file():
        from densim.spec.sweep import load_sweep_spec

        cand = Path(out) / load_sweep_spec(p).name
    else:
        cand = Path(out) / str(study)
    if not (cand / MANIFEST).exists():
        raise InputError(str(study), "", f"no results store at {cand} (run 'densim sweep' first)")
    return cand


def _sql_str(path: Path | str) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def connect(store: str | Path, *, verify: bool = True):
    """A DuckDB connection with the store's views defined.

    The store is checked first (:func:`~densim.tools.sweep.store.verify_store`): a finished task
    with a deleted or truncated file is an error naming it, never a query with fewer rows.
    """
    import duckdb

    root = Path(store).resolve()
    if verify:
        verify_store(root)
    try:
        return _views(duckdb.connect(), root)
    except duckdb.Error as exc:
        raise InputError(root, "", f"cannot read the results store: {str(exc).splitlines()[0][:200]}") from None


def _views(con, root: Path):
    con.execute(f"CREATE VIEW scenarios AS SELECT * FROM read_parquet({_sql_str(root / SCENARIOS)})")
    names = sorted({p.stem for p in root.glob("scenario=*/seed=*/*.parquet")})
    for name in names:
        glob = root / "scenario=*" / "seed=*" / f"{name}.parquet"
        con.execute(
            f'CREATE VIEW "{name}" AS SELECT * FROM read_parquet({_sql_str(glob)}, hive_partitioning = true, '
            "union_by_name = true, hive_types = {'scenario': 'VARCHAR', 'seed': 'UBIGINT'})"
        )
    if "summary" in names:
        axis_cols = [r[0] for r in con.execute("DESCRIBE scenarios").fetchall()]
        sum_cols = [r[0] for r in con.execute("DESCRIBE summary").fetchall()]
        clash = [c for c in sum_cols if c in axis_cols]
        exclude = ", ".join(f'"{c}"' for c in clash)
        con.execute(f"CREATE VIEW results AS SELECT s.*, m.* EXCLUDE ({exclude}) FROM summary m JOIN scenarios s USING (scenario)")
    return con


def manifest(store: str | Path) -> dict:
    return read_manifest(store)


# statement kinds a read-only query may contain (SELECT covers FROM-first, DESCRIBE, SHOW, SUMMARIZE)
READ_ONLY = ("SELECT", "EXPLAIN")


def run_query(store: str | Path, sql: str, *, allow_writes: bool = False):
    """Run ``sql`` over the store; returns (column names, rows).

    Unless ``allow_writes``, every statement must be a query (SELECT/EXPLAIN): COPY, EXPORT,
    ATTACH, INSTALL/LOAD, CREATE, SET, PRAGMA and the rest are refused, so a query received from
    someone else cannot write files or change DuckDB's settings.
    """
    import duckdb

    if not sql.strip():
        raise InputError("query", "", "the SQL is empty")
    con = connect(store)
    try:
        if not allow_writes:
            kinds = [st.type.name for st in con.extract_statements(sql)]
            bad = [k for k in kinds if k not in READ_ONLY]
            if bad:
                raise InputError("query", "", f"{bad[0]} statements are not allowed: densim query is read-only "
                                              "(SELECT/EXPLAIN); pass --allow-writes to run them")
        cur = con.execute(sql)
    except duckdb.Error as exc:
        raise InputError("query", "", str(exc).splitlines()[0]) from None
    if cur is None or cur.description is None:  # a statement without a result (only with --allow-writes)
        return [], []
    return [d[0] for d in cur.description], cur.fetchall()
