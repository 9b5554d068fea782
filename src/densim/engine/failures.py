"""Host and domain failures inside the engine: the failover schedule, VM instances, the summary section.

:func:`plan_failures` runs when the scenario has a ``failures:`` section. It fixes the time grid (the
run's without failures), gathers the failure events (:mod:`densim.workloads.failures`), and places
every VM through them with :func:`densim.placement.failover.failover`: VMs present from the start are
placed once by the scenario's policy (admission control permitting) and restarted by its online
form; VMs with lifetimes arrive through the online scheduler. A VM that runs on several hosts in
turn (it was restarted) becomes several *instances*, one row each in the engine's VM table (the
first keeps the VM's name, the k-th restart is named ``<vm>~<k+1>``), each replaying the VM's demand
while it is up: a restarted VM resumes its trace at the wall-clock time, the demand of its down time
is lost, not deferred. Restarts are new arrivals to the engine: nothing here moves a running VM.

The engine then runs as with lifetimes (:mod:`densim.engine.lifetimes`): a host draws no power while
down (the steps it is down for at least half of), and the survivors carry the restarted VMs, so CPU
Ready during the failure comes out of the same CPU model as every other step.

``summary["failures"]`` (:class:`FailuresSummary`) reports VM-minutes down, restart delays, whether
the reservation held (every VM of every failure restarted without waiting for capacity), and QoS
during the failures; ``failures.parquet`` has one row per failure event and ``outages.parquet`` one
per VM a failure stopped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from densim.errors import InputError
from densim.placement.online import ONLINE_POLICIES, Schedule
from densim.spec.failures import PRIORITIES
from densim.workloads.sources import DemandSource
from densim.workloads.tasks import alive_fraction, scheduled_source, scheduled_window
from densim.workloads.timegrid import TimeGrid

HELD_SLACK_S = 1e-6


class FailuresSummary(TypedDict):
    """``summary["failures"]``."""

    events: int
    hosts_failed: int
    host_down_h: float
    admission: str
    reserve_vcpus: float
    reserve_memory_bytes: float
    power_ons_refused: int
    vms_interrupted: int
    restarts: int
    not_restarted_by_end: int
    waited_for_capacity: int
    vm_minutes_down: float
    restart_delay_s_mean: float
    restart_delay_s_max: float
    reservation_held: bool
    vm_availability: float
    cpu_ready_pct_during_failures: float | None
    cpu_ready_pct_worst_host_during_failures: float | None
    cpu_ready_pct_outside_failures: float | None
    mem_slowdown_during_failures: float | None
    io_latency_s_during_failures: float | None


class InstanceSource(DemandSource):
    """VM instances: instance ``i`` replays VM ``vm_of[i]`` of ``inner`` while it is up, ``[start, end)``."""

    def __init__(self, inner: DemandSource, vm_of: np.ndarray, start_s: np.ndarray, end_s: np.ndarray, names: np.ndarray,
                 orig: DemandSource | None = None) -> None:
        self.inner = inner
        self.vm_of = vm_of.astype(np.int64)
        s = inner.sizes.take(self.vm_of)
        s.names = names
        self.sizes = s
        self.channels = inner.channels
        self.start_s = start_s
        self.end_s = end_s
        self.orig = orig  # the VMs' own source when they have no lifetimes (active_factors)

    def active_factors(self, grid: TimeGrid, t0: int, t1: int, ids: np.ndarray):
        """The CPU demand of the instances ``ids`` in factored form ``(base, col, scale)`` (as
        :meth:`DemandSource.window_factors`), or None: when the VMs have no lifetimes and the source has
        factors, an instance up the whole chunk reads its VM's column of ``base``; one up for part of it
        (a failure or a restart inside the chunk) gets its own column, its VM's masked by the share of each
        step it is up. No (steps x VMs) array is made."""
        if self.orig is None:
            return None
        f = self.orig.window_factors(grid, t0, t1)
        if f is None:
            return None
        base, col, scale = f
        edges = grid.edges_s(t0, t1)
        vm = self.vm_of[ids]
        c = col[vm].astype(np.int64)
        st, en = self.start_s[ids], self.end_s[ids]
        part = np.flatnonzero(~((st <= edges[0]) & (en >= edges[-1])))
        if part.size:
            a = alive_fraction(st[part], en[part], edges)
            extra = (base[:, c[part]] * a).astype(base.dtype, copy=False)
            c[part] = base.shape[1] + np.arange(part.size)
            base = np.ascontiguousarray(np.concatenate([base, extra], axis=1))
        return base, c, np.ascontiguousarray(scale[vm])

    def span_s(self):
        return self.inner.span_s()

    def native_step_s(self):
        return self.inner.native_step_s()

    def window(self, grid: TimeGrid, t0: int, t1: int, channels, vms: np.ndarray | None = None):
        edges = grid.edges_s(t0, t1)
        ids = np.arange(self.n_vms) if vms is None else np.asarray(vms, dtype=np.int64)
        u, inv = np.unique(self.vm_of[ids], return_inverse=True)
        if tuple(channels) == ("cpu_mhz",):
            base = {"cpu_mhz": scheduled_window(self.inner, grid, t0, t1, u)}
        else:
            full = self.inner.window(grid, t0, t1, channels)
            base = {k: v[:, u] for k, v in full.items()}
        alive = alive_fraction(self.start_s[ids], self.end_s[ids], edges)
        return {k: (v[:, inv] * alive).astype(np.float32, copy=False) for k, v in base.items()}


@dataclass
class FailureRun:
    """What :func:`plan_failures` decided, kept on the engine context for the summary and the files."""

    name = "failures"
    summary_sections = {"failures": FailuresSummary}

    events: Any  # densim.workloads.failures.FailureEvents (times from the run's start)
    down_host: np.ndarray
    down_start_s: np.ndarray  # absolute (trace clock)
    down_end_s: np.ndarray
    down_event: np.ndarray
    fo: Any  # densim.placement.failover.Failover
    vm_names: np.ndarray
    vm_of: np.ndarray  # per engine row (instance)
    admission: str
    reserve: tuple[float, float]
    detection_s: float
    boot_s: float
    t0: float
    until: float
    boot_from_s: np.ndarray | None = None  # per engine row: placed (a restart boots from here to start_s)
    with_lifetimes: bool = False  # the VMs arrive and leave (else they run all along and only failures stop them)
    up_s: np.ndarray | None = None  # per engine row: up (start_s of the instance)
    boot_read_Bps: float = 0.0  # read by a booting instance on its datastore (storage stage)

    # ---- per outage ------------------------------------------------------------------------------
    def down_s(self) -> np.ndarray:
        fo = self.fo
        stop = np.fmin(np.where(np.isnan(fo.out_up_s), np.inf, fo.out_up_s), fo.end_s[fo.out_vm])
        stop = np.minimum(np.where(np.isnan(stop), np.inf, stop), self.until)
        return np.maximum(stop - fo.out_fail_s, 0.0)

    def waited(self) -> np.ndarray:
        """Outages whose restart waited for capacity (placed later than the detection delay, or never)."""
        fo = self.fo
        gone = fo.end_s[fo.out_vm] <= fo.out_fail_s + self.detection_s  # left before a restart was due
        late = np.where(np.isnan(fo.out_placed_s), True, fo.out_placed_s > fo.out_fail_s + self.detection_s + HELD_SLACK_S)
        due = fo.out_fail_s + self.detection_s <= self.until
        return late & ~gone & due

    def in_failure(self, edges: np.ndarray) -> np.ndarray:
        """(steps,) bool: a step overlaps some host's down interval."""
        lo, hi = edges[:-1], edges[1:]
        if self.down_start_s.size == 0:
            return np.zeros(lo.size, dtype=bool)
        s = np.sort(self.down_start_s)
        e = np.sort(self.down_end_s)
        # intervals started before hi minus intervals ended at or before lo
        return (np.searchsorted(s, hi, side="left") - np.searchsorted(e, lo, side="right")) > 0

    def host_down_share(self, edges: np.ndarray, n_hosts: int) -> np.ndarray:
        """(steps, hosts): the share of each step each host is down."""
        out = np.zeros((edges.size - 1, n_hosts))
        if self.down_host.size:
            a = alive_fraction(self.down_start_s, self.down_end_s, edges).astype(np.float64)
            np.add.at(out.T, self.down_host, a.T)
        return np.minimum(out, 1.0)

    # ---- summary and files ------------------------------------------------------------------------
    def summary(self, res) -> dict[str, Any]:
        fo, ctx = self.fo, res.ctx
        down = self.down_s()
        restarted = ~np.isnan(fo.out_placed_s)
        delay = fo.out_up_s[restarted] - fo.out_fail_s[restarted]
        waited = self.waited()
        lived = np.where(np.isnan(fo.first_start_s), 0.0,
                         np.minimum(np.where(np.isnan(fo.end_s), self.until, fo.end_s), self.until) - fo.first_start_s)
        total_life = float(np.maximum(lived, 0.0).sum())
        edges = ctx.grid.edges_s()
        during = self.in_failure(edges)
        h = res.host_acc.series
        ready = worst = outside = None
        if "cpu_ready_pct" in h and "cpu_demand_mhz" in h:
            r, busy = h["cpu_ready_pct"], h["cpu_demand_mhz"] > 0
            if during.any() and busy[during].any():
                ready = float(r[during][busy[during]].mean())
                worst = float(r[during].max())
            if (~during).any() and busy[~during].any():
                outside = float(r[~during][busy[~during]].mean())
        v = res.vm_acc.series

        def vm_during(name: str) -> float | None:
            if name not in v or not during.any():
                return None
            alive = res.liveness.alive(edges)[during] > 0 if res.liveness is not None else None
            x = v[name][during]
            sel = x[alive] if alive is not None else x.ravel()
            return float(sel.mean()) if sel.size else None

        return {
            "events": int(self.events.n),
            "hosts_failed": int(np.unique(self.down_host).size),
            "host_down_h": float(np.sum(np.minimum(self.down_end_s, self.until) - np.minimum(self.down_start_s, self.until))) / 3600.0,
            "admission": self.admission,
            "reserve_vcpus": float(self.reserve[0]),
            "reserve_memory_bytes": float(self.reserve[1]),
            "power_ons_refused": int(np.count_nonzero(fo.refused)),
            "vms_interrupted": int(fo.out_vm.size),
            "restarts": int(np.count_nonzero(restarted)),
            "not_restarted_by_end": int(np.count_nonzero(~restarted & (fo.end_s[fo.out_vm] > fo.out_fail_s + self.detection_s))),
            "waited_for_capacity": int(np.count_nonzero(waited)),
            "vm_minutes_down": float(down.sum() / 60.0),
            "restart_delay_s_mean": float(delay.mean()) if delay.size else 0.0,
            "restart_delay_s_max": float(delay.max()) if delay.size else 0.0,
            "reservation_held": bool(not waited.any()),
            "vm_availability": 1.0 - float(down.sum()) / total_life if total_life > 0 else 1.0,
            "cpu_ready_pct_during_failures": ready,
            "cpu_ready_pct_worst_host_during_failures": worst,
            "cpu_ready_pct_outside_failures": outside,
            "mem_slowdown_during_failures": vm_during("mem_slowdown"),
            "io_latency_s_during_failures": vm_during("io_latency_s"),
        }

    def tables(self, host_names: np.ndarray) -> dict[str, Any]:
        """``failures`` (one row per event) and ``outages`` (one row per VM a failure stopped)."""
        import polars as pl

        ev, fo = self.events, self.fo
        down = self.down_s()
        waited = self.waited()
        out_event = self.down_event[fo.out_interval] if fo.out_vm.size else np.zeros(0, dtype=np.int64)
        n = ev.n
        delay = np.where(np.isnan(fo.out_up_s), np.nan, fo.out_up_s - fo.out_fail_s)
        cnt = np.bincount(out_event, minlength=n)
        max_delay = np.full(n, np.nan)
        if out_event.size:
            ok = ~np.isnan(delay)
            np.fmax.at(max_delay, out_event[ok], delay[ok])
        events = pl.DataFrame({
            "time_s": ev.time_s + self.t0,
            "target": np.array(ev.targets, dtype=object)[ev.target].astype(str),
            "duration_s": ev.duration_s,
            "origin": ev.origin.astype(str),
            "hosts": np.array([ev.members[t].size for t in ev.target], dtype=np.int64),
            "vms_interrupted": cnt,
            "vm_minutes_down": np.bincount(out_event, weights=down, minlength=n) / 60.0,
            "restart_delay_s_max": max_delay,
            "waited_for_capacity": np.bincount(out_event, weights=waited.astype(float), minlength=n).astype(np.int64),
        })
        outages = pl.DataFrame({
            "vm": self.vm_names[fo.out_vm].astype(str),
            "failed_host": host_names[self.down_host[fo.out_interval]].astype(str) if fo.out_vm.size else np.zeros(0, dtype=str),
            "event": out_event,
            "failed_s": fo.out_fail_s,
            "restarted_s": fo.out_placed_s,
            "up_s": fo.out_up_s,
            "restart_host": np.where(fo.out_host >= 0, host_names[np.maximum(fo.out_host, 0)], "").astype(str)
            if fo.out_vm.size else np.zeros(0, dtype=str),
            "down_s": down,
            "waited_for_capacity": waited,
        })
        return {"failures": events, "outages": outages}


