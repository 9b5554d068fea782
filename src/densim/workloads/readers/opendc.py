"""OpenDC Parquet workloads, every schema version OpenDC has written, read into one task table.

OpenDC (atlarge-research/opendc) describes a workload as *tasks* (one row each: submission time,
CPU count, CPU capacity, memory) and *fragments* (per task, a run of CPU usage, each lasting a
duration). The schema changed over the years; the versions are those of the trace repository
atlarge-research/opendc-traces (``workload/schemas/workload_schema_v1.py`` ... ``_v5.py``, commit
7cff028f) plus the camel-case read schema OpenDC's own reader calls "version 2.0"
(``opendc-trace/.../formats/opendc/parquet/ResourceReadSupport.kt`` and ``ResourceStateReadSupport.kt``,
``READ_SCHEMA_V2_0``):

========  ===================================  ===================================================  ====================
version   files                                tasks columns                                        fragments columns
========  ===================================  ===================================================  ====================
``v1``    ``meta.parquet`` + ``trace.parquet``  id (str), start_time, stop_time (timestamps),          id, timestamp, duration,
          (or ``trace/meta.parquet`` ...)       cpu_count, [cpu_capacity], mem_capacity               cpu_count, cpu_usage
``2.0``   either pair                          id, submissionTime, duration *or* endTime, maxCores,  id, time, duration,
                                               requiredMemory (no CPU capacity)                      cores, cpuUsage
``v2``    ``tasks.parquet`` + ``fragments``     id (str), submission_time (timestamp), cpu_count,     id, duration, cpu_count,
                                               cpu_capacity, mem_capacity (no duration)              cpu_usage
``v3``    ``tasks.parquet`` + ``fragments``     v2 + duration; submission_time int64 ms               as v2
``v4``    ``tasks.parquet`` + ``fragments``     v3 with int32 ids                                     id, duration, cpu_usage
``v5``    as v4                                v4 + ``deferrable``                                   as v4
========  ===================================  ===================================================  ====================

Semantics, as OpenDC's loaders apply them:

* tasks/fragments files (v2-v5, and 2.0 without a ``time`` column): fragments carry no usable time; they run back to back, in
  file order, from the moment the task runs (its submission time if it is placed at once); each lasts
  its ``duration`` (ms); ``cpu_usage`` is the task's total MHz, not per core (ComputeWorkloadLoader.kt,
  current); ``duration`` in the tasks file is metadata (v2 has none: the fragments' sum is used);
* 2.0 files with a ``time`` column, under either pair of names: ``time`` is the moment the fragment
  *starts* (OpenDC's 2.0 trace converter writes ``time = fragment.tick``, the start of the sample;
  ``submissionTime`` is the first tick and ``endTime`` the last tick + duration; rows are sorted by
  (time, id) across VMs): it runs ``[time, time + duration)``, each task's fragments in time order,
  gaps idle and overlaps clipped as below. (OpenDC's later readers map ``time`` to the same column as
  v1's ``timestamp`` and so shift a 2.0 trace one fragment early; the 2.0 converter is the authority.)
* v1 meta/trace files: a fragment's ``timestamp`` is the
  moment it *ends*: it runs ``[timestamp - duration, timestamp)``. A gap between fragments is idle
  time (OpenDC's loader of that era inserts a zero-usage fragment: "There is a gap between the previous
  and current fragment; fill the gap", ComputeWorkloadLoader.kt with ``SimTrace``); here the gap
  becomes a zero-usage fragment of the table. A fragment that starts before its predecessor ends runs
  from that end to its own timestamp (OpenDC's trace holds only end times, so the overlap is dropped;
  the Bitbrains v1 sample has 1,451 such 1-s overlaps); one that ends before its predecessor ends is
  an error;
* ``mem_capacity`` (``requiredMemory``) is in KB, read as KiB (``densim.workloads.readers.conventions``);
* 2.0 gives no CPU capacity, nor do some v1/2.1 ``meta.parquet`` files: a VM group's ``vcpu_speed``
  (or ``vcpu_mhz=``) must supply it;
* GPUs (atlarge-research/opendc commit 691036de, ``opendc-trace/opendc-trace-api/.../conv/TaskColumns.kt``,
  ``FragmentColumns.kt``): a task's ``gpu_count`` (whole GPUs here; OpenDC counts GPU cores, one per GPU in its
  own GPU topologies) and ``gpu_capacity`` (MHz, all its GPUs together), a fragment's ``gpu_usage`` (MHz, the
  task's total, as ``cpu_usage`` is); an empty value is 0 as in OpenDC's ``ComputeWorkloadLoader.kt``. The busy
  share of a fragment is ``gpu_usage / gpu_capacity`` clipped to [0, 1]; usage above capacity is a note (as CPU
  usage above ``cpu_capacity`` is); usage on a task without GPUs is an error. :class:`OpenDcSource` turns them
  into a passthrough request per VM and the ``gpu_util`` channel when the group asks ``gpu: {mode: passthrough}``
  without count (:meth:`OpenDcSource._gpus` refuses every other pairing);
* columns densim does not model (:func:`_column_notes`): workflow ``parents``/``children``,
  ``deferrable``/``nature`` are refused unless every value is a default (zero, empty, false), then noted;
  ``deadline`` (used only by deferrable tasks), ``gpu_mem_capacity`` and unknown columns are noted; a
  fragment's core and GPU counts and 2.0's ``flops`` are redundant and skipped;
* a task whose peak usage exceeds its cpu_capacity (or, in a run, its vCPUs x its host's core speed)
  gets a note with the count and the worst ratio.

:func:`read_opendc_tasks` returns the columnar :class:`OpenDCTasks` (numpy arrays, about 20 bytes per
fragment, no per-task Python objects) that the engine's task source and :class:`OpenDcSource` share.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from densim._jit import njit
from densim.errors import InputError
from densim.spec.gpu import MAX_GPUS_PER_HOST
from densim.workloads.readers._checks import (MAX_GAP_S, MAX_MEMORY_BYTES, MAX_MHZ_PER_VCPU, MAX_TIME_S, MAX_VCPUS,
                                              check_budget, check_int_ids, check_values, check_vcpus, regular_file)
from densim.workloads.readers.conventions import bytes_per_unit
from densim.workloads.sources import DemandSource, VmSizes
from densim.workloads.timegrid import TimeGrid, resample_piecewise

KB = bytes_per_unit("opendc", "memory", "KB")
VERSIONS = ("v1", "2.0", "v2", "v3", "v4", "v5")
# kept for callers of the v4-only reader
TASK_COLUMNS = ("id", "submission_time", "duration", "cpu_count", "cpu_capacity", "mem_capacity")
FRAGMENT_COLUMNS = ("id", "duration", "cpu_usage")
BATCH_ROWS = 262_144
BYTES_PER_FRAGMENT = 20  # int32 task + float64 duration + float64 MHz


# ------------------------------------------------------------------------------------ the table


@dataclass(frozen=True)
class OpenDCTasks:
    """An OpenDC workload as columns: tasks in file order, their fragments grouped by task.

    Fragments of task ``i`` are ``frag_offset[i]:frag_offset[i + 1]`` (``frag_offset`` has ``n + 1``
    entries), in the order they run. Times are seconds (Unix seconds for submissions).
    """

    task_id: np.ndarray  # (n,) int64, or str for the string ids of v1-v3
    submission_s: np.ndarray  # (n,) float64 Unix seconds
    duration_s: np.ndarray  # (n,) float64: the tasks file's duration (v1: stop - start; v2: sum of fragments)
    cpu_count: np.ndarray  # (n,) int32
    cpu_capacity_mhz: np.ndarray  # (n,) float64, all cores together
    mem_bytes: np.ndarray  # (n,) float64
    frag_task: np.ndarray  # (m,) int32 task index
    frag_duration_s: np.ndarray  # (m,) float64
    frag_cpu_mhz: np.ndarray  # (m,) float64: the task's total MHz during the fragment
    frag_offset: np.ndarray  # (n + 1,) int64
    version: str = "v4"
    tasks_path: Path = field(default=Path("tasks.parquet"))
    fragments_path: Path = field(default=Path("fragments.parquet"))
    gap_fragments: int = 0  # zero-usage fragments inserted for idle gaps (timestamped versions)
    clipped_fragments: int = 0  # fragments that overlapped their predecessor and were shortened
    clipped_mhz_s: float = 0.0  # demand those overlaps dropped
    notes: tuple = ()  # what the reader ignored or warns about (columns not modelled, demand above capacity)
    # GPUs (OpenDC's gpu_count / gpu_capacity per task, gpu_usage per fragment; zeros and None without those columns)
    gpu_count: np.ndarray | None = None  # (n,) int32 whole GPUs the task asks for (0: none)
    gpu_capacity_mhz: np.ndarray | None = None  # (n,) float64: all its GPUs together (gpu_capacity)
    frag_gpu_mhz: np.ndarray | None = None  # (m,) float64: the task's GPU usage during the fragment; None: no gpu_usage column

    def __post_init__(self) -> None:
        if self.gpu_count is None:
            object.__setattr__(self, "gpu_count", np.zeros(self.submission_s.size, np.int32))
        if self.gpu_capacity_mhz is None:
            object.__setattr__(self, "gpu_capacity_mhz", np.zeros(self.submission_s.size))

    @property
    def n_tasks(self) -> int:
        return int(self.submission_s.size)

    @property
    def n_fragments(self) -> int:
        return int(self.frag_task.size)

    @property
    def nbytes(self) -> int:
        return int(sum(getattr(self, k).nbytes for k in ("task_id", "submission_s", "duration_s", "cpu_count", "cpu_capacity_mhz",
                                                         "mem_bytes", "frag_task", "frag_duration_s", "frag_cpu_mhz", "frag_offset",
                                                         "gpu_count", "gpu_capacity_mhz"))
                   + (self.frag_gpu_mhz.nbytes if self.frag_gpu_mhz is not None else 0))

    def run_s(self) -> np.ndarray:
        """(n,) the sum of each task's fragment durations: how long it runs once placed."""
        cs = np.concatenate([[0.0], np.cumsum(self.frag_duration_s)])
        return cs[self.frag_offset[1:]] - cs[self.frag_offset[:-1]]

    def frag_start_s(self) -> np.ndarray:
        """(m,) the start of every fragment when each task runs from its submission time."""
        cs = np.cumsum(self.frag_duration_s)
        before = cs - self.frag_duration_s
        base = np.zeros(self.n_tasks)
        nonempty = self.frag_offset[1:] > self.frag_offset[:-1]
        base[nonempty] = before[self.frag_offset[:-1][nonempty]]
        return self.submission_s[self.frag_task] + (before - base[self.frag_task])

    def frag_gpu_util(self) -> np.ndarray | None:
        """(m,) each fragment's GPU busy share: its gpu_usage / its task's gpu_capacity, clipped to [0, 1] (0 for a
        task without GPUs); None when the trace has no gpu_usage column."""
        if self.frag_gpu_mhz is None:
            return None
        cap = self.gpu_capacity_mhz[self.frag_task]
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.where(cap > 0, self.frag_gpu_mhz / cap, 0.0)
        return np.clip(u, 0.0, 1.0)

    def total_cpu_mhz_s(self) -> float:
        """Sum over fragments of CPU usage x duration (MHz x s)."""
        return float(np.dot(self.frag_cpu_mhz, self.frag_duration_s))

    def peak_cpu_mhz(self) -> np.ndarray:
        """(n,) each task's highest fragment CPU usage (MHz, all cores together; 0 for a task without fragments)."""
        out = np.zeros(self.n_tasks)
        has = self.frag_offset[1:] > self.frag_offset[:-1]
        if has.any():
            out[has] = np.maximum.reduceat(self.frag_cpu_mhz, self.frag_offset[:-1][has])
        return out


