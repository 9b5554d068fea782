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

The event loop is one numba function: O(log hosts) per first-fit placement (the segment tree of
:mod:`densim.placement.heuristics`), O(hosts) per best-/worst-fit placement.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from densim._jit import njit
from densim.placement.heuristics import _tree_update as _set_leaf  # leaf update of the first-fit segment tree

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


@njit
def _heap_push(ht, hv, n, t, v):
    i = n
    ht[i] = t
    hv[i] = v
    while i > 0:
        p = (i - 1) // 2
        if ht[p] < ht[i] or (ht[p] == ht[i] and hv[p] <= hv[i]):
            break
        ht[p], ht[i] = ht[i], ht[p]
        hv[p], hv[i] = hv[i], hv[p]
        i = p
    return n + 1


@njit
def _heap_pop(ht, hv, n):
    n -= 1
    ht[0] = ht[n]
    hv[0] = hv[n]
    i = 0
    while True:
        a = 2 * i + 1
        b = a + 1
        s = i
        if a < n and (ht[a] < ht[s] or (ht[a] == ht[s] and hv[a] < hv[s])):
            s = a
        if b < n and (ht[b] < ht[s] or (ht[b] == ht[s] and hv[b] < hv[s])):
            s = b
        if s == i:
            break
        ht[s], ht[i] = ht[i], ht[s]
        hv[s], hv[i] = hv[i], hv[s]
        i = s
    return n


@njit
def _find(policy, c, m, cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size):
    eps = 1e-9
    if policy == 0:
        if tc[1] + eps < c or tm[1] + eps * max(1.0, m) < m:
            return -1
        # leftmost leaf with room (DFS, right child pushed first)
        stack = np.empty(128, dtype=np.int64)
        top = 1
        stack[0] = 1
        while top > 0:
            top -= 1
            node = stack[top]
            if tc[node] + eps < c or tm[node] + eps * max(1.0, m) < m:
                continue
            if node >= size:
                return node - size
            stack[top] = 2 * node + 1
            stack[top + 1] = 2 * node
            top += 2
        return -1
    chosen = -1
    best = 0.0
    for h in range(cpu_free.size):
        if cpu_free[h] + eps >= c and mem_free[h] + eps * max(1.0, m) >= m:
            s = (cpu_free[h] - c) / cpu_cap[h] + (mem_free[h] - m) / mem_cap[h]
            if chosen < 0 or (policy == 1 and s < best) or (policy == 2 and s > best):
                chosen = h
                best = s
    return chosen


@njit
def _start(v, h, t, host, start, status, cpu_free, mem_free, vm_cpu, vm_mem, run, policy, tc, tm, size, ht, hv, nh):
    """VM ``v`` starts on host ``h`` at ``t``: reserve its capacity, schedule its departure; returns the heap size."""
    host[v] = h
    start[v] = t
    status[v] = 1
    cpu_free[h] -= vm_cpu[v]
    mem_free[h] -= vm_mem[v]
    if policy == 0:
        _set_leaf(tc, tm, size, h, cpu_free[h], mem_free[h])
    if run[v] < np.inf:
        nh = _heap_push(ht, hv, nh, t + run[v], v)
    return nh


