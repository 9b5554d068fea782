"""Raw Bitbrains GWA-T-12 CSVs (fastStorage, Rnd): one file per VM, separator ``;\\t``.

Shen, van Beek, Iosup, CCGrid 2015. Quirks handled (see ``shared/traces/README.md``): timestamps are
Unix *seconds* despite the ``[ms]`` header; duplicate timestamps are averaged; fields carry leading
white space; the sampling step is irregular (each sample holds until the next one; the last one for
the VM's median step). ``KB`` and ``KB/s`` are read as 1,024 bytes (and bytes/s): the convention of
``densim.workloads.readers.conventions``, where the evidence is given.
"""

from __future__ import annotations

import re
import io
from pathlib import Path

import numpy as np
import polars as pl

from densim.errors import InputError
from densim.workloads.readers._checks import (MAX_MEMORY_BYTES, MAX_VCPUS, check_gaps, check_times, check_unique,
                                              check_budget, check_values, maybe_gunzip, read_bytes, text_of)
from densim.workloads.readers.base import check_finite_nonneg
from densim.workloads.readers.conventions import bytes_per_unit
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
KB = bytes_per_unit("bitbrains", "memory", "KB")
KBPS = bytes_per_unit("bitbrains", "throughput", "KB/s")
_SEP = re.compile(r";[ \t]*")


def _vm_sort_key(p: Path):
    stem = p.name.split(".")[0]
    return (0, int(stem), "") if stem.isdigit() else (1, 0, p.name)


def _drop_tab_after_separator(data: bytes) -> bytes:
    """``data.replace(b";\\t", b";")``: GWA-T-12 writes ";\\t" between fields. When every tab follows a ';'
    (one numpy pass finds them) deleting all tabs is the same and twice as fast as the replace."""
    a = np.frombuffer(data, dtype=np.uint8)
    tabs = np.flatnonzero(a == 9)
    if tabs.size == 0:
        return data
    if tabs[0] > 0 and bool(np.all(a[tabs - 1] == 59)):
        return data.translate(None, b"\t")
    return data.replace(b";\t", b";")


def read_vm_csv(path: Path) -> dict[str, np.ndarray]:
    """One VM's samples as arrays (timestamps de-duplicated and sorted), validated.

    Fast path: polars parses every column as Float64 in one call. Only when that fails or finds a
    null is the file re-read line by line to name the row and column of the first problem. Blank
    lines are skipped (rows keep their line numbers in messages).
    """
    raw = maybe_gunzip(read_bytes(path, "Bitbrains trace file"), path)
    # plain ASCII without NUL bytes (every GWA-T-12 file) is its own UTF-8: no decode and encode again
    data = raw if raw.isascii() and b"\x00" not in raw else text_of(raw, path, "Bitbrains CSV file").encode("utf-8")
    data = _drop_tab_after_separator(data)
    first_nl = data.find(b"\n")
    header = [h.strip() for h in (data if first_nl < 0 else data[:first_nl]).decode("utf-8", "replace").split(";")]
    if not data.strip():
        raise InputError(path, "", "empty file")
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise InputError(path, "row 1 (header)", f"missing column {missing[0]!r}")
    dup = [h for h in COLUMNS if header.count(h) > 1]
    if dup:
        raise InputError(path, "row 1 (header)", f"column {dup[0]!r} appears twice")
    arr = None
    rows = None
    try:
        df = pl.read_csv(
            io.BytesIO(data), separator=";", has_header=True, new_columns=header,
            schema_overrides={h: pl.Float64 for h in header}, truncate_ragged_lines=False,
        )
        df = df.select(list(COLUMNS))
        blank = df.select(pl.all_horizontal(pl.all().is_null())).to_series().to_numpy()
        if blank.any():  # empty lines: skipped, the other rows keep their line numbers
            rows = np.flatnonzero(~blank) + 2
            df = df.filter(~pl.Series(blank))
        if df.null_count().sum_horizontal().item() == 0 and df.height > 0:
            arr = df.to_numpy()
    except Exception:  # noqa: BLE001 - polars raises ComputeError/ShapeError on malformed rows; diagnose below
        arr = None
    if arr is None:
        _diagnose(path, _SEP.sub(";", data.decode("utf-8", errors="replace")), header)
        raise InputError(path, "", "no samples")
    out = {key: arr[:, j].copy() for j, key in enumerate(COLUMNS.values())}
    at = {"rows": rows} if rows is not None else {"row_offset": 2}
    for col, key in COLUMNS.items():
        check_finite_nonneg(out[key], path, col, **at)
        if key == "ts":
            check_times(out[key], path, col, **at)
        elif key == "cores":
            check_values(out[key], path, col, hi=MAX_VCPUS, integer=True, what="CPU cores", **at)
        elif key == "mem_cap_kb":
            check_values(out[key] * KB, path, col, hi=MAX_MEMORY_BYTES, what="memory (bytes)", **at)
        else:
            check_values(out[key], path, col, what=col.split(" [")[0], **at)
    check_gaps(out["ts"], path, "Timestamp [ms]", **at)
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


def _check_overlap(files: list[Path], vms: list[dict[str, np.ndarray]]) -> None:
    """The VMs' sample spans must not lie years apart (the engine's grid spans them all)."""
    from densim.workloads.readers._checks import MAX_GAP_S

    spans = sorted((float(v["ts"][0]), float(v["ts"][-1]), f) for v, f in zip(vms, files))
    end = spans[0][1]
    for lo, hi, f in spans[1:]:
        if lo - end > MAX_GAP_S:
            raise InputError(f, "column 'Timestamp [ms]'",
                             f"starts {(lo - end) / 86400:,.0f} days after every earlier VM's samples end "
                             f"(at most {MAX_GAP_S / 86400:.0f}): a damaged timestamp?")
        end = max(end, hi)


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
        names = [f.name.split(".")[0] for f in files]
        try:
            check_unique(names, path, "file", what="VM name", rows=range(len(files)))
        except InputError:
            dup = next(n for i, n in enumerate(names) if n in names[:i])
            same = [f.name for f in files if f.name.split(".")[0] == dup]
            raise InputError(path, "", f"two files for VM {dup!r} ({', '.join(same)})") from None
        self.files = files
        self.vms = [read_vm_csv(f) for f in files]
        _check_overlap(files, self.vms)
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
    "disk_read_Bps": ("disk_r", KBPS),
    "disk_write_Bps": ("disk_w", KBPS),
    "net_rx_Bps": ("net_rx", KBPS),
    "net_tx_Bps": ("net_tx", KBPS),
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
        wanted = [ch for ch in channels if ch in _CHANNEL_COLS]
        check_budget(4.0 * (t1 - t0) * (self.n_vms + len(t.vms)) * (len(wanted) + 1),
                     f"the Bitbrains demand window ({t1 - t0:,} steps x {self.n_vms:,} VMs x {len(wanted)} channels)",
                     t.files[0].parent if len(t.files) > 1 else t.files[0])
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
