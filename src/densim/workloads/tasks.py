"""Lifetimes: which VMs of a demand source arrive and leave, and the source as scheduled.

A source has *lifetimes* when its data say when each VM arrives and how long it runs: an OpenDC
task arrives at its ``submission_time`` and runs its fragments back to back, each for its
``duration`` (whatever CPU it gets), so its run length is the sum of its fragments' durations
(``duration`` in ``tasks.parquet`` is metadata; OpenDC's own reader ignores it for the run).
A source with ``start_s``/``end_s`` per VM (Azure's vmtable created/deleted times) arrives at its
start and runs ``end - start``. Every other source (a synthetic profile, a utilisation trace) has
none: its VMs are present from the start and never leave.

Once :func:`densim.placement.online.schedule` has placed them, :func:`scheduled_source` gives the
source the engine reads: an OpenDC task's fragments start at the moment the task is *placed*
(not its submission if it waited), and every VM's demand is zero outside ``[start, end)``.
"""

from __future__ import annotations

import sys

import numpy as np

from densim._jit import njit, prange
from densim.workloads.sources import CompositeSource, DemandSource
from densim.workloads.timegrid import TimeGrid


def lifetimes(source: DemandSource) -> tuple[np.ndarray, np.ndarray] | None:
    """``(arrival_s, run_s)`` per VM, or None when no part of the source has lifetimes.

    Parts without lifetimes get arrival -inf (present from the start) and run inf.
    """
    parts = source.parts if isinstance(source, CompositeSource) else [source]
    out = [_part_lifetimes(p) for p in parts]
    if all(o is None for o in out):
        return None
    arr, run = [], []
    for p, o in zip(parts, out):
        if o is None:
            arr.append(np.full(p.n_vms, -np.inf))
            run.append(np.full(p.n_vms, np.inf))
        else:
            arr.append(o[0])
            run.append(o[1])
    return np.concatenate(arr), np.concatenate(run)


def _opendc_source(part: DemandSource) -> bool:
    """Whether ``part`` is an OpenDC trace's source, without importing that reader (and pyarrow) for other traces."""
    opendc = sys.modules.get("densim.workloads.readers.opendc")
    return opendc is not None and isinstance(part, opendc.OpenDcSource)


def _part_lifetimes(part: DemandSource) -> tuple[np.ndarray, np.ndarray] | None:
    if not _opendc_source(part):
        start, end = getattr(part, "start_s", None), getattr(part, "end_s", None)
        if start is None or end is None:
            return None
        # a VM with its own created/deleted times (Azure vmtable): it runs end - start from its
        # placement; its readings stay at their timestamps (a VM that waits misses the ones before it starts)
        start = np.asarray(start, dtype=np.float64)
        end = np.asarray(end, dtype=np.float64)
        return start, np.where(np.isfinite(end), end - start, np.inf)
    tr = part.trace
    if part.vm_task.size != tr.n_tasks or not np.array_equal(part.vm_task, np.arange(tr.n_tasks)):
        return None  # tasks replicated or cut to a VM count: read as static VMs (see OpenDcSource)
    pos, _start, dur, _use, _off = fragments(tr)
    return tr.submission_s, np.bincount(pos, weights=dur, minlength=tr.n_tasks)


class ScheduledSource(DemandSource):
    """``inner`` as scheduled: demand only in ``[start, end)``; OpenDC fragments shifted to the placement time."""

    def __init__(self, inner: DemandSource, start_s: np.ndarray, end_s: np.ndarray, shift: bool) -> None:
        self.inner = inner
        self.sizes = inner.sizes
        self.channels = inner.channels
        self.start_s = np.asarray(start_s, dtype=np.float64)
        self.end_s = np.asarray(end_s, dtype=np.float64)
        self.shift = shift

    def span_s(self):
        return self.inner.span_s()

    def native_step_s(self):
        return self.inner.native_step_s()

    def steady(self) -> bool:
        """The inner demand is steady and not shifted to each VM's start (OpenDC fragments are not);
        arrivals and departures are the timeline's events, not the source's."""
        return not self.shift and self.inner.steady()

    def window(self, grid: TimeGrid, t0: int, t1: int, channels, vms: np.ndarray | None = None):
        """As :meth:`DemandSource.window`; ``vms`` (indices into this source's VMs) asks for those columns only."""
        edges = grid.edges_s(t0, t1)
        if self.shift:  # an OpenDC task's fragments from its placement on: its CPU demand and GPU busy share
            return {c: _shifted_opendc_window(self.inner, self.start_s, edges, vms, gpu=c == "gpu_util")
                    for c in ("cpu_mhz", "gpu_util") if c in channels and c in self.channels}
        if vms is None:
            win = self.inner.window(grid, t0, t1, channels)
            alive = alive_fraction(self.start_s, self.end_s, edges)
            return {k: (v * alive).astype(np.float32, copy=False) for k, v in win.items()}
        # the inner source computes the chosen VMs only (its subset takes ascending indices)
        order = np.argsort(vms, kind="stable")
        back = np.empty_like(order)
        back[order] = np.arange(order.size)
        win = self.inner.subset(vms[order]).window(grid, t0, t1, channels) if vms.size else {}
        st, en = self.start_s[vms], self.end_s[vms]
        out = {}
        for k, v in win.items():
            if v.dtype == np.float32 and v.ndim == 2:  # the usual case: one fused pass
                o = np.empty((edges.size - 1, vms.size), dtype=np.float32)
                _gather_alive(v, back.astype(np.int64), st, en, np.ascontiguousarray(edges, dtype=np.float64), o)
                out[k] = o
            else:
                out[k] = (v[:, back] * alive_fraction(st, en, edges)).astype(np.float32, copy=False)
        return out