@njit
def _schedule_kernel(arrival, run, vm_cpu, vm_mem, cpu_cap, mem_cap, policy, discipline, until):
    n = arrival.size
    H = cpu_cap.size
    host = np.full(n, -1, dtype=np.int64)
    start = np.full(n, np.nan)
    status = np.full(n, 4, dtype=np.int8)  # not arrived
    cpu_free = cpu_cap.copy()
    mem_free = mem_cap.copy()
    size = 1
    while size < max(H, 1):
        size *= 2
    tc = np.full(2 * size, -1.0)
    tm = np.full(2 * size, -1.0)
    for h in range(H):
        _set_leaf(tc, tm, size, h, cpu_free[h], mem_free[h])
    # the largest empty host in both dimensions at once: a VM no host could ever hold fails
    order = np.argsort(arrival, kind="mergesort")
    ht = np.empty(n + 1)
    hv = np.empty(n + 1, dtype=np.int64)
    nh = 0
    queue = np.empty(n, dtype=np.int64)
    q_head = 0
    q_tail = 0
    i = 0
    eps = 1e-9
    while True:
        next_arr = arrival[order[i]] if i < n else np.inf
        next_dep = ht[0] if nh > 0 else np.inf
        if next_arr == np.inf and next_dep == np.inf:
            break
        if next_dep <= next_arr:
            t = next_dep
            if t > until:
                break
            while nh > 0 and ht[0] == t:  # every departure at t, then the queue
                v = hv[0]
                nh = _heap_pop(ht, hv, nh)
                h = host[v]
                cpu_free[h] += vm_cpu[v]
                mem_free[h] += vm_mem[v]
                status[v] = 0
                if policy == 0:
                    _set_leaf(tc, tm, size, h, cpu_free[h], mem_free[h])
            k = q_head
            w = q_head
            while k < q_tail:
                v = queue[k]
                h = _find(policy, vm_cpu[v], vm_mem[v], cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size)
                if h < 0:
                    if discipline == 0:  # fifo: the head blocks the rest
                        break
                    queue[w] = v  # backfill: keep it, in order
                    w += 1
                    k += 1
                    continue
                nh = _start(v, h, t, host, start, status, cpu_free, mem_free, vm_cpu, vm_mem, run, policy, tc, tm, size,
                            ht, hv, nh)
                k += 1
            if discipline == 0:
                q_head = k
            else:
                while k < q_tail:
                    queue[w] = queue[k]
                    w += 1
                    k += 1
                q_tail = w
            continue
        t = next_arr
        if t > until:
            break
        v = order[i]
        i += 1
        fits_somewhere = False
        for h in range(H):
            if cpu_cap[h] + eps >= vm_cpu[v] and mem_cap[h] + eps * max(1.0, vm_mem[v]) >= vm_mem[v]:
                fits_somewhere = True
                break
        if not fits_somewhere:
            status[v] = 3
            continue
        if discipline == 0 and q_tail > q_head:
            queue[q_tail] = v
            q_tail += 1
            status[v] = 2
            continue
        h = _find(policy, vm_cpu[v], vm_mem[v], cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size)
        if h < 0:
            if discipline == 2:
                status[v] = 3
            else:
                queue[q_tail] = v
                q_tail += 1
                status[v] = 2
            continue
        nh = _start(v, h, t, host, start, status, cpu_free, mem_free, vm_cpu, vm_mem, run, policy, tc, tm, size, ht, hv, nh)
    return host, start, status


def schedule(arrival_s, run_s, vm_cpu, vm_mem, cpu_cap, mem_cap, *, policy: str = "first-fit",
             discipline: str = "fifo", until: float = np.inf) -> Schedule:
    """Place VMs online (see the module docstring); events after ``until`` are not processed.

    ``arrival_s`` -inf means present from the start; ``run_s`` inf means it never leaves.
    """
    if policy not in ONLINE_POLICIES:
        raise KeyError(f"placement policy {policy!r} cannot place online (VMs that arrive and leave); "
                       f"use one of: {', '.join(ONLINE_POLICIES)}")
    if discipline not in DISCIPLINES:
        raise KeyError(f"queue discipline {discipline!r}; one of: {', '.join(DISCIPLINES)}")
    arr = np.ascontiguousarray(arrival_s, dtype=np.float64)
    run = np.ascontiguousarray(run_s, dtype=np.float64)
    f = [np.ascontiguousarray(a, dtype=np.float64) for a in (vm_cpu, vm_mem, cpu_cap, mem_cap)]
    host, start, status = _schedule_kernel(arr, run, *f, ONLINE_POLICIES[policy], DISCIPLINES[discipline], float(until))
    end = np.where(np.isnan(start), np.nan, start + run)
    return Schedule(host=host, start_s=start, end_s=end, arrival_s=arr, status=status, until=float(until))


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
