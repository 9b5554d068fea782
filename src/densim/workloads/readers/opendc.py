"""OpenDC Parquet workloads (v4 schema): ``tasks.parquet`` + ``fragments.parquet``.

tasks: id, submission_time (ms since epoch), duration (ms), cpu_count, cpu_capacity (MHz, all
cores), mem_capacity (KB). fragments: id, duration (ms), cpu_usage (MHz); they carry no timestamps
and run back to back from the task's submission time, in file order. The fragments file is
streamed in record batches for every window, so only the window's share is ever resampled.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from densim.errors import InputError
from densim.workloads.readers.base import check_finite_nonneg
from densim.workloads.sources import DemandSource, VmSizes
from densim.workloads.timegrid import TimeGrid, resample_piecewise

TASK_COLUMNS = ("id", "submission_time", "duration", "cpu_count", "cpu_capacity", "mem_capacity")
FRAGMENT_COLUMNS = ("id", "duration", "cpu_usage")
KB = 1024.0


def _open_parquet(path: Path, columns: tuple[str, ...]) -> pq.ParquetFile:
    if not path.exists():
        raise InputError(path, "", "file not found")
    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(path, "", f"not a readable Parquet file (truncated?): {str(exc).splitlines()[0][:120]}") from None
    names = pf.schema_arrow.names
    for c in columns:
        if c not in names:
            raise InputError(path, f"column {c!r}", "missing column")
    return pf


def _read_columns(pf: pq.ParquetFile, path: Path, columns: tuple[str, ...]) -> dict[str, np.ndarray]:
    try:
        table = pf.read(columns=list(columns))
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(path, "", f"cannot read Parquet data (truncated?): {str(exc).splitlines()[0][:120]}") from None
    out = {}
    for c in columns:
        col = table.column(c)
        if col.null_count:
            r = int(np.argmax(np.asarray(col.is_null())))
            raise InputError(path, f"row {r + 1}, column {c!r}", "empty value")
        try:
            out[c] = col.to_numpy().astype(np.float64)
        except (pa.ArrowInvalid, TypeError, ValueError):
            raise InputError(path, f"column {c!r}", f"not numeric ({col.type})") from None
    return out


class OpenDcTrace:
    """An OpenDC v4 workload folder."""

    def __init__(self, path: Path, limit: int | None = None, **_: object) -> None:
        if path.is_file():
            path = path.parent
        self.tasks_path = path / "tasks.parquet"
        self.fragments_path = path / "fragments.parquet"
        tf = _open_parquet(self.tasks_path, TASK_COLUMNS)
        self._frag_file = _open_parquet(self.fragments_path, FRAGMENT_COLUMNS)
        t = _read_columns(tf, self.tasks_path, TASK_COLUMNS)
        for c in TASK_COLUMNS[1:]:
            check_finite_nonneg(t[c], self.tasks_path, c, row_offset=1)
        bad = t["cpu_count"] <= 0
        if bad.any():
            r = int(np.argmax(bad))
            raise InputError(self.tasks_path, f"row {r + 1}, column 'cpu_count'", "must be > 0")
        n = t["id"].size if limit is None else min(limit, t["id"].size)
        self.ids = t["id"][:n].astype(np.int64)
        self.submission_s = t["submission_time"][:n] / 1000.0
        self.duration_s = t["duration"][:n] / 1000.0
        self.cpu_count = t["cpu_count"][:n].astype(np.int32)
        self.cpu_capacity_mhz = t["cpu_capacity"][:n]
        self.mem_bytes = t["mem_capacity"][:n] * KB
        self._pos = {int(v): i for i, v in enumerate(self.ids)}

    @property
    def n_tasks(self) -> int:
        return int(self.ids.size)

    def iter_fragments(self, batch_rows: int = 262_144):
        """Yield (task position, start_s, duration_s, cpu_mhz) arrays batch by batch."""
        carry = np.zeros(self.n_tasks)
        row0 = 0
        max_id = int(self.ids.max()) if self.ids.size else 0
        lookup = np.full(max_id + 2, -1, dtype=np.int64)
        lookup[self.ids] = np.arange(self.n_tasks)
        try:
            batches = self._frag_file.iter_batches(batch_size=batch_rows, columns=list(FRAGMENT_COLUMNS))
            for batch in batches:
                ids = batch.column("id").to_numpy(zero_copy_only=False).astype(np.int64)
                dur = batch.column("duration").to_numpy(zero_copy_only=False).astype(np.float64) / 1000.0
                use = batch.column("cpu_usage").to_numpy(zero_copy_only=False).astype(np.float64)
                check_finite_nonneg(dur, self.fragments_path, "duration", row_offset=row0 + 1)
                check_finite_nonneg(use, self.fragments_path, "cpu_usage", row_offset=row0 + 1)
                pos = np.where((ids >= 0) & (ids <= max_id), lookup[np.clip(ids, 0, max_id + 1)], -1)
                known = pos >= 0
                pos, dur, use = pos[known], dur[known], use[known]
                # start of each fragment = submission + durations of earlier fragments of the task
                order = np.argsort(pos, kind="stable")
                p_s, d_s = pos[order], dur[order]
                cs = np.cumsum(d_s)
                first = np.r_[True, p_s[1:] != p_s[:-1]]
                grp_base = np.maximum.accumulate(np.where(first, np.arange(p_s.size), 0))
                before = cs - d_s - np.where(grp_base > 0, cs[grp_base - 1], 0.0)
                start_sorted = self.submission_s[p_s] + carry[p_s] + before
                last = np.r_[p_s[1:] != p_s[:-1], True]
                np.add.at(carry, p_s[last], (cs - np.where(grp_base > 0, cs[grp_base - 1], 0.0))[last])
                start = np.empty_like(start_sorted)
                start[order] = start_sorted
                row0 += ids.size
                yield pos, start, dur, use
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputError(self.fragments_path, "", f"cannot read Parquet data (truncated?): {str(exc).splitlines()[0][:120]}") from None

    def total_cpu_mhz_s(self) -> float:
        return float(sum(np.sum(u * d) for _, _, d, u in self.iter_fragments()))




class OpenDcSource(DemandSource):
    channels = ("cpu_mhz",)

    def __init__(self, trace: OpenDcTrace, name: str, count: int | None = None, vcpus: int | None = None,
                 vcpu_mhz: float | None = None, mem_bytes: float | None = None, offset_s: float = 0.0) -> None:
        self.trace = trace
        n = trace.n_tasks
        count = n if count is None else count
        self.vm_task = np.arange(count) % n
        per_core = trace.cpu_capacity_mhz / np.maximum(trace.cpu_count, 1)
        self.offset_s = float(offset_s)
        self.sizes = VmSizes(
            names=np.array([f"{name}-{int(trace.ids[t])}" + (f"-{i // n}" if count > n else "") for i, t in enumerate(self.vm_task)], dtype=object),
            vcpus=(np.full(count, vcpus) if vcpus else trace.cpu_count[self.vm_task]).astype(np.int32),
            vcpu_mhz=(np.full(count, vcpu_mhz) if vcpu_mhz else per_core[self.vm_task]).astype(np.float64),
            mem_bytes=(np.full(count, mem_bytes) if mem_bytes else np.maximum(trace.mem_bytes[self.vm_task], 1.0)).astype(np.float64),
        )

    def span_s(self):
        t = self.trace
        return float(t.submission_s.min()) + self.offset_s, float((t.submission_s + t.duration_s).max())

    def native_step_s(self):
        return 300.0

    def window(self, grid: TimeGrid, t0: int, t1: int, channels):
        if "cpu_mhz" not in channels:
            return {}
        edges = grid.edges_s(t0, t1)
        lo, hi = edges[0], edges[-1]
        parts = []
        for pos, start, dur, use in self.trace.iter_fragments():
            keep = (start < hi) & (start + dur > lo)
            if keep.any():
                parts.append((pos[keep], start[keep], dur[keep], use[keep]))
        n = self.trace.n_tasks
        if parts:
            pos, start, dur, use = (np.concatenate(x) for x in zip(*parts))
            per_task = resample_piecewise(start, dur, use, pos, n, edges)
        else:
            per_task = np.zeros((t1 - t0, n), dtype=np.float32)
        if self.vm_task.size == n and np.array_equal(self.vm_task, np.arange(n)):
            return {"cpu_mhz": per_task}
        return {"cpu_mhz": per_task[:, self.vm_task]}
