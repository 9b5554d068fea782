"""VMs that arrive and leave, inside the engine: the schedule, per-chunk liveness, idle hosts' power.

:func:`plan_schedule` runs when the scenario's ``scheduling.lifetimes`` is on (or ``auto`` and a
trace has arrivals): it places every VM online (:func:`densim.placement.online.schedule`) before the
time grid is fixed, because the run ends when the last task does. Per chunk, :class:`Liveness`
gives the share of each step each VM is alive, the vCPUs alive per host (for CPU Ready), and which
hosts draw power under the ``idle_hosts`` policy, with the boot energy of every power-on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from densim.engine.stages import stable_order
from densim.errors import InputError
from densim.placement.capacity import host_capacity
from densim.placement.online import ONLINE_POLICIES, Schedule, schedule
from densim.workloads.tasks import alive_fraction, lifetimes, scheduled_source
from densim.workloads.timegrid import TimeGrid

BOOT_SECONDS_AT_PEAK = 120.0  # default power-on energy = peak W x 120 s (estimate: POST + hypervisor boot, 1-3 min)


@dataclass
class Scheduled:
    schedule: Schedule
    source: object
    grid: TimeGrid
    not_started_by_end: int


def wants_lifetimes(sc, source) -> tuple[np.ndarray, np.ndarray] | None:
    """(arrival_s, run_s) when the run is online, else None."""
    mode = sc.scheduling.lifetimes
    if mode == "off":
        return None
    lt = lifetimes(source)
    if lt is None and mode == "on":
        lt = (np.full(source.n_vms, -np.inf), np.full(source.n_vms, np.inf))
    if lt is None:
        return None
    if sc.placement.policy not in ONLINE_POLICIES:
        raise InputError(sc.name, "placement.policy",
                         f"{sc.placement.policy!r} cannot place VMs as they arrive; with lifetimes use one of: "
                         f"{', '.join(ONLINE_POLICIES)}")
    return lt


def plan_schedule(sc, source, hosts, lt: tuple[np.ndarray, np.ndarray], gpu=None) -> Scheduled:
    """Place every VM online, then fix the grid: from the first arrival (or ``simulation.start``) to the
    horizon, or to the end of the last task to finish. ``gpu``: the VMs' GPU requests
    (:class:`densim.placement.gpu.GpuProblem`), placed with them; its rows get each VM's GPUs."""
    arrival, run = lt
    sim = sc.simulation
    finite = np.isfinite(arrival)
    span = source.span_s()
    if sim.start_s is not None:
        t0 = float(sim.start_s)
    elif finite.any():
        t0 = float(arrival[finite].min())
        if span is not None:  # the traces' own start (trace.offset skips the start of every trace)
            t0 = max(t0, float(span[0]))
    elif span is not None:
        t0 = float(span[0])
    else:
        t0 = 0.0
    arrival = np.maximum(np.where(finite, arrival, t0), t0)
    until = t0 + sim.horizon_s if sim.horizon_s is not None else math.inf
    pl = sc.placement
    sizes = source.sizes
    cap = host_capacity(hosts, pl)
    sch = schedule(arrival, run, sizes.vcpus, sizes.mem_bytes, cap[:, 0], cap[:, 1], policy=pl.policy,
                   discipline=sc.scheduling.queue, until=until, gpu=gpu)
    if sim.horizon_s is not None:
        horizon = float(sim.horizon_s)
    else:
        ends = sch.end_s[np.isfinite(sch.end_s)]
        end = float(ends.max()) if ends.size else t0
        if span is not None and not np.isfinite(run).all():
            end = max(end, float(span[1]))
        horizon = end - t0
        if horizon <= 0:
            raise InputError(sc.name, "simulation.horizon", "no VM ran: every task failed or none arrived")
    n = max(1, int(math.ceil(horizon / sim.step_s - 1e-9)))
    grid = TimeGrid(start_s=t0, step_s=float(sim.step_s), n_steps=n)
    return Scheduled(sch, scheduled_source(source, sch.start_s, sch.end_s), grid, int(np.count_nonzero(np.isnan(sch.start_s))))