FAILURE_COLUMNS = {
    "time_s": "when the target failed (s, trace clock)",
    "target": "host or failure domain",
    "duration_s": "time to repair (s)",
    "origin": "events[N] (scenario), row N (trace file) or random",
    "hosts": "hosts the failure took down",
    "vms_interrupted": "VMs running on them",
    "vm_minutes_down": "VM-minutes down: failure to up again (or the VM's end, or the run's)",
    "restart_delay_s_max": "slowest restart: failure to up again (s)",
    "waited_for_capacity": "VMs whose restart waited for capacity (beyond the detection delay)",
}
OUTAGE_COLUMNS = {
    "vm": "the VM", "failed_host": "host it was on", "event": "row of failures.parquet", "failed_s": "failure time (s)",
    "restarted_s": "placed again (NaN: not by the end)", "up_s": "up again: placed + boot delay", "restart_host": "host it restarted on",
    "down_s": "time down (s)", "waited_for_capacity": "its restart waited for capacity",
}


def _restart_policy(sc) -> str:
    ha = sc.failures.ha
    pol = ha.restart_policy or sc.placement.policy.removesuffix("-decreasing")
    if pol not in ONLINE_POLICIES:
        field = "failures.ha.restart_policy" if ha.restart_policy else "placement.policy"
        raise InputError(sc.name, field, f"{pol!r} cannot restart VMs one at a time; set failures.ha.restart_policy to one of: "
                                         f"{', '.join(ONLINE_POLICIES)}")
    return pol


