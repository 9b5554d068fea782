"""Checks every inventory and trace reader applies before any work, with the row and column named.

Limits are sanity bounds, far beyond any real VM or trace, that catch damaged values (a vCPU count
of 10^12, a timestamp in the year 300,000, a 64-bit id that wrapped) before they become arrays:

* vCPUs: whole numbers from 1 to :data:`MAX_VCPUS` (a count above 2^31 would wrap in int32);
* memory: above 0 and at most :data:`MAX_MEMORY_BYTES`, and at most :data:`MAX_MEMORY_PER_VCPU` per vCPU
  (a value in bytes in a KiB or MiB column); clocks at most :data:`MAX_MHZ_PER_VCPU`;
* demand: finite, >= 0 and at most :data:`MAX_VALUE` in its canonical unit (MHz, bytes, bytes/s);
* timestamps: finite, 0 <= t <= :data:`MAX_TIME_S` (Unix seconds), and no gap between a VM's
  consecutive samples longer than :data:`MAX_GAP_S` (a multi-year gap is a damaged timestamp);
* ids: unique, and integer ids within the signed 64-bit range.

The (steps x VMs) arrays a reader builds are sized before they are allocated and refused above
the memory budget (:func:`memory_budget`, set by the command line's ``--max-memory``).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from densim.errors import InputError
from densim.textio import regular_file_stat

MAX_VCPUS = 65_536
MAX_MEMORY_BYTES = float(2**50)  # 1 PiB per VM
# The largest memory per vCPU of any VM offered today is about 55 GiB (AWS u-24tb1: 24 TiB for 448 vCPUs;
# Azure M416ms v2: 11.4 TiB for 416); 256 GiB per vCPU is far beyond, while a 4-vCPU VM of 16 GiB
# written in bytes into a KiB column (17.6 TiB) is 4.4 TiB per vCPU.
MAX_MEMORY_PER_VCPU = float(2**38)
MAX_MHZ_PER_VCPU = 100_000.0  # 100 GHz
MAX_VALUE = 1e15  # any demand in its canonical unit (MHz, bytes, bytes/s)
MAX_TIME_S = 1e11  # Unix seconds, about the year 5138
MAX_GAP_S = 366 * 86400.0
INT64_MAX = 2**63 - 1

DEFAULT_MEMORY_BUDGET = 8 * 2**30
_BUDGET: contextvars.ContextVar[int] = contextvars.ContextVar("densim_memory_budget", default=DEFAULT_MEMORY_BUDGET)


@contextlib.contextmanager
def memory_budget(n_bytes: int | float | None) -> Iterator[None]:
    """Within the block, readers refuse arrays larger than ``n_bytes`` (None: the default)."""
    token = _BUDGET.set(int(n_bytes) if n_bytes is not None else DEFAULT_MEMORY_BUDGET)
    try:
        yield
    finally:
        _BUDGET.reset(token)


def budget_bytes() -> int:
    return _BUDGET.get()


def gib(n: float) -> str:
    """A byte count for messages: ``512 MiB``, ``8.0 GiB``, ``3.2e+12 GiB``."""
    if not np.isfinite(n):
        return "an unbounded amount"
    if n < 2**20:
        return f"{n / 2**10:,.0f} KiB"
    if n < 2**30:
        return f"{n / 2**20:,.0f} MiB"
    return f"{n / 2**30:,.1f} GiB" if n < 2**60 else f"{n / 2**30:.3g} GiB"


def check_budget(n_bytes: float, what: str, source: str | Path | None, where: str = "") -> None:
    """Refuse an allocation of ``n_bytes`` above the memory budget, before it happens."""
    limit = budget_bytes()
    if not np.isfinite(n_bytes) or n_bytes > limit:
        raise InputError(source, where, f"{what} would need about {gib(n_bytes)}, more than the memory limit "
                                        f"({gib(limit)}); raise it with --max-memory if the machine has the memory")


# ------------------------------------------------------------------------------------ files


def regular_file(path: Path, what: str = "file") -> Path:
    """``path`` must be an existing regular file (not a folder, device, FIFO or socket)."""
    regular_file_stat(path, what)
    return path


def folder(path: Path, what: str = "folder") -> Path:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(path, "", f"{what} not found") from None
    except OSError as exc:
        raise InputError(path, "", f"cannot read {what}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise InputError(path, "", f"is not a folder, expected a {what}")
    return path


def read_bytes(path: Path, what: str = "file", max_bytes: int = 2**31) -> bytes:
    """The bytes of a regular file (a device such as /dev/zero is refused, not read forever)."""
    regular_file(path, what)
    size = path.stat().st_size
    if size > max_bytes:
        raise InputError(path, "", f"{what} is {gib(size)}, more than the {gib(max_bytes)} a single file may be")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(path, "", f"cannot read {what}: {exc.strerror}") from None


def _utf16(raw: bytes) -> str | None:
    """The codec of UTF-16 text: with a byte-order mark, or without one when the text is ASCII in UTF-16
    (a NUL in every second byte of the first 4 KiB, as Windows tools write it); None for anything else."""
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "utf-16"
    head = raw[:4096]
    if len(head) >= 4:
        head = head[: len(head) // 2 * 2]
        even, odd = head[0::2], head[1::2]
        if odd.count(0) == len(odd) and even.count(0) == 0:
            return "utf-16-le"
        if even.count(0) == len(even) and odd.count(0) == 0:
            return "utf-16-be"
    return None


def text_of(raw: bytes, path: Path, what: str = "text file") -> str:
    """UTF-8 text (a BOM is dropped; UTF-16, with a BOM or ASCII text without one, is decoded too); a NUL
    byte or bytes that are not UTF-8 are errors naming the line."""
    enc = _utf16(raw)
    if enc is not None:
        try:
            text = raw.decode(enc)
        except UnicodeDecodeError as exc:
            raise InputError(path, f"byte {exc.start}", f"damaged UTF-16 text; save the {what} as UTF-8") from None
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            raise InputError(path, f"line {line}", f"not UTF-8 text (byte 0x{raw[exc.start]:02x}); save the {what} as UTF-8") from None
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise InputError(path, f"line {line}", f"binary data (a NUL byte) where a {what} is expected")
    return text.removeprefix("\ufeff")


def first_line(path: Path, what: str = "file", limit: int = 65536) -> str:
    """The first line of a regular file, read without reading the rest (for format detection)."""
    regular_file(path, what)
    try:
        with open(path, "rb") as fh:
            head = fh.read(limit)
    except OSError as exc:
        raise InputError(path, "", f"cannot read {what}: {exc.strerror}") from None
    enc = _utf16(head)
    if enc is not None:
        text = head.decode(enc, errors="replace")
    else:
        text = head.decode("utf-8", errors="replace")
    return text.removeprefix("\ufeff").split("\n", 1)[0]


# ------------------------------------------------------------------------------------ values


def _row(i: int, rows: Sequence[int] | np.ndarray | None, row_offset: int) -> int:
    return int(rows[i]) if rows is not None else i + row_offset


def _at(row: int | None, column: str | None, row_word: str = "row") -> str:
    parts = []
    if row is not None:
        parts.append(f"{row_word} {row}")
    if column is not None:
        parts.append(f"column {column!r}")
    return ", ".join(parts)


def check_values(values: np.ndarray, source: str | Path, column: str, *, rows=None, row_offset: int = 0,
                 lo: float = 0.0, lo_open: bool = False, hi: float = MAX_VALUE, integer: bool = False,
                 what: str = "value", row_word: str = "row", implausible: bool = True) -> None:
    """Every value finite and in ``[lo, hi]`` (``(lo, hi]`` if ``lo_open``), whole if ``integer``.

    The first bad value raises :class:`InputError` at its row (``rows[i]`` or ``i + row_offset``).
    """
    v = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        low = (v <= lo) if lo_open else (v < lo)
        bad = ~np.isfinite(v) | low | (v > hi)
        if integer:
            bad |= v != np.round(v)
    if not bad.any():
        return
    i = int(np.argmax(bad))
    x = v[i]
    where = _at(_row(i, rows, row_offset), column, row_word)
    if not np.isfinite(x):
        problem = f"{what} is not a finite number ({x})"
    elif low[i]:
        problem = f"{what} must be {'>' if lo_open else '>='} {lo:g}, got {x:g}"
    elif x > hi:
        problem = f"{what} {x:.6g} is implausibly large (more than {hi:.6g})" if implausible else f"{what} must be <= {hi:g}, got {x:.6g}"
    else:
        problem = f"{what} must be a whole number, got {x:g}"
    raise InputError(source, where, problem)


def check_vcpus(values: np.ndarray, source: str | Path, column: str, **kw) -> None:
    check_values(values, source, column, lo=1, hi=MAX_VCPUS, integer=True, what="vCPU count", **kw)


def check_memory(values: np.ndarray, source: str | Path, column: str, **kw) -> None:
    check_values(values, source, column, lo=0, lo_open=True, hi=MAX_MEMORY_BYTES, what="memory (bytes)", **kw)


def check_memory_per_vcpu(mem_bytes: np.ndarray, vcpus: np.ndarray, source: str | Path, column: str, *, unit: str = "",
                          rows=None, row_offset: int = 0, row_word: str = "row") -> None:
    """Configured memory at most :data:`MAX_MEMORY_PER_VCPU` per vCPU (and :data:`MAX_MEMORY_BYTES` per VM);
    above it the value is most likely bytes written into a KiB (or MiB) column."""
    m = np.asarray(mem_bytes, dtype=np.float64)
    per = m / np.maximum(np.asarray(vcpus, dtype=np.float64), 1.0)
    bad = np.isfinite(m) & ((per > MAX_MEMORY_PER_VCPU) | (m > MAX_MEMORY_BYTES))  # not finite: check_memory's
    if not bad.any():
        return
    i = int(np.argmax(bad))
    hint = f": a value in bytes in a {unit} column?" if unit and unit.lower() not in ("b", "bytes") else ""
    raise InputError(source, _at(_row(i, rows, row_offset), column, row_word),
                     f"memory {gib(m[i])} for {int(np.asarray(vcpus)[i])} vCPU(s) ({gib(per[i])} per vCPU) is implausible "
                     f"(at most {gib(MAX_MEMORY_PER_VCPU)} per vCPU and {gib(MAX_MEMORY_BYTES)} per VM){hint}")


def check_clock(values: np.ndarray, source: str | Path, column: str, **kw) -> None:
    check_values(values, source, column, lo=0, lo_open=True, hi=MAX_MHZ_PER_VCPU, what="MHz per vCPU", **kw)


def check_times(values: np.ndarray, source: str | Path, column: str, **kw) -> None:
    """Unix seconds (or seconds from a trace's start): finite, >= 0 and before :data:`MAX_TIME_S`."""
    check_values(values, source, column, lo=0, hi=MAX_TIME_S, what="time (s)", **kw)


def check_gaps(times_s: np.ndarray, source: str | Path, column: str, *, rows=None, row_offset: int = 0,
               row_word: str = "row") -> None:
    """No two consecutive distinct sample times (after sorting) more than :data:`MAX_GAP_S` apart."""
    t = np.asarray(times_s, dtype=np.float64)
    if t.size < 2:
        return
    order = np.argsort(t, kind="stable")
    d = np.diff(t[order])
    if (d > MAX_GAP_S).any():
        k = int(np.argmax(d > MAX_GAP_S))
        i = int(order[k + 1])
        raise InputError(source, _at(_row(i, rows, row_offset), column, row_word),
                         f"a gap of {d[k] / 86400:,.0f} days after the previous sample (at most {MAX_GAP_S / 86400:.0f}): "
                         "a damaged timestamp?")


def check_unique(ids: Sequence, source: str | Path, column: str, *, rows=None, row_offset: int = 0, what: str = "id") -> None:
    seen: dict = {}
    for i, v in enumerate(ids):
        if v in seen:
            first = _row(seen[v], rows, row_offset)
            raise InputError(source, _at(_row(i, rows, row_offset), column), f"duplicate {what} {v!r} (also in row {first})")
        seen[v] = i


def check_int_ids(values: np.ndarray, source: str | Path, column: str, *, rows=None, row_offset: int = 0) -> np.ndarray:
    """Integer ids within int64 (a float id must be whole); returns them as int64."""
    v = np.asarray(values)
    if v.dtype.kind in "iu":
        if v.dtype.kind == "u" and v.size and int(v.max()) > INT64_MAX:
            i = int(np.argmax(v > INT64_MAX))
            raise InputError(source, _at(_row(i, rows, row_offset), column), f"id {int(v[i])} overflows a 64-bit integer")
        return v.astype(np.int64)
    f = v.astype(np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(f) | (f != np.round(f)) | (np.abs(f) >= 2.0**63)
    if bad.any():
        i = int(np.argmax(bad))
        problem = f"id {f[i]:g} is not a whole number" if np.isfinite(f[i]) and abs(f[i]) < 2.0**63 else \
            f"id {f[i]:g} is not a 64-bit integer"
        raise InputError(source, _at(_row(i, rows, row_offset), column), problem)
    return f.astype(np.int64)


MAX_DECOMPRESSED_BYTES = 2**32


def maybe_gunzip(raw: bytes, path: Path, max_bytes: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """``raw`` itself, or its gzip content for a ``.gz`` file (bounded: a gzip bomb is refused)."""
    if not path.name.lower().endswith(".gz"):
        return raw
    import zlib

    d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(raw, max_bytes + 1)
        if len(out) > max_bytes:
            raise InputError(path, "", f"expands to more than {gib(max_bytes)} when decompressed")
        if not d.eof:
            raise InputError(path, "", "truncated gzip file (the compressed stream ends early)")
    except zlib.error as exc:
        raise InputError(path, "", f"not a readable gzip file ({exc})") from None
    return out
