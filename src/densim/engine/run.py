"""The vectorised, time-stepped engine.

Arrays are (time x VM) per chunk of steps; the VM -> host assignment is an index array; host totals
are segment reductions (``np.add.reduceat`` over VMs sorted by host). There is no Python loop over
VMs or hosts inside a step: the only loops are over chunks of time and over the active stages.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from densim.engine.stages import load_plugins, ordered_entries
from densim.engine.state import build_context
from densim.models.cpu import CPU_CONTENTION, maxmin_share
from densim.models.power import host_power_w
from densim.placement import place
from densim.plant import Plant
from densim.workloads.sources import DemandSource

ELEMENTS_PER_CHUNK = 40_000_000  # (steps x VMs) float32 per array: 160 MB


@dataclass
class Chunk:
    """One window of steps ``[t0, t1)``; arrays are (steps, VMs) or (steps, hosts)."""

    t0: int
    t1: int
    step_s: float
    vm: dict[str, np.ndarray] = field(default_factory=dict)
    host: dict[str, np.ndarray] = field(default_factory=dict)
    host_capacity_mhz: np.ndarray | None = None  # (steps, hosts); stages may scale it
    vm_out: dict[str, np.ndarray] = field(default_factory=dict)
    host_out: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def n_steps(self) -> int:
        return self.t1 - self.t0


class Accumulator:
    """Time-weighted totals and optional time series of every metric."""

    def __init__(self, n_steps: int, n: int, keep_series: bool) -> None:
        self.n_steps = n_steps
        self.n = n
        self.keep = keep_series
        self.sum: dict[str, np.ndarray] = {}
        self.max: dict[str, np.ndarray] = {}
        self.series: dict[str, np.ndarray] = {}
        self._last_sums: dict[str, np.ndarray] = {}  # this chunk's column sums, for add_same

    def add_same(self, name: str, t0: int, like: str, arr: np.ndarray) -> None:
        """``name`` equals ``like`` in this chunk (same array): reuse the sum just taken."""
        s = self._last_sums[like]
        self.sum[name] = self.sum[name] + s if name in self.sum else s.copy()
        if self.keep:
            self.series.setdefault(name, np.zeros((self.n_steps, self.n), dtype=np.float32))[t0 : t0 + arr.shape[0]] = arr

    def add_zeros(self, name: str, t0: int, n_steps: int, want_max: bool = False) -> None:
        self.sum.setdefault(name, np.zeros(self.n))
        if want_max:
            self.max.setdefault(name, np.zeros(self.n))
        if self.keep:
            self.series.setdefault(name, np.zeros((self.n_steps, self.n), dtype=np.float32))

    def add(self, name: str, t0: int, arr: np.ndarray, want_max: bool = False) -> None:
        a = np.asarray(arr)
        s = a.sum(axis=0, dtype=np.float64)
        self._last_sums[name] = s
        if name in self.sum:
            self.sum[name] += s
        else:
            self.sum[name] = s
        if want_max:
            m = a.max(axis=0).astype(np.float64) if a.shape[0] else np.zeros(self.n)
            if name in self.max:
                np.maximum(self.max[name], m, out=self.max[name])
            else:
                self.max[name] = m
        if self.keep:
            if name not in self.series:
                self.series[name] = np.zeros((self.n_steps, self.n), dtype=np.float32)
            self.series[name][t0 : t0 + a.shape[0]] = a


def _host_segments(host_of_vm: np.ndarray):
    placed = np.flatnonzero(host_of_vm >= 0)
    perm = placed[np.argsort(host_of_vm[placed], kind="stable")]
    sorted_hosts = host_of_vm[perm]
    if perm.size == 0:
        return perm, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, sorted_hosts[1:] != sorted_hosts[:-1]])
    return perm, starts, sorted_hosts[starts]


def _segment_sum(arr: np.ndarray, perm, starts, hosts_with, n_hosts) -> np.ndarray:
    """Per-host sums of a (steps, VMs) array: one reduceat over VMs ordered by host."""
    out = np.zeros((arr.shape[0], n_hosts), dtype=np.float32)
    if perm.size:
        ordered = arr if (perm.size == arr.shape[1] and perm[0] == 0 and perm[-1] == perm.size - 1
                          and bool(np.all(np.diff(perm) == 1))) else arr[:, perm]
        out[:, hosts_with] = np.add.reduceat(ordered, starts, axis=1)
    return out


def simulate(plant: Plant, *, seed: int | None = None, progress: Callable[[int, int], None] | None = None,
             source: DemandSource | None = None):
    """Run ``plant`` (a scenario resolved by :func:`densim.plant.resolve`); returns a :class:`~densim.engine.result.Result`.

    ``seed`` overrides the scenario's; ``source`` replaces its VM groups with one demand source
    (see :func:`~densim.engine.state.build_context`).
    """
    from densim.engine.result import Result

    if not isinstance(plant, Plant):
        raise TypeError(f"simulate() takes a Plant (densim.plant.resolve(scenario)), not {type(plant).__name__}")
    wall0 = time.perf_counter()
    ctx = build_context(plant, seed, source)
    sc = ctx.scenario
    vms, hosts, grid = ctx.vms, ctx.hosts, ctx.grid
    timings: dict[str, float] = {"build_s": time.perf_counter() - wall0}

    # ---- placement -------------------------------------------------------------------------
    t = time.perf_counter()
    pl = sc.placement
    if ctx.schedule is None:  # placed once at the start; with lifetimes, build_context placed them online
        vms.host = place(pl.policy, vms.vcpus.astype(np.float64), vms.mem_bytes, hosts.cores * pl.cpu_overcommit,
                         hosts.mem_bytes * pl.memory_overcommit, rng=ctx.rng, **pl.params)
    timings["placement_s"] = time.perf_counter() - t

    V, H, T = vms.n, hosts.n, grid.n_steps
    perm, starts, hosts_with = _host_segments(vms.host)
    placed = vms.host >= 0
    host_idx = np.where(placed, vms.host, 0)
    vcpus_per_host = np.bincount(vms.host[placed], weights=vms.vcpus[placed], minlength=H).astype(np.float64)
    vms_per_host = np.bincount(vms.host[placed], minlength=H)
    mem_per_host = np.bincount(vms.host[placed], weights=vms.mem_bytes[placed], minlength=H)
    host_on = (vms_per_host > 0) | (sc.cluster.unused_hosts == "idle")
    live = None
    if ctx.schedule is not None:
        from densim.engine.lifetimes import Liveness

        live = Liveness(sc, ctx.schedule, hosts, vms.vcpus)
    # a VM cannot use more than its vCPUs at its host's core speed
    vm_cap_mhz = (vms.vcpus * hosts.core_mhz[host_idx]).astype(np.float32)
    all_placed = bool(placed.all())

    # ---- stages ----------------------------------------------------------------------------
    load_plugins()
    stages = []
    ctx.stages = {}
    for entry in ordered_entries():  # dependency order (stages.py), not name order
        st = entry.obj(ctx)
        if st is not None:
            stages.append(st)
            ctx.stages[st.name] = st
    for st in stages:  # prepare once every active stage is known (a stage may look another up)
        st.prepare(ctx)

    contention = CPU_CONTENTION.get(sc.simulation.cpu_model)
    burst = sc.simulation.burstiness
    keep_vm = sc.output.vm_timeseries == "on" or (sc.output.vm_timeseries == "auto" and V * T <= 5_000_000)
    keep_host = sc.output.host_timeseries == "on"
    vm_acc = Accumulator(T, V, keep_vm)
    host_acc = Accumulator(T, H, keep_host)
    chunk_steps = sc.simulation.chunk_steps or max(1, min(T, ELEMENTS_PER_CHUNK // max(V, 1)))
    channels = tuple(ctx.source.channels)
    t_engine = time.perf_counter()
    step_s = grid.step_s
    ready_per_vm_cap = np.maximum(vms.vcpus.astype(np.float32), 1) * np.float32(step_s)

    for t0 in range(0, T, chunk_steps):
        t1 = min(T, t0 + chunk_steps)
        n = t1 - t0
        win = ctx.source.window(grid, t0, t1, channels)
        chunk = Chunk(t0=t0, t1=t1, step_s=step_s)
        demand = win.pop("cpu_mhz")
        chunk.vm["cpu_demand_mhz"] = demand
        chunk.vm.update(win)
        chunk.host_capacity_mhz = np.broadcast_to(hosts.capacity_mhz.astype(np.float32), (n, H)).copy()
        for st in stages:
            st.before_cpu(ctx, chunk)
        demand = chunk.vm["cpu_demand_mhz"]
        cap_h = chunk.host_capacity_mhz

        # claims: demand limited by the VM's own vCPUs; unplaced VMs claim nothing
        if all_placed and bool(np.less_equal(demand, vm_cap_mhz[None, :]).all()):
            claim = demand
        else:
            claim = np.minimum(demand, vm_cap_mhz[None, :])
            if not all_placed:
                claim[:, ~placed] = 0.0
        host_claim = _segment_sum(claim, perm, starts, hosts_with, H)

        # max-min fair share on overloaded host-steps only
        over_t, over_h = np.nonzero(host_claim > cap_h * (1 + 1e-6))
        if over_t.size:
            delivered = claim.copy()
            _share_overloaded(delivered, claim, over_t, over_h, cap_h, perm, starts, hosts_with, H)
            host_delivered = _segment_sum(delivered, perm, starts, hosts_with, H)
        else:
            delivered, host_delivered = claim, host_claim

        # CPU Ready from runnable vCPUs against logical capacity
        core_mhz = hosts.core_mhz[None, :]
        mu = host_claim / core_mhz
        cap_cores = cap_h / core_mhz
        if live is not None:  # vCPUs alive per host and step
            alive = live.alive(grid.edges_s(t0, t1))
            vc_h = _segment_sum(alive * live.vcpus[None, :], perm, starts, hosts_with, H)
            ready_cores = contention(mu, vc_h, cap_cores, burstiness=burst)
        else:
            ready_cores = contention(mu, vcpus_per_host[None, :], cap_cores, burstiness=burst)
        host_ready_s = (ready_cores * step_s).astype(np.float32)
        if host_ready_s.any():
            # each VM's share of its host's ready time is its share of the host's claim
            ratio = np.divide(host_ready_s, host_claim, out=np.zeros_like(host_ready_s), where=host_claim > 0)
            vm_ready_s = claim * ratio[:, host_idx]
            if not all_placed:
                vm_ready_s[:, ~placed] = 0.0
        else:
            vm_ready_s = np.broadcast_to(np.float32(0.0), claim.shape)

        util = np.divide(host_delivered, cap_h, out=np.zeros_like(host_delivered), where=cap_h > 0)
        np.clip(util, 0.0, 1.0, out=util)
        power = host_power_w(util, hosts.power_kind, hosts.power_idle_w, hosts.power_peak_w, hosts.power_table_w, hosts.power_exponent)
        power[:, ~host_on] = 0.0
        if live is not None and live.policy == "off":
            on, boot_w = live.power_mask(_segment_sum((alive > 0).astype(np.float32), perm, starts, hosts_with, H),
                                         grid.edges_s(t0, t1), step_s)
            power = np.where(on, power, 0.0) + boot_w

        chunk.vm.update(cpu_claim_mhz=claim, cpu_delivered_mhz=delivered, cpu_ready_s=vm_ready_s)
        chunk.host.update(cpu_demand_mhz=host_claim, cpu_delivered_mhz=host_delivered, utilisation=util,
                          cpu_ready_s=host_ready_s, power_w=power.astype(np.float32))
        for st in stages:
            st.after_cpu(ctx, chunk)

        vm_acc.add("cpu_demand_mhz", t0, demand)
        if delivered is demand:
            vm_acc.add_same("cpu_delivered_mhz", t0, "cpu_demand_mhz", demand)
        else:
            vm_acc.add("cpu_delivered_mhz", t0, delivered)
        if vm_acc.keep:
            vm_acc.add("cpu_unserved_mhz", t0, demand - delivered)
        if vm_ready_s.strides == (0, 0):  # nobody waited in this chunk
            vm_acc.add_zeros("cpu_ready_pct", t0, n, want_max=True)
        else:
            vm_acc.add("cpu_ready_pct", t0, vm_ready_s * (np.float32(100.0) / ready_per_vm_cap)[None, :], want_max=True)
        host_acc.add("cpu_demand_mhz", t0, host_claim)
        host_acc.add("cpu_delivered_mhz", t0, host_delivered)
        host_acc.add("utilisation", t0, util, want_max=True)
        ctx.saturation.add("host CPU", hosts.names, util)  # per host, per step
        nv = (np.maximum(vc_h, 1) if live is not None else np.maximum(vcpus_per_host, 1)[None, :]) * step_s
        host_acc.add("cpu_ready_pct", t0, host_ready_s / nv * 100.0, want_max=True)
        host_acc.add("power_w", t0, power)
        for name, arr in chunk.vm_out.items():
            vm_acc.add(name, t0, arr, want_max=ctx.metrics.get(name) is not None and ctx.metrics[name].agg == "max")
        for name, arr in chunk.host_out.items():
            host_acc.add(name, t0, arr, want_max=ctx.metrics.get(name) is not None and ctx.metrics[name].agg == "max")
        if progress is not None:
            progress(t1, T)

    timings["engine_s"] = time.perf_counter() - t_engine
    if live is not None and live.policy == "off":
        host_on = live.ever_on
    res = Result(ctx=ctx, vm_acc=vm_acc, host_acc=host_acc, stages=stages, host_on=host_on,
                 vcpus_per_host=vcpus_per_host, vms_per_host=vms_per_host, mem_per_host=mem_per_host,
                 timings=timings, liveness=live)
    timings["total_s"] = time.perf_counter() - wall0
    return res


def _share_overloaded(delivered, claim, over_t, over_h, cap_h, perm, starts, hosts_with, n_hosts) -> None:
    """Water-fill the claims of the VMs of each overloaded (step, host) cell, in one batch."""
    seg_of_host = np.full(n_hosts, -1, dtype=np.int64)
    seg_of_host[hosts_with] = np.arange(hosts_with.size)
    ends = np.r_[starts[1:], perm.size]
    seg = seg_of_host[over_h]
    counts = (ends - starts)[seg]
    k = int(counts.max())
    cols = starts[seg][:, None] + np.arange(k)[None, :]
    valid = np.arange(k)[None, :] < counts[:, None]
    vm_idx = perm[np.minimum(cols, perm.size - 1)]
    c = np.where(valid, claim[over_t[:, None], vm_idx], 0.0)
    alloc = maxmin_share(c, cap_h[over_t, over_h])
    rows = np.broadcast_to(over_t[:, None], vm_idx.shape)
    delivered[rows[valid], vm_idx[valid]] = alloc[valid]