def wants_timeline(sc) -> bool:
    """The run's VMs are placed by the one event loop with instances as engine rows: host failures,
    maintenance evacuations by live migration, or the DRS-style balancer's moves."""
    m = sc.migration
    return sc.failures is not None or (m.model != "none" and (bool(m.maintenance) or m.balance is not None))


def _maintenance(sc, source, hosts, grid, n: int):
    """The scenario's maintenance events for the event loop (:class:`densim.placement.failover.Maintenance`); with
    no event but the balancer on, none, carrying the scenario's migration parameters (the balancer's moves and its
    cost-benefit test read them)."""
    from densim.placement.failover import Maintenance

    m = sc.migration
    if m.model == "none" or (not m.maintenance and m.balance is None):
        return None
    if not m.maintenance:
        return Maintenance(host=np.zeros(0, dtype=np.int64), at_s=np.zeros(0), demand_mhz=np.zeros((1, n)),
                           **_migration_params(m))
    names = {str(h): i for i, h in enumerate(hosts.names)}
    for i, e in enumerate(m.maintenance):
        if e.host not in names:
            shown = ", ".join(list(names)[:5]) + (", ..." if len(names) > 5 else "")
            raise InputError(sc.name, f"migration.maintenance[{i}].host", f"no host named {e.host!r}; hosts: {shown}")
    at = np.array([e.at_s for e in m.maintenance], dtype=np.float64)
    order = np.argsort(at, kind="stable")
    host = np.array([names[m.maintenance[i].host] for i in order], dtype=np.int64)
    at = at[order]
    # each VM's CPU demand over the 5 minutes (at least one step) before each evacuation: its dirty rate
    per = max(1, int(round(300.0 / grid.step_s)))
    demand = np.zeros((max(at.size, 1), n))
    for k, a in enumerate(at):
        s1 = min(max(1, int(math.ceil(a / grid.step_s - 1e-9))), grid.n_steps)
        s0 = max(0, s1 - per)
        demand[k] = source.window(grid, s0, s1, ("cpu_mhz",))["cpu_mhz"].mean(axis=0, dtype=np.float64)
    return Maintenance(host=host, at_s=at + grid.start_s, demand_mhz=np.ascontiguousarray(demand),
                       **_migration_params(m))