def scheduled_window(source: DemandSource, grid: TimeGrid, t0: int, t1: int, ids: np.ndarray) -> np.ndarray:
    """CPU demand (steps, len(ids)) of the VMs ``ids`` of a scheduled source (or a composite of them)."""
    if ids.size == 0:  # a window in which no VM is alive (after the last departure)
        return np.zeros((t1 - t0, 0), dtype=np.float32)
    return scheduled_windows(source, grid, t0, t1, ids, ("cpu_mhz",)).get("cpu_mhz", np.zeros((t1 - t0, ids.size), np.float32))


def scheduled_windows(source: DemandSource, grid: TimeGrid, t0: int, t1: int, ids: np.ndarray, channels) -> dict[str, np.ndarray]:
    """The ``channels`` (steps, len(ids)) of the VMs ``ids`` of a scheduled source (or a composite of them),
    as its ``window`` gives them for every VM: a channel only some parts have is 0 in the others' columns."""
    parts = source.parts if isinstance(source, CompositeSource) else [source]
    if len(parts) == 1:
        return parts[0].window(grid, t0, t1, tuple(channels), vms=ids) if ids.size else {}
    out: dict[str, np.ndarray] = {}
    lo = 0
    for p in parts:
        hi = lo + p.n_vms
        sel = np.flatnonzero((ids >= lo) & (ids < hi))
        if sel.size:
            for c, w in p.window(grid, t0, t1, tuple(channels), vms=ids[sel] - lo).items():
                out.setdefault(c, np.zeros((t1 - t0, ids.size), dtype=np.float32))[:, sel] = w
        lo = hi
    return out


def _shifted_opendc_window(src, start_s: np.ndarray, edges: np.ndarray, vms: np.ndarray | None = None,
                           gpu: bool = False) -> np.ndarray:
    """Per-step mean MHz of every task (or of the tasks ``vms``), its fragments back to back from its
    placement ``start_s``; ``gpu``: the per-step mean GPU busy share instead (:func:`fragment_gpu_util`)."""
    tr = src.trace
    delay = np.where(np.isnan(start_s), np.nan, start_s - tr.submission_s)
    step = float(edges[1] - edges[0]) if edges.size > 1 else 1.0
    pos, start, dur, use, off = fragments(tr)
    if gpu:
        use = fragment_gpu_util(tr)
    if vms is None:
        vms = np.arange(tr.n_tasks, dtype=np.int64)
    out = np.zeros((edges.size - 1, vms.size), dtype=np.float32)
    _bin_task_fragments(out, np.asarray(vms, dtype=np.int64), off, start, dur, use, np.asarray(delay, dtype=np.float64),
                        float(edges[0]), step)
    return out


