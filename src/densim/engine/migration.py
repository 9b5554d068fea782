"""VMs moved on purpose during a run: maintenance evacuations and a DRS-style balancer.

The engine (:func:`densim.engine.run.run_placed`) asks the :class:`MigrationPlanner` where each
window of steps ends (:meth:`~MigrationPlanner.window_end`: at every decision step and every step
where a migration lands) after :meth:`~MigrationPlanner.advance` (moves the VMs whose migration
has finished, takes the decisions due), :meth:`~MigrationPlanner.cpu` before the window (rebuilds
the CPU kernel's host segments when the placement changed), :meth:`~MigrationPlanner.capacity` for the hosts' CPU
capacity in the window (migration CPU taken off), and :meth:`~MigrationPlanner.observe` after it
(the window's host and VM CPU demand, for the next decision; the migrating VMs' lost work).

**Decisions.**

* *Maintenance* (``migration.maintenance``): at the first step boundary at or after ``at`` every
  VM of the host is migrated to the eligible host (not in maintenance, powered on, enough vCPU
  and memory room under the placement's overcommit) with the lowest projected CPU utilisation,
  largest memory first; at most ``max_concurrent`` at once per host, in waves (a wave starts when
  the previous one's longest migration ends). The host takes no VM afterwards. A VM that fits
  nowhere stays (``stranded``); the host then never empties.
* *Balance* (``migration.balance``), every ``interval``: the imbalance is the standard deviation of
  the eligible hosts' CPU utilisation (demand / capacity) over the last interval, as vSphere
  DRS's "current host load standard deviation". Above ``threshold`` the balancer moves, up to
  ``budget_per_interval`` times, the (VM, destination) pair from the busiest host that lowers the
  deviation most, if the gain exceeds ``min_gain`` and the move passes a cost-benefit test:
  *benefit* = the drop of the demand above the cluster's mean utilisation,
  ``sum_h max(0, D_h - U_mean C_h)`` (MHz), over ``benefit_horizon`` (default: the interval);
  *cost* = the CPU the migration takes on both hosts plus the VM's lost work (MHz x s).

**Costs charged** (each migration, from the pre-copy model :func:`densim.models.migration.precopy`):

* bandwidth: each host's link is ``bandwidth x (1 - storage_share)`` (a converged fabric's storage
  traffic takes ``storage_share``); migrations started together share their source's and
  destination's link equally; the bytes sent appear per host as ``migration_net_mb_per_s``;
* CPU on both hosts while it runs: ``max(cpu_cores_min, cpu_cores_per_gbps x link Gbit/s)``
  cores (vMotion's reservation), taken off the host's CPU capacity for the part of each step a
  migration is active on it;
* the VM: its dirty rate is ``dirty_rate x`` its CPU utilisation over the last interval (a VM
  counts as fully busy before any step ran); during pre-copy it loses ``slowdown`` of its
  delivered CPU work, during the downtime all of it (``vm_work_lost_mhz_s``). It runs on the
  source until the step in which its migration ends, on the destination from the next step.

Not modelled: migrations do not slow each other beyond the equal split of a batch (a migration
keeps the bandwidth it started with); the stages that fix the host of each VM at start (memory,
storage, fabric, virtualization) and VMs that arrive and leave are not combined with migration
(an input error says so).
"""

from __future__ import annotations

import math
from typing import Any, TypedDict

import numpy as np

from densim.errors import InputError
from densim.models.migration import precopy
from densim.placement.capacity import fits_mask, host_capacity

LOG_ROWS = 1000  # migrations listed in the summary


class MigrationSummary(TypedDict):
    """``summary["migration"]``."""

    model: str
    migrations: int
    by_reason: dict[str, int]
    bytes_sent: float
    time_total_s: float  # sum over migrations
    time_mean_s: float
    time_max_s: float
    downtime_total_s: float
    downtime_max_s: float
    not_converged: int  # stopped by a round limit or no progress, not the downtime target
    host_cpu_core_s: float  # cores x s taken on source and destination hosts
    vm_work_lost_mhz_s: float
    balance_checks: int
    balance_triggered: int
    rejected_cost_benefit: int
    imbalance_first: float | None
    imbalance_last: float | None
    evacuations: list[dict[str, Any]]
    log: list[dict[str, Any]]