def _migration_params(m) -> dict:
    """The event loop's pre-copy parameters (:meth:`densim.placement.failover.Maintenance.params`) from ``migration``."""
    return dict(link_bps=m.bandwidth_bps * (1.0 - m.storage_share), dirty_rate_bps=m.dirty_rate_bps,
                wws_fraction=m.wws_fraction, downtime_target_s=m.downtime_target_s, resume_s=m.resume_s,
                max_rounds=m.max_rounds, max_concurrent=m.max_concurrent, zero_fraction=m.zero_fraction,
                zero_scan_bps=m.zero_scan_bps)


def _balance_checks(sc, source, hosts, grid, n: int):
    """The balancer's checks for the event loop (:class:`densim.placement.failover.Balance`): every ``interval`` from
    the start (not at it), each with every VM's mean CPU demand over the interval before it (its trace)."""
    from densim.placement.failover import Balance

    m = sc.migration
    b = m.balance
    if m.model == "none" or b is None:
        return None
    every = max(1, int(round(b.interval_s / grid.step_s)))
    steps = np.arange(every, grid.n_steps, every, dtype=np.int64)
    demand = np.zeros((max(steps.size, 1), n))
    for k, s1 in enumerate(steps):
        demand[k] = source.window(grid, int(s1 - every), int(s1), ("cpu_mhz",))["cpu_mhz"].mean(axis=0, dtype=np.float64)
    return Balance(at_s=grid.start_s + steps * grid.step_s, demand_mhz=demand,
                   cap_mhz=hosts.capacity_mhz.astype(np.float64), threshold=b.threshold, budget=b.budget_per_interval,
                   min_gain=b.min_gain, horizon_s=b.benefit_horizon_s or b.interval_s,
                   cores_busy=max(m.cpu_cores_min, m.cpu_cores_per_gbps * m.bandwidth_bps * 8 / 1e9), slowdown=m.slowdown,
                   idle_on=sc.cluster.unused_hosts == "idle")


