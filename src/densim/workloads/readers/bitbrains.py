"""Raw Bitbrains GWA-T-12 CSVs (fastStorage, Rnd): one file per VM, separator ``;\\t``.

Shen, van Beek, Iosup, CCGrid 2015. Quirks handled (see ``shared/traces/README.md``): timestamps are
Unix *seconds* despite the ``[ms]`` header; duplicate timestamps are averaged; fields carry leading
white space; the sampling step is irregular (each sample holds until the next one; the last one for
the VM's median step). ``KB`` is read as KiB (1,024 bytes), as OpenDC does for this trace.
"""

from __future__ import annotations

import gzip
import re
import io
from pathlib import Path

import numpy as np
import polars as pl

from densim.errors import InputError
from densim.workloads.readers.base import check_finite_nonneg
from densim.workloads.sources import DemandSource, VmSizes
from densim.workloads.timegrid import TimeGrid, resample_piecewise

COLUMNS = {
    "Timestamp [ms]": "ts",
    "CPU cores": "cores",
    "CPU capacity provisioned [MHZ]": "cap_mhz",
    "CPU usage [MHZ]": "cpu_mhz",
    "Memory capacity provisioned [KB]": "mem_cap_kb",
    "Memory usage [KB]": "mem_kb",
    "Disk read throughput [KB/s]": "disk_r",
    "Disk write throughput [KB/s]": "disk_w",
    "Network received throughput [KB/s]": "net_rx",
    "Network transmitted throughput [KB/s]": "net_tx",
}
KB = 1024.0
_SEP = re.compile(r";[ \t]*")


def _vm_sort_key(p: Path):
    stem = p.name.split(".")[0]
    return (0, int(stem), "") if stem.isdigit() else (1, 0, p.name)


def read_vm_csv(path: Path) -> dict[str, np.ndarray]:
    """One VM's samples as arrays (timestamps de-duplicated and sorted), validated.

    Fast path: polars parses every column as Float64 in one call. Only when that fails or finds a
    null is the file re-read line by line to name the row and column of the first problem.
    """
    try:
        raw = path.read_bytes()
        if path.suffix == ".gz":
            raw = gzip.decompress(raw)
    except (OSError, EOFError) as exc:
        raise InputError(path, "", f"cannot read ({exc})") from None
    data = raw.replace(b";\t", b";")
    first_nl = data.find(b"\n")
    header = [h.strip() for h in (data if first_nl < 0 else data[:first_nl]).decode("utf-8", "replace").split(";")]
    if not data.strip():
        raise InputError(path, "", "empty file")
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise InputError(path, "row 1 (header)", f"missing column {missing[0]!r}")
    arr = None
    try:
        df = pl.read_csv(
            io.BytesIO(data), separator=";", has_header=True, new_columns=header,
            schema_overrides={h: pl.Float64 for h in header}, truncate_ragged_lines=False,
        )
        if df.null_count().sum_horizontal().item() == 0 and df.height > 0:
            arr = df.select(list(COLUMNS)).to_numpy()
    except Exception:  # polars raises ComputeError/ShapeError on malformed rows; diagnose below
        arr = None
    if arr is None:
        _diagnose(path, _SEP.sub(";", data.decode("utf-8", errors="replace")), header)
        raise InputError(path, "", "no samples")
    out = {key: arr[:, j].copy() for j, key in enumerate(COLUMNS.values())}
    for j, col in enumerate(COLUMNS):
        check_finite_nonneg(out[COLUMNS[col]], path, col, row_offset=2)
    # de-duplicate timestamps (20.csv and 82.csv repeat thousands): mean of the duplicates
    ts = out["ts"]
    order = np.argsort(ts, kind="stable")
    if not np.all(order == np.arange(ts.size)):
        out = {k: v[order] for k, v in out.items()}
        ts = out["ts"]
    uniq, inv = np.unique(ts, return_inverse=True)
    if uniq.size != ts.size:
        counts = np.bincount(inv).astype(np.float64)
        for key in out:
            if key != "ts":
                out[key] = np.bincount(inv, weights=out[key]) / counts
        out["ts"] = uniq
    return out


def _diagnose(path: Path, text: str, header: list[str]) -> None:
    """Find the first bad row/column of a file the fast path rejected; raise InputError."""
    n_cols = len(header)
    idx = {c: header.index(c) for c in COLUMNS}
    for i, line in enumerate(text.splitlines()[1:], start=2):
        if not line.strip():
            continue
        fields = line.split(";")
        if len(fields) != n_cols:
            raise InputError(path, f"row {i}", f"expected {n_cols} fields, found {len(fields)} (truncated file?)")
        for col, j in idx.items():
            v = fields[j].strip()
            if v == "":
                raise InputError(path, f"row {i}, column {col!r}", "empty value")
            try:
                float(v)
            except ValueError:
                raise InputError(path, f"row {i}, column {col!r}", f"not a number: {v[:30]!r}") from None