def overspeed_note(peak_mhz: np.ndarray, vcpus: np.ndarray, vcpu_mhz: np.ndarray, where: str) -> str | None:
    """A warning when some tasks ask more MHz per core than their cores run at: the engine caps a VM at
    vCPUs x MHz per vCPU, so such a task gets only that share of its demand (None when none does)."""
    cap = np.asarray(vcpus, dtype=np.float64) * np.asarray(vcpu_mhz, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(cap > 0, peak_mhz / cap, 0.0)
    over = ratio > 1.0 + 1e-9
    if not over.any():
        return None
    k = int(np.argmax(np.where(over, ratio, 0.0)))
    n = int(over.sum())
    return (f"{n:,} task{' asks' if n == 1 else 's ask'} more CPU per core than {where}: the worst asks "
            f"{peak_mhz[k] / max(vcpus[k], 1):,.0f} MHz per core on {vcpu_mhz[k]:,.0f} MHz cores ({ratio[k]:.1f}x; it can get "
            f"{100.0 / ratio[k]:.1f} % of its demand); check the trace's cpu_usage units or the VM group's vcpu_speed")


# ------------------------------------------------------------------------------------ schema detection


@dataclass(frozen=True)
class _Schema:
    version: str
    tasks_path: Path
    fragments_path: Path
    cols: dict  # canonical name -> column name in the tasks file
    frag_cols: dict  # canonical name -> column name in the fragments file
    timestamps: bool  # fragments are placed by their timestamps (meta/trace files; 2.0 with 'time')
    stamp_is_start: bool = False  # the timestamp is the fragment's start (2.0), not its end (v1)
    task_names: tuple = ()  # every column of the tasks file
    frag_names: tuple = ()  # every column of the fragments file
    gpu_cols: tuple = ()  # the tasks file's GPU columns densim reads: gpu_count, gpu_capacity (nullable in OpenDC)
    frag_gpu: str | None = None  # the fragments file's gpu_usage column, when it has one


def _first(folder: Path, names: tuple[str, ...]) -> Path | None:
    for n in names:
        if (folder / n).exists():
            return folder / n
    return None


def _open(path: Path) -> pq.ParquetFile:
    regular_file(path, "Parquet file")
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(path, "", f"not a readable Parquet file (truncated?): {str(exc).splitlines()[0][:120]}") from None


def _names(pf: pq.ParquetFile, path: Path) -> list[str]:
    names = pf.schema_arrow.names
    for c in set(names):
        if names.count(c) > 1:
            raise InputError(path, f"column {c!r}", "appears twice")
    return names


def _unsupported(path: Path, names: list[str], what: str) -> InputError:
    m = re.search(r"(?:^|[/_-])v(\d+(?:\.\d+)?)(?:$|[/_-])", str(path.parent).lower() + "/")
    tag = f" {m.group(1)}" if m and f"v{m.group(1)}" not in VERSIONS and m.group(1) not in VERSIONS else ""
    return InputError(path, "", f"unsupported OpenDC trace version{tag}: the {what} columns ({', '.join(names)[:160]}) match none of the "
                                f"schemas densim reads ({', '.join(VERSIONS)}; see docs/reference/inventory-formats.md)")


def detect_schema(path: str | Path) -> _Schema:
    """Which OpenDC schema the folder (or one of its files) holds, from its file and column names."""
    path = Path(path)
    folder = path.parent if path.is_file() else path
    tasks = _first(folder, ("tasks.parquet", "meta.parquet", "trace/meta.parquet"))
    if tasks is None:
        raise InputError(folder, "", "no OpenDC tasks file (tasks.parquet, or meta.parquet for the v1 schema)")
    frag_names = ("fragments.parquet",) if tasks.name == "tasks.parquet" else ("trace.parquet",)
    frags = _first(tasks.parent, frag_names)
    if frags is None:
        raise InputError(tasks.parent / frag_names[0], "", f"file not found (the fragments that go with {tasks.name})")
    tn = _names(_open(tasks), tasks)
    fn = _names(_open(frags), frags)
    timestamps = frags.name == "trace.parquet"
    ts = set(tn)

    def need(version: str, cols: dict) -> dict:
        for col in cols.values():
            if col not in ts:
                raise InputError(tasks, f"column {col!r}", f"missing column (an OpenDC {version} tasks file)")
        return cols

    if "start_time" in ts or "stop_time" in ts:
        # v1 (and OpenDC's 2.1 read schema); cpu_capacity is optional: without it the VM group's vcpu_speed gives it
        version = "v1"
        cols = {"id": "id", "start": "start_time", "stop": "stop_time", "cpu_count": "cpu_count", "mem": "mem_capacity"}
        if "cpu_capacity" in ts:
            cols["cpu_capacity"] = "cpu_capacity"
        need(version, cols)
    elif "submissionTime" in ts:
        version = "2.0"
        cols = {"id": "id", "start": "submissionTime", "cpu_count": "maxCores", "mem": "requiredMemory"}
        cols.update({"stop": "endTime"} if "endTime" in ts else {"duration": "duration"})
        need(version, cols)
    elif "submission_time" in ts:
        cols = {"id": "id", "start": "submission_time", "cpu_count": "cpu_count", "cpu_capacity": "cpu_capacity",
                "mem": "mem_capacity"}
        if "duration" not in ts and pa.types.is_timestamp(_open(tasks).schema_arrow.field("submission_time").type):
            version = "v2"
        else:
            cols["duration"] = "duration"
            id_type = _open(tasks).schema_arrow.field("id").type if "id" in ts else pa.int32()
            version = "v3" if pa.types.is_string(id_type) or pa.types.is_large_string(id_type) else (
                "v5" if "deferrable" in ts else "v4")
        need(version, cols)
    else:
        raise _unsupported(tasks, tn, "tasks file")
    fs = set(fn)
    fcols = {"id": "id", "duration": "duration"}
    usage = next((c for c in ("cpu_usage", "cpuUsage") if c in fs), None)
    if "id" not in fs or "duration" not in fs or usage is None:
        missing = next(c for c, ok in (("id", "id" in fs), ("duration", "duration" in fs), ("cpu_usage", usage is not None)) if not ok)
        raise InputError(frags, f"column {missing!r}", f"missing column (an OpenDC {version} fragments file)")
    fcols["usage"] = usage
    stamp_is_start = False
    if version == "2.0" and "time" in fs:
        # 2.0 (Capelin): 'time' is the fragment's START whatever the files are called (OpenDC's 2.0 converter
        # writes record["time"] = fragment.tick, the start of the 5-min sample, submissionTime = the first tick,
        # endTime = max(tick + duration); rows sorted by (time, id) across VMs)
        timestamps, stamp_is_start = True, True
        fcols["stamp"] = "time"
    elif timestamps:
        stamp = next((c for c in ("timestamp", "time") if c in fs), None)
        if stamp is None:
            raise InputError(frags, "column 'timestamp'", f"missing column (an OpenDC {version} trace.parquet gives each fragment's end time)")
        fcols["stamp"] = stamp
    gpu_cols = tuple(c for c in ("gpu_count", "gpu_capacity") if c in ts)
    if "gpu_capacity" in gpu_cols and "gpu_count" not in gpu_cols:
        raise InputError(tasks, "column 'gpu_count'", "missing column (the file gives gpu_capacity: how many GPUs is it for?)")
    frag_gpu = "gpu_usage" if "gpu_usage" in fs else None
    return _Schema(version, tasks, frags, cols, fcols, timestamps, stamp_is_start, tuple(tn), tuple(fn), gpu_cols, frag_gpu)


# ------------------------------------------------------------------------------------ columns densim does not model

# read by OpenDC but redundant here: a fragment's core count (usage is the task's total MHz), its
# FLOPs (usage x duration, 2.0), a task's duration when its stop time is given
# FLOPs (usage x duration, 2.0), a task's duration when its stop time is given, a fragment's GPU count (v1; the
# task's gpu_count rules)
_REDUNDANT = {"tasks": {"duration", "endTime", "stop_time"},
              "fragments": {"cpu_count", "cores", "flops", "time", "timestamp", "gpu_count"}}
# GPU columns read (gpu_count, gpu_capacity, gpu_usage: :func:`_read_gpus`) or not modelled: a task's GPU memory
# (OpenDC's own loader reads none either: ComputeWorkloadLoader.kt sets gpuMemory = 0, "currently not implemented")
_GPU = ("gpu_mem_capacity",)
_WORKFLOW = ("parents", "children")
_DEFERRAL = ("deferrable", "nature", "deadline")


def _nonempty(col: pa.ChunkedArray) -> np.ndarray:
    """Per row: whether the value is set to something other than its default (null, false, 0, '', [])."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    t = col.type
    if pa.types.is_struct(t):
        out = np.zeros(len(col), dtype=bool)
        for i in range(t.num_fields):
            out |= _nonempty(col.field(i))
        return out & ~numpy_of(col.is_null())
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        v = pc.list_value_length(col).fill_null(0)
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        v = pc.utf8_length(pc.utf8_trim_whitespace(col)).fill_null(0)
    elif pa.types.is_boolean(t):
        v = col.fill_null(False)
    else:
        try:
            v = pc.not_equal(col.cast(pa.float64()), 0.0).fill_null(False)
        except (pa.ArrowException, TypeError):
            return ~numpy_of(col.is_null())
    return numpy_of(v).astype(bool)


def numpy_of(col) -> np.ndarray:
    """An Arrow array (or chunked array) as numpy without pyarrow's pandas-backed converter: ``to_numpy``
    imports pandas (about 0.4 s of a cold process) even for plain numbers. Fixed-width numbers, timestamps
    (as int64) and booleans without nulls are read from their buffers (a view for one chunk, as ``to_numpy``
    gives); anything else (strings, nulls) still goes through ``to_numpy``."""
    if isinstance(col, pa.ChunkedArray):
        if col.num_chunks == 1:
            return numpy_of(col.chunk(0))
        return numpy_of(col.combine_chunks())
    t = col.type
    n = len(col)
    if col.null_count == 0:
        if pa.types.is_boolean(t):
            if n == 0:
                return np.zeros(0, dtype=bool)
            bits = np.frombuffer(col.buffers()[1], dtype=np.uint8)
            return np.unpackbits(bits, count=col.offset + n, bitorder="little")[col.offset:].astype(bool)
        if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_timestamp(t) or pa.types.is_duration(t):
            kind = "f" if pa.types.is_floating(t) else ("u" if pa.types.is_unsigned_integer(t) else "i")
            dt = np.dtype(f"<{kind}{t.bit_width // 8}")
            if n == 0:
                return np.zeros(0, dtype=dt)
            return np.frombuffer(col.buffers()[1], dtype=dt, count=n, offset=col.offset * dt.itemsize)
    return col.to_numpy(zero_copy_only=False)


def _column_notes(sch: _Schema) -> list[str]:
    """The columns densim reads no value from: refused (one line) when they would change the simulation,
    else one note each (GPU memory, no workflow dependencies, no deferrable task, unknown names)."""
    notes: list[str] = []
    used_t = set(sch.cols.values()) | _REDUNDANT["tasks"] | set(sch.gpu_cols)
    used_f = set(sch.frag_cols.values()) | _REDUNDANT["fragments"] | ({sch.frag_gpu} if sch.frag_gpu else set())
    files = ((sch.tasks_path, [c for c in sch.task_names if c not in used_t], "tasks"),
             (sch.fragments_path, [c for c in sch.frag_names if c not in used_f], "fragments"))
    for path, extra, what in files:
        if not extra:
            continue
        table = _read_table(_open(path), path, extra)
        unknown = []
        for c in extra:
            if c not in _GPU + _WORKFLOW + _DEFERRAL:
                unknown.append(c)
                continue
            n = int(_nonempty(table.column(c)).sum())
            if c in _GPU:
                notes.append(f"{path.name}: column '{c}' not modelled ({n:,} {what} give one; OpenDC's loader reads none "
                             "either): a passthrough GPU brings its whole memory" if n else
                             f"{path.name}: column '{c}' ignored (all values zero or empty)")
            elif c in _WORKFLOW:
                if n:
                    who = "dependent tasks would start together" if c == "parents" else "tasks with children would not hold them back"
                    raise InputError(path, f"column {c!r}", f"workflow dependencies are not modelled ({n:,} {who}, each at its own "
                                                            "submission time); drop the column to run them independently")
                notes.append(f"{path.name}: column '{c}' ignored (empty for every task: no workflow dependencies)")
            elif c == "deferrable" or c == "nature":
                if n:
                    raise InputError(path, f"column {c!r}", f"deferrable tasks are not modelled ({n:,} tasks marked {c}; densim "
                                                            "runs every task at its submission time, never shifts it): drop the "
                                                            "column to run them undeferred")
                notes.append(f"{path.name}: column '{c}' ignored (no task is deferrable)")
            else:  # deadline: OpenDC uses it only to defer deferrable tasks
                notes.append(f"{path.name}: column 'deadline' ignored (only deferrable tasks use it, and none is)")
        if unknown:
            notes.append(f"{path.name}: column{'s' if len(unknown) > 1 else ''} not read: {', '.join(unknown)[:160]}")
    return notes


# ------------------------------------------------------------------------------------ reading


def _numeric(col, path: Path, name: str, row0: int = 0) -> np.ndarray:
    """A Parquet column as numbers (timestamps as int64 ms); nulls and text are errors at their row."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if col.null_count:
        r = int(np.argmax(numpy_of(col.is_null())))
        raise InputError(path, f"row {row0 + r + 1}, column {name!r}", "empty value")
    t = col.type
    if pa.types.is_timestamp(t):
        return numpy_of(col.cast(pa.timestamp("ms", tz=t.tz)).cast(pa.int64()))
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return numpy_of(col)
    if pa.types.is_decimal(t):
        return numpy_of(col.cast(pa.float64()))
    raise InputError(path, f"column {name!r}", f"not numeric (a {t} column)")


def _ids(col, path: Path, name: str, row0: int = 0) -> pa.Array:
    """Task ids as int64 or string arrow arrays (nulls, blanks and non-whole numbers are errors)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if col.null_count:
        r = int(np.argmax(numpy_of(col.is_null())))
        raise InputError(path, f"row {row0 + r + 1}, column {name!r}", "empty value")
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        s = col.cast(pa.string())
        blank = numpy_of(pc.equal(pc.utf8_trim_whitespace(s), ""))
        if blank.any():
            raise InputError(path, f"row {row0 + int(np.argmax(blank)) + 1}, column {name!r}", "task id is blank")
        return s
    ids = check_int_ids(_numeric(col, path, name, row0), path, name, row_offset=row0 + 1)
    ids = np.ascontiguousarray(ids, dtype=np.int64)  # pa.array(ndarray) would import pandas (see numpy_of)
    return pa.Array.from_buffers(pa.int64(), ids.size, [None, pa.py_buffer(ids)])


def _first_duplicate(ids: np.ndarray) -> tuple[int, int] | None:
    """(row of the first repeated id, row of its earlier twin), 0-based, or None."""
    order = np.argsort(ids, kind="stable")
    s = ids[order]
    dup = s[1:] == s[:-1]
    if not dup.any():
        return None
    later = order[1:][dup]
    earlier = order[:-1][dup]
    k = int(np.argmin(later))
    return int(later[k]), int(earlier[k])


def _read_table(pf: pq.ParquetFile, path: Path, columns: list[str]) -> pa.Table:
    try:
        return pf.read(columns=columns)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(path, "", f"cannot read Parquet data (truncated?): {str(exc).splitlines()[0][:120]}") from None


def _batches(pf: pq.ParquetFile, path: Path, columns: list[str], batch_rows: int = BATCH_ROWS):
    try:
        yield from pf.iter_batches(batch_size=batch_rows, columns=columns)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(path, "", f"cannot read Parquet data (truncated?): {str(exc).splitlines()[0][:120]}") from None


@njit
def _timeline(task, end_ms, dur_ms, sub_ms, out_task, out_dur, out_src, fill):
    """Lay timestamped fragments (grouped by task, in file order) on each task's timeline.

    Fragment ``i`` runs ``[max(end_i - dur_i, previous end), end_i)``, the task's first from its
    submission time on; a gap before it becomes a zero-usage fragment (``out_src = -1``). With ``fill``
    False the outputs are not written, only counted. Returns (fragments out, gap fragments, fragments
    clipped, index of the first fragment that ends before its predecessor (or its task) ends, else -1).
    """
    n = task.size
    k = 0
    gaps = 0
    clipped = 0
    prev = -1
    run_end = 0
    for i in range(n):
        t = task[i]
        if t != prev:
            run_end = sub_ms[t]
            prev = t
        start = end_ms[i] - dur_ms[i]
        if end_ms[i] < run_end or (end_ms[i] == run_end and dur_ms[i] > 0 and start < run_end):
            return k, gaps, clipped, i
        if start > run_end:
            if fill:
                out_task[k] = t
                out_dur[k] = start - run_end
                out_src[k] = -1
            k += 1
            gaps += 1
        elif start < run_end:
            clipped += 1
            start = run_end
        if fill:
            out_task[k] = t
            out_dur[k] = end_ms[i] - start
            out_src[k] = i
        k += 1
        run_end = end_ms[i]
    return k, gaps, clipped, -1


def _gpu_values(col, path: Path, name: str, row0: int = 0) -> np.ndarray:
    """An OpenDC GPU column as float64, an empty value (null or NaN) read as 0 as OpenDC's loader does
    (ComputeWorkloadLoader.kt: "Default to 0 if not present"); text is an error."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    t = col.type
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_null(t)):
        raise InputError(path, f"column {name!r}", f"not numeric (a {t} column)")
    v = np.asarray(numpy_of(col.cast(pa.float64()).fill_null(0.0)), dtype=np.float64)
    return np.where(np.isnan(v), 0.0, v)