class Liveness:
    """Which VM row is alive when, and which hosts draw power: THE one place the engine and the stages read it.

    Built by :func:`densim.engine.run.run_placed` when ``ctx.schedule`` is set (VMs arrive and leave,
    ``scheduling.lifetimes``; or VM instances of a run with ``failures:``) and kept as ``ctx.liveness``
    (None otherwise: every row alive at every step). A row is alive on ``[start_s, end_s)`` of the
    schedule (seconds on the trace clock; NaN start: never started, never alive), on its host
    ``ctx.vms.host``. Read by the engine per chunk (:meth:`chunk`: vCPUs alive per host, hosts on,
    boot power; :meth:`active_ids`, :meth:`chunk_steps`), by the stages (:meth:`alive`,
    :meth:`alive_mask`, :meth:`lives_through`, :meth:`peak_per_host`) and by the failures summary.

    Shapes: ``edges`` are the chunk's step edges (steps + 1,) in seconds (``ctx.grid.edges_s(t0,
    t1)``); per-row results are (steps, VMs), per-host ones (steps, hosts).

    State: under ``scheduling.idle_hosts: off`` a host is on while some row is alive on it and for
    ``off_after`` seconds after; :meth:`power_mask` carries that from chunk to chunk (``last_busy``,
    ``was_on``) and counts power-ons (``boots``) and hosts ever on (``ever_on``: under that policy the run's
    ``powered_on``), so chunks must be asked for in time order, each once. ``failures`` (set by the
    engine) takes hosts down for at least half a step off power.
    """

    def __init__(self, sc, sch: Schedule, hosts, vcpus: np.ndarray) -> None:
        self.sch = sch
        self.vcpus = vcpus.astype(np.float32)
        s = sc.scheduling
        self.policy = s.idle_hosts
        self.off_after = float(s.off_after_s)
        self.boot_j = (np.full(hosts.n, float(s.boot_energy_j)) if s.boot_energy_j is not None
                       else hosts.power_peak_w * BOOT_SECONDS_AT_PEAK)
        self.last_busy = np.full(hosts.n, -np.inf)  # end of the last step with a VM on the host
        self.was_on = np.zeros(hosts.n, dtype=bool)  # hosts start switched off under the 'off' policy
        self.boots = np.zeros(hosts.n, dtype=np.int64)
        self.ever_on = np.zeros(hosts.n, dtype=bool)
        self.failures = None  # densim.engine.failures.FailureRun: hosts down draw no power
        self._events = None  # peak_per_host's event order for one placement (the sorts are most of its time)

    def alive(self, edges: np.ndarray, ids: np.ndarray | None = None) -> np.ndarray:
        """(steps, VMs) float32: the share of each step each VM (or each of ``ids``) is alive."""
        if ids is None:
            return alive_fraction(self.sch.start_s, self.sch.end_s, edges)
        return alive_fraction(self.sch.start_s[ids], self.sch.end_s[ids], edges)

    def alive_mask(self, edges: np.ndarray, ids: np.ndarray | None = None) -> np.ndarray:
        """(steps, VMs) bool: the VM is alive at some time in the step (it holds its memory, its host)."""
        return self.alive(edges, ids) > 0

    def lives_through(self, t_lo: float, t_hi: float) -> np.ndarray:
        """(VMs,) bool: alive over the whole of ``[t_lo, t_hi)``."""
        s, e = self.sch.start_s, self.sch.end_s
        return (s <= t_lo) & (e >= t_hi)  # NaN (never started) compares False

    def peak_per_host(self, host_of_vm: np.ndarray, weights: np.ndarray, n_hosts: int) -> np.ndarray:
        """Per host, the rows of ``weights`` (k, VMs) summed over the VMs alive on it at the instant
        where row 0's sum peaks: (k, hosts); 0 on a host no VM ever ran on.

        Exact in continuous time (an event sweep over starts and ends, no time grid): a VM counts on
        ``[start, end)``, so at an instant where one VM leaves and another arrives only one counts.
        Vectorised over every VM (sort, cumulative sums, one maximum per host segment).
        """
        w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        out = np.zeros((w.shape[0], n_hosts))
        ok, order, h, starts, seg = self._event_order(host_of_vm)
        if ok.size == 0:
            return out
        dw = np.concatenate([-w[:, ok], w[:, ok]], axis=1)[:, order]
        # cumulative sums restarted at each host: subtract the running total at the segment's start
        cs = np.cumsum(dw, axis=1)
        before = np.where(starts > 0, cs[:, np.maximum(starts - 1, 0)], 0.0)
        level = cs - before[:, seg]
        level[np.abs(level) < 1e-9 * max(1.0, float(np.abs(w).max()))] = 0.0  # sums back to zero after a leave
        # position of row 0's peak in each host segment
        key = level[0]
        top = np.maximum.reduceat(key, starts)
        is_top = key == top[seg]
        first = np.full(starts.size, h.size)
        np.minimum.at(first, seg[is_top], np.flatnonzero(is_top))
        out[:, h[starts]] = level[:, first]
        return out

    def _event_order(self, host_of_vm: np.ndarray):
        """The rows placed and started (``ok``), the order of their events (ends then starts, 2 per row) by host,
        time and, at one instant, ends before starts, the events' hosts in that order, and each host segment's start
        and segment number. Kept for the placement it was computed for (the engine asks for vCPUs and memory, the
        memory and virtualization stages again, with the same placement; an equal copy is checked, not identity).

        The two stable sorts are those of ``np.lexsort((kind, t, h))`` at a fraction of its time; the hosts are
        sorted by :func:`~densim.engine.stages.stable_order` (int32 keys, a radix sort: the same permutation). The
        cache is keyed on the schedule's arrays by identity (they are never written in place) and on an equal copy
        of the placement."""
        s, e = self.sch.start_s, self.sch.end_s
        c = getattr(self, "_events", None)  # None also on a Liveness built without __init__ (tests)
        if (c is not None and c[0] is s and c[1] is e and c[2].shape == host_of_vm.shape
                and np.array_equal(c[2], host_of_vm)):
            return c[3:]
        ok = np.flatnonzero((host_of_vm >= 0) & ~np.isnan(s))
        h = np.r_[host_of_vm[ok], host_of_vm[ok]].astype(np.int64)
        t = np.r_[np.where(np.isnan(e[ok]), np.inf, e[ok]), s[ok]]
        order = np.argsort(t, kind="stable")
        order = order[stable_order(h[order])]
        h = h[order]
        starts = np.flatnonzero(np.r_[True, h[1:] != h[:-1]]) if h.size else np.zeros(0, np.int64)
        seg = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, h.size]))
        if 2 * ok.size < 2**31:  # kept as int32 (half the memory: 20 M events keep about 0.3 GiB, not 0.6)
            ok, order, h, seg = (x.astype(np.int32) for x in (ok, order, h, seg))
        self._events = (s, e, np.array(host_of_vm, copy=True), ok, order, h, starts, seg)
        return ok, order, h, starts, seg

    def active_ids(self, t_lo: float, t_hi: float, host_of_vm: np.ndarray) -> np.ndarray:
        """The VMs alive at some time in ``[t_lo, t_hi)``, in host order (stable): a chunk steps only these."""
        s, e = self.sch.start_s, self.sch.end_s
        ids = np.flatnonzero((s < t_hi) & (e > t_lo))  # NaN (never started) compares False
        return ids[stable_order(host_of_vm[ids])]

    def chunk_steps(self, n_steps: int, step_s: float, elements: int) -> int:
        """Steps per chunk so that (VMs alive in a chunk) x steps stays near ``elements``, and so that the
        VM-steps a chunk computes for VMs not alive in them stay about as many as the live ones.

        A chunk of k steps holds about the peak of concurrent VMs plus the arrivals during k steps,
        (peak + rate k) x k VM-steps of which about peak x k are alive; k <= peak / rate keeps the dead
        share at most a half (a chunk of k = budget steps computed mostly dead cells: at 100,000 VMs over
        30 days, 12 % of a chunk's cells were alive). Every chunk also scans the VMs once (which are
        alive), so k is kept at 16 steps or more. A run that fits the budget in one chunk stays one chunk.

        The chunk length changes results in float32's last bits only: a host's per-step claims are summed
        pairwise over the VMs of the chunk on it (numpy's ``add.reduceat`` order), and the VMs not alive in a
        step add zeros that move the pairing (100,000 VMs over 30 days: host utilisation maxima by 2e-7,
        energy by 6e-10 relative).
        """
        from densim.placement.online import peak_running

        started = np.isfinite(self.sch.start_s)
        peak = peak_running(self.sch)
        rate = np.count_nonzero(started) / max(n_steps, 1)  # starts per step
        # largest k with (peak + rate k) k <= elements
        k = (-peak + np.sqrt(peak * peak + 4.0 * rate * elements)) / (2.0 * rate) if rate > 0 else elements / max(peak, 1)
        if rate > 0 and k < n_steps:
            k = min(k, max(peak / rate, 16.0))
        return int(max(1, min(n_steps, k)))

    def chunk(self, edges: np.ndarray, perm, starts, hosts_with, n_hosts: int, step_s: float):
        """(vCPUs alive per host and step (float64), hosts on (bool), boot power (W)), each (steps, hosts).
        ``perm`` lists the VMs in host order (segments ``starts`` on ``hosts_with``)."""
        n = edges.size - 1
        vc = np.zeros((n, n_hosts))
        busy = np.zeros((n, n_hosts)) if self.policy != "on" or self.failures is not None else None
        if perm.size and self.failures is not None:  # instances up the whole chunk are constant over it
            st, en = self.sch.start_s[perm], self.sch.end_s[perm]
            hp = np.repeat(hosts_with, np.diff(np.r_[starts, perm.size]))
            full = (st <= edges[0]) & (en >= edges[-1])
            vc[:] = np.bincount(hp[full], weights=self.vcpus[perm][full].astype(np.float64), minlength=n_hosts)[None, :]
            busy[:] = np.bincount(hp[full], minlength=n_hosts)[None, :]
            part = np.flatnonzero(~full)
            if part.size:
                a = alive_fraction(st[part], en[part], edges).astype(np.float64)
                np.add.at(vc.T, hp[part], (a * self.vcpus[perm][part][None, :]).T)
                np.add.at(busy.T, hp[part], (a > 0).T.astype(np.float64))
        elif perm.size:
            a = alive_fraction(self.sch.start_s[perm], self.sch.end_s[perm], edges)
            vc[:, hosts_with] = np.add.reduceat(a * self.vcpus[perm][None, :], starts, axis=1)
            if self.policy != "on":  # only the idle-hosts-off policy reads which hosts are busy
                busy[:, hosts_with] = np.add.reduceat((a > 0).astype(np.float32), starts, axis=1)
        if self.policy == "on":
            if self.failures is not None:  # a host down for at least half a step draws no power in it
                return vc, self.failures.host_down_share(edges, n_hosts) < 0.5, np.zeros((1, n_hosts))
            return vc, np.ones((1, n_hosts), dtype=bool), np.zeros((1, n_hosts))
        on, boot = self.power_mask(busy, edges, step_s)
        if self.failures is not None:
            on &= self.failures.host_down_share(edges, n_hosts) < 0.5
        return vc, on, boot.astype(np.float64)

    def power_mask(self, live_h: np.ndarray, edges: np.ndarray, step_s: float) -> tuple[np.ndarray, np.ndarray]:
        """(on, boot_w): hosts drawing power per step and the boot energy as extra mean W in the
        step a host comes on. Under ``on`` every host is on (no boots)."""
        n, H = live_h.shape
        if self.policy == "on":
            return np.ones((n, H), dtype=bool), np.zeros((n, H), dtype=np.float32)
        on = np.empty((n, H), dtype=bool)
        boot = np.zeros((n, H), dtype=np.float32)
        for k in range(n):  # a loop over the chunk's steps; hosts are vectorised
            busy = live_h[k] > 0
            self.last_busy[busy] = edges[k + 1]
            # on while busy, and for off_after after the last busy step ended
            now = busy | (edges[k] < self.last_busy + self.off_after)
            came_on = now & ~self.was_on
            boot[k, came_on] = self.boot_j[came_on] / step_s
            self.boots += came_on
            on[k] = now
            self.ever_on |= now
            self.was_on = now
        return on, boot
