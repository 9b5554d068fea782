"""PlanetLab (CoMon) traces: one file per VM, one integer CPU utilisation % per line, 300 s apart.

Beloglazov & Buyya, CCPE 2012. A VM's demand is ``util/100 x its CPU capacity``. Files are read
once into a small (samples x files) matrix; VMs index into it, so 100,000 VMs driven by 1,052
files never materialise a 100,000-column matrix outside the engine's current window.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from densim.errors import InputError
from densim.workloads.readers._checks import check_budget, read_bytes, text_of
from densim.workloads.sources import DemandSource, VmSizes
from densim.workloads.timegrid import TimeGrid, resample_piecewise

STEP_S = 300.0


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


def _parse_files(files: list[Path]) -> list[np.ndarray]:
    """Every file's values (float32). Files of one integer per line, CoMon's form, are joined and
    parsed in one array pass; a folder with any other file is parsed file by file."""
    datas = [read_bytes(f, "PlanetLab trace file") for f in files]
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

    def __init__(self, path: Path, limit: int | None = None, **_: object) -> None:
        if not path.exists():
            raise InputError(path, "", "trace folder not found")
        files = sorted(p for p in path.iterdir() if not p.is_dir() and not p.name.startswith(".")) if path.is_dir() else [path]
        if limit is not None:
            files = files[:limit]
        if not files:
            raise InputError(path, "", "no trace files in folder")
        series = _parse_files(files)
        n = max(len(s) for s in series)
        for f, s in zip(files, series):
            if len(s) < n:
                raise InputError(f, f"line {len(s) + 1}", f"truncated: {len(s)} samples where the other files have {n}")
        self.files = files
        self.util_pct = np.stack(series, axis=1)  # (samples, files)

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