def fragments(trace) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every fragment of an OpenDC trace as (task position, start at submission, duration, MHz), ordered
    by task (each task's in run order), and the offsets of each task's run (n_tasks + 1); read once
    and kept on the trace (32 bytes a fragment: 74 MB for surf_week's 2.3 M)."""
    got = getattr(trace, "_fragments", None)
    if got is None:
        parts = list(trace.iter_fragments())
        if parts:
            pos, start, dur, use = (np.concatenate(x) for x in zip(*parts))
        else:
            pos, start, dur, use = np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0)
        order = np.argsort(pos, kind="stable")
        pos = pos[order].astype(np.int64)
        off = np.searchsorted(pos, np.arange(trace.n_tasks + 1)).astype(np.int64)
        got = trace._fragments = (pos, start[order], dur[order], use[order], off)
    return got


def fragment_gpu_util(trace) -> np.ndarray:
    """Every fragment's GPU busy share (gpu_usage / gpu_capacity, clipped to [0, 1]) in the order of
    :func:`fragments`; kept on the trace."""
    got = getattr(trace, "_gpu_fragments", None)
    if got is None:
        order = np.argsort(trace.table.frag_task, kind="stable")
        got = trace._gpu_fragments = trace.frag_gpu_util[order]
    return got


@njit(inline="always")
def _add_segment(acc, col, a, b, val, t0, step, n_steps, t_end):
    """Add the segment ``[a, b)`` of level ``val`` to column ``col`` as its mean over each step
    ``[t0 + k step, t0 + (k+1) step)`` it covers (``val`` x overlap / step): exact interval integrals."""
    lo = max(a, t0)
    hi = min(b, t_end)
    k = int((lo - t0) // step)
    while k < n_steps and lo < hi:
        edge = t0 + (k + 1) * step
        seg_hi = min(hi, edge)
        if seg_hi > lo:
            acc[k, col] += val * ((seg_hi - lo) / step)
        lo = seg_hi
        k += 1


@njit(parallel=True)
def _bin_task_fragments(acc, vms, off, start, dur, value, delay, t0, step):
    """Each task ``vms[j]``'s fragments, back to back from ``start + delay[task]``, as their mean over each step of
    ``acc`` (column ``j``): O(fragments in the window + steps covered) per task, a NaN delay (never placed) adds
    nothing. Read in place from the task-ordered arrays (``off``: each task's run). A task's fragments start and end
    in run order (up to the rounding of the reader's cumulative sums, far below a step), so a binary search finds
    the first one ending after ``t0 - step`` and the loop stops at the first starting at or after ``t_end + step``;
    in between, a fragment counts when it overlaps the window and lasts > 0. Each cell adds its fragments in run
    order, as gathering every fragment of the tasks and binning them one by one did (same sums to the bit,
    tests/workloads/test_fragment_windows.py); the tasks (columns) are independent, in parallel."""
    n_steps = acc.shape[0]
    t_end = t0 + n_steps * step
    for j in prange(vms.size):
        v = vms[j]
        d = delay[v]
        if not (d == d):  # never placed
            continue
        lo_i = off[v]
        hi_i = off[v + 1]
        a_i, b_i = lo_i, hi_i  # the first fragment ending after t0 - step
        while a_i < b_i:
            m = (a_i + b_i) // 2
            if (start[m] + d) + dur[m] <= t0 - step:
                a_i = m + 1
            else:
                b_i = m
        for i in range(a_i, hi_i):
            a = start[i] + d
            if a >= t_end + step:
                break
            b = a + dur[i]
            if b <= t0 or a >= t_end or dur[i] <= 0.0:
                continue
            _add_segment(acc, j, a, b, value[i], t0, step, n_steps, t_end)


def scheduled_source(source: DemandSource, start_s: np.ndarray, end_s: np.ndarray) -> DemandSource:
    """The source as placed: each part's VMs only while alive (OpenDC tasks shifted to their start)."""
    parts = source.parts if isinstance(source, CompositeSource) else [source]
    out, i = [], 0
    for p in parts:
        sl = slice(i, i + p.n_vms)
        i += p.n_vms
        shift = _opendc_source(p) and _part_lifetimes(p) is not None
        out.append(ScheduledSource(p, start_s[sl], end_s[sl], shift))
    return out[0] if len(out) == 1 else CompositeSource(out)


def alive_fraction(start_s: np.ndarray, end_s: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """(steps, VMs) float32: the share of each step ``[edges[k], edges[k+1])`` each VM is alive in
    ``[start, end)`` (0 where it never started).

    ``(min(end, hi) - max(start, lo)) / (hi - lo)``, at least 0, in float64 and rounded to float32
    once: one numba pass (the numpy expression it replaces made six (steps x VMs) float64 temporaries;
    same IEEE operations, same bits)."""
    s = np.ascontiguousarray(start_s, dtype=np.float64)
    e = np.ascontiguousarray(end_s, dtype=np.float64)
    out = np.empty((max(edges.size - 1, 0), s.size), dtype=np.float32)
    _alive_kernel(s, e, np.ascontiguousarray(edges, dtype=np.float64), out)
    return out


@njit
def _alive_one(s, e, lo, hi):
    """One VM's share of the step ``[lo, hi)``: a NaN start is never alive, a NaN end never ends."""
    if s != s:
        return 0.0
    if e != e:
        return 0.0
    a = e if e < hi else hi  # np.minimum(e, hi) (no NaN left)
    b = s if s > lo else lo  # np.maximum(s, lo)
    over = a - b
    if over < 0.0:
        over = 0.0
    return over / (hi - lo)


@njit
def _alive_kernel(s, e, edges, out):
    n, m = out.shape
    for k in range(n):
        lo = edges[k]
        hi = edges[k + 1]
        for j in range(m):
            out[k, j] = np.float32(_alive_one(s[j], e[j], lo, hi))


@njit
def _gather_alive(v, back, s, e, edges, out):
    """``out[:, j] = v[:, back[j]] * alive(j)`` in float32: a window's columns put back in the caller's
    order and zeroed outside each VM's life, in one pass (as ``v[:, back] * alive_fraction(...)``)."""
    n, m = out.shape
    for k in range(n):
        lo = edges[k]
        hi = edges[k + 1]
        for j in range(m):
            out[k, j] = v[k, back[j]] * np.float32(_alive_one(s[j], e[j], lo, hi))


def synthetic_lifetimes(spec, count: int, t0: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(start_s, end_s) of ``count`` synthetic VMs (:class:`densim.spec.scenario.ArrivalSpec`): a Poisson
    process over ``[t0, t0 + over)`` (sorted uniform times given the count) and log-normal lifetimes."""
    from densim.rng import make_rng

    rng = make_rng(seed)
    start = t0 + np.sort(rng.uniform(0.0, spec.over_s, count))
    life = spec.lifetime_s * np.exp(spec.lifetime_sigma * rng.standard_normal(count))
    return start, start + life
