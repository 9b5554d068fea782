"""Hypothesis strategies that damage valid inputs.

A damage is a :class:`Damage`: its class (for the counts in README.md), a description, whether the
damaged input must be refused (``must_fail``: NaN in a required column, a NUL byte, a duplicate
YAML key, ...) or may still be valid (a truncation at a line end, a dropped optional column), and
``apply(path)``, which changes the target file in place (or replaces it with something that is not
a regular file).

Kinds of target:

* ``bytes`` (any file): truncate, flip bits, insert a NUL byte, re-encode (UTF-16, Latin-1), CRLF;
* ``table`` (CSV-like text): drop/duplicate a row or a column, replace a cell with NaN/inf/huge/
  negative/text/empty, change the separator;
* ``lines`` (one value per line, PlanetLab): replace, drop or duplicate a line;
* ``mapping`` (YAML/JSON): replace a leaf, drop a key, add an unknown key, a duplicate key, deep
  nesting, an alias bomb, a list instead of a mapping;
* ``parquet``: replace a cell (NaN, inf, -1, 1e30, 2^63, text, null), drop a column, zero rows,
  duplicate a row, an id no task has;
* ``xlsx``: replace a cell, delete or duplicate a row, delete a column, rename a sheet;
* ``kind`` (any file): a directory, a FIFO, a link to /dev/zero, random binary bytes, empty.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

# cell values: refused in any checked numeric column (required or optional) ...
BAD_ANYWHERE = ["inf", "-inf", "-1", "-2.5", "1e400", "-1e400", "1e308", "abc", "0x1A", "9223372036854775808",
                "-9223372036854775809", "1e30"]
# ... and in a required one also these (an optional column reads them as "not given")
BAD_REQUIRED = BAD_ANYWHERE + ["nan", "NaN", "", "None"]
MAYBE = ["0", "1", "1.5", "2147483648", "4294967296", " 7 ", "true", "1e-400", "00012", "+3"]
CELL_VALUES = BAD_REQUIRED + MAYBE

SEPARATORS = [",", ";", "\t", "|", ";\t", " "]


@dataclass
class Damage:
    cls: str
    detail: str
    must_fail: bool
    apply: Callable[[Path], None]

    def __repr__(self) -> str:  # hypothesis prints this for a failing example
        return f"Damage({self.cls}: {self.detail}, must_fail={self.must_fail})"


# ------------------------------------------------------------------------------------ targets


@dataclass
class TableSpec:
    """A CSV-like text file: separator, header, and which cells the reader must check."""

    sep: str = ","
    header: bool = True
    required: tuple[int, ...] = ()  # columns whose bad values must be refused (BAD_REQUIRED)
    optional: tuple[int, ...] = ()  # checked columns where blank/NaN means "not given" (BAD_ANYWHERE)
    id_col: int | None = None  # a blank id must be refused
    active_rows: tuple[int, ...] | None = None  # data rows (0-based) the checks apply to; None: all
    unique_rows: bool = False  # a duplicated data row is a duplicate id
    sep_ok: tuple[str, ...] = ()  # other separators the reader also accepts
    nonempty: bool = True  # an empty file must be refused
    drop_row_fails: bool = False  # any missing data row is an error (PlanetLab-like)
    header_required: bool = True  # without its header the file is an error (not an optional tab to skip)
    drop_required: tuple[int, ...] | None = None  # columns whose removal is an error (None: ``required``)


@dataclass
class Target:
    kind: str  # "table", "lines", "mapping", "parquet", "xlsx", "bytes"
    table: TableSpec | None = None
    text: bool = True  # a text file: a NUL byte or Latin-1 bytes must be refused
    json: bool = False  # mapping written as JSON
    strict_keys: bool = True  # an unknown top-level key must be refused
    parquet_required: tuple[str, ...] = ()
    parquet_unique: str | None = None
    parquet_ref: str | None = None  # column referencing another file's ids (an unknown id must be refused)
    parquet_nonempty: bool = True
    xlsx_sheets: dict[str, dict[str, Any]] = field(default_factory=dict)  # sheet -> {"required": [cols], "active": [rows]}
    required_file: bool = True  # replacing the file by a directory, FIFO, ... must be refused
    dir_skipped: bool = False  # a directory in its place is skipped (a folder of per-VM files)


# ------------------------------------------------------------------------------------ bytes


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


@st.composite
def bytes_damage(draw, path_bytes: bytes, target: Target) -> Damage:
    n = len(path_bytes)
    op = draw(st.sampled_from(["truncate", "flip", "nul", "encoding", "crlf"] if target.text else ["truncate", "flip"]))
    if op == "truncate":
        k = draw(st.integers(0, max(n - 1, 0)))
        empty_fails = target.table.nonempty if target.table is not None else target.kind in ("mapping", "parquet", "xlsx")
        return Damage("truncate", f"first {k} of {n} bytes", k == 0 and empty_fails and target.required_file,
                      lambda p: _write(p, path_bytes[:k]))
    if op == "flip":
        k = draw(st.integers(0, max(n - 1, 0)))
        mask = draw(st.sampled_from([0x01, 0x20, 0x80, 0xFF]))
        data = bytearray(path_bytes)
        if data:
            data[k] ^= mask
        return Damage("flip", f"byte {k} ^ 0x{mask:02x}", False, lambda p: _write(p, bytes(data)))
    if op == "nul":
        k = draw(st.integers(0, n))
        return Damage("nul", f"NUL at byte {k}", True, lambda p: _write(p, path_bytes[:k] + b"\x00" + path_bytes[k:]))
    if op == "encoding":
        enc = draw(st.sampled_from(["utf-16", "latin-1", "utf-8-sig"]))
        text = path_bytes.decode("utf-8")
        if enc == "latin-1":  # a non-ASCII character in a legacy encoding: not UTF-8
            k = draw(st.integers(0, len(text)))
            data = (text[:k] + "é" + text[k:]).encode("latin-1", errors="replace")
            return Damage("encoding", f"latin-1 with 'é' at char {k}", True, lambda p: _write(p, data))
        data = text.encode(enc)
        # UTF-16 is decoded by the inventory readers, refused by the YAML/JSON reader
        return Damage("encoding", enc, enc == "utf-16" and target.kind == "mapping", lambda p: _write(p, data))
    data = path_bytes.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    return Damage("crlf", "CRLF line ends", False, lambda p: _write(p, data))


@st.composite
def kind_damage(draw, target: Target) -> Damage:
    ops = ["directory", "fifo", "dev-zero", "binary", "empty"]
    if os.environ.get("DENSIM_FUZZ_NO_BLOCKING") == "1":  # running old code: no reads that block or fill memory
        ops = ["directory", "binary", "empty"]
    op = draw(st.sampled_from(ops))
    must = target.required_file

    def to_dir(p: Path) -> None:
        _remove(p)
        p.mkdir()
        (p / "inside.txt").write_text("1\n")

    def to_fifo(p: Path) -> None:
        _remove(p)
        os.mkfifo(p)

    def to_devzero(p: Path) -> None:
        _remove(p)
        p.symlink_to("/dev/zero")

    blob = bytes(draw(st.binary(min_size=64, max_size=512)))
    blob = blob if b"\x00" in blob else blob + b"\x00\xff\xfe"
    if op == "directory":
        return Damage("kind", "a directory", must and not target.dir_skipped, to_dir)
    if op == "fifo":
        return Damage("kind", "a FIFO", must, to_fifo)
    if op == "dev-zero":
        return Damage("kind", "a link to /dev/zero", must, to_devzero)
    if op == "binary":
        return Damage("kind", f"{len(blob)} random binary bytes", must and target.kind != "bytes", lambda p: _write(p, blob))
    empty_fails = target.table.nonempty if target.table is not None else True
    return Damage("kind", "empty", must and empty_fails, lambda p: _write(p, b""))


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    else:
        p.unlink(missing_ok=True)


# ------------------------------------------------------------------------------------ tables


def _split(text: str, sep: str) -> list[list[str]]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    return [ln.split(sep) for ln in lines]


def _join(rows: list[list[str]], sep: str) -> bytes:
    return ("\n".join(sep.join(r) for r in rows) + "\n").encode()


@st.composite
def table_damage(draw, data: bytes, target: Target) -> Damage:
    spec = target.table
    rows = _split(data.decode("utf-8"), spec.sep)
    h = 1 if spec.header else 0
    n_data = len(rows) - h
    n_cols = len(rows[0])
    op = draw(st.sampled_from(["cell", "cell", "cell", "drop-row", "dup-row", "drop-col", "dup-col", "separator"]))
    active = spec.active_rows if spec.active_rows is not None else tuple(range(n_data))
    if op == "cell":
        checked = sorted(set(spec.required) | set(spec.optional) | ({spec.id_col} if spec.id_col is not None else set()))
        if checked and draw(st.booleans()):  # half the cells where the reader must check them
            r = draw(st.sampled_from(active))
            c = draw(st.sampled_from(checked))
        else:
            r = draw(st.integers(0, n_data - 1))
            c = draw(st.integers(0, n_cols - 1))
        v = draw(st.sampled_from(CELL_VALUES))
        if spec.sep == "," and "," in v:
            v = v.replace(",", ".")
        new = [list(x) for x in rows]
        old = new[h + r][c] if c < len(new[h + r]) else ""
        new[h + r][c] = v
        on_active = r in active
        must = on_active and (
            (c in spec.required and v in BAD_REQUIRED)
            or (c in spec.optional and v in BAD_ANYWHERE)
            or (c == spec.id_col and v.strip() == "")
        )
        return Damage("cell", f"row {r + h + 1} col {c + 1}: {old!r} -> {v!r}", must, lambda p: _write(p, _join(new, spec.sep)))
    if op == "drop-row":
        r = draw(st.integers(0, len(rows) - 1))
        new = rows[:r] + rows[r + 1:]
        must = (spec.header and r == 0 and spec.header_required) or (spec.drop_row_fails and r >= h) or (n_data == 1 and spec.nonempty)
        return Damage("drop-row", f"line {r + 1}", must, lambda p: _write(p, _join(new, spec.sep)))
    if op == "dup-row":
        r = draw(st.integers(h, len(rows) - 1))
        new = rows[: r + 1] + [rows[r]] + rows[r + 1:]
        must = (spec.unique_rows and (r - h) in active) or spec.drop_row_fails
        return Damage("dup-row", f"line {r + 1}", must, lambda p: _write(p, _join(new, spec.sep)))
    if op in ("drop-col", "dup-col"):
        c = draw(st.integers(0, n_cols - 1))
        if op == "drop-col":
            new = [r[:c] + r[c + 1:] for r in rows]
            must = c in (spec.required if spec.drop_required is None else spec.drop_required) or not spec.header or c == spec.id_col
        else:
            new = [r[: c + 1] + [r[c]] + r[c + 1:] if c < len(r) else r for r in rows]
            must = not spec.header
        return Damage(op, f"column {c + 1}", must and n_cols > 1, lambda p: _write(p, _join(new, spec.sep)))
    sep = draw(st.sampled_from([s for s in SEPARATORS if s != spec.sep]))
    ok = sep in spec.sep_ok or not spec.header_required  # an optional tab with an unreadable header is skipped
    return Damage("separator", f"{spec.sep!r} -> {sep!r}", not ok and n_cols > 1, lambda p: _write(p, _join(rows, sep)))


@st.composite
def lines_damage(draw, data: bytes, target: Target) -> Damage:
    """One value per line (PlanetLab): every file must have all its samples, each a % in [0, 100]."""
    lines = data.decode().splitlines()
    op = draw(st.sampled_from(["cell", "cell", "drop-row", "dup-row"]))
    i = draw(st.integers(0, len(lines) - 1))
    if op == "cell":
        v = draw(st.sampled_from(CELL_VALUES + ["101", "100", "50.5"]))
        new = lines[:i] + [v] + lines[i + 1:]
        try:
            x = float(v)
            ok = math.isfinite(x) and 0 <= x <= 100
        except ValueError:
            ok = False
        return Damage("cell", f"line {i + 1}: {lines[i]!r} -> {v!r}", not ok,
                      lambda p: _write(p, ("\n".join(new) + "\n").encode()))
    if op == "drop-row":
        new = lines[:i] + lines[i + 1:]
        return Damage("drop-row", f"line {i + 1}", True, lambda p: _write(p, ("\n".join(new) + "\n").encode()))
    new = lines[: i + 1] + [lines[i]] + lines[i + 1:]
    return Damage("dup-row", f"line {i + 1}", True, lambda p: _write(p, ("\n".join(new) + "\n").encode()))


# ------------------------------------------------------------------------------------ mappings

_QUANTITY = re.compile(r"^\s*[-+]?\d[\d,]*(\.\d*)?([eE][-+]?\d+)?\s*[A-Za-z%/ ]*$")


def _leaves(node: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(node, dict):
        out = []
        for k, v in node.items():
            out += _leaves(v, path + (k,))
        return out or [path]
    if isinstance(node, list):
        out = []
        for i, v in enumerate(node):
            out += _leaves(v, path + (i,))
        return out or [path]
    return [path]


def _get(node: Any, path: tuple) -> Any:
    for k in path:
        node = node[k]
    return node


def _set(node: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    import copy

    root = copy.deepcopy(node)
    cur = root
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return root


def _drop(node: Any, path: tuple) -> Any:
    import copy

    root = copy.deepcopy(node)
    cur = root
    for k in path[:-1]:
        cur = cur[k]
    del cur[path[-1]]
    return root


NONFINITE = [float("nan"), float("inf"), float("-inf")]
BAD_QUANTITIES = ["1e400 GiB", "nan GiB", "inf W", "5 Wxyz", "GiB", "%", "10**10**10 W", "1e9^1e9 W", "-inf s"]
LEAF_VALUES: list[Any] = NONFINITE + BAD_QUANTITIES + [-1, 0, 10**30, 2**64, 1e30, True, None, "", [], {}, "x" * 5000,
                                                       "\u202e", "1 GiB", "5 min", -0.0]


def dump_mapping(data: Any, as_json: bool) -> bytes:
    if as_json:
        return json.dumps(data, indent=1).encode()
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).encode()


@st.composite
def mapping_damage(draw, data: Any, target: Target, *, free: tuple[str, ...] = ()) -> Damage:
    """``free``: keys under which any value is accepted (free-form parameter mappings)."""
    as_json = target.json
    leaves = [p for p in _leaves(data) if p]
    op = draw(st.sampled_from(["leaf", "leaf", "leaf", "leaf", "drop-key", "unknown-key", "dup-key", "deep", "bomb", "not-a-mapping"]))
    if op == "leaf":
        path = draw(st.sampled_from(leaves))
        old = _get(data, path)
        v = draw(st.sampled_from(LEAF_VALUES))
        in_free = any(k in free for k in path if isinstance(k, str))
        numeric_old = isinstance(old, (int, float)) and not isinstance(old, bool) or (isinstance(old, str) and bool(_QUANTITY.match(old)))
        must = not in_free and (
            (isinstance(v, float) and not math.isfinite(v))
            or (v in BAD_QUANTITIES and numeric_old)
        )
        new = _set(data, path, v)
        show = repr(v)[:40]
        return Damage("leaf", f"{'.'.join(map(str, path))}: {str(old)[:30]!r} -> {show}", must,
                      lambda p: _write(p, dump_mapping(new, as_json)))
    if op == "drop-key":
        path = draw(st.sampled_from(leaves))
        k = draw(st.integers(1, len(path)))
        sub = path[:k]
        parent = _get(data, sub[:-1])
        if isinstance(parent, list):
            sub = sub[:-1] if len(sub) > 1 else sub
        try:
            new = _drop(data, sub)
        except (KeyError, IndexError, TypeError):
            new = data
        return Damage("drop-key", ".".join(map(str, sub)), False, lambda p: _write(p, dump_mapping(new, as_json)))
    if op == "unknown-key":
        new = dict(data)
        new["no_such_key_zz"] = 1
        return Damage("unknown-key", "top level", target.strict_keys, lambda p: _write(p, dump_mapping(new, as_json)))
    if op == "dup-key":
        key = draw(st.sampled_from(sorted(data)))
        if as_json:
            text = dump_mapping(data, True).decode()
            text = text.replace("{", "{\n " + json.dumps(key) + ": 1,", 1)
        else:
            text = dump_mapping(data, False).decode() + f"{key}: 1\n"
        return Damage("dup-key", key, True, lambda p: _write(p, text.encode()))
    if op == "deep":
        depth = draw(st.sampled_from([250, 1000, 100_000]))
        path = draw(st.sampled_from(leaves))
        if as_json:
            text = dump_mapping(_set(data, path, "@@DEEP@@"), True).decode().replace('"@@DEEP@@"', "[" * depth + "]" * depth)
        else:
            text = dump_mapping(_set(data, path, "@@DEEP@@"), False).decode().replace("'@@DEEP@@'", "[" * depth + "]" * depth)
            text = text.replace("@@DEEP@@", "[" * depth + "]" * depth)
        return Damage("deep", f"{depth} nested lists at {'.'.join(map(str, path))}", True, lambda p: _write(p, text.encode()))
    if op == "bomb":
        if as_json:  # JSON has no aliases: a huge flat document instead
            text = json.dumps({**data, "zz": [0] * 200_000})
            return Damage("bomb", "200,000 extra values", target.strict_keys, lambda p: _write(p, text.encode()))
        bomb = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
            f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
        text = bomb + dump_mapping(data, False).decode()
        return Damage("bomb", "billion laughs", True, lambda p: _write(p, text.encode()))
    wrapped = [data]
    return Damage("not-a-mapping", "a list holding the mapping", True, lambda p: _write(p, dump_mapping(wrapped, as_json)))


# ------------------------------------------------------------------------------------ parquet

PARQUET_VALUES: list[Any] = [float("nan"), float("inf"), -1, 1e30, 2**63 + 5, "abc", None, 0, 1.5, "12"]


def _pa_array(values: list, like):
    import pyarrow as pa

    if any(isinstance(v, str) for v in values):
        return pa.array([None if v is None else str(v) for v in values], pa.string())
    if any(isinstance(v, int) and not isinstance(v, bool) and v >= 2**63 for v in values) and all(
            v is None or (isinstance(v, int) and v >= 0) for v in values):
        return pa.array(values, pa.uint64())
    if any(isinstance(v, float) for v in values) or any(isinstance(v, int) and abs(v) >= 2**63 for v in values if v is not None):
        return pa.array([None if v is None else float(v) for v in values], pa.float64())
    return pa.array(values, like.type if not pa.types.is_floating(like.type) or True else None)


@st.composite
def parquet_damage(draw, path_bytes: bytes, target: Target, ref_ids: list[int] | None = None) -> Damage:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(path_bytes))
    names = table.column_names
    op = draw(st.sampled_from(["cell", "cell", "cell", "drop-col", "zero-rows", "dup-row", "bad-ref", "as-text", "bytes"]))

    def save(t) -> Callable[[Path], None]:
        def w(p: Path) -> None:
            pq.write_table(t, p)
        return w

    if op == "cell":
        c = draw(st.sampled_from(names))
        r = draw(st.integers(0, table.num_rows - 1))
        v = draw(st.sampled_from(PARQUET_VALUES))
        vals = table.column(c).to_pylist()
        old = vals[r]
        vals[r] = v
        col = _pa_array(vals, table.column(c))
        t = table.set_column(names.index(c), c, col)
        bad = v is None or v == "abc" or (isinstance(v, float) and not math.isfinite(v)) or v in (1e30, 2**63 + 5)
        bad = bad or (v == -1 and c != "id") or (v == -1 and c == "id") or (v == 0 and c == "cpu_count")
        bad = bad or (c == "id" and (v == 1.5 or (target.parquet_unique == "id" and v == 0)))
        return Damage("cell", f"{c}[{r}]: {old!r} -> {v!r}", c in target.parquet_required and bad, save(t))
    if op == "drop-col":
        c = draw(st.sampled_from(names))
        return Damage("drop-col", c, c in target.parquet_required, save(table.drop_columns([c])))
    if op == "zero-rows":
        return Damage("zero-rows", "all rows", target.parquet_nonempty, save(table.slice(0, 0)))
    if op == "dup-row":
        r = draw(st.integers(0, table.num_rows - 1))
        t = pa.concat_tables([table.slice(0, r + 1), table.slice(r, 1), table.slice(r + 1)])
        return Damage("dup-row", f"row {r}", target.parquet_unique is not None, save(t))
    if op == "bad-ref":
        c = target.parquet_ref or target.parquet_unique or names[0]
        r = draw(st.integers(0, table.num_rows - 1))
        vals = table.column(c).to_pylist()
        vals[r] = 987654
        t = table.set_column(names.index(c), c, pa.array(vals, table.column(c).type))
        # an unknown id in fragments is refused; a renumbered task orphans its fragments
        return Damage("bad-ref", f"{c}[{r}] -> 987654", True, save(t))
    if op == "as-text":
        c = draw(st.sampled_from(names))
        t = table.set_column(names.index(c), c, pa.array([str(x) for x in table.column(c).to_pylist()], pa.string()))
        return Damage("as-text", f"column {c} stored as text", c in target.parquet_required, save(t))
    return draw(bytes_damage(path_bytes, target))


# ------------------------------------------------------------------------------------ xlsx

XLSX_VALUES: list[Any] = [float("nan"), float("inf"), -1, 10**12, 2**31, "abc", None, True, "1e400", "", 0, 2.5, "4 XB", "6 GiB"]


@st.composite
def xlsx_damage(draw, path_bytes: bytes, target: Target) -> Damage:
    import io

    from openpyxl import load_workbook

    op = draw(st.sampled_from(["cell", "cell", "cell", "drop-row", "dup-row", "drop-col", "rename-sheet", "bytes"]))
    if op == "bytes":
        return draw(bytes_damage(path_bytes, target))
    sheets = target.xlsx_sheets
    sheet = draw(st.sampled_from(sorted(sheets)))
    wb = load_workbook(io.BytesIO(path_bytes))
    ws = wb[sheet]
    n_rows, n_cols = ws.max_row, ws.max_column
    info = sheets[sheet]
    header = [ws.cell(1, c).value for c in range(1, n_cols + 1)]
    req = {header.index(h) + 1 for h in info.get("required", ())}
    active = set(info.get("active", ()))

    def save(p: Path) -> None:
        wb.save(p)

    if op == "cell":
        if req and active and draw(st.booleans()):
            r = draw(st.sampled_from(sorted(active)))
            c = draw(st.sampled_from(sorted(req)))
        else:
            r = draw(st.integers(2, n_rows))
            c = draw(st.integers(1, n_cols))
        v = draw(st.sampled_from(XLSX_VALUES))
        old = ws.cell(r, c).value
        ws.cell(r, c).value = v
        bad = v in (None, "abc", "1e400", "", "4 XB") or v is True or (isinstance(v, float) and not math.isfinite(v)) \
            or v in (-1, 10**12, 2**31)
        if header[c - 1] == "VM":
            bad = v in (None, "")
        if header[c - 1] == "CPUs":
            bad = bad or v in (0, 2.5, "6 GiB")
        if header[c - 1] == "Memory":
            bad = bad or v == 0
        must = c in req and r in active and bad
        return Damage("cell", f"{sheet}!R{r}C{c}: {old!r} -> {v!r}", must, save)
    if op == "drop-row":
        r = draw(st.integers(1, n_rows))
        ws.delete_rows(r)
        must = info.get("required_sheet", False) and r == 1
        return Damage("drop-row", f"{sheet} row {r}", must, save)
    if op == "dup-row":
        r = draw(st.integers(2, n_rows))
        vals = [ws.cell(r, c).value for c in range(1, n_cols + 1)]
        ws.insert_rows(r + 1)
        for c, v in enumerate(vals, start=1):
            ws.cell(r + 1, c).value = v
        must = info.get("unique", False) and r in active
        return Damage("dup-row", f"{sheet} row {r}", must, save)
    if op == "drop-col":
        c = draw(st.integers(1, n_cols))
        ws.delete_cols(c)
        return Damage("drop-col", f"{sheet} column {header[c - 1]!r}", c in req, save)
    ws.title = sheet + "_old"
    return Damage("rename-sheet", f"{sheet} -> {ws.title}", info.get("required_sheet", False), save)