def plan_failures(sc, source, hosts, seed: int, group: np.ndarray, build_grid, datastores=(), gpu=None):
    """(instance source, grid, instance schedule, instance -> VM, :class:`FailureRun` or None, the event
    loop's :class:`~densim.placement.failover.Failover`, the GPUs of the instances or None) for a scenario with
    ``failures:`` or maintenance evacuations (:func:`wants_timeline`); ``build_grid(sc, source)`` is the grid of
    a run without lifetimes (:func:`densim.engine.state.build_grid`); ``datastores`` (the plant's, storage model
    on) adds their drives and controllers as failure targets; ``gpu``: the VMs' GPU requests
    (:class:`densim.placement.gpu.GpuProblem`), placed by the same loop (a VM's restart or landing takes a GPU
    on its new host, its old one is given back)."""
    from densim.engine.lifetimes import plan_schedule, wants_lifetimes
    from densim.placement import place
    from densim.placement.failover import failover, reserve
    from densim.rng import make_rng
    from densim.workloads.failures import StorageParts, failure_events, host_down_intervals, targets_of

    fs = sc.failures
    pl = sc.placement
    from densim.placement.capacity import host_capacity

    cap = host_capacity(hosts, pl)  # (hosts, 2): vCPUs and configured memory under the over-commit
    cpu_cap, mem_cap = cap[:, 0].copy(), cap[:, 1].copy()
    sizes = source.sizes
    n = sizes.n
    lt = wants_lifetimes(sc, source)
    if lt is not None:
        plain = plan_schedule(sc, source, hosts, lt, gpu=gpu)  # the grid of the run without failures
        grid = plain.grid
        t0 = grid.start_s
        arrival = np.maximum(np.where(np.isfinite(lt[0]), lt[0], t0), t0)
        run = lt[1]
        initial = None
        policy = pl.policy
    else:
        grid = build_grid(sc, source)
        t0 = grid.start_s
        arrival = np.full(n, t0)
        run = np.full(n, np.inf)
        from densim.placement.given import kernel_params

        initial = place(pl.policy, sizes.vcpus.astype(np.float64), sizes.mem_bytes, cpu_cap, mem_cap, rng=make_rng(seed),
                        gpu=gpu, **pl.params, **kernel_params(sc, sizes.names, hosts.names))
        # restarts follow the HA policy; without failures nothing is placed after the start (maintenance
        # picks its destinations by worst-fit), so the online policy is never used
        policy = _restart_policy(sc) if fs is not None else "first-fit"
    until = t0 + grid.horizon_s
    if not math.isfinite(until):
        raise InputError(sc.name, "simulation.horizon", "a run with failures or maintenance needs a finite horizon")
    maint = _maintenance(sc, source, hosts, grid, n)
    balance = _balance_checks(sc, source, hosts, grid, n)
    res_c = res_m = share = 0.0
    admission = False
    prio = np.zeros(n, dtype=np.int64)
    z = np.zeros(0, dtype=np.int64)
    d_host, d_start, d_end, d_event, ev = z, np.zeros(0), np.zeros(0), z, None
    if fs is not None:
        ha = fs.ha
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 16]))
        hci = sc.storage.hci if sc.storage.model != "none" else None  # its disks fail too (engine/hci.py rebuilds them)
        parts = StorageParts.of(datastores, [str(h) for h in hosts.names], hci) if datastores or hci is not None else None
        ev = failure_events(fs, sc.name, sc.base_dir, hosts.names, hosts.server_names, hosts.group, grid.horizon_s, rng, parts)
        d_host, d_start, d_end, d_event = host_down_intervals(ev)
        d_start, d_end = d_start + t0, d_end + t0
        # admission control: the reserve kept free for failover
        if ha.admission == "n_plus_k":
            res_c, res_m = reserve(cpu_cap, mem_cap, ha.host_failures)
        elif ha.admission == "percent":
            share = ha.percent / 100.0
        if ha.per_domain is not None:
            names, members, kinds = targets_of(fs, hosts.names, hosts.server_names, hosts.group, sc.name)
            doms = [m for m, k in zip(members[hosts.n:], kinds[hosts.n:]) if k == ha.per_domain]
            if not doms:
                raise InputError(sc.name, "failures.ha.per_domain", f"no failure domain of kind {ha.per_domain!r}")
            dc, dm = reserve(cpu_cap, mem_cap, 0, doms)
            res_c, res_m = max(res_c, dc), max(res_m, dm)
        admission = ha.admission != "off" or ha.per_domain is not None
        unknown = sorted(set(ha.restart_priority) - {g.name for g in sc.vms})
        if unknown:
            raise InputError(sc.name, f"failures.ha.restart_priority.{unknown[0]}", "no VM group of that name")
        prio_of_group = np.array([PRIORITIES[ha.restart_priority.get(g.name, "medium")] for g in sc.vms], dtype=np.int64)
        prio = prio_of_group[group] if prio_of_group.size else prio
    fo = failover(arrival, run, sizes.vcpus, sizes.mem_bytes, cpu_cap, mem_cap, down_host=d_host, down_start_s=d_start,
                  down_end_s=d_end, priority=prio, initial=initial, policy=policy, discipline=sc.scheduling.queue,
                  until=until, detection_s=fs.ha.detection_s if fs else 0.0, boot_s=fs.ha.boot_delay_s if fs else 0.0,
                  admission=admission, reserve_cpu=res_c, reserve_mem=res_m, reserve_share=share, maintenance=maint,
                  core_mhz=hosts.core_mhz, gpu=gpu, balance=balance)
    # engine rows: every instance, then one row for each VM that never started
    never = np.flatnonzero(np.isnan(fo.first_start_s))
    vm_of = np.r_[fo.inst_vm, never].astype(np.int64)
    host = np.r_[fo.inst_host, np.full(never.size, -1)].astype(np.int64)
    start = np.r_[fo.inst_start_s, np.full(never.size, np.nan)]
    end = np.r_[fo.inst_end_s, np.full(never.size, np.nan)]
    placed_at = np.r_[fo.inst_placed_s, np.full(never.size, np.nan)]
    # the k-th run of a VM (by placement time) is named <vm>~<k>; the first keeps the VM's name
    order = np.lexsort((placed_at, vm_of))
    first_of = np.r_[True, vm_of[order][1:] != vm_of[order][:-1]]
    grp_start = np.maximum.accumulate(np.where(first_of, np.arange(order.size), 0))
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size) - grp_start
    base_names = sizes.names[vm_of].astype(str)
    names = np.where(rank == 0, base_names, np.char.add(np.char.add(base_names, "~"), (rank + 1).astype(str))).astype(object)
    lt_arr = lt[0] if lt is not None else np.full(n, -np.inf)
    arr_i = np.where(rank == 0, lt_arr[vm_of], placed_at)
    status = np.where(host >= 0, np.where(end <= until, 0, 1), fo.status[vm_of]).astype(np.int8)
    sch = Schedule(host=host, start_s=start, end_s=end, arrival_s=arr_i, status=status, until=float(until))
    inner = scheduled_source(source, fo.first_start_s, fo.end_s)
    # boot reads go to the storage stage's datastore queues (every VM, trace- or profile-driven), not to a channel
    src = InstanceSource(inner, vm_of, start, end, names, orig=source if lt is None else None)
    run_ = None
    if fs is not None:
        ha = fs.ha
        if ha.boot_read_Bps > 0 and sc.storage.model == "none":
            raise InputError(sc.name, "failures.ha.boot_read", "boot reads land on datastores: set storage: {model: queueing}")
        run_ = FailureRun(events=ev, down_host=d_host, down_start_s=d_start, down_end_s=d_end, down_event=d_event, fo=fo,
                          vm_names=sizes.names, vm_of=vm_of,
                          admission=ha.admission if ha.admission != "off" else ("per_domain" if admission else "off"),
                          reserve=(max(res_c, share * float(cpu_cap.sum())), max(res_m, share * float(mem_cap.sum()))),
                          detection_s=float(ha.detection_s), boot_s=float(ha.boot_delay_s), t0=float(t0), until=float(until),
                          boot_from_s=placed_at, up_s=start, boot_read_Bps=float(ha.boot_read_Bps), with_lifetimes=lt is not None)
    rows_gpu = None
    if gpu is not None:  # each row's GPUs: those its instance held (none for a VM that never started)
        rows_gpu = gpu.for_rows(vm_of, np.r_[fo.inst_gpus, np.zeros(never.size, np.int64)],
                                np.r_[fo.inst_mig, np.full(never.size, -1, np.int64)])
    return src, grid, sch, vm_of, run_, fo, rows_gpu
