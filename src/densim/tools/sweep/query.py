"""DuckDB over a results store, in place, read-only.

Views (one per result file name found in the store, plus two joins):

* ``scenarios``: one row per sweep point: ``scenario`` id, ``point`` and one column per axis.
* ``summary``, ``hosts``, ``vms``, ``host_steps``, ``vm_steps``, ...: every ``<name>.parquet`` of
  every task, with the ``scenario`` and ``seed`` columns of its folder (Hive partitioning).
* ``results``: ``summary`` joined with ``scenarios``: one row per task, axis values first.

Safety (a query or a store may come from someone else):

* the views are registered through DuckDB's Python API with the file paths passed as parameters:
  no file or column name of the store is ever spliced into SQL text;
* then the connection is locked down: file access only to the store's own Parquet files
  (``enable_external_access=false`` with ``allowed_paths``), no extension install or autoload, no
  spilling to disk, a memory limit, and ``lock_configuration`` so that no later statement can undo it;
* the user's SQL must be exactly one SELECT (or EXPLAIN [ANALYZE] of one), as DuckDB's own parser
  sees it; it runs under a time limit (the connection is interrupted from a timer) and at most
  ``max_rows`` rows are fetched (more is an error, never a silently cut table).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from densim.errors import InputError
from densim.tools.sweep.store import MANIFEST, SCENARIOS, read_manifest, verify_store

# limits of one ``densim query`` (options --timeout, --memory-limit, --max-rows)
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MEMORY_LIMIT = "2GB"
DEFAULT_MAX_ROWS = 100_000

# the names a result file may have (its view name): what densim and runner plug-ins write
_VIEW_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_RESERVED_VIEWS = ("scenarios", "results")


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


def ident(name: str) -> str:
    """``name`` as a quoted SQL identifier (any character, embedded quotes doubled)."""
    return '"' + str(name).replace('"', '""') + '"'


def connect(store: str | Path, *, verify: bool = True, sandbox: bool = True, memory_limit: str = DEFAULT_MEMORY_LIMIT):
    """A DuckDB connection with the store's views defined.

    The store is checked first (:func:`~densim.tools.sweep.store.verify_store`): a finished task
    with a deleted or truncated file is an error naming it, never a query with fewer rows.
    With ``sandbox`` (the default) the connection can then read the store's own Parquet files
    and nothing else, and cannot change its settings or load extensions.
    """
    import duckdb

    root = Path(store).resolve()
    if verify:
        verify_store(root)
    tables = _result_files(root)
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False,
                                 "allow_community_extensions": False, "temp_directory": ""})
    try:
        _views(con, root, tables)
        if sandbox:
            allowed = [str(root / SCENARIOS)] + [str(f) for files in tables.values() for f in files]
            try:
                con.execute("SET memory_limit = $1", [memory_limit])
            except duckdb.Error as exc:
                con.close()
                raise InputError("--memory-limit", "", f"{memory_limit!r}: {str(exc).splitlines()[0]}") from None
            con.execute("SET allowed_paths = $1", [allowed])
            con.execute("SET enable_external_access = false")
            con.execute("SET lock_configuration = true")
    except duckdb.Error as exc:
        con.close()
        raise InputError(root, "", f"cannot read the results store: {str(exc).splitlines()[0][:200]}") from None
    return con


def _result_files(root: Path) -> dict[str, list[Path]]:
    """The store's result files by view name: regular files inside the store, names densim writes."""
    tables: dict[str, list[Path]] = {}
    for p in sorted(root.glob("scenario=*/seed=*/*.parquet")):
        name = p.stem
        if not _VIEW_NAME.fullmatch(name) or name in _RESERVED_VIEWS:
            raise InputError(p, "", "not a result file densim writes (a result name is letters, digits, '_', '-' "
                                    f"and '.', and not {' or '.join(_RESERVED_VIEWS)}); remove it from the store")
        real = p.resolve()
        if p.is_symlink() or not real.is_file() or not real.is_relative_to(root):
            raise InputError(p, "", "not a regular file inside the results store (a link or a folder); remove it")
        tables.setdefault(name, []).append(real)
    scen = root / SCENARIOS
    if scen.is_symlink() or not scen.resolve().is_relative_to(root):
        raise InputError(scen, "", "not a regular file inside the results store (a link); rerun 'densim sweep'")
    return tables


def _views(con, root: Path, tables: dict[str, list[Path]]):
    """Register the views by the Python API: paths are query parameters, names are not SQL text."""
    con.sql("SELECT * FROM read_parquet($path)", params={"path": str(root / SCENARIOS)}).create_view("scenarios")
    for name, files in tables.items():
        con.sql("SELECT * FROM read_parquet($files, hive_partitioning = true, union_by_name = true, "
                "hive_types = {'scenario': 'VARCHAR', 'seed': 'UBIGINT'})",
                params={"files": [str(f) for f in files]}).create_view(name)
    if "summary" in tables:
        axis_cols = con.sql("SELECT * FROM scenarios").columns
        sum_cols = con.sql("SELECT * FROM summary").columns
        clash = [c for c in sum_cols if c in axis_cols]
        exclude = ", ".join(ident(c) for c in clash)
        con.execute(f"CREATE VIEW results AS SELECT s.*, m.* EXCLUDE ({exclude}) FROM summary m JOIN scenarios s USING (scenario)")
    return con