def _task_gpus(tf: pq.ParquetFile, tp: Path, sch: _Schema, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(n,) each task's GPUs (``gpu_count``, whole GPUs) and their capacity (``gpu_capacity``, MHz of all of
    them together); zeros without those columns."""
    count, cap = np.zeros(n), np.zeros(n)
    if not sch.gpu_cols:
        return count, cap
    table = _read_table(tf, tp, list(sch.gpu_cols))
    count = _gpu_values(table.column("gpu_count"), tp, "gpu_count")
    check_values(count, tp, "gpu_count", row_offset=1, hi=MAX_GPUS_PER_HOST, integer=True, what="GPU count")
    if "gpu_capacity" in sch.gpu_cols:
        cap = _gpu_values(table.column("gpu_capacity"), tp, "gpu_capacity")
        check_values(cap, tp, "gpu_capacity", row_offset=1, what="GPU capacity (MHz)")
    if sch.frag_gpu:  # the fragments' gpu_usage is read as a share of gpu_capacity
        bad = (count > 0) & (cap <= 0)
        if bad.any():
            r = int(np.argmax(bad))
            why = "" if "gpu_capacity" in sch.gpu_cols else " (the file has no gpu_capacity column)"
            raise InputError(tp, f"row {r + 1}, column 'gpu_capacity'",
                             f"the task has {int(count[r])} GPU{'s' if count[r] != 1 else ''} but no GPU capacity{why}: its "
                             f"fragments' gpu_usage (MHz) is read as a share of gpu_capacity (MHz of all its GPUs)")
    return count, cap


def _gpu_usage_checks(t: OpenDCTasks, sch: _Schema) -> str | None:
    """A task without GPUs whose fragments use one is an error; GPU usage above the task's gpu_capacity gets a
    note (as CPU usage above cpu_capacity does: the busy share is clipped to 1)."""
    has = t.frag_offset[1:] > t.frag_offset[:-1]
    peak = np.zeros(t.n_tasks)
    if has.any():
        peak[has] = np.maximum.reduceat(t.frag_gpu_mhz, t.frag_offset[:-1][has])
    stray = (t.gpu_count == 0) & (peak > 0)
    if stray.any():
        r = int(np.argmax(stray))
        raise InputError(t.fragments_path, f"column {sch.frag_gpu!r}",
                         f"fragments of task {t.task_id[r].item()!r} (row {r + 1} of {t.tasks_path.name}) use a GPU (up to "
                         f"{peak[r]:,.0f} MHz) but the task's gpu_count is 0")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(t.gpu_capacity_mhz > 0, peak / t.gpu_capacity_mhz, 0.0)
    over = ratio > 1.0 + 1e-9
    if not over.any():
        return None
    k = int(np.argmax(np.where(over, ratio, 0.0)))
    n = int(over.sum())
    return (f"{n:,} task{' uses' if n == 1 else 's use'} more GPU than its gpu_capacity in {t.tasks_path.name}: the worst, "
            f"task {t.task_id[k].item()!r}, {peak[k]:,.0f} MHz of {t.gpu_capacity_mhz[k]:,.0f} ({ratio[k]:.2f}x); its GPUs' "
            "busy share is read as at most 1 (check the trace's gpu_usage units)")


def read_opendc_tasks(path: str | Path, *, limit: int | None = None, vcpu_mhz: float | None = None,
                      require_capacity: bool = True) -> OpenDCTasks:
    """Read an OpenDC workload folder of any supported schema version into an :class:`OpenDCTasks`.

    ``limit`` keeps the first ``limit`` tasks (file order) and their fragments. ``vcpu_mhz`` gives the
    MHz of one core where the schema has no CPU capacity (2.0); without it such a trace is an error
    (or, with ``require_capacity=False``, has NaN capacities for the caller to fill). Every value is
    checked before any work: types, ranges, unique ids, no departure before arrival, every fragment's
    task exists; problems are :class:`InputError` naming the file, row and column.
    """
    sch = detect_schema(path)
    tp, fp = sch.tasks_path, sch.fragments_path
    notes = _column_notes(sch)
    tf = _open(tp)
    c = sch.cols
    table = _read_table(tf, tp, list(c.values()))
    n_all = table.num_rows
    if n_all == 0:
        raise InputError(tp, "row 1", "no tasks (the file has zero rows)")
    ids = _ids(table.column(c["id"]), tp, c["id"])
    id_np = numpy_of(ids)
    if pa.types.is_string(ids.type):
        id_np = id_np.astype(str)
    dup = _first_duplicate(id_np)
    if dup is not None:
        raise InputError(tp, f"row {dup[0] + 1}, column {c['id']!r}", f"duplicate task id {id_np[dup[0]].item()!r} (also in row {dup[1] + 1})")
    num = {k: _numeric(table.column(v), tp, v).astype(np.float64) for k, v in c.items() if k != "id"}
    start_ms = _numeric(table.column(c["start"]), tp, c["start"]).astype(np.int64)
    del table
    check_values(num["start"] / 1000.0, tp, c["start"], row_offset=1, hi=MAX_TIME_S, what="time (s)")
    if "stop" in num:
        check_values(num["stop"] / 1000.0, tp, c["stop"], row_offset=1, hi=MAX_TIME_S, what="time (s)")
        early = num["stop"] < num["start"]
        if early.any():
            r = int(np.argmax(early))
            raise InputError(tp, f"row {r + 1}, column {c['stop']!r}",
                             f"the task ends {(num['start'][r] - num['stop'][r]) / 1000:,.0f} s before it starts "
                             f"({c['stop']} before {c['start']}: a departure before its arrival)")
        duration_s = (num["stop"] - num["start"]) / 1000.0
    elif "duration" in num:
        check_values(num["duration"] / 1000.0, tp, c["duration"], row_offset=1, hi=MAX_TIME_S, what="duration (s)")
        duration_s = num["duration"] / 1000.0
    else:
        duration_s = None  # v2: the fragments' sum, below
    bad = num["cpu_count"] <= 0
    if bad.any():
        r = int(np.argmax(bad))
        raise InputError(tp, f"row {r + 1}, column {c['cpu_count']!r}", "must be > 0")
    check_vcpus(num["cpu_count"], tp, c["cpu_count"], row_offset=1)
    if "cpu_capacity" in num:
        check_values(num["cpu_capacity"], tp, c["cpu_capacity"], row_offset=1, hi=MAX_VCPUS * MAX_MHZ_PER_VCPU, what="CPU capacity (MHz)")
        capacity = num["cpu_capacity"]
    elif vcpu_mhz is not None:
        capacity = num["cpu_count"] * float(vcpu_mhz)
    elif require_capacity:
        raise InputError(tp, f"column {c['cpu_count']!r}", f"an OpenDC {sch.version} trace gives no CPU capacity: set the VM "
                                                           "group's vcpu_speed (MHz of one core)")
    else:
        capacity = np.full(n_all, np.nan)
    check_values(num["mem"] * KB, tp, c["mem"], row_offset=1, hi=MAX_MEMORY_BYTES, what="memory (bytes)")
    gpu_n, gpu_cap = _task_gpus(tf, tp, sch, n_all)
    n = n_all if limit is None else max(0, min(int(limit), n_all))

    # ---- fragments: one pass, batch by batch, into preallocated columns (about 20 bytes each)
    pf = _open(fp)
    m_all = pf.metadata.num_rows
    fc = sch.frag_cols
    check_budget(float(m_all) * (BYTES_PER_FRAGMENT + (24 if sch.timestamps else 8)),
                 f"the OpenDC fragment table ({m_all:,} fragments)", fp)
    f_task = np.empty(m_all, dtype=np.int32)
    f_dur_ms = np.empty(m_all, dtype=np.int64 if sch.timestamps else np.float64)
    f_use = np.empty(m_all, dtype=np.float64)
    f_gpu = np.empty(m_all, dtype=np.float64) if sch.frag_gpu else None
    f_end = np.empty(m_all, dtype=np.int64) if sch.timestamps else None
    f_row = np.empty(m_all, dtype=np.int64) if sch.timestamps else None
    k = 0
    row0 = 0
    for batch in _batches(pf, fp, list(fc.values()) + ([sch.frag_gpu] if sch.frag_gpu else [])):
        fid = _ids(batch.column(fc["id"]), fp, fc["id"], row0)
        if pa.types.is_string(fid.type) != pa.types.is_string(ids.type):
            fid = fid.cast(pa.string()) if pa.types.is_string(ids.type) else fid
        value_set = ids if pa.types.is_string(fid.type) == pa.types.is_string(ids.type) else ids.cast(pa.string())
        pos = pc.index_in(fid, value_set=value_set)
        if pos.null_count:
            i = int(np.argmax(numpy_of(pos.is_null())))
            raise InputError(fp, f"row {row0 + i + 1}, column {fc['id']!r}",
                             f"fragment of task {fid[i].as_py()!r}, which is not in {tp.name}")
        pos = numpy_of(pos).astype(np.int64)
        dur = _numeric(batch.column(fc["duration"]), fp, fc["duration"], row0)
        use = _numeric(batch.column(fc["usage"]), fp, fc["usage"], row0).astype(np.float64)
        check_values(dur / 1000.0, fp, fc["duration"], row_offset=row0 + 1, hi=MAX_TIME_S, what="duration (s)")
        check_values(use, fp, fc["usage"], row_offset=row0 + 1, hi=MAX_VCPUS * MAX_MHZ_PER_VCPU, what="CPU usage (MHz)")
        keep = pos < n
        cnt = int(keep.sum())
        sl = slice(k, k + cnt)
        f_task[sl] = pos[keep]
        f_use[sl] = use[keep]
        if f_gpu is not None:
            g = _gpu_values(batch.column(sch.frag_gpu), fp, sch.frag_gpu, row0)
            check_values(g, fp, sch.frag_gpu, row_offset=row0 + 1, what="GPU usage (MHz)")
            f_gpu[sl] = g[keep]
        if sch.timestamps:
            end = _numeric(batch.column(fc["stamp"]), fp, fc["stamp"], row0)
            check_values(end / 1000.0, fp, fc["stamp"], row_offset=row0 + 1, hi=MAX_TIME_S, what="time (s)")
            f_dur_ms[sl] = dur[keep].astype(np.int64)
            f_end[sl] = end[keep].astype(np.int64) + (f_dur_ms[sl] if sch.stamp_is_start else 0)
            f_row[sl] = np.flatnonzero(keep) + row0
        else:
            f_dur_ms[sl] = dur[keep]
        k += cnt
        row0 += batch.num_rows
    f_task, f_dur_ms, f_use = f_task[:k], f_dur_ms[:k], f_use[:k]
    f_gpu = f_gpu[:k] if f_gpu is not None else None
    sub_ms = start_ms[:n]
    gaps = clipped = 0
    clipped_mhz_s = 0.0
    if sch.timestamps:
        f_end, f_row = f_end[:k], f_row[:k]
        if sch.stamp_is_start:  # 2.0: rows sorted by time across VMs; each task's fragments in time order
            order = np.lexsort((f_end - f_dur_ms, f_task))
        else:
            order = np.argsort(f_task, kind="stable")  # file order inside a task, as OpenDC reads them
        f_task, f_dur_ms, f_use, f_end, f_row = f_task[order], f_dur_ms[order], f_use[order], f_end[order], f_row[order]
        f_gpu = f_gpu[order] if f_gpu is not None else None
        del order
        cnt, gaps, clipped, bad_i = _timeline(f_task, f_end, f_dur_ms, sub_ms, f_task[:0], f_dur_ms[:0], f_row[:0], False)
        if bad_i >= 0:
            raise InputError(fp, f"row {int(f_row[bad_i]) + 1}, column {fc['stamp']!r}",
                             f"fragment of task {id_np[f_task[bad_i]].item()!r} "
                             + ("(its 'time' is its start, as OpenDC 2.0 writes it) lies inside the task's previous fragment "
                                "or starts before the task's submissionTime: a repeated or damaged row" if sch.stamp_is_start else
                                "ends before the task's previous fragment ends (or before the task starts): a row out of order or repeated"))
        o_task = np.empty(cnt, dtype=np.int32)
        o_dur = np.empty(cnt, dtype=np.int64)
        o_src = np.empty(cnt, dtype=np.int64)
        _timeline(f_task, f_end, f_dur_ms, sub_ms, o_task, o_dur, o_src, True)
        src_ok = o_src >= 0
        o_use = np.zeros(cnt)
        o_use[src_ok] = f_use[o_src[src_ok]]
        if f_gpu is not None:  # a gap fragment is idle on the GPU too
            o_gpu = np.zeros(cnt)
            o_gpu[src_ok] = f_gpu[o_src[src_ok]]
            f_gpu = o_gpu
        cut_ms = f_dur_ms[o_src[src_ok]] - o_dur[src_ok]
        clipped_mhz_s = float(np.dot(o_use[src_ok], cut_ms / 1000.0))
        f_task, f_dur_s, f_use = o_task, o_dur / 1000.0, o_use
        del o_src, f_end, f_row
    else:
        if f_task.size and (np.diff(f_task) < 0).any():
            order = np.argsort(f_task, kind="stable")  # grouped by task, file order kept within a task
            f_task, f_dur_ms, f_use = f_task[order], f_dur_ms[order], f_use[order]
            f_gpu = f_gpu[order] if f_gpu is not None else None
            del order
        f_dur_s = f_dur_ms / 1000.0
    counts = np.bincount(f_task, minlength=n)[:n]
    offset = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=offset[1:])
    if duration_s is None:
        cs = np.concatenate([[0.0], np.cumsum(f_dur_s)])
        duration_s = cs[offset[1:]] - cs[offset[:-1]]
    else:
        duration_s = duration_s[:n]
    out = OpenDCTasks(
        task_id=id_np[:n].copy(), submission_s=sub_ms / 1000.0, duration_s=np.asarray(duration_s, dtype=np.float64),
        cpu_count=num["cpu_count"][:n].astype(np.int32), cpu_capacity_mhz=np.asarray(capacity[:n], dtype=np.float64),
        mem_bytes=num["mem"][:n] * KB, frag_task=f_task, frag_duration_s=np.asarray(f_dur_s, dtype=np.float64),
        frag_cpu_mhz=f_use, frag_offset=offset, version=sch.version, tasks_path=tp, fragments_path=fp,
        gap_fragments=int(gaps), clipped_fragments=int(clipped), clipped_mhz_s=clipped_mhz_s, notes=tuple(notes),
        gpu_count=gpu_n[:n].astype(np.int32), gpu_capacity_mhz=gpu_cap[:n], frag_gpu_mhz=f_gpu,
    )
    if out.frag_gpu_mhz is not None:
        note = _gpu_usage_checks(out, sch)
        if note:
            out = replace(out, notes=out.notes + (note,))
    _check_gaps(out)
    has_cap = np.isfinite(out.cpu_capacity_mhz)
    if has_cap.any():
        note = overspeed_note(out.peak_cpu_mhz()[has_cap], out.cpu_count[has_cap], (out.cpu_capacity_mhz / np.maximum(out.cpu_count, 1))[has_cap],
                              f"the task's cores run at (cpu_capacity / cpu_count in {tp.name})")
        if note:
            out = replace(out, notes=out.notes + (note,))
    return out


def _check_gaps(t: OpenDCTasks) -> None:
    """Tasks years apart would make the engine's grid span years: a damaged submission time."""
    if t.n_tasks < 2:
        return
    order = np.argsort(t.submission_s, kind="stable")
    start = t.submission_s[order]
    end = start + np.maximum(t.duration_s[order], t.run_s()[order])
    reach = np.maximum.accumulate(end)
    gap = start[1:] - reach[:-1]
    if (gap > MAX_GAP_S).any():
        k = int(np.argmax(gap > MAX_GAP_S))
        col = "start_time" if t.version == "v1" else ("submissionTime" if t.version == "2.0" else "submission_time")
        raise InputError(t.tasks_path, f"row {int(order[k + 1]) + 1}, column {col!r}",
                         f"submitted {gap[k] / 86400:,.0f} days after every earlier task ended (at most "
                         f"{MAX_GAP_S / 86400:.0f}): a damaged submission time?")


