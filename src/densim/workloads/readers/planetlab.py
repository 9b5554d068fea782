"""PlanetLab (CoMon) traces: one file per VM, one integer CPU utilisation % per line, 300 s apart.

Beloglazov & Buyya, CCPE 2012. A VM's demand is ``util/100 x its CPU capacity``. Files are read
once into a small (samples x files) matrix; VMs index into it, so 100,000 VMs driven by 1,052
files never materialise a 100,000-column matrix outside the engine's current window.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np

from densim.errors import InputError
from densim.workloads import trace_cache
from densim.workloads.readers._checks import check_budget, read_bytes, text_of
from densim.workloads.sources import DemandSource, VmSizes
from densim.workloads.timegrid import TimeGrid, resample_piecewise

STEP_S = 300.0
# the reader's name and parser version in the trace cache's key: change the version when parsing changes
CACHE_NAME = "planetlab-v1"
_WHAT = "PlanetLab trace file"
_MAX_FILE_BYTES = 2**31


_NL = ord("\n")


def _integer_lines(data: bytes) -> np.ndarray | None:
    """The values of a file of one unsigned integer per line (``"24\n34\n"``, CoMon's form), parsed
    with array operations; None when the file is in any other form (the general parser reads it)."""
    if not data or data[-1] != _NL:
        data = data + b"\n"
    b = np.frombuffer(data, dtype=np.uint8)
    nl = b == _NL
    digit = (b >= 48) & (b <= 57)
    if not np.all(digit | nl):
        return None
    ends = np.flatnonzero(nl)
    starts = np.r_[0, ends[:-1] + 1]
    lens = ends - starts
    if lens.size == 0 or lens.min() < 1 or lens.max() > 15:  # blank lines, or too long to be exact
        return None
    # value = sum of digit x 10^(places to the line's end)
    line = np.repeat(np.arange(ends.size), lens + 1)[~nl]
    place = np.repeat(ends, lens + 1)[~nl] - np.flatnonzero(~nl) - 1
    # integers below 1e15 are exact in float64, and so is every partial sum
    return np.bincount(line, weights=(b[~nl] - 48).astype(np.float64) * 10.0 ** place, minlength=ends.size)


def _list_files(path: Path) -> tuple[Path, list[str]]:
    """The folder and names of the trace files of ``path``: a folder's files in name order (not
    folders, not hidden files), or the file ``path`` itself."""
    try:
        with os.scandir(path) as it:
            names = sorted(e.name for e in it if not e.name.startswith(".") and not e.is_dir())
    except NotADirectoryError:
        return path.parent, [path.name]
    except OSError as exc:
        raise InputError(path, "", f"cannot read the trace folder: {exc.strerror}") from None
    return path, names


def _read_files(folder: Path, names: list[str]) -> list[bytes]:
    """The bytes of every file: one open (relative to the folder), fstat and read per file. A file that is
    missing, not a regular file or too large gets :func:`read_bytes`'s error naming it."""
    out = []
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)  # a FIFO is refused, not waited on
    try:
        dfd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(folder, "", f"cannot read the trace folder: {exc.strerror}") from None
    try:
        for name in names:
            try:
                fd = os.open(name, flags, dir_fd=dfd)
            except OSError as exc:
                read_bytes(folder / name, _WHAT)  # raises the error that names the problem
                raise InputError(folder / name, "", f"cannot read {_WHAT}: {exc.strerror}") from None
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_FILE_BYTES:
                    read_bytes(folder / name, _WHAT, _MAX_FILE_BYTES)
                parts = [os.read(fd, st.st_size + 1)]
                while parts[-1]:  # to the end, should the file have grown or a read come back short
                    parts.append(os.read(fd, 1 << 20))
            except OSError as exc:
                raise InputError(folder / name, "", f"cannot read {_WHAT}: {exc.strerror}") from None
            finally:
                os.close(fd)
            out.append(parts[0] if len(parts) == 2 else b"".join(parts))
    finally:
        os.close(dfd)
    return out


def _parse_files(files: list[Path], datas: list[bytes] | None = None) -> list[np.ndarray]:
    """Every file's values (float32). Files of one integer per line, CoMon's form, are joined and
    parsed in one array pass; a folder with any other file is parsed file by file."""
    datas = _read_files(files[0].parent, [f.name for f in files]) if datas is None else datas
    joined = [d if d.endswith(b"\n") else d + b"\n" for d in datas]
    vals = _integer_lines(b"".join(joined))
    if vals is None:
        return [_parse_file(f, d) for f, d in zip(files, datas)]
    counts = np.array([d.count(b"\n") for d in joined])
    bad = (vals < 0) | (vals > 100)
    if bad.any():  # name the file and line
        i = int(np.argmax(bad))
        k = int(np.searchsorted(np.cumsum(counts), i, side="right"))
        _parse_file(files[k], datas[k])
    return np.split(vals.astype(np.float32), np.cumsum(counts)[:-1])


def _parse_file(path: Path, data: bytes | None = None) -> np.ndarray:
    data = read_bytes(path, "PlanetLab trace file") if data is None else data
    lines = text_of(data, path, "PlanetLab trace file").splitlines()
    try:
        vals = np.array([float(x) for x in lines if x.strip() != ""], dtype=np.float64)
    except ValueError:
        for i, line in enumerate(lines, start=1):
            s = line.strip()
            if s == "":
                continue
            try:
                float(s)
            except ValueError:
                raise InputError(path, f"line {i}", f"not a number: {s[:30]!r}") from None
        raise
    bad = ~np.isfinite(vals) | (vals < 0) | (vals > 100)
    if bad.any():
        nonblank = [i for i, ln in enumerate(lines, start=1) if ln.strip() != ""]
        i = int(np.argmax(bad))
        raise InputError(path, f"line {nonblank[i]}", f"CPU utilisation must be in [0, 100] %, got {vals[i]:g}")
    if vals.size == 0:
        raise InputError(path, "", "empty trace file")
    return vals.astype(np.float32)