def manifest(store: str | Path) -> dict:
    return read_manifest(store)


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def _explained(text: str):
    """The type of the one statement an EXPLAIN [ANALYZE] / EXPLAIN (options) statement explains."""
    import duckdb

    toks = [(pos, kind) for pos, kind in duckdb.tokenize(text) if kind != duckdb.token_type.comment]
    ends = [p for p, _ in toks[1:]] + [len(text)]
    words = [text[p:e].strip() for (p, _), e in zip(toks, ends)]
    if not words or words[0].upper() != "EXPLAIN":
        return None
    i = 1
    if i < len(words) and words[i].upper() in ("ANALYZE", "ANALYSE"):
        i += 1
    elif i < len(words) and words[i].startswith("("):
        depth = 0
        while i < len(words):
            if toks[i][1] == duckdb.token_type.operator:
                depth += words[i].count("(") - words[i].count(")")
            i += 1
            if depth <= 0:
                break
    if i >= len(words):
        return None
    inner = duckdb.extract_statements(text[toks[i][0]:])
    return inner[0].type if len(inner) == 1 else None


def check_read_only(sql: str) -> None:
    """Refuse anything but exactly one SELECT (or EXPLAIN [ANALYZE] of one SELECT), by DuckDB's parser."""
    import duckdb

    try:
        stmts = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise InputError("query", "", _first_line(exc)) from None
    if not stmts:
        raise InputError("query", "", "the SQL holds no statement")
    if len(stmts) > 1:
        raise InputError("query", "", f"the SQL holds {len(stmts)} statements: densim query is read-only and runs "
                                      "exactly one SELECT")
    st = stmts[0]
    kind, what = st.type, st.type.name
    if kind == duckdb.StatementType.EXPLAIN:
        try:
            kind = _explained(st.query)
        except duckdb.Error:
            kind = None
        what = f"EXPLAIN of {kind.name}" if kind is not None else "this EXPLAIN"
    if kind != duckdb.StatementType.SELECT:
        raise InputError("query", "", f"{what} statements are not allowed: densim query is read-only (one SELECT, "
                                      "or EXPLAIN of one); pass --allow-writes to run them")


def run_query(store: str | Path, sql: str, *, allow_writes: bool = False, timeout_s: float = DEFAULT_TIMEOUT_S,
              memory_limit: str = DEFAULT_MEMORY_LIMIT, max_rows: int = DEFAULT_MAX_ROWS):
    """Run ``sql`` over the store; returns (column names, rows).

    Unless ``allow_writes``, the SQL must be one SELECT (or EXPLAIN of one), and it runs on a
    connection that reads the store's Parquet files and nothing else (:func:`connect`), so a query
    received from someone else can neither read nor write other files nor change DuckDB's settings.
    Always: at most ``timeout_s`` seconds, ``memory_limit`` of memory and ``max_rows`` rows, each
    exceeded limit an :class:`InputError` naming it.
    """
    import duckdb

    if not sql.strip():
        raise InputError("query", "", "the SQL is empty")
    if not (isinstance(timeout_s, (int, float)) and timeout_s > 0):
        raise InputError("--timeout", "", f"must be a number of seconds > 0, got {timeout_s!r}")
    if not (isinstance(max_rows, int) and max_rows >= 1):
        raise InputError("--max-rows", "", f"must be a whole number >= 1, got {max_rows!r}")
    if not allow_writes:
        check_read_only(sql)
    con = connect(store, sandbox=not allow_writes, memory_limit=memory_limit)
    if allow_writes:
        try:
            con.execute("SET memory_limit = $1", [memory_limit])
        except duckdb.Error as exc:
            con.close()
            raise InputError("--memory-limit", "", f"{memory_limit!r}: {_first_line(exc)}") from None
    fired = threading.Event()

    def stop() -> None:
        fired.set()
        con.interrupt()

    timer = threading.Timer(float(timeout_s), stop)
    timer.daemon = True
    timer.start()
    try:
        if allow_writes:
            cur = con.execute(sql)
            if cur is None or cur.description is None:  # a statement without a result
                return [], []
            cols = [d[0] for d in cur.description]
            rows = cur.fetchmany(max_rows + 1)
        else:
            rel = con.sql(sql)
            cols = list(rel.columns)
            rows = rel.limit(max_rows + 1).fetchall()
    except duckdb.InterruptException:
        raise InputError("query", "", f"stopped after the time limit of {timeout_s:g} s (--timeout)") from None
    except duckdb.OutOfMemoryException:
        raise InputError("query", "", f"needs more memory than the limit of {memory_limit} (--memory-limit)") from None
    except duckdb.PermissionException as exc:
        raise InputError("query", "", "densim query reads the results store's own files only: "
                                      f"{_first_line(exc)}") from None
    except duckdb.Error as exc:
        if fired.is_set():
            raise InputError("query", "", f"stopped after the time limit of {timeout_s:g} s (--timeout)") from None
        raise InputError("query", "", _first_line(exc)) from None
    finally:
        timer.cancel()
        timer.join()  # an interrupt under way finishes before the connection closes
        con.close()
    if len(rows) > max_rows:
        raise InputError("query", "", f"the result has more than {max_rows:,} rows (--max-rows); add a LIMIT or an "
                                      "aggregate, or raise --max-rows")
    return cols, rows
