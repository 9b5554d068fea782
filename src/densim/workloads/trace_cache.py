"""A cache of parsed traces, keyed by the files' content.

Parsing text traces is the slow part of reading them: the 1,052 PlanetLab files of a day are 4.2 MB
of text that take 40-100 ms to parse here, while reading their bytes takes about 10 ms and hashing
them 1-4 ms. So a reader reads the bytes, hashes them, and looks for the parsed array under that
hash; on a miss it parses and stores the array for the next run.

The key is a BLAKE2b digest of the reader's name and parser version, the files' names in order,
their sizes and their whole content. The content decides: a file rewritten with the same size and
its modification time set back (``os.utime``) has another key, so the cache never serves an array
parsed from other bytes. Modification times are deliberately left out of the key: they add no
safety once the content is hashed, and leaving them out lets a copy of the same files (a fresh
checkout, a copy into a temporary folder) use the entry. A key made of stat metadata alone
(names, sizes, mtimes, even ctimes) would spare reading the bytes (about 10 ms) but is not safe:
a same-size rewrite within the file system's timestamp granularity, a copy with ``cp -p``/``rsync
-t`` onto files of the same size, or a restored backup all keep the metadata and change the content.

An entry is one file, ``<cache>/traces/<reader>-<key>.bin``: a header (magic, key, dtype, shape),
the array's bytes and a BLAKE2b digest of them. It is written atomically (:func:`densim.atomic.write_atomic`),
so a run killed while writing leaves no entry; an entry that is truncated, damaged, of another
version or unreadable is ignored (the traces are parsed again and the entry rewritten), and a cache
folder that cannot be written only means the next run parses again: the cache never fails a run.

Where: ``$DENSIM_CACHE_DIR/traces`` when set, else ``$XDG_CACHE_HOME/densim/traces``, else
``~/.cache/densim/traces``. Off: ``DENSIM_TRACE_CACHE=0`` in the environment, ``densim run
--no-trace-cache``, or :func:`trace_cache` ``(False)`` around the reading. At most
:data:`MAX_ENTRIES` entries are kept (the oldest are removed when a new one is written).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

MAGIC = b"DNSMTRC1"
MAX_ENTRIES = 32
_HEADER = struct.Struct("<8s32s8sQQQ")  # magic, key, dtype, rows, columns, payload bytes
_DIGEST = 32

_ENABLED: contextvars.ContextVar[bool | None] = contextvars.ContextVar("densim_trace_cache", default=None)


@contextlib.contextmanager
def trace_cache(enabled: bool | None) -> Iterator[None]:
    """Within the block, readers use the trace cache (True), do not (False), or do as the environment says (None)."""
    token = _ENABLED.set(enabled)
    try:
        yield
    finally:
        _ENABLED.reset(token)


def enabled() -> bool:
    """The cache is on unless :func:`trace_cache` or ``DENSIM_TRACE_CACHE`` (``0``, ``off``, ``no``, ``false``) turn it off."""
    on = _ENABLED.get()
    if on is not None:
        return on
    return os.environ.get("DENSIM_TRACE_CACHE", "1").strip().lower() not in ("0", "off", "no", "false")


def cache_dir() -> Path | None:
    """The folder of the trace cache (None when no home folder can be found)."""
    root = os.environ.get("DENSIM_CACHE_DIR")
    if root:
        return Path(root) / "traces"
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "densim" / "traces"
    try:
        return Path.home() / ".cache" / "densim" / "traces"
    except RuntimeError:
        return None


def content_key(reader: str, names: Sequence[str], datas: Sequence[bytes]) -> bytes:
    """The key of the parsed form of files ``names`` (in this order) holding ``datas``: a 32-byte BLAKE2b
    digest of ``reader`` (name and parser version), the names, the sizes and the bytes."""
    h = hashlib.blake2b(digest_size=32)
    head = "\0".join([reader, str(len(names)), *names, *(str(len(d)) for d in datas)])
    h.update(head.encode("utf-8", "surrogateescape"))
    h.update(b"".join(datas))  # one call: the sizes in the head mark where each file ends
    return h.digest()


def entry_path(reader: str, key: bytes) -> Path | None:
    d = cache_dir()
    return None if d is None else d / f"{reader}-{key.hex()}.bin"


def load(reader: str, key: bytes) -> np.ndarray | None:
    """The array stored under ``key``, or None when there is none or it is not intact (or the cache is off)."""
    if not enabled():
        return None
    path = entry_path(reader, key)
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            raw = bytearray(f.read())
    except OSError:
        return None
    arr = _decode(raw, key)
    if arr is not None:
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: pruning removes the entries unused the longest
    return arr


def _decode(raw: bytearray, key: bytes) -> np.ndarray | None:
    n = _HEADER.size
    if len(raw) < n + _DIGEST:
        return None
    magic, k, dt, rows, cols, size = _HEADER.unpack_from(raw, 0)
    if magic != MAGIC or k != key or len(raw) != n + size + _DIGEST:
        return None
    try:
        dtype = np.dtype(dt.rstrip(b"\0").decode("ascii"))
    except (TypeError, ValueError, UnicodeDecodeError):
        return None
    if dtype.hasobject or rows * cols * dtype.itemsize != size:
        return None
    payload = memoryview(raw)[n : n + size]
    if hashlib.blake2b(payload, digest_size=_DIGEST).digest() != bytes(raw[n + size :]):
        return None
    return np.frombuffer(raw, dtype=dtype, count=rows * cols, offset=n).reshape(rows, cols)  # writable: raw is a bytearray


def encode(key: bytes, arr: np.ndarray) -> bytes:
    """The bytes of an entry holding the 2-D array ``arr`` under ``key``."""
    arr = np.ascontiguousarray(arr)
    if arr.ndim != 2 or arr.dtype.hasobject:
        raise ValueError("the trace cache holds 2-D arrays of numbers")
    payload = arr.tobytes()
    head = _HEADER.pack(MAGIC, key, arr.dtype.str.encode("ascii"), arr.shape[0], arr.shape[1], len(payload))
    return head + payload + hashlib.blake2b(payload, digest_size=_DIGEST).digest()


def store(reader: str, key: bytes, arr: np.ndarray) -> None:
    """Keep ``arr`` under ``key`` (atomically); a cache folder that cannot be written is passed over."""
    if not enabled():
        return
    path = entry_path(reader, key)
    if path is None:
        return
    from densim.atomic import write_atomic
    from densim.errors import InputError

    data = encode(key, arr)
    try:
        write_atomic(path, lambda p: p.write_bytes(data))
    except (InputError, OSError):  # OutputError (an InputError) for a read-only or full disk: parse again next time
        return
    _prune(path.parent)


def _prune(folder: Path) -> None:
    """Remove the oldest entries beyond :data:`MAX_ENTRIES`."""
    try:
        entries = [e for e in os.scandir(folder) if e.name.endswith(".bin") and not e.name.startswith(".")]
        if len(entries) <= MAX_ENTRIES:
            return
        entries.sort(key=lambda e: e.stat().st_mtime_ns)
        for e in entries[: len(entries) - MAX_ENTRIES]:
            os.unlink(e.path)
    except OSError:
        pass
