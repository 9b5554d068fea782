"""VMs moved on purpose during a run: maintenance evacuations and a DRS-style balancer, and what they cost.

Both are events of the one placement loop (:mod:`densim.placement.timeline`): a maintenance evacuation
(:func:`~densim.placement.timeline._maintenance`) and a balance check (:func:`~densim.placement.timeline._balance`)
decide migrations, reserve their room on the destination and schedule their landings; at a landing the VM's
run (engine row) on the source ends and one on the destination begins. This module charges their costs
during the engine's run (:class:`MigrationPlanner`: :meth:`~MigrationPlanner.capacity` for the hosts' CPU
capacity in a window, migration CPU taken off; :meth:`~MigrationPlanner.observe` after it, the migrating
VMs' lost work and the links' traffic) and writes ``summary["migration"]``.

**Decisions** (in the event loop).

* *Maintenance* (``migration.maintenance``): at ``at`` every VM of the host is migrated to the host
  with the most room left (worst-fit on the placement's reservations), largest memory first; at most
  ``max_concurrent`` at once per host, in waves (a wave starts when the previous one's longest migration
  ends). The host takes no VM afterwards. A VM that fits nowhere stays (``stranded``).
* *Balance* (``migration.balance``), every ``interval`` from the start: the imbalance is the standard
  deviation of the CPU utilisation (demand / capacity) of the hosts up, not in maintenance and powered,
  as vSphere DRS's "current host load standard deviation"; a VM's demand is its mean over the last
  interval (from its trace, at most its vCPUs at its host's speed; a VM migrating counts on its
  destination). Above ``threshold`` the balancer moves, up to ``budget_per_interval`` times, the (VM,
  destination) pair from the busiest host that lowers the deviation most, if the gain exceeds ``min_gain``
  and the move passes a cost-benefit test: *benefit* = the drop of the demand above the cluster's mean
  utilisation, ``sum_h max(0, D_h - U_mean C_h)`` (MHz), over ``benefit_horizon`` (default: the interval);
  *cost* = the CPU the migration takes on both hosts plus the VM's lost work (MHz x s). A check's moves
  start together and share their hosts' links equally.

**Costs charged** (each migration, from the pre-copy model :func:`densim.models.migration.precopy`):

* bandwidth: each host's link is ``bandwidth x (1 - storage_share)`` (a converged fabric's storage
  traffic takes ``storage_share``); migrations started together share their source's and
  destination's link equally; the bytes sent appear per host as ``migration_net_mb_per_s``;
* CPU on both hosts while it runs: ``max(cpu_cores_min, cpu_cores_per_gbps x link Gbit/s)``
  cores (vMotion's reservation), taken off the host's CPU capacity for the part of each step a
  migration is active on it;
* zero pages: a share ``zero_fraction`` of each VM's memory is never touched; the first round reads it at
  ``zero_scan_rate`` and sends a 9-byte flag per zero page (default 0: every page sent);
* the VM: its dirty rate is ``dirty_rate x`` its CPU utilisation before the decision; during pre-copy it
  loses ``slowdown`` of its delivered CPU work, during the downtime all of it (``vm_work_lost_mhz_s``).

Because both are timeline events, migration combines with every stage, lifetimes and failures (a VM
arriving, leaving or restarted is balanced like any other; a host failing mid-migration cancels it).
Not modelled: migrations do not slow each other beyond the equal split of a batch (a migration keeps
the bandwidth it started with); the balancer has no GPU fit test (the plant refuses it with GPU requests).
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from densim.errors import InputError
from densim.models.migration import precopy

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
    """The costs of the migrations the placement timeline scheduled (see the module docstring); also written like a
    stage's summary."""

    name = "migration"
    summary_sections = {"migration": MigrationSummary}

    def __init__(self, ctx, stages, live) -> None:
        sc = ctx.scenario
        self.s = s = sc.migration
        fo = getattr(ctx, "moves", None)
        if fo is None:  # VMs of a given demand source placed once, outside the event loop (no arrivals)
            raise InputError("scenario", "migration", "live migration (maintenance, balancer) runs on the placement "
                             "timeline, which this run's VMs are not on (a given demand source without arrival times); "
                             "give the VMs arrival times or remove migration")
        self.ctx = ctx
        hosts, vms, grid = ctx.hosts, ctx.vms, ctx.grid
        self.H, self.V, self.step_s, self.T = hosts.n, vms.n, float(grid.step_s), grid.n_steps
        self.link_bps = s.bandwidth_bps * (1.0 - s.storage_share)
        self.cores_busy = max(s.cpu_cores_min, s.cpu_cores_per_gbps * s.bandwidth_bps * 8 / 1e9)
        self.rows: list[dict[str, Any]] = []
        self.flight = np.zeros((0, 7))  # start_s, live_end_s, end_s, src, dst, row, rate_bps
        self.core_s = 0.0
        self.lost_mhz_s = 0.0
        self.evac: list[dict[str, Any]] = []
        bal = fo.bal if fo.bal is not None else np.zeros((0, 4))
        seen = bal[~np.isnan(bal[:, 0])]  # checks with at least 2 hosts to balance
        self.imbalance = seen[:, 0].tolist()
        self.checks, self.triggered, self.rejected = int(seen.shape[0]), int(seen[:, 1].sum()), int(seen[:, 2].sum())
        self._from_timeline(fo)

    def _from_timeline(self, fo) -> None:
        """The flights, summary rows and evacuations of the migrations the event loop scheduled."""
        from densim.placement import timeline as TL

        ctx, s = self.ctx, self.s
        t0 = ctx.grid.start_s
        m = fo.mig
        row = m[:, TL.M_INST_SRC].astype(np.int64)  # the engine row of the VM's run on the source
        mem = ctx.vms.mem_bytes[row].astype(np.float64)
        res = precopy(mem, self.link_bps / m[:, TL.M_SHARE], m[:, TL.M_DIRTY], wws_bytes=s.wws_fraction * mem,
                      max_rounds=s.max_rounds, downtime_target_s=s.downtime_target_s, resume_s=s.resume_s,
                      zero_fraction=s.zero_fraction, zero_scan_bps=s.zero_scan_bps)
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
                              "reason": "maintenance" if m[k, TL.M_EVENT] >= 0 else "balance", "start_s": float(start[k]),
                              "time_s": float(res.total_s[k]), "downtime_s": float(res.downtime_s[k]),
                              "bytes": float(res.bytes_sent[k]), "rounds": int(res.rounds[k]),
                              "converged": bool(res.converged[k]), "status": status[int(m[k, TL.M_STATUS])]})
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
        """After the window's CPU step: charge the migrating VMs' lost work and the links."""
        net = np.zeros(self.H)
        f = self._flight_in(t0, t1)
        if f.shape[0]:
            edges = np.arange(t0, t1 + 1) * self.step_s
            live = _overlap(edges, f[:, 0], f[:, 1]).sum(axis=0)  # seconds in pre-copy in the window
            down = _overlap(edges, f[:, 1], f[:, 2]).sum(axis=0)  # seconds stopped
            vm = f[:, 5].astype(np.int64)
            # a row runs part of the window (it ends at its landing): its mean while it runs
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
        memory placed (what a host holds at once, rows being VM runs), and whether it drew power at some time."""
        vcpus, nvms, mem, on = host_loads(self.ctx)
        live = getattr(self.ctx, "liveness", None)
        if live is not None:
            vms, H = self.ctx.vms, self.H
            vcpus = live.peak_per_host(vms.host, vms.vcpus, H)[0]
            mem = live.peak_per_host(vms.host, vms.mem_bytes, H)[0]
        return vcpus, nvms, mem, on | host_on

    def _flight_in(self, t0: int, t1: int) -> np.ndarray:
        f = self.flight
        if f.shape[0] == 0:
            return f
        a, b = t0 * self.step_s, t1 * self.step_s
        return f[(f[:, 0] < b) & (f[:, 2] > a)]

    # ---- summary ----------------------------------------------------------------------------
    def finish(self, ctx, summary) -> None:
        """``summary["migration"]``: the migrations' count by reason, bytes, times and downtimes, their CPU and lost
        work, the balancer's checks and imbalance, the evacuations, and the first ``LOG_ROWS`` migrations."""
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


def windows(T: int, chunk_steps: int):
    """The engine's windows ``(t0, t1)``: chunks of ``chunk_steps`` (a migration's landing is an event of the
    placement timeline: the VM's run on the source ends and one on the destination begins, within a window)."""
    t0 = 0
    while t0 < T:
        t1 = min(T, t0 + chunk_steps)
        yield t0, t1
        t0 = t1
