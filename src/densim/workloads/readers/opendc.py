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
from densim.workloads.readers._checks import (MAX_GAP_S, MAX_MEMORY_BYTES, MAX_MHZ_PER_VCPU, MAX_TIME_S, MAX_VCPUS,
                                              check_budget, check_int_ids, check_times, check_unique, check_values,
                                              check_vcpus, regular_file)
from densim.workloads.readers.base import check_finite_nonneg
from densim.workloads.sources import DemandSource, VmSizes
from densim.workloads.timegrid import TimeGrid, resample_piecewise

TASK_COLUMNS = ("id", "submission_time", "duration", "cpu_count", "cpu_capacity", "mem_capacity")
FRAGMENT_COLUMNS = ("id", "duration", "cpu_usage")
KB = 1024.0


def _open_parquet(path: Path, columns: tuple[str, ...]) -> pq.ParquetFile:
    if not path.exists():
        raise InputError(path, "", "file not found")
    regular_file(path, "Parquet file")
    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(path, "", f"not a readable Parquet file (truncated?): {str(exc).splitlines()[0][:120]}") from None
    names = pf.schema_arrow.names
    for c in columns:
        if c not in names:
            raise InputError(path, f"column {c!r}", "missing column")
        if names.count(c) > 1:
            raise InputError(path, f"column {c!r}", "appears twice")
    return pf


def _numeric(col, path: Path, name: str, row0: int = 0) -> np.ndarray:
    """A Parquet column as float64 (integers kept exact for ids); nulls and text are errors at their row."""
    if col.null_count:
        r = int(np.argmax(np.asarray(col.is_null())))
        raise InputError(path, f"row {row0 + r + 1}, column {name!r}", "empty value")
    t = col.type
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return col.to_numpy(zero_copy_only=False)
    if pa.types.is_decimal(t):
        return np.asarray(col.cast(pa.float64()).to_numpy(zero_copy_only=False))
    raise InputError(path, f"column {name!r}", f"not numeric (a {t} column)")


def _read_columns(pf: pq.ParquetFile, path: Path, columns: tuple[str, ...]) -> dict[str, np.ndarray]:
    try:
        table = pf.read(columns=list(columns))
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(path, "", f"cannot read Parquet data (truncated?): {str(exc).splitlines()[0][:120]}") from None
    return {c: _numeric(table.column(c), path, c) for c in columns}