# ------------------------------------------------------------------------------------ trace + demand source


class OpenDcTrace:
    """An OpenDC workload folder opened for the engine: the task table and each fragment's start time
    when every task runs from its submission time (VMs present the whole horizon)."""

    def __init__(self, path: Path, limit: int | None = None, vcpu_mhz: float | None = None, **_: object) -> None:
        self.table = read_opendc_tasks(path, limit=limit, vcpu_mhz=vcpu_mhz, require_capacity=False)
        t = self.table
        self.version = t.version
        self.tasks_path = t.tasks_path
        self.fragments_path = t.fragments_path
        self.ids = t.task_id
        self.submission_s = t.submission_s
        self.duration_s = t.duration_s
        self.cpu_count = t.cpu_count
        self.cpu_capacity_mhz = t.cpu_capacity_mhz
        self.mem_bytes = t.mem_bytes
        self.gpu_count = t.gpu_count
        self.frag_start_s = t.frag_start_s()
        self.frag_gpu_util = t.frag_gpu_util()  # (m,) in table order, or None without a gpu_usage column
        self.notes = list(t.notes)

    @property
    def n_tasks(self) -> int:
        return self.table.n_tasks

    def iter_fragments(self, batch_rows: int = BATCH_ROWS):
        """Yield (task position, start_s, duration_s, cpu_mhz) arrays batch by batch."""
        t = self.table
        for a in range(0, t.n_fragments, batch_rows):
            b = min(t.n_fragments, a + batch_rows)
            yield t.frag_task[a:b], self.frag_start_s[a:b], t.frag_duration_s[a:b], t.frag_cpu_mhz[a:b]

    def total_cpu_mhz_s(self) -> float:
        return self.table.total_cpu_mhz_s()