class MigrationPlanner:
    """The migration hook of a run (see the module docstring); also written like a stage's summary."""

    name = "migration"
    summary_sections = {"migration": MigrationSummary}

    def __init__(self, ctx, stages, live) -> None:
        sc = ctx.scenario
        self.s = s = sc.migration
        self.timeline = getattr(ctx, "moves", None) is not None and s.balance is None
        if not self.timeline:  # the balancer moves engine rows during the run, from the CPU it measures
            stages = [st for st in stages if getattr(st, "uses_vm_demand", True)]  # carbon only reads host power
            if stages:
                raise InputError("scenario", "migration.balance", "the load balancer is not yet combined with the "
                                 f"stage(s) {', '.join(st.name for st in stages)} (it moves VMs from the CPU measured "
                                 "during the run, and they fix each VM's host at the start); maintenance alone combines")
            if getattr(sc, "failures", None) is not None:
                raise InputError("scenario", "migration.balance", "the load balancer is not yet combined with failures "
                                 "(it moves VMs from the CPU measured during the run, while HA restarts are placed "
                                 "before it); maintenance alone combines")
            if live is not None:
                raise InputError("scenario", "migration.balance", "the load balancer is not yet combined with VMs that "
                                 "arrive and leave (scheduling.lifetimes: they are placed before the run, the balancer "
                                 "moves VMs during it); maintenance alone combines")
        self.ctx = ctx
        hosts, vms, grid = ctx.hosts, ctx.vms, ctx.grid
        self.H, self.V, self.step_s, self.T = hosts.n, vms.n, float(grid.step_s), grid.n_steps
        self.link_bps = s.bandwidth_bps * (1.0 - s.storage_share)
        self.cores_busy = max(s.cpu_cores_min, s.cpu_cores_per_gbps * s.bandwidth_bps * 8 / 1e9)
        names = {str(n): i for i, n in enumerate(hosts.names)}
        self.maint: list[tuple[int, int, float]] = []  # (step, host, at_s)
        for i, m in enumerate(s.maintenance):
            if m.host not in names:
                shown = ", ".join(list(names)[:5]) + (", ..." if len(names) > 5 else "")
                raise InputError("scenario", f"migration.maintenance[{i}].host", f"no host named {m.host!r}; hosts: {shown}")
            self.maint.append((int(math.ceil(m.at_s / self.step_s - 1e-9)), names[m.host], float(m.at_s)))
        b = s.balance
        self.every = max(1, int(round(b.interval_s / self.step_s))) if b is not None else 0
        self.horizon_s = (b.benefit_horizon_s or b.interval_s) if b is not None else 0.0
        self.cap = host_capacity(hosts, sc.placement)  # (H, 2): vCPUs, configured memory bytes
        self.in_maint = np.zeros(self.H, dtype=bool)
        self.migrating = np.zeros(self.V, dtype=bool)
        self.pending: list[tuple[int, int, int]] = []  # (landing step, vm, destination)
        # migrations, one row each (columns as lists; at most a few per decision)
        self.rows: list[dict[str, Any]] = []
        self.flight = np.zeros((0, 7))  # start_s, live_end_s, end_s, src, dst, vm, rate_bps
        self.h_claim = np.zeros(self.H)
        self.v_dem = np.zeros(self.V)
        self.acc_steps = 0
        self.imbalance: list[float] = []
        self.checks = self.triggered = self.rejected = 0
        self.core_s = 0.0
        self.lost_mhz_s = 0.0
        self.evac: list[dict[str, Any]] = []
        self._evac_of: dict[int, dict[str, Any]] = {}  # host -> its evacuation's entry in self.evac
        self.ever_on = np.zeros(self.H, dtype=bool)
        self._moved = False
        if self.timeline:  # maintenance decided by the event loop (placement/timeline.py): charge its migrations
            self.maint = []
            self._from_timeline(ctx.moves)

    def _from_timeline(self, fo) -> None:
        """The flights, summary rows and evacuations of the migrations the event loop scheduled."""
        from densim.placement import timeline as TL

        ctx, s = self.ctx, self.s
        t0 = ctx.grid.start_s
        m = fo.mig
        row = m[:, TL.M_INST_SRC].astype(np.int64)  # the engine row of the VM's run on the source
        mem = ctx.vms.mem_bytes[row].astype(np.float64)
        res = precopy(mem, self.link_bps / m[:, TL.M_SHARE], m[:, TL.M_DIRTY], wws_bytes=s.wws_fraction * mem,
                      max_rounds=s.max_rounds, downtime_target_s=s.downtime_target_s, resume_s=s.resume_s)
        start = m[:, TL.M_START] - t0
        end = np.minimum(m[:, TL.M_END] - t0, self.T * self.step_s)  # cancelled: when; in flight at the end: the end
        live_end = np.minimum(start + m[:, TL.M_LIVE], end)
        rate = res.bytes_sent / np.maximum(res.total_s, 1e-12)
        src, dst = m[:, TL.M_SRC].astype(np.int64), m[:, TL.M_DST].astype(np.int64)
        self.flight = np.column_stack([start, live_end, end, src, dst, row, rate])
        names, hn = ctx.source.inner.sizes.names, ctx.hosts.names  # the VMs' own names (rows are runs: <vm>~2)
        vm = m[:, TL.M_VM].astype(np.int64)
        status = ("in flight", "landed", "cancelled")
        for k in range(m.shape[0]):
            self.rows.append({"vm": str(names[vm[k]]), "from": str(hn[src[k]]), "to": str(hn[dst[k]]),
                              "reason": "maintenance", "start_s": float(start[k]), "time_s": float(res.total_s[k]),
                              "downtime_s": float(res.downtime_s[k]), "bytes": float(res.bytes_sent[k]),
                              "rounds": int(res.rounds[k]), "converged": bool(res.converged[k]),
                              "status": status[int(m[k, TL.M_STATUS])]})
        ev = np.argsort([e.at_s for e in s.maintenance], kind="stable")
        for k, i in enumerate(ev):
            e = s.maintenance[i]
            mine = m[:, TL.M_EVENT] == k
            vms, stranded = int(fo.evac[k, 0]), int(fo.evac[k, 1])
            done = bool(np.all(m[mine, TL.M_STATUS] == TL.M_LANDED)) and stranded == 0
            last = float(m[mine, TL.M_END].max() - t0) if mine.any() else float(e.at_s)
            self.evac.append({"host": e.host, "at_s": float(e.at_s), "started_s": float(e.at_s), "vms": vms,
                              "stranded": stranded, "time_to_empty_s": (last - float(e.at_s)) if done else None})

    # ---- windows ----------------------------------------------------------------------------
    def window_end(self, t0: int, t1: int) -> int:
        """End of the window starting at ``t0`` (at most ``t1``): the next decision or landing step."""
        nxt = [t1]
        if self.every:
            nxt.append((t0 // self.every + 1) * self.every)
        nxt += [st for st, _, _ in self.maint if st > t0]
        nxt += [st for st, _, _ in self.pending if st > t0]
        return max(t0 + 1, min(nxt))

    def advance(self, t0: int) -> None:
        """At step ``t0``, before its window: land finished migrations, then take the decisions due."""
        host = self.ctx.vms.host
        if self.pending:
            done = [p for p in self.pending if p[0] <= t0]
            self.pending = [p for p in self.pending if p[0] > t0]
            for _, v, dst in done:
                host[v] = dst
                self.migrating[v] = False
            self._moved |= bool(done)
            # a VM that was on its way to a host put into maintenance meanwhile moves on when it lands
            for h in sorted({dst for _, _, dst in done if self.in_maint[dst]}):
                self._evacuate(t0, h, None)
        due = [(h, at_s) for st, h, at_s in self.maint if st == t0]
        for h, _ in due:  # hosts put into maintenance at one instant are no target for each other
            self.in_maint[h] = True
        for h, at_s in due:
            self._evacuate(t0, h, at_s)
        if self.every and t0 > 0 and t0 % self.every == 0:
            self._balance(t0)

    def cpu(self, cpu, rebuild):
        """The CPU setup for the next window: rebuilt (``rebuild()``) when VMs changed host."""
        if self._moved:
            cpu = rebuild()
            self._moved = False
        self.ever_on |= cpu.host_on
        return cpu

    def capacity(self, t0: int, t1: int, cap_h: np.ndarray) -> np.ndarray:
        """The hosts' CPU capacity in the window, less the cores busy with migrations."""
        f = self._flight_in(t0, t1)
        if f.shape[0] == 0:
            return cap_h
        edges = np.arange(t0, t1 + 1) * self.step_s
        share = np.zeros((t1 - t0, self.H))
        ends = np.concatenate([f[:, [0, 2, 3]], f[:, [0, 2, 4]]])  # (start, end, host) for both ends
        for h in np.unique(ends[:, 2]).astype(np.int64):  # hosts migrating in this window (a few)
            a, b = _union(ends[ends[:, 2] == h, 0], ends[ends[:, 2] == h, 1])
            share[:, h] = _overlap(edges, a, b).sum(axis=1) / self.step_s  # time some migration runs on h
        cores = self.cores_busy * share
        self.core_s += float(cores.sum() * self.step_s)
        cut = cores * self.ctx.hosts.core_mhz[None, :]
        return np.maximum(np.broadcast_to(cap_h, cut.shape) - cut, 0.0).astype(np.float32)

    def observe(self, t0: int, t1: int, out, host_acc) -> None:
        """After the window's CPU step: keep its demand; charge the migrating VMs' lost work and the links."""
        n = t1 - t0
        self.h_claim += out.h_claim
        self.v_dem += out.vm_dem
        self.acc_steps += n
        net = np.zeros(self.H)
        f = self._flight_in(t0, t1)
        if f.shape[0]:
            edges = np.arange(t0, t1 + 1) * self.step_s
            live = _overlap(edges, f[:, 0], f[:, 1]).sum(axis=0)  # seconds in pre-copy in the window
            down = _overlap(edges, f[:, 1], f[:, 2]).sum(axis=0)  # seconds stopped
            vm = f[:, 5].astype(np.int64)
            mean_mhz = out.vm_del[vm] / n
            if self.timeline:  # a row runs part of the window (it ends at its landing): its mean while it runs
                sch, g0 = self.ctx.schedule, self.ctx.grid.start_s
                ran = (np.minimum(sch.end_s[vm] - g0, edges[-1]) - np.maximum(sch.start_s[vm] - g0, edges[0]))
                mean_mhz = np.where(ran > 0, out.vm_del[vm] * self.step_s / np.maximum(ran, 1e-12), 0.0)
            lost = mean_mhz * (self.s.slowdown * live + down)  # MHz x s
            lost = np.minimum(lost, out.vm_del[vm] * self.step_s)
            np.subtract.at(out.vm_del, vm, lost / self.step_s)
            self.lost_mhz_s += float(lost.sum())
            mb = f[:, 6] * (live + down) / 1e6  # MB moved in the window
            np.add.at(net, f[:, 3].astype(np.int64), mb)
            np.add.at(net, f[:, 4].astype(np.int64), mb)
        host_acc.add_reduced("migration_net_mb_per_s", net / self.step_s)  # sum over steps of MB/s

    def final_loads(self, host_on: np.ndarray, host_loads):
        """Per host at the end (``host_loads``: :func:`densim.engine.run.host_loads`): vCPUs, VMs and
        memory placed, and whether it drew power at some time."""
        vcpus, nvms, mem, on = host_loads(self.ctx)
        live = getattr(self.ctx, "liveness", None)
        if self.timeline and live is not None:  # rows are VM runs: what a host holds at once, not every run it had
            vms, H = self.ctx.vms, self.H
            vcpus = live.peak_per_host(vms.host, vms.vcpus, H)[0]
            mem = live.peak_per_host(vms.host, vms.mem_bytes, H)[0]
        return vcpus, nvms, mem, on | self.ever_on | host_on

    # ---- decisions --------------------------------------------------------------------------
    def _loads(self):
        """Per host: mean CPU demand (MHz) over the last interval and vCPUs/memory placed or incoming."""
        ctx = self.ctx
        vms, hosts = ctx.vms, ctx.hosts
        host = vms.host.copy()
        for _, v, dst in self.pending:  # incoming VMs count on their destination
            host[v] = dst
        placed = host >= 0
        vcpus = np.bincount(host[placed], weights=vms.vcpus[placed], minlength=self.H).astype(np.float64)
        mem = np.bincount(host[placed], weights=vms.mem_bytes[placed], minlength=self.H)
        nvms = np.bincount(host[placed], minlength=self.H)
        if self.acc_steps:
            vm_mhz = self.v_dem / self.acc_steps
        else:  # nothing ran yet: every VM counts as fully busy
            vm_mhz = (vms.vcpus * hosts.core_mhz[np.maximum(vms.host, 0)]).astype(np.float64) * placed
        dem = np.bincount(host[placed], weights=vm_mhz[placed], minlength=self.H)
        on = (nvms > 0) | (ctx.scenario.cluster.unused_hosts == "idle")
        return host, vm_mhz, dem, vcpus, mem, on

    def _vm_util(self, v: np.ndarray, vm_mhz: np.ndarray) -> np.ndarray:
        vms, hosts = self.ctx.vms, self.ctx.hosts
        cap = vms.vcpus[v] * hosts.core_mhz[np.maximum(vms.host[v], 0)]
        return np.clip(vm_mhz[v] / np.maximum(cap, 1e-9), 0.0, 1.0)

    def _start(self, t0: int, vms: np.ndarray, src: np.ndarray, dst: np.ndarray, start_s: float, reason: str,
               vm_mhz: np.ndarray) -> np.ndarray:
        """Start migrations together at ``start_s`` (links shared equally); returns their end times (s)."""
        s, ctx = self.s, self.ctx
        n_out = np.bincount(src, minlength=self.H)
        n_in = np.bincount(dst, minlength=self.H)
        bw = self.link_bps / np.maximum(n_out[src], n_in[dst])
        mem = ctx.vms.mem_bytes[vms].astype(np.float64)
        res = precopy(mem, bw, s.dirty_rate_bps * self._vm_util(vms, vm_mhz), wws_bytes=s.wws_fraction * mem,
                      max_rounds=s.max_rounds, downtime_target_s=s.downtime_target_s, resume_s=s.resume_s)
        end = start_s + res.total_s
        live_end = start_s + res.live_s
        rate = res.bytes_sent / np.maximum(res.total_s, 1e-12)
        self.flight = np.vstack([self.flight, np.column_stack([np.full(vms.size, start_s), live_end, end, src, dst, vms, rate])])
        for k in range(vms.size):
            land = int(math.ceil(end[k] / self.step_s - 1e-9))
            self.pending.append((max(land, t0 + 1), int(vms[k]), int(dst[k])))
            self.rows.append({"vm": str(ctx.vms.names[vms[k]]), "from": str(ctx.hosts.names[src[k]]),
                              "to": str(ctx.hosts.names[dst[k]]), "reason": reason, "start_s": float(start_s),
                              "time_s": float(res.total_s[k]), "downtime_s": float(res.downtime_s[k]),
                              "bytes": float(res.bytes_sent[k]), "rounds": int(res.rounds[k]),
                              "converged": bool(res.converged[k])})
        self.migrating[vms] = True
        return end

    def _evacuate(self, t0: int, h: int, at_s: float | None) -> None:
        """Move every VM off host ``h`` (entering maintenance at ``at_s``; None: VMs that landed on it
        since, added to its evacuation). A VM that fits on no other host up and not in maintenance is
        stranded (counted); the host then never empties."""
        ctx = self.ctx
        self.in_maint[h] = True
        host, vm_mhz, dem, vcpus, mem, on = self._loads()
        cap = ctx.hosts.capacity_mhz.astype(np.float64)
        ok_host = on & ~self.in_maint
        mine = np.flatnonzero((ctx.vms.host == h) & ~self.migrating)
        mine = mine[np.argsort(-ctx.vms.mem_bytes[mine], kind="stable")]
        chosen_v, chosen_d, stranded = [], [], 0
        for v in mine:  # a decision event, not a time step: one VM at a time, hosts vectorised
            fits = ok_host & fits_mask(self.cap[:, 0] - vcpus, self.cap[:, 1] - mem, ctx.vms.vcpus[v], ctx.vms.mem_bytes[v])
            if not fits.any():
                stranded += 1
                continue
            proj = np.where(fits, (dem + vm_mhz[v]) / cap, np.inf)
            d = int(np.argmin(proj))
            vcpus[d] += ctx.vms.vcpus[v]
            mem[d] += ctx.vms.mem_bytes[v]
            dem[d] += vm_mhz[v]
            chosen_v.append(v)
            chosen_d.append(d)
        start = t0 * self.step_s
        last_end = start
        k = self.s.max_concurrent
        cv, cd = np.asarray(chosen_v, dtype=np.int64), np.asarray(chosen_d, dtype=np.int64)
        for w in range(0, cv.size, k):  # waves of max_concurrent migrations
            ends = self._start(t0, cv[w:w + k], np.full(min(k, cv.size - w), h), cd[w:w + k], last_end, "maintenance", vm_mhz)
            last_end = float(ends.max())
        # VMs still on their way to h are evacuated when they land (advance): the host is not empty before
        incoming = sum(1 for _, _, dst in self.pending if dst == h) - int(np.count_nonzero(cd == h))
        if at_s is None:  # a follow-up: VMs that landed after the host entered maintenance
            e = self._evac_of[h]
            e["vms"] += int(cv.size)
            e["stranded"] += stranded
            e["_last_end"] = max(e["_last_end"], last_end)
        else:
            e = {"host": str(ctx.hosts.names[h]), "at_s": at_s, "started_s": start, "vms": int(cv.size),
                 "stranded": stranded, "time_to_empty_s": None, "_last_end": last_end}
            self._evac_of[h] = e
            self.evac.append(e)
        e["_incoming"] = incoming
        e["time_to_empty_s"] = (e["_last_end"] - e["at_s"]) if e["stranded"] == 0 and incoming == 0 else None

    def _balance(self, t0: int) -> None:
        ctx, b = self.ctx, self.s.balance
        host, vm_mhz, dem, vcpus, mem, on = self._loads()
        self.h_claim[:] = 0.0
        self.v_dem[:] = 0.0
        self.acc_steps = 0
        elig = on & ~self.in_maint
        if elig.sum() < 2:
            return
        cap = ctx.hosts.capacity_mhz.astype(np.float64)
        u = np.where(elig, dem / cap, 0.0)
        n = float(elig.sum())
        sigma = _std(u, elig)
        self.checks += 1
        self.imbalance.append(sigma)
        if sigma <= b.threshold:
            return
        self.triggered += 1
        moves_v, moves_s, moves_d = [], [], []
        for _ in range(b.budget_per_interval):
            src = int(np.argmax(np.where(elig, u, -np.inf)))
            cand = np.flatnonzero((ctx.vms.host == src) & ~self.migrating & (host == src))
            if cand.size == 0:
                break
            dv = vm_mhz[cand]
            dsts = np.flatnonzero(elig & (np.arange(self.H) != src))
            free = self.cap[dsts] - np.stack([vcpus[dsts], mem[dsts]], axis=1)  # (dsts, 2)
            fits = fits_mask(free[None, :, 0], free[None, :, 1], ctx.vms.vcpus[cand][:, None], ctx.vms.mem_bytes[cand][:, None])
            if not fits.any():
                break
            us = u[src] - dv / cap[src]  # (cand,)
            ud = u[dsts][None, :] + dv[:, None] / cap[dsts][None, :]  # (cand, dsts)
            s1 = u[elig].sum() - u[src] + us[:, None] - u[dsts][None, :] + ud
            s2 = (u[elig] ** 2).sum() - u[src] ** 2 + us[:, None] ** 2 - u[dsts][None, :] ** 2 + ud**2
            new_sigma = np.sqrt(np.maximum(s2 / n - (s1 / n) ** 2, 0.0))
            new_sigma = np.where(fits, new_sigma, np.inf)
            i, j = np.unravel_index(int(np.argmin(new_sigma)), new_sigma.shape)
            gain = sigma - float(new_sigma[i, j])
            if gain <= max(b.min_gain, 0.0):
                break
            v, d = int(cand[i]), int(dsts[j])
            # cost-benefit (MHz x s): demand above the cluster's mean utilisation removed over the horizon,
            # against the migration's CPU on both hosts and the VM's lost work (solo-bandwidth estimate)
            u_new = u.copy()
            u_new[src], u_new[d] = us[i], ud[i, j]
            mean_u = float(u[elig].mean())
            above = np.maximum(0.0, (u - mean_u) * cap)[elig].sum()
            above_new = np.maximum(0.0, (u_new - mean_u) * cap)[elig].sum()
            benefit = (above - above_new) * self.horizon_s
            mem_v = float(ctx.vms.mem_bytes[v])
            est = precopy(mem_v, self.link_bps, self.s.dirty_rate_bps * float(self._vm_util(np.array([v]), vm_mhz)[0]),
                          wws_bytes=self.s.wws_fraction * mem_v, max_rounds=self.s.max_rounds,
                          downtime_target_s=self.s.downtime_target_s, resume_s=self.s.resume_s)
            cost = (2 * self.cores_busy * float(ctx.hosts.core_mhz[[src, d]].mean()) * float(est.total_s)
                    + float(vm_mhz[v]) * (self.s.slowdown * float(est.live_s) + float(est.downtime_s)))
            if benefit <= cost:
                self.rejected += 1
                break
            moves_v.append(v)
            moves_s.append(src)
            moves_d.append(d)
            host[v] = d
            u = u_new
            sigma = float(new_sigma[i, j])
            vcpus[d] += ctx.vms.vcpus[v]
            mem[d] += ctx.vms.mem_bytes[v]
            vcpus[src] -= ctx.vms.vcpus[v]
            mem[src] -= ctx.vms.mem_bytes[v]
        if moves_v:
            self._start(t0, np.asarray(moves_v, dtype=np.int64), np.asarray(moves_s, dtype=np.int64),
                        np.asarray(moves_d, dtype=np.int64), t0 * self.step_s, "balance", vm_mhz)

    def _flight_in(self, t0: int, t1: int) -> np.ndarray:
        f = self.flight
        if f.shape[0] == 0:
            return f
        a, b = t0 * self.step_s, t1 * self.step_s
        return f[(f[:, 0] < b) & (f[:, 2] > a)]

    # ---- summary ----------------------------------------------------------------------------
    def finish(self, ctx, summary) -> None:
        rows = self.rows
        t = np.array([r["time_s"] for r in rows]) if rows else np.zeros(0)
        dn = np.array([r["downtime_s"] for r in rows]) if rows else np.zeros(0)
        reasons: dict[str, int] = {}
        for r in rows:
            reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
        summary.add("migration", {
            "model": self.s.model,
            "migrations": len(rows),
            "by_reason": reasons,
            "bytes_sent": float(sum(r["bytes"] for r in rows)),
            "time_total_s": float(t.sum()),
            "time_mean_s": float(t.mean()) if t.size else 0.0,
            "time_max_s": float(t.max()) if t.size else 0.0,
            "downtime_total_s": float(dn.sum()),
            "downtime_max_s": float(dn.max()) if dn.size else 0.0,
            "not_converged": sum(1 for r in rows if not r["converged"]),
            "host_cpu_core_s": self.core_s,
            "vm_work_lost_mhz_s": self.lost_mhz_s,
            "balance_checks": self.checks,
            "balance_triggered": self.triggered,
            "rejected_cost_benefit": self.rejected,
            "imbalance_first": self.imbalance[0] if self.imbalance else None,
            "imbalance_last": self.imbalance[-1] if self.imbalance else None,
            "evacuations": [{k: v for k, v in e.items() if not k.startswith("_")} for e in self.evac],
            "log": rows[:LOG_ROWS],
        })


def _std(u: np.ndarray, mask: np.ndarray) -> float:
    return float(np.std(u[mask])) if mask.any() else 0.0


def _union(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The intervals ``[a_k, b_k)`` merged into disjoint ones."""
    o = np.argsort(a, kind="stable")
    a, b = a[o], b[o]
    reach = np.maximum.accumulate(b)
    new = np.r_[True, a[1:] > reach[:-1]]
    starts = a[new]
    idx = np.flatnonzero(new)
    stops = np.maximum.reduceat(b, idx)
    return starts, stops


def _overlap(edges: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Seconds of ``[a_k, b_k)`` inside each step ``[edges[t], edges[t+1])``: (steps, k)."""
    lo = np.maximum(edges[:-1, None], a[None, :])
    hi = np.minimum(edges[1:, None], b[None, :])
    return np.maximum(hi - lo, 0.0)


def planner_for(ctx, stages, live) -> MigrationPlanner | None:
    """The run's migration planner, or None when ``migration.model`` is ``none``."""
    if ctx.scenario.migration.model == "none":
        return None
    ctx.declare("migration_net_mb_per_s", level="host", agg="mean", unit="MB/s",
                doc="live-migration traffic sent or received on the host's migration link")
    return MigrationPlanner(ctx, stages, live)


def windows(T: int, chunk_steps: int, planner: MigrationPlanner | None):
    """The engine's windows ``(t0, t1)``: chunks of ``chunk_steps``, cut at the planner's events."""
    t0 = 0
    while t0 < T:
        t1 = min(T, t0 + chunk_steps)
        if planner is not None:
            planner.advance(t0)
            t1 = min(t1, planner.window_end(t0, t1))
        yield t0, t1
        t0 = t1