class OpenDcTrace:
    """An OpenDC v4 workload folder, checked before any work: tasks (types, ranges, unique ids, no
    multi-year gap between tasks) and every fragment (types, ranges, and a task that exists)."""

    def __init__(self, path: Path, limit: int | None = None, **_: object) -> None:
        if path.is_file():
            path = path.parent
        self.tasks_path = path / "tasks.parquet"
        self.fragments_path = path / "fragments.parquet"
        tf = _open_parquet(self.tasks_path, TASK_COLUMNS)
        self._frag_file = _open_parquet(self.fragments_path, FRAGMENT_COLUMNS)
        t = _read_columns(tf, self.tasks_path, TASK_COLUMNS)
        tp = self.tasks_path
        if t["id"].size == 0:
            raise InputError(tp, "row 1", "no tasks (the file has zero rows)")
        all_ids = check_int_ids(t["id"], tp, "id", row_offset=1)
        check_unique(all_ids.tolist(), tp, "id", row_offset=1, what="task id")
        t = {c: (all_ids.astype(np.float64) if c == "id" else v.astype(np.float64)) for c, v in t.items()}
        for c in TASK_COLUMNS[1:]:
            check_finite_nonneg(t[c], tp, c, row_offset=1)
        check_times(t["submission_time"] / 1000.0, tp, "submission_time", row_offset=1)
        check_values(t["duration"] / 1000.0, tp, "duration", row_offset=1, hi=MAX_TIME_S, what="duration (s)")
        bad = t["cpu_count"] <= 0
        if bad.any():
            r = int(np.argmax(bad))
            raise InputError(tp, f"row {r + 1}, column 'cpu_count'", "must be > 0")
        check_vcpus(t["cpu_count"], tp, "cpu_count", row_offset=1)
        check_values(t["cpu_capacity"], tp, "cpu_capacity", row_offset=1, hi=MAX_VCPUS * MAX_MHZ_PER_VCPU, what="CPU capacity (MHz)")
        check_values(t["mem_capacity"] * KB, tp, "mem_capacity", row_offset=1, hi=MAX_MEMORY_BYTES, what="memory (bytes)")
        n = all_ids.size if limit is None else min(limit, all_ids.size)
        self.ids = all_ids[:n]
        self.submission_s = t["submission_time"][:n] / 1000.0
        self.duration_s = t["duration"][:n] / 1000.0
        self.cpu_count = t["cpu_count"][:n].astype(np.int32)
        self.cpu_capacity_mhz = t["cpu_capacity"][:n]
        self.mem_bytes = t["mem_capacity"][:n] * KB
        self._check_gaps()
        self._sorted_ids = np.sort(self.ids)
        self._sorted_pos = np.argsort(self.ids, kind="stable")
        self._check_fragments(np.sort(all_ids))

    def _check_gaps(self) -> None:
        """Tasks years apart would make the engine's grid span years: a damaged submission time."""
        order = np.argsort(self.submission_s, kind="stable")
        start, end = self.submission_s[order], (self.submission_s + self.duration_s)[order]
        reach = np.maximum.accumulate(end)
        gap = start[1:] - reach[:-1]
        if (gap > MAX_GAP_S).any():
            k = int(np.argmax(gap > MAX_GAP_S))
            raise InputError(self.tasks_path, f"row {int(order[k + 1]) + 1}, column 'submission_time'",
                             f"submitted {gap[k] / 86400:,.0f} days after every earlier task ended (at most "
                             f"{MAX_GAP_S / 86400:.0f}): a damaged submission time?")

    def _positions(self, ids: np.ndarray) -> np.ndarray:
        """Task position of each id, -1 where the id is not among the tasks read."""
        k = np.searchsorted(self._sorted_ids, ids)
        k = np.clip(k, 0, max(self._sorted_ids.size - 1, 0))
        hit = self._sorted_ids[k] == ids if self._sorted_ids.size else np.zeros(ids.size, dtype=bool)
        return np.where(hit, self._sorted_pos[k], -1)

    def _batches(self, batch_rows: int):
        try:
            yield from self._frag_file.iter_batches(batch_size=batch_rows, columns=list(FRAGMENT_COLUMNS))
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise InputError(self.fragments_path, "", f"cannot read Parquet data (truncated?): {str(exc).splitlines()[0][:120]}") from None

    def _check_fragments(self, every_id: np.ndarray) -> None:
        """One pass over the fragments before any work: types, ranges, and every fragment's task exists."""
        fp = self.fragments_path
        row0 = 0
        for batch in self._batches(262_144):
            ids = check_int_ids(_numeric(batch.column("id"), fp, "id", row0), fp, "id", row_offset=row0 + 1)
            dur = _numeric(batch.column("duration"), fp, "duration", row0).astype(np.float64) / 1000.0
            use = _numeric(batch.column("cpu_usage"), fp, "cpu_usage", row0).astype(np.float64)
            check_values(dur, fp, "duration", row_offset=row0 + 1, hi=MAX_TIME_S, what="duration (s)")
            check_values(use, fp, "cpu_usage", row_offset=row0 + 1, hi=MAX_VCPUS * MAX_MHZ_PER_VCPU, what="CPU usage (MHz)")
            k = np.clip(np.searchsorted(every_id, ids), 0, every_id.size - 1)
            unknown = every_id[k] != ids
            if unknown.any():
                i = int(np.argmax(unknown))
                raise InputError(fp, f"row {row0 + i + 1}, column 'id'", f"fragment of task {int(ids[i])}, which is not in tasks.parquet")
            row0 += ids.size

    @property
    def n_tasks(self) -> int:
        return int(self.ids.size)

    def iter_fragments(self, batch_rows: int = 262_144):
        """Yield (task position, start_s, duration_s, cpu_mhz) arrays batch by batch."""
        carry = np.zeros(self.n_tasks)
        for batch in self._batches(batch_rows):
            ids = batch.column("id").to_numpy(zero_copy_only=False).astype(np.int64)
            dur = batch.column("duration").to_numpy(zero_copy_only=False).astype(np.float64) / 1000.0
            use = batch.column("cpu_usage").to_numpy(zero_copy_only=False).astype(np.float64)
            pos = self._positions(ids)
            known = pos >= 0  # fragments of tasks beyond ``limit``
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
            yield pos, start, dur, use

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
        check_budget(4.0 * (t1 - t0) * (self.n_vms + 2 * self.trace.n_tasks),
                     f"the OpenDC demand window ({t1 - t0:,} steps x {self.n_vms:,} VMs)", self.trace.tasks_path.parent)
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
