"""Online placement: VMs (tasks) that arrive, wait for room, run, and leave.

:func:`schedule` replays arrivals and departures in time order against the hosts' reserved
capacity (vCPUs against cores x vCPU over-commit, configured memory against memory x memory
over-commit, the same reservations as the static kernels). Each arrival is placed by the
scenario's policy against what is running at that moment; what fits nowhere waits in a queue with
a named discipline:

``fifo``
    first come, first served with head-of-line blocking, as OpenDC's ``FilterScheduler`` queue: while
    the head waits nobody behind it starts, even where it would fit.
``backfill``
    first-fit backfill: whenever capacity frees, the queue is scanned in arrival order and every
    VM that fits starts; an arrival that fits starts at once even when others wait.
``reject``
    what does not fit at its arrival fails at once.

A VM larger than every (empty) host fails at its arrival whatever the discipline (OpenDC terminates
such a task). A VM placed at time ``s`` leaves at ``s + run``: ``run`` is its lifetime (for an OpenDC
task, the sum of its fragments' durations: fragments last their duration whatever CPU they get).
Departures at a time are processed before arrivals at the same time.

The event loop is :mod:`densim.placement.timeline`'s, the one every placement over time uses (with no
failures and no maintenance here): O(log hosts) per first-fit placement (the segment tree of
:mod:`densim.placement.heuristics`), O(hosts) per best-/worst-fit placement.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


DISCIPLINES = {"fifo": 0, "backfill": 1, "reject": 2}
ONLINE_POLICIES = {"first-fit": 0, "best-fit": 1, "worst-fit": 2}

# status codes of :class:`Schedule`
DONE, RUNNING, WAITING, FAILED, NOT_ARRIVED = 0, 1, 2, 3, 4
STATUS_NAMES = ("completed", "running", "waiting", "failed", "not-arrived")


@dataclass(frozen=True)
class Schedule:
    """Where and when every VM ran. Times in seconds on the trace clock; NaN where it never started."""

    host: np.ndarray  # int64, -1 if it never started
    start_s: np.ndarray  # float64
    end_s: np.ndarray  # float64 (inf for a VM that lives past every horizon)
    arrival_s: np.ndarray  # float64 (-inf for a VM present from the start)
    status: np.ndarray  # int8, one of DONE..NOT_ARRIVED as seen at ``until``
    until: float

    @property
    def wait_s(self) -> np.ndarray:
        """Scheduling delay: start - arrival (NaN for a VM that never started; 0 for one present from the start)."""
        arr = np.where(np.isfinite(self.arrival_s), self.arrival_s, self.start_s)
        return self.start_s - arr

    def counts(self) -> dict[str, int]:
        return {name: int(np.count_nonzero(self.status == k)) for k, name in enumerate(STATUS_NAMES)}


def schedule(arrival_s, run_s, vm_cpu, vm_mem, cpu_cap, mem_cap, *, policy: str = "first-fit",
             discipline: str = "fifo", until: float = np.inf, gpu=None) -> Schedule:
    """Place VMs online (see the module docstring); events after ``until`` are not processed.

    ``arrival_s`` -inf means present from the start; ``run_s`` inf means it never leaves. ``gpu``: a
    :class:`densim.placement.gpu.GpuProblem` when VMs ask for GPUs (placed from all GPUs free; its rows get
    each VM's GPUs: ``vm_mask``, ``vm_gpu``, ``vm_mig_start``).
    """
    if policy not in ONLINE_POLICIES:
        raise KeyError(f"placement policy {policy!r} cannot place online (VMs that arrive and leave); "
                       f"use one of: {', '.join(ONLINE_POLICIES)}")
    if discipline not in DISCIPLINES:
        raise KeyError(f"queue discipline {discipline!r}; one of: {', '.join(DISCIPLINES)}")
    from densim.placement import timeline as TL
    from densim.placement.gpu import no_gpu_state

    arr = np.ascontiguousarray(arrival_s, dtype=np.float64)
    run = np.ascontiguousarray(run_s, dtype=np.float64)
    f = [np.ascontiguousarray(a, dtype=np.float64) for a in (vm_cpu, vm_mem, cpu_cap, mem_cap)]
    n, H = arr.size, f[2].size
    none_i, none_f = np.zeros(0, dtype=np.int64), np.zeros(0)
    if gpu is not None:
        gpu.reset(H)
    st, _, vf, inst, _, _, _, _ = TL._event_loop(
        arr, run, f[0], f[1], np.zeros(n, dtype=np.int64), np.full(n, -2, dtype=np.int64), f[2], f[3], none_i, none_f, none_f,
        ONLINE_POLICIES[policy], DISCIPLINES[discipline], float(until), 0.0, 0.0, False, np.zeros(3), none_i, none_f,
        np.zeros((1, n)), np.ones(H), np.zeros(7), gpu.state() if gpu is not None else no_gpu_state(), none_f,
        np.zeros((1, n)), np.zeros(7), np.ones(H))
    host = np.full(n, -1, dtype=np.int64)  # no failure, no maintenance: one instance per VM started
    i_vm = inst[:, TL.I_VM].astype(np.int64)
    host[i_vm] = inst[:, TL.I_HOST].astype(np.int64)
    if gpu is not None:
        mask, start = np.zeros(n, np.int64), np.full(n, -1, np.int64)
        mask[i_vm] = inst[:, TL.I_GPUS].astype(np.int64)
        start[i_vm] = inst[:, TL.I_MIG].astype(np.int64)
        gpu.set_rows(mask, start)
    start = vf[:, 0].copy()
    end = np.where(np.isnan(start), np.nan, start + run)
    return Schedule(host=host, start_s=start, end_s=end, arrival_s=arr, status=st, until=float(until))


def running_and_waiting(sch: Schedule, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """VMs running and VMs waiting at each instant of ``times`` (right-continuous: a VM that starts
    at t counts as running at t, one that leaves at t no longer does)."""
    started = np.isfinite(sch.start_s)
    starts = np.sort(sch.start_s[started])
    ends = np.sort(sch.end_s[started])
    running = np.searchsorted(starts, times, side="right") - np.searchsorted(ends, times, side="right")
    queued = (sch.status != FAILED) & np.isfinite(sch.arrival_s)
    arrivals = np.sort(sch.arrival_s[queued])
    q_starts = np.sort(sch.start_s[queued & started])
    waiting = np.searchsorted(arrivals, times, side="right") - np.searchsorted(q_starts, times, side="right")
    return running.astype(np.int64), waiting.astype(np.int64)


def peak_running(sch: Schedule) -> int:
    """Most VMs running at once (evaluated at every start, where the count can rise)."""
    started = np.isfinite(sch.start_s)
    if not started.any():
        return 0
    r, _ = running_and_waiting(sch, np.unique(sch.start_s[started]))
    return int(r.max())