class BitbrainsTrace:
    """A folder of GWA-T-12 per-VM CSV(.gz) files, parsed into compact per-VM arrays."""

    def __init__(self, path: Path, limit: int | None = None, **_: object) -> None:
        if not path.exists():
            raise InputError(path, "", "trace folder not found")
        if path.is_dir():
            files = sorted((p for p in path.iterdir() if p.name.endswith((".csv", ".csv.gz"))), key=_vm_sort_key)
        else:
            files = [path]
        if limit is not None:
            files = files[:limit]
        if not files:
            raise InputError(path, "", "no .csv or .csv.gz files")
        self.files = files
        self.vms = [read_vm_csv(f) for f in files]
        seg = []
        for i, vm in enumerate(self.vms):
            ts = vm["ts"]
            d = np.diff(ts)
            last = float(np.median(d)) if d.size else 300.0
            seg.append((ts, np.r_[d, last], i))
        self.seg_start = np.concatenate([s[0] for s in seg])
        self.seg_dur = np.concatenate([s[1] for s in seg])
        self.seg_owner = np.concatenate([np.full(s[0].size, s[2]) for s in seg])
        self.values = {k: np.concatenate([vm[k] for vm in self.vms]) for k in ("cpu_mhz", "mem_kb", "disk_r", "disk_w", "net_rx", "net_tx")}

    @property
    def names(self) -> list[str]:
        return [f.name.split(".")[0] for f in self.files]

    def total_cpu_mhz_s(self) -> float:
        return float(np.sum(self.values["cpu_mhz"] * self.seg_dur))



_CHANNEL_COLS = {
    "cpu_mhz": ("cpu_mhz", 1.0),
    "mem_used_bytes": ("mem_kb", KB),
    "disk_read_Bps": ("disk_r", KB),
    "disk_write_Bps": ("disk_w", KB),
    "net_rx_Bps": ("net_rx", KB),
    "net_tx_Bps": ("net_tx", KB),
}


class BitbrainsSource(DemandSource):
    channels = tuple(_CHANNEL_COLS)

    def __init__(self, trace: BitbrainsTrace, name: str, count: int | None = None, vcpus: int | None = None,
                 vcpu_mhz: float | None = None, mem_bytes: float | None = None, offset_s: float = 0.0) -> None:
        self.trace = trace
        n_files = len(trace.vms)
        count = n_files if count is None else count
        self.vm_file = np.arange(count) % n_files
        cores = np.array([max(1.0, float(np.max(v["cores"]))) for v in trace.vms])
        cap = np.array([float(np.max(v["cap_mhz"])) for v in trace.vms])
        memcap = np.array([float(np.max(v["mem_cap_kb"])) * KB for v in trace.vms])
        per_core = np.where(cap > 0, cap / cores, 2000.0)
        self.offset_s = float(offset_s)
        self.sizes = VmSizes(
            names=np.array([f"{name}-{trace.names[f]}" + (f"-{i // n_files}" if count > n_files else "") for i, f in enumerate(self.vm_file)], dtype=object),
            vcpus=(np.full(count, vcpus) if vcpus else cores[self.vm_file]).astype(np.int32),
            vcpu_mhz=(np.full(count, vcpu_mhz) if vcpu_mhz else per_core[self.vm_file]).astype(np.float64),
            mem_bytes=(np.full(count, mem_bytes) if mem_bytes else np.maximum(memcap[self.vm_file], 1.0)).astype(np.float64),
        )

    def span_s(self):
        t = self.trace
        return float(t.seg_start.min()) + self.offset_s, float((t.seg_start + t.seg_dur).max())

    def native_step_s(self):
        return float(np.median(self.trace.seg_dur))

    def window(self, grid: TimeGrid, t0: int, t1: int, channels):
        t = self.trace
        edges = grid.edges_s(t0, t1)
        lo, hi = edges[0], edges[-1]
        keep = (t.seg_start < hi) & (t.seg_start + t.seg_dur > lo)
        out = {}
        for ch in channels:
            if ch not in _CHANNEL_COLS:
                continue
            col, scale = _CHANNEL_COLS[ch]
            per_file = resample_piecewise(
                t.seg_start[keep], t.seg_dur[keep], t.values[col][keep] * scale, t.seg_owner[keep], len(t.vms), edges
            )
            out[ch] = per_file[:, self.vm_file] if self.vm_file.size != len(t.vms) or not np.array_equal(self.vm_file, np.arange(len(t.vms))) else per_file
        return out