class PlanetLabTrace:
    """The files of a PlanetLab day, as a (samples x files) utilisation matrix in %."""

    _files: list[Path] | None = None

    def __init__(self, path: Path, limit: int | None = None, **_: object) -> None:
        if not path.exists():
            raise InputError(path, "", "trace folder not found")
        folder, names = _list_files(path)
        if limit is not None:
            names = names[:limit]
        if not names:
            raise InputError(path, "", "no trace files in folder")
        self.folder, self.names = folder, names
        datas = _read_files(folder, names)
        # the parsed matrix of exactly these bytes, when an earlier run parsed them (densim.workloads.trace_cache)
        key = trace_cache.content_key(CACHE_NAME, names, datas) if trace_cache.enabled() else None
        util = None if key is None else trace_cache.load(CACHE_NAME, key)
        if util is None or util.shape[1] != len(names) or util.dtype != np.float32:
            files = self.files
            series = _parse_files(files, datas)
            n = max(len(s) for s in series)
            for f, s in zip(files, series):
                if len(s) < n:
                    raise InputError(f, f"line {len(s) + 1}", f"truncated: {len(s)} samples where the other files have {n}")
            util = np.stack(series, axis=1)  # (samples, files)
            if key is not None:
                trace_cache.store(CACHE_NAME, key, util)
        self.util_pct = util

    @property
    def files(self) -> list[Path]:
        """The trace files, in the order of the matrix's columns."""
        if self._files is None:
            self._files = [self.folder / n for n in self.names]
        return self._files

    @property
    def n_files(self) -> int:
        return self.util_pct.shape[1]

    def total_util_pct_s(self, file_idx: np.ndarray) -> float:
        """Sum of util% x 300 s over the files VMs use (for conservation checks)."""
        return float(self.util_pct[:, file_idx].astype(np.float64).sum() * STEP_S)




class PlanetLabSource(DemandSource):
    """``count`` VMs, VM i driven by file ``i mod n_files`` (or the first ``count`` files in order)."""

    channels = ("cpu_mhz",)
    fresh_windows = True  # window() takes the VMs' columns into a new array

    def __init__(self, trace: PlanetLabTrace, name: str, count: int, vcpus: int, vcpu_mhz: float, mem_bytes: float,
                 assign: str = "cycle", offset_s: float = 0.0) -> None:
        self.trace = trace
        idx = np.arange(count)
        if assign == "in-order" and count > trace.n_files:
            raise InputError(trace.files[0].parent, "assign", f"in-order needs {count} files, folder has {trace.n_files}")
        self.file_idx = (idx % trace.n_files).astype(np.int64)
        self.offset_s = float(offset_s)
        self.capacity_mhz = float(vcpus * vcpu_mhz)
        self.sizes = VmSizes(
            names=np.array([f"{name}-{i}" for i in range(count)], dtype=object),
            vcpus=np.full(count, vcpus, dtype=np.int32),
            vcpu_mhz=np.full(count, vcpu_mhz, dtype=np.float64),
            mem_bytes=np.full(count, mem_bytes, dtype=np.float64),
        )

    def span_s(self):
        return 0.0, self.trace.util_pct.shape[0] * STEP_S - self.offset_s

    def native_step_s(self):
        return STEP_S

    def _file_window(self, grid: TimeGrid, t0: int, t1: int) -> np.ndarray:
        """(steps, files) mean utilisation fraction over each grid step."""
        u = self.trace.util_pct
        native_start = grid.start_s + self.offset_s
        k0 = (grid.start_s + t0 * grid.step_s + self.offset_s) / STEP_S
        if grid.step_s == STEP_S and float(k0).is_integer() and native_start % STEP_S == 0:
            k0 = int(k0)
            out = np.zeros((t1 - t0, u.shape[1]), dtype=np.float32)
            avail = u[max(k0, 0) : max(min(k0 + (t1 - t0), u.shape[0]), 0)]
            out[: avail.shape[0]] = avail
            return out / np.float32(100.0)
        n_s, n_f = u.shape
        starts = np.tile(np.arange(n_s) * STEP_S - self.offset_s, n_f)
        owners = np.repeat(np.arange(n_f), n_s)
        vals = u.T.ravel() / 100.0
        edges = grid.edges_s(t0, t1) - grid.start_s
        return resample_piecewise(starts, np.full(starts.size, STEP_S), vals, owners, n_f, edges)

    def subset(self, idx):
        import copy

        out = copy.copy(self)
        out.file_idx = self.file_idx[idx]
        out.sizes = self.sizes.take(idx)
        return out

    def window_factors(self, grid, t0, t1):
        """``cpu_mhz[t, v] = fw[t, file_idx[v]] * capacity``: the (steps x files) window and each VM's file."""
        return self._file_window(grid, t0, t1), self.file_idx, np.full(self.n_vms, self.capacity_mhz, dtype=np.float32)

    def window(self, grid, t0, t1, channels):
        if "cpu_mhz" not in channels:
            return {}
        check_budget(4.0 * (t1 - t0) * (self.n_vms + 2 * self.trace.n_files),
                     f"the PlanetLab demand window ({t1 - t0:,} steps x {self.n_vms:,} VMs)", self.trace.files[0].parent)
        fw = self._file_window(grid, t0, t1)
        out = np.take(fw, self.file_idx, axis=1)
        out *= np.float32(self.capacity_mhz)
        return {"cpu_mhz": out}