class OpenDcSource(DemandSource):
    """An OpenDC trace's tasks as VMs (``count`` of them: the tasks in turn). ``gpu``: the VM group's
    ``vms[].gpu`` (a :class:`densim.spec.gpu.VmGpu` or None), checked against the trace's GPU columns by
    :meth:`_gpus`; ``gpu_field`` None: no engine run asks (an inventory for densim plan)."""

    channels = ("cpu_mhz",)

    def __init__(self, trace: OpenDcTrace, name: str, count: int | None = None, vcpus: int | None = None,
                 vcpu_mhz: float | None = None, mem_bytes: float | None = None, offset_s: float = 0.0,
                 gpu=None, gpu_field: str | None = None) -> None:
        self.trace = trace
        n = trace.n_tasks
        count = n if count is None else count
        self.vm_task = np.arange(count) % n
        # (VMs,) whole GPUs each VM takes, from its task's gpu_count (the group's gpu: {mode: passthrough} without
        # count), or None; with "gpu_util" among the channels: each step's GPU busy share from gpu_usage / gpu_capacity
        self.gpu_count: np.ndarray | None = None
        self._gpus(name, gpu, gpu_field)
        per_core = trace.cpu_capacity_mhz / np.maximum(trace.cpu_count, 1)
        if not vcpu_mhz and np.isnan(per_core).any():
            raise InputError(trace.tasks_path, "", f"an OpenDC {trace.version} trace gives no CPU capacity: set the VM group's "
                                                   "vcpu_speed (MHz of one core)")
        self.offset_s = float(offset_s)
        self.sizes = VmSizes(
            names=np.array([f"{name}-{trace.ids[t]}" + (f"-{i // n}" if count > n else "") for i, t in enumerate(self.vm_task)], dtype=object),
            vcpus=(np.full(count, vcpus) if vcpus else trace.cpu_count[self.vm_task]).astype(np.int32),
            vcpu_mhz=(np.full(count, vcpu_mhz) if vcpu_mhz else per_core[self.vm_task]).astype(np.float64),
            mem_bytes=(np.full(count, mem_bytes) if mem_bytes else np.maximum(trace.mem_bytes[self.vm_task], 1.0)).astype(np.float64),
        )
        # what the reader ignored (a run's summary.json lists these; the engine checks demand against the
        # host's core speed itself, see densim.engine.result.source_notes)
        self.column_notes = [n for n in trace.notes if "cpu_capacity / cpu_count in" not in n]
        # an inventory (densim plan) sizes VMs by vCPUs x vcpu_speed: demand above that is checked here
        self.notes = list(self.column_notes)
        note = overspeed_note(self.peak_mhz(), self.sizes.vcpus, self.sizes.vcpu_mhz, f"the VMs of group {name!r} run at")
        if note:
            self.notes.append(note)

    def _gpus(self, name: str, gpu, field: str | None) -> None:
        """The VMs' GPU requests from the trace's ``gpu_count`` and their busy share from ``gpu_usage``, when the
        group's ``vms[].gpu`` is ``{mode: passthrough}`` without a count; every other pairing of the trace's GPU
        columns with the group's GPU request is refused in one line (OpenDC gives a task whole GPUs, its own count)."""
        tr = self.trace
        asks = tr.gpu_count[self.vm_task]
        n_ask = int(np.count_nonzero(asks))
        tp, fp = tr.tasks_path, tr.fragments_path
        from_trace = gpu is not None and gpu.mode == "passthrough" and gpu.count is None
        if n_ask and field is None:
            raise InputError(tp, "column 'gpu_count'", f"{n_ask:,} tasks ask for GPUs, and densim plan reads no GPU request "
                                                       "from an OpenDC trace yet: give them in the plan's gpu.requests, or "
                                                       "drop the column")
        if n_ask and gpu is None:
            raise InputError(tp, "column 'gpu_count'", f"{n_ask:,} tasks ask for GPUs but VM group {name!r} gives no GPU "
                                                       f"request: set {field}: {{mode: passthrough}} (each task takes its "
                                                       "gpu_count whole GPUs), or drop the column to run their CPU only")
        if n_ask and gpu.mode != "passthrough":
            raise InputError(tp, "column 'gpu_count'", f"OpenDC gives a task whole GPUs ({n_ask:,} tasks ask for some), not a "
                                                       f"{gpu.mode} share: set {field}: {{mode: passthrough}} without count")
        if n_ask and not from_trace:
            raise InputError(tp, "column 'gpu_count'", f"the trace gives each task its own GPU count ({n_ask:,} tasks ask "
                                                       f"for some): remove {field}.count (it would give every VM "
                                                       f"{gpu.count})")
        if not from_trace:
            return
        if not n_ask:
            raise InputError(tp, "column 'gpu_count'", f"{field} takes each task's GPUs from the trace, but no task of group "
                                                       f"{name!r} asks for one (gpu_count 0, empty or no such column): give "
                                                       f"{field}.count")
        self.gpu_count = asks.astype(np.int64)
        util = tr.frag_gpu_util
        busy = util is not None and bool((tr.table.frag_gpu_mhz > 0).any())
        if gpu.utilisation is not None:
            if busy:
                raise InputError(fp, "column 'gpu_usage'", f"the trace gives the tasks' GPU usage: remove {field}.utilisation "
                                                           f"({gpu.utilisation:g} for every step) or the column")
            return
        if util is None:
            raise InputError(fp, "column 'gpu_usage'", f"missing column: the GPUs' busy share of group {name!r} is read from "
                                                       f"it (gpu_usage / gpu_capacity); or give {field}.utilisation")
        self.channels = ("cpu_mhz", "gpu_util")

    def check_gpus(self, most: int) -> None:
        """Refuse a task that asks for more whole GPUs than any host has (``most``: the most GPUs in one host)."""
        if self.gpu_count is None:
            return
        over = self.gpu_count > most
        if over.any():
            t = int(self.vm_task[int(np.argmax(over))])
            tr = self.trace
            raise InputError(tr.tasks_path, f"row {t + 1}, column 'gpu_count'",
                             f"task {tr.ids[t].item()!r} asks for {int(tr.gpu_count[t])} whole GPUs, but the most GPUs in one "
                             f"host is {most} (cluster.hosts[].gpus.count)")

    def peak_mhz(self) -> np.ndarray:
        """(VMs,) each VM's highest CPU demand (MHz, all vCPUs together) in the trace."""
        return self.trace.table.peak_cpu_mhz()[self.vm_task]

    def span_s(self):
        t = self.trace
        end = np.maximum(t.submission_s + t.duration_s, t.submission_s + t.table.run_s())
        return float(t.submission_s.min()) + self.offset_s, float(end.max())

    def native_step_s(self):
        return 300.0

    def window(self, grid: TimeGrid, t0: int, t1: int, channels):
        """Per-step mean CPU demand (``cpu_mhz``, MHz) and, for a group whose GPUs come from the trace, per-step
        mean GPU busy share (``gpu_util``: each fragment's gpu_usage / gpu_capacity, clipped to [0, 1])."""
        want = [c for c in ("cpu_mhz", "gpu_util") if c in channels and c in self.channels]
        if not want:
            return {}
        check_budget(4.0 * (t1 - t0) * len(want) * (self.n_vms + 2 * self.trace.n_tasks),
                     f"the OpenDC demand window ({t1 - t0:,} steps x {self.n_vms:,} VMs)", self.trace.tasks_path.parent)
        edges = grid.edges_s(t0, t1)
        lo, hi = edges[0], edges[-1]
        parts = []
        util = self.trace.frag_gpu_util if "gpu_util" in want else None
        a = 0
        for pos, start, dur, use in self.trace.iter_fragments():
            b = a + pos.size
            keep = (start < hi) & (start + dur > lo)
            if keep.any():
                parts.append((pos[keep], start[keep], dur[keep], use[keep],
                              util[a:b][keep] if util is not None else use[:0]))
            a = b
        n = self.trace.n_tasks
        out = {}
        if parts:
            pos, start, dur, use, gu = (np.concatenate(x) for x in zip(*parts))
            if "cpu_mhz" in want:
                out["cpu_mhz"] = resample_piecewise(start, dur, use, pos, n, edges)
            if "gpu_util" in want:
                out["gpu_util"] = resample_piecewise(start, dur, gu, pos, n, edges)
        else:
            out = {c: np.zeros((t1 - t0, n), dtype=np.float32) for c in want}
        if self.vm_task.size == n and np.array_equal(self.vm_task, np.arange(n)):
            return out
        return {k: v[:, self.vm_task] for k, v in out.items()}
