"""The time-stepped engine.

Time is taken in chunks of steps; the VM -> host assignment is an index array, VMs ordered by host
form one segment per host. The CPU step of a chunk (claims, host totals, fair shares on overloaded
hosts, CPU Ready, utilisation, power, and the sums the results keep) is one fused numba kernel
(:mod:`densim.engine.cpu_kernel`), parallel over hosts, that reads each VM's demand once. Per-VM
(steps x VMs) arrays exist only when a stage or the VM time series needs them; a source that can
give its demand in factored form (a trace replayed by many VMs) is never expanded to (steps x VMs).
The only Python loops are over chunks of time and over the active stages.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from densim.engine.preload import preload
from densim.engine.stages import load_plugins, ordered_entries, stable_order, step_sums
from densim.engine.state import build_context
from densim.engine.window import WindowState, host_loads  # host_loads: re-exported (densim.engine.run.host_loads)
from densim.models.cpu import CPU_CONTENTION
from densim.placement import place
from densim.placement.capacity import host_capacity
from densim.plant import Plant
from densim.workloads.sources import DemandSource

ELEMENTS_PER_CHUNK = 40_000_000  # (steps x VMs) float32 per array: 160 MB


@dataclass
class Chunk:
    """One window of steps ``[t0, t1)`` of a run, handed to every stage hook; arrays are (steps, VMs) or (steps, hosts).

    ``steps`` is :attr:`n_steps` = ``t1 - t0``, VMs are the rows of ``ctx.vms``: all of them, or only
    ``vm_ids`` (the rows alive at some time in the chunk, in host order) when every stage accepts such a
    chunk (``accepts_active_rows``, see :mod:`densim.engine.stages`); hosts are the rows of ``ctx.hosts``. Times are step indices on ``ctx.grid``; ``step_s`` is its step (s).

    Who writes and reads what, in the order of one chunk (:func:`run_placed`):

    * the engine puts the VMs' demand in ``vm`` (``"cpu_demand_mhz"``, (steps, VMs) MHz, plus the
      source's other channels by name), or only ``demand_factors`` when every stage takes the demand
      factored (:meth:`demand` expands it on first use); and the hosts' capacity in
      ``host_capacity_mhz`` ((steps, hosts) MHz, a read-only broadcast of one row);
    * ``before_cpu`` may change ``vm["cpu_demand_mhz"]`` (overheads), assign a new
      ``host_capacity_mhz``, or :meth:`add_host_power`;
    * the CPU kernel runs; the engine puts its per-VM results in ``vm`` (``cpu_claim_mhz``,
      ``cpu_delivered_mhz``, ``cpu_ready_s``) only for a stage with ``reads_cpu_results``, its
      per-host results in ``host`` (``cpu_demand_mhz``, ``cpu_delivered_mhz``, ``utilisation``,
      ``cpu_ready_s``, ``power_w``) only for a stage with ``reads_cpu_results`` or ``reads_host_results``;
    * ``after_cpu`` writes its declared metrics to ``vm_out`` / ``host_out`` (or ``vm_reduced``);
      the engine then adds them to the run's :class:`Accumulator` s and drops the chunk.

    Invariant: every (steps, ...) array has ``n_steps`` rows; an array in ``vm_out``/``host_out``
    is not written into after it is handed over.
    """

    t0: int
    t1: int
    step_s: float
    vm: dict[str, np.ndarray] = field(default_factory=dict)
    host: dict[str, np.ndarray] = field(default_factory=dict)
    host_capacity_mhz: np.ndarray | None = None  # (steps, hosts); stages may scale it
    # a stage's metrics for the chunk, handed over: the engine may keep an array as the metric's time
    # series without copying it (a run of one chunk), so a stage writes no array here it writes into later
    vm_out: dict[str, np.ndarray] = field(default_factory=dict)
    host_out: dict[str, np.ndarray] = field(default_factory=dict)
    # the run keeps per-VM time series; when it does not, a stage may hand a metric's float64 sums
    # (and maxima, for a metric aggregated by max) over the chunk's steps in vm_reduced instead of vm_out
    keep_vm_series: bool = True
    vm_reduced: dict[str, tuple[np.ndarray, np.ndarray | None]] = field(default_factory=dict)
    # names of chunk.vm arrays nobody else holds (a stage may write into them instead of copying)
    owned: set[str] = field(default_factory=set)
    # the CPU demand as (base, col, scale) when the source has that form and every stage that uses the
    # demand takes it so (accepts_factored_demand); chunk.vm then has no "cpu_demand_mhz" until a
    # stage puts one there (see demand())
    demand_factors: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    # power (W) stages add per host and step beyond the CPU model's host power (drives, controllers):
    # (steps, hosts) float64, summed into power_w, energy_j and the carbon stage's input (add_host_power)
    host_power_w: np.ndarray | None = None
    # the VM rows of this chunk's per-VM arrays (ctx.vms rows, in host order), or None: every row
    vm_ids: np.ndarray | None = None
    # the placement timeline over this window (densim.engine.window.WindowState): set by the engine; a chunk
    # built by hand (unit tests) gets one on first use of window()
    state: Any = None

    def window(self, ctx) -> Any:
        """The :class:`~densim.engine.window.WindowState` of this chunk: host of each row, alive shares,
        hosts up, per-host aggregates. Stages read liveness and host downtime here, never from
        ``ctx.schedule`` or ``ctx.failures`` directly."""
        if self.state is None:
            self.state = WindowState(ctx, self.t0, self.t1)
        return self.state

    def add_host_power(self, watts: np.ndarray) -> None:
        """Add ``watts`` ((steps, hosts) or a broadcast of it) to the hosts' power in this chunk.

        Before the CPU step it is added when the CPU model's host power is known; after it, to
        ``host["power_w"]`` at once, so that a stage running later (carbon) reads the total.
        """
        n = self.t1 - self.t0
        w = np.asarray(watts, dtype=np.float64)
        H = w.shape[-1]
        w = np.broadcast_to(w, (n, H))
        self.host_power_w = w.copy() if self.host_power_w is None else self.host_power_w + w
        if "power_w" in self.host:
            self.host["power_w"] = self.host["power_w"] + w

    def demand(self) -> np.ndarray:
        """``vm["cpu_demand_mhz"]``, expanded from ``demand_factors`` (and kept) if it is not there yet."""
        if "cpu_demand_mhz" not in self.vm:
            base, col, scale = self.demand_factors
            out = np.take(base, col, axis=1)
            out *= scale[None, :]
            self.vm["cpu_demand_mhz"] = out
            self.owned.add("cpu_demand_mhz")
        return self.vm["cpu_demand_mhz"]

    @property
    def n_steps(self) -> int:
        """Steps in the chunk: ``t1 - t0``."""
        return self.t1 - self.t0


class Accumulator:
    """A run's per-row totals of every metric, for one level: VMs (``n`` = V) or hosts (``n`` = H).

    ``sum[name]`` is the (n,) float64 sum over the run's steps of the metric's per-step value (a
    rate such as MHz or W: times ``step_s`` it is MHz x s or J), ``max[name]`` the (n,) float64
    worst step, kept for the CPU Ready and utilisation figures and for metrics declared with
    ``agg="max"``; with ``keep_series``, ``series[name]`` is the (n_steps, n) float32 time series
    (``host_steps.parquet``, ``vm_steps.parquet``). Nothing else of the size of the run is kept.

    Written chunk by chunk, in time order, by :func:`run_placed` (the CPU results and every stage's
    ``vm_out``/``vm_reduced``/``host_out``), by :meth:`densim.engine.migration.MigrationPlanner.observe`
    (its per-host link traffic) and, for a distributed run, by :func:`densim.engine.partition.merge_parts`;
    read by :class:`densim.engine.result.Result` for the tables and the summary.
    Invariant: the sums of a metric cover every chunk once (a chunk's steps ``[t0, t1)`` are
    added once); the dict order is the order metrics first arrived (the tables' column order).
    """

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
        """Make sure ``name`` exists (zero sums, zero maxima with ``want_max``, a zero series when kept)
        without adding anything: a chunk in which the metric is zero everywhere."""
        self.sum.setdefault(name, np.zeros(self.n))
        if want_max:
            self.max.setdefault(name, np.zeros(self.n))
        if self.keep:
            self.series.setdefault(name, np.zeros((self.n_steps, self.n), dtype=np.float32))

    def add_reduced(self, name: str, chunk_sum: np.ndarray, chunk_max: np.ndarray | None = None) -> None:
        """Add a chunk's sums (and maxima) over its steps, reduced by the CPU kernel as :meth:`add` would."""
        if name in self.sum:
            self.sum[name] += chunk_sum
        else:
            self.sum[name] = chunk_sum
        if chunk_max is not None:
            if name in self.max:
                np.maximum(self.max[name], chunk_max, out=self.max[name])
            else:
                self.max[name] = chunk_max

    def add_reduced_at(self, name: str, ids: np.ndarray, chunk_sum: np.ndarray, chunk_max: np.ndarray | None = None) -> None:
        """:meth:`add_reduced` for the rows ``ids`` only (distinct; the others add 0): a chunk that stepped
        only the VMs alive in it. The same sums as adding a full (n,) array zero elsewhere, without
        making one (every sum and maximum here is >= 0, so x + 0 and max(x, 0) are x)."""
        if name in self.sum:
            self.sum[name][ids] += chunk_sum
        else:
            full = np.zeros(self.n)
            full[ids] = chunk_sum
            self.sum[name] = full
        if chunk_max is not None:
            if name in self.max:
                cur = self.max[name]
                cur[ids] = np.maximum(cur[ids], chunk_max)
            else:
                top = np.zeros(self.n)
                top[ids] = chunk_max
                self.max[name] = top

    def series_view(self, name: str, t0: int, n_steps: int) -> np.ndarray:
        """The (steps, n) float32 slice of ``name``'s time series for a chunk, to be written in place."""
        if name not in self.series:
            self.series[name] = np.zeros((self.n_steps, self.n), dtype=np.float32)
        return self.series[name][t0 : t0 + n_steps]

    def store(self, name: str, t0: int, arr: np.ndarray) -> None:
        """Keep a chunk of ``name``'s time series (its sums are added apart)."""
        if self.keep:
            self.series_view(name, t0, arr.shape[0])[...] = arr

    def add(self, name: str, t0: int, arr: np.ndarray, want_max: bool = False) -> None:
        """Add the chunk starting at step ``t0`` of ``name``: ``arr`` is (steps, n); its sums over the
        steps (float64) go to ``sum``, its maxima to ``max`` with ``want_max``, and it is kept as
        the series' rows ``[t0, t0 + steps)`` when series are kept (as it is, without a copy, when
        it is the whole run)."""
        a = np.asarray(arr)
        s, m = _column_sums(a, want_max)
        self._last_sums[name] = s
        if name in self.sum:
            self.sum[name] += s
        else:
            self.sum[name] = s
        if want_max:
            if name in self.max:
                np.maximum(self.max[name], m, out=self.max[name])
            else:
                self.max[name] = m
        if self.keep:
            if name not in self.series and self._whole_run(t0, a):
                self.series[name] = a  # the run is one chunk: the stage's array is the series (handed over, not copied)
                return
            if name not in self.series:
                self.series[name] = np.zeros((self.n_steps, self.n), dtype=np.float32)
            self.series[name][t0 : t0 + a.shape[0]] = a

    def add_at(self, name: str, ids: np.ndarray, arr: np.ndarray, want_max: bool = False) -> None:
        """:meth:`add` of a chunk whose columns are the rows ``ids`` only (:meth:`add_reduced_at`; no series kept)."""
        s, m = _column_sums(np.asarray(arr), want_max)
        self.add_reduced_at(name, ids, s, m)

    def _whole_run(self, t0: int, a: np.ndarray) -> bool:
        """``a`` holds every step of the run (one chunk) as float32: it can be kept as it is.

        A stage hands its chunk arrays (``Chunk.vm_out``, ``host_out``) over to the engine and does
        not write into them afterwards; a read-only broadcast (a row repeated) stays one row in memory.
        """
        return t0 == 0 and a.shape == (self.n_steps, self.n) and a.dtype == np.float32


def _column_sums(a: np.ndarray, want_max: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """A (steps, n) chunk's float64 sums over its steps per column, and its maxima with ``want_max``."""
    if a.ndim == 2 and a.strides[0] == 0 and 0 < a.shape[0] < 2**29 and a.dtype == np.float32:
        # one row repeated (a stage's read-only broadcast): n x row is the sum, exactly (a float32
        # has 24 significant bits, n < 2^29, so every partial sum is exact in float64 and so is n x row)
        row = a[0].astype(np.float64)
        return row * a.shape[0], (row if want_max else None)
    s = a.sum(axis=0, dtype=np.float64)
    if not want_max:
        return s, None
    return s, a.max(axis=0).astype(np.float64) if a.shape[0] else np.zeros(a.shape[1])


def _host_segments(host_of_vm: np.ndarray):
    placed = np.flatnonzero(host_of_vm >= 0)
    perm = placed[stable_order(host_of_vm[placed])]
    sorted_hosts = host_of_vm[perm]
    if perm.size == 0:
        return perm, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, sorted_hosts[1:] != sorted_hosts[:-1]])
    return perm, starts, sorted_hosts[starts]


_HOST_SERIES = ("cpu_demand_mhz", "cpu_delivered_mhz", "utilisation", "cpu_ready_pct", "power_w")


class _CpuOut:
    """One chunk's CPU results: sums over the chunk's steps per VM and host, and per-step arrays asked for."""

    __slots__ = ("vm_dem", "vm_del", "vm_rdy", "vm_rdy_max", "h_claim", "h_del", "h_util", "h_util_max", "h_rpct",
                 "h_rpct_max", "h_power", "sat_peak", "sat_count", "o_claim", "o_del", "o_util", "o_rready", "o_rpct",
                 "o_power", "v_claim", "v_del", "v_ready")

    def repeat(self, n: int) -> None:
        """These results, computed for one step of a steady window, counted for ``n`` identical steps:
        sums and step counts times ``n``, maxima and peaks as they are (per-step arrays are not kept)."""
        for name in ("vm_dem", "vm_del", "vm_rdy", "h_claim", "h_del", "h_util", "h_rpct", "h_power"):
            setattr(self, name, getattr(self, name) * float(n))
        self.sat_count = self.sat_count * n


def steady_segments(ctx, T: int, chunk_steps: int, live) -> list[tuple[int, int, bool]] | None:
    """The run's windows ``(t0, t1, steady)`` when some of them are steady, else None.

    A window is *steady* when every one of its steps gives the same CPU results: the demand source
    is steady (:meth:`densim.workloads.sources.DemandSource.steady`, a constant profile) and the
    placement timeline has no event inside it (no row starts or ends within or at an inner edge of
    it, hosts stay on: ``scheduling.idle_hosts: on``, no failures). The engine then computes its
    first step and counts it ``t1 - t0`` times (:meth:`_CpuOut.repeat`), which is exact for the
    sums up to float64 rounding (a sum of n equal terms against n times the term). The timeline's
    events cut the run: a row starting or ending exactly on a step edge cuts there; inside a step,
    that step is a window of its own. The other windows are the usual chunks of ``chunk_steps``.

    Example (step 3,600 s, 2,778 steps, 100,000 VMs arriving in the first 0.1 s and ending 1e7 s
    later, at 0.1 s into step 2,777): windows (0, 1) by itself, (1, 2777) steady: one step computed for
    2,776, (2777, 2778) by itself.
    """
    grid = ctx.grid
    if not ctx.source.steady():
        return None
    if getattr(ctx, "failures", None) is not None:
        return None
    cuts = [0, T]
    if live is not None:
        if live.policy != "on":  # hosts switch off some time after their last VM left: a change inside a window
            return None
        edges = grid.edges_s()
        t = np.concatenate([live.sch.start_s, live.sch.end_s])
        t = t[np.isfinite(t) & (t > edges[0]) & (t < edges[-1])]
        i = np.searchsorted(edges, t, side="left")  # edges[i - 1] < t <= edges[i]
        on_edge = edges[i] == t
        cuts.extend(np.unique(i[on_edge]).tolist())
        inside = np.unique(i[~on_edge])  # t in step i - 1: that step alone
        cuts.extend(inside.tolist())
        cuts.extend((inside - 1).tolist())
    cuts = np.unique(np.clip(np.asarray(cuts, dtype=np.int64), 0, T))
    out: list[tuple[int, int, bool]] = []
    pending = None  # start of a run of one-step pieces, chunked together
    for a, b in zip(cuts[:-1], cuts[1:]):
        a, b = int(a), int(b)
        if b - a >= 2:
            if pending is not None:
                out.extend((x, min(a, x + chunk_steps), False) for x in range(pending, a, chunk_steps))
                pending = None
            out.append((a, b, True))
        elif pending is None:
            pending = a
    if pending is not None:
        out.extend((x, min(T, x + chunk_steps), False) for x in range(pending, T, chunk_steps))
    if not any(st for _, _, st in out):
        return None
    return out


class _CpuSetup:
    """What the CPU kernel (:mod:`densim.engine.cpu_kernel`) needs that does not change between chunks."""

    def __init__(self, ctx, perm, starts, hosts_with, placed, host_on, vcpus_per_host, vm_cap_mhz, kernel) -> None:
        K = self.K = kernel
        hosts, vms, sc = ctx.hosts, ctx.vms, ctx.scenario
        V, H = vms.n, hosts.n
        self.V, self.H = V, H
        self.perm = perm.astype(np.int64)
        self.starts = starts.astype(np.int64)
        self.ends = np.r_[starts[1:], perm.size].astype(np.int64)
        self.seg_host = hosts_with.astype(np.int64)
        self.unplaced = np.flatnonzero(~placed).astype(np.int64)
        has = np.zeros(H, dtype=bool)
        has[hosts_with] = True
        self.empty_hosts = np.flatnonzero(~has).astype(np.int64)
        self.vm_cap = vm_cap_mhz
        self.capp = np.ascontiguousarray(vm_cap_mhz[self.perm])
        self.ones_p = np.ones(self.perm.size, dtype=np.float32)
        self.ones_u = np.ones(self.unplaced.size, dtype=np.float32)
        self.core_mhz = hosts.core_mhz.astype(np.float64)
        self.vcpus_h = vcpus_per_host.astype(np.float64)
        name = sc.simulation.cpu_model
        self.model = K.MODEL_CODES.get(name, K.GIVEN_READY)
        self.contention = CPU_CONTENTION.get(name)  # a registered model without a kernel: ready from numpy
        self.burst = float(sc.simulation.burstiness)
        self.step_s = float(ctx.grid.step_s)
        self.ready_factor = np.float32(100.0) / (np.maximum(vms.vcpus.astype(np.float32), 1) * np.float32(self.step_s))
        self.factorp = np.ascontiguousarray(self.ready_factor[self.perm])
        self.nv_h = np.maximum(vcpus_per_host, 1) * self.step_s
        self.host_on = host_on.astype(np.bool_)
        tables = hosts.power_table_w.astype(np.float64)
        one = bool(tables.shape[0]) and bool(np.all(tables == tables[0]))
        if hosts.power_one_table is not None:  # a part of a run: the whole run's choice of formula
            one = hosts.power_one_table and bool(tables.shape[0])
        self.power_mode = K.POWER_ONE_TABLE if one else K.POWER_HOST_TABLES
        self.table = np.ascontiguousarray(tables[:1] if one else tables) if tables.shape[0] else np.zeros((1, 11))
        self.xp = np.linspace(0.0, 1.0, self.table.shape[1])
        self.slopes = np.ascontiguousarray(K.interp_slopes(self.xp, self.table))
        # closed-form power models per host (models/power.py host_power_w): 1 fan, 2 sqrt, else the table
        self.fan = np.select([hosts.power_kind == "fan", hosts.power_kind == "sqrt"], [1, 2], 0).astype(np.int8)
        self.idle = hosts.power_idle_w.astype(np.float64)
        self.peak = hosts.power_peak_w.astype(np.float64)
        self.expo = hosts.power_exponent.astype(np.float64)
        self.threshold = ctx.saturation.threshold
        self.no_boot = np.zeros((1, H))

    def subset(self, ids: np.ndarray, hosts_of_ids: np.ndarray) -> _CpuSetup:
        """This setup over the VMs ``ids`` only (placed, in host order): the chunk's demand columns are
        those VMs in that order, and the per-VM sums come back in that order."""
        import copy

        sub = copy.copy(self)
        m = ids.size
        sub.V = m
        sub.perm = np.arange(m, dtype=np.int64)
        starts = np.flatnonzero(np.r_[True, hosts_of_ids[1:] != hosts_of_ids[:-1]]) if m else np.zeros(0, np.int64)
        sub.starts = starts.astype(np.int64)
        sub.ends = np.r_[starts[1:], m].astype(np.int64)
        sub.seg_host = hosts_of_ids[starts].astype(np.int64)
        sub.unplaced = np.zeros(0, dtype=np.int64)
        has = np.zeros(self.H, dtype=bool)
        has[sub.seg_host] = True
        sub.empty_hosts = np.flatnonzero(~has).astype(np.int64)
        sub.capp = np.ascontiguousarray(self.vm_cap[ids])
        sub.factorp = np.ascontiguousarray(self.ready_factor[ids])
        sub.ones_p = np.ones(m, dtype=np.float32)
        sub.ones_u = np.ones(0, dtype=np.float32)
        return sub

    def run(self, demand, cap_h: np.ndarray, n: int, host_series: dict | None, want_stage_arrays: bool,
            by_step=None, want_host_arrays: bool | None = None) -> _CpuOut:
        """One chunk: ``demand`` is (steps, VMs) or the factors ``(base, col, scale)`` of a source.

        ``by_step`` (VMs that arrive and leave, :meth:`densim.engine.lifetimes.Liveness.chunk`) gives
        the vCPUs alive per host and step, which hosts draw power in each step, and boot power (W).
        """
        K, V, H = self.K, self.V, self.H
        if by_step is None:
            vcpus_h, nv_h, on_h, boot_w = self.vcpus_h[None, :], self.nv_h[None, :], self.host_on[None, :], self.no_boot
        else:
            vcpus_h, on_h, boot_w = by_step  # all (steps, hosts): the kernel takes one row count for the four
            nv_h = np.maximum(vcpus_h, 1) * self.step_s
            # writeable C arrays (a broadcast of one row is read-only), so that the kernel has one signature
            on_h = np.require(np.broadcast_to(on_h & self.host_on[None, :], vcpus_h.shape), requirements=["C", "W"])
            boot_w = np.require(np.broadcast_to(boot_w, vcpus_h.shape), dtype=np.float64, requirements=["C", "W"])
        if isinstance(demand, tuple):
            base, col, scale = demand
            factored = True
            colp, scalep = col[self.perm], scale[self.perm]
            unpl_col, unpl_scale = col[self.unplaced], scale[self.unplaced]
        else:
            base, factored = np.ascontiguousarray(demand), False
            colp, scalep, unpl_col, unpl_scale = self.perm, self.ones_p, self.unplaced, self.ones_u
        zero = base.dtype.type(0)
        cap32 = cap_h.dtype == np.float32
        cap64 = np.ascontiguousarray(cap_h, dtype=np.float64)
        sat_thr = float(np.float32(self.threshold))  # numpy compares the float32 utilisation in float32
        o = _CpuOut()
        o.vm_dem, o.vm_del, o.vm_rdy, o.vm_rdy_max = (np.zeros(V) for _ in range(4))
        o.h_claim, o.h_del, o.h_util, o.h_util_max, o.h_rpct, o.h_rpct_max, o.h_power, o.sat_peak = (np.zeros(H) for _ in range(8))
        o.sat_count = np.zeros(H, dtype=np.int64)
        none2 = np.zeros((0, 0), dtype=np.float32)
        claim_dtype = np.result_type(base.dtype, np.float32)
        host_arrays = want_stage_arrays if want_host_arrays is None else want_host_arrays
        if want_stage_arrays:
            o.v_claim, o.v_del, o.v_ready = (np.zeros((n, V), dtype=claim_dtype) for _ in range(3))
        else:
            o.v_claim = o.v_del = o.v_ready = np.zeros((0, 0), dtype=claim_dtype)
        o.o_rready = np.zeros((n, H), dtype=np.float32) if want_stage_arrays or host_arrays else none2
        if host_series is not None:
            o.o_claim, o.o_del, o.o_util, o.o_rpct, o.o_power = (host_series[k] for k in _HOST_SERIES)
        elif host_arrays:
            o.o_claim, o.o_del, o.o_util, o.o_rpct, o.o_power = (np.zeros((n, H), dtype=np.float32) for _ in range(5))
        else:
            o.o_claim = o.o_del = o.o_util = o.o_rpct = o.o_power = none2
        ready_given = none2
        if self.model == K.GIVEN_READY:  # host claims first, then the registered model in numpy
            hc = np.zeros((n, H), dtype=np.float32)
            K.host_claims(base, colp, scalep, factored, zero, self.capp, self.starts, self.ends, self.seg_host, hc)
            ready = self.contention(hc / self.core_mhz[None, :], vcpus_h, cap_h / self.core_mhz[None, :], burstiness=self.burst)
            ready_given = np.ascontiguousarray((ready * self.step_s).astype(np.float32))
        K.cpu_chunk(base, colp, scalep, factored, zero, self.capp, self.factorp, self.perm, self.starts, self.ends,
                    self.seg_host, self.unplaced, unpl_col, unpl_scale, self.empty_hosts, cap64, cap32, self.core_mhz,
                    vcpus_h, self.model, self.burst, self.step_s, ready_given, nv_h, on_h, boot_w,
                    self.power_mode, self.xp, self.table, self.slopes, self.fan, self.idle, self.peak, self.expo, sat_thr,
                    o.vm_dem, o.vm_del, o.vm_rdy, o.vm_rdy_max,
                    o.h_claim, o.h_del, o.h_util, o.h_util_max, o.h_rpct, o.h_rpct_max, o.h_power, o.sat_peak, o.sat_count,
                    o.o_claim, o.o_del, o.o_util, o.o_rready, o.o_rpct, o.o_power, o.v_claim, o.v_del, o.v_ready)
        return o


def _alive_rows(ctx, cpu, live, t0: int, t1: int, channels: tuple[str, ...] = ("cpu_mhz",)):
    """The VM rows alive at some time in ``[t0, t1)`` (host order), the CPU setup over them, the
    liveness per host and step (:meth:`densim.engine.lifetimes.Liveness.chunk`), their CPU demand:
    (steps, rows) MHz, or its factors ``(base, col, scale)`` (VM instances through failures), and the
    source's other ``channels`` for those rows (a dict, (steps, rows) each; one window read for all)."""
    from densim.workloads.tasks import scheduled_windows

    grid = ctx.grid
    edges = grid.edges_s(t0, t1)
    ids = live.active_ids(edges[0], edges[-1], ctx.vms.host)
    sub = cpu.subset(ids, ctx.vms.host[ids])
    by_step = live.chunk(edges, ids, sub.starts, sub.seg_host, ctx.hosts.n, grid.step_s)
    fac = getattr(ctx.source, "active_factors", None)  # VM instances through failures (engine/failures.py)
    demand = fac(grid, t0, t1, ids) if fac is not None else None
    want = tuple(c for c in channels if c != "cpu_mhz" or demand is None)
    win = scheduled_windows(ctx.source, grid, t0, t1, ids, want) if want else {}
    if demand is None:  # a window in which no VM is alive gives no channel
        demand = win.pop("cpu_mhz", None)
        if demand is None:
            demand = np.zeros((t1 - t0, ids.size), dtype=np.float32)
    return ids, sub, by_step, demand, win


def _active_chunk(ctx, cpu, live, vm_acc, host_acc, t0: int, t1: int, cap_h, keep_host: bool, repeat: int = 1) -> None:
    """One chunk of a run whose VMs arrive and leave, without stages, over the VMs alive in it only; with
    ``repeat`` > 1 the chunk is one step of a steady window of ``repeat`` steps (:func:`steady_segments`)."""
    n = t1 - t0
    ids, sub, by_step, demand, _ = _alive_rows(ctx, cpu, live, t0, t1)
    out = sub.run(demand, cap_h, n, host_series={name: host_acc.series_view(name, t0, n) for name in _HOST_SERIES}
                  if keep_host else None, want_stage_arrays=False, by_step=by_step)
    if repeat > 1:
        _repeat(out, host_acc, t0, repeat, keep_host)
    _add_cpu_sums_at(ctx, vm_acc, host_acc, ids, out)


def _add_cpu_sums_at(ctx, vm_acc, host_acc, ids: np.ndarray, out: _CpuOut) -> None:
    """Add a chunk's CPU sums: per VM at the rows ``ids`` it stepped, per host as they are."""
    for name, s, m in (("cpu_demand_mhz", out.vm_dem, None), ("cpu_delivered_mhz", out.vm_del, None),
                       ("cpu_ready_pct", out.vm_rdy, out.vm_rdy_max)):
        vm_acc.add_reduced_at(name, ids, s, m)
    host_acc.add_reduced("cpu_demand_mhz", out.h_claim)
    host_acc.add_reduced("cpu_delivered_mhz", out.h_del)
    host_acc.add_reduced("utilisation", out.h_util, out.h_util_max)
    ctx.saturation.add_reduced("host CPU", ctx.hosts.names, out.sat_peak, out.sat_count)
    host_acc.add_reduced("cpu_ready_pct", out.h_rpct, out.h_rpct_max)
    host_acc.add_reduced("power_w", out.h_power)


def simulate(plant: Plant, *, seed: int | None = None, progress: Callable[[int, int], None] | None = None,
             source: DemandSource | None = None):
    """Run ``plant`` (a scenario resolved by :func:`densim.plant.resolve`); returns a :class:`~densim.engine.result.Result`.

    ``seed`` overrides the scenario's; ``source`` replaces its VM groups with one demand source
    (see :func:`~densim.engine.state.build_context`).
    """
    if not isinstance(plant, Plant):
        raise TypeError(f"simulate() takes a Plant (densim.plant.resolve(scenario)), not {type(plant).__name__}")
    wall0 = time.perf_counter()
    warm = preload(plant.spec)  # the run's kernels load on the other core while it builds its inputs
    try:
        ctx = build_context(plant, seed, source)
        timings: dict[str, float] = {"build_s": time.perf_counter() - wall0}
        t = time.perf_counter()
        place_vms(ctx)
        timings["placement_s"] = time.perf_counter() - t
        res = run_placed(ctx, progress=progress, timings=timings)
    finally:
        if warm is not None:
            warm.join()
    timings["total_s"] = time.perf_counter() - wall0
    return res


def place_vms(ctx) -> None:
    """Initial placement: ``ctx.vms.host`` (-1 where a VM fits nowhere), by the scenario's policy.
    With lifetimes (``ctx.schedule``) :func:`~densim.engine.state.build_context` placed them online."""
    vms, hosts, pl = ctx.vms, ctx.hosts, ctx.scenario.placement
    if ctx.schedule is not None:  # placed over time, GPUs too (ctx.gpu, set by build_context)
        return
    from densim.placement.given import kernel_params
    from densim.placement.gpu import problem_for

    from densim.workloads.sources import vm_gpu_counts

    gpu = problem_for(ctx, vm_gpu_counts(ctx.source, ctx.plant.host_groups))  # None unless a VM asks for a GPU

    cap = host_capacity(hosts, pl)
    vms.host = place(pl.policy, vms.vcpus.astype(np.float64), vms.mem_bytes, cap[:, 0], cap[:, 1], rng=ctx.rng,
                     gpu=gpu, **pl.params, **kernel_params(ctx.scenario, vms.names, hosts.names))
    ctx.gpu = gpu


def default_chunk_steps(ctx) -> int:
    """Steps per chunk: the scenario's ``chunk_steps``, or as many as keep a (steps x VMs) float32 array near 160 MB."""
    return ctx.scenario.simulation.chunk_steps or max(1, min(ctx.grid.n_steps, ELEMENTS_PER_CHUNK // max(ctx.vms.n, 1)))


def keeps_vm_series(ctx) -> bool:
    """Whether the run keeps per-VM time series (``output.vm_timeseries``; auto: VMs x steps <= 5 million)."""
    mode = ctx.scenario.output.vm_timeseries
    return mode == "on" or (mode == "auto" and ctx.vms.n * ctx.grid.n_steps <= 5_000_000)


@dataclass
class _Demand:
    """How a run's chunks get the VMs' CPU demand, and which CPU results the stages read; chosen once per run.

    ``lean``: no stage uses the VMs' demand and no per-VM series is kept, so only the CPU channel is
    read and it may stay factored; ``factored_stages``: the stages that use the demand all take it
    factored (the memory stage), so no (steps x VMs) window is built unless one of them expands it;
    ``active``: VMs arrive and leave, no VM series is kept and every stage (if any) takes a chunk of the
    alive rows (``accepts_active_rows``), so each chunk steps only the
    VMs alive in it (:func:`_active_chunk`, :func:`_active_stage_chunk`). ``factors`` is the source's ``window_factors`` when the
    demand may stay factored, else None; ``channels`` are the source channels a window reads.
    """

    stage_reads: bool  # a stage reads the per-VM CPU arrays (claims, delivered, ready)
    host_reads: bool  # a stage reads the per-host CPU arrays (claims, delivered, utilisation, ready, power)
    lean: bool
    factored_stages: bool
    active: bool
    chunk_steps: int
    factors: Callable | None
    channels: tuple[str, ...]


@dataclass
class _Run:
    """What stays fixed over the chunks of one run (:func:`run_placed`): the chunk helpers read it."""

    ctx: Any
    stages: list
    mig: Any  # densim.engine.migration.MigrationPlanner or None
    live: Any  # densim.engine.lifetimes.Liveness or None
    demand: _Demand
    vm_acc: Accumulator
    host_acc: Accumulator
    keep_vm: bool
    keep_host: bool
    cap0: np.ndarray  # (hosts,) float32 CPU capacity before any stage scales it
    segments: tuple[np.ndarray, np.ndarray, np.ndarray]  # the initial placement's (perm, starts, hosts_with)
    stepped: np.ndarray | None = None  # (VMs,) steps each row was in a chunk of alive rows (active runs with stages)


def _start_liveness(ctx, vcpus_per_host: np.ndarray, mem_per_host: np.ndarray):
    """``ctx.liveness`` (None unless VMs arrive and leave), and the vCPUs and memory each host holds.

    With VMs that arrive and leave, what a host holds is the peak of what is alive on it at once,
    not every VM that ever ran there.
    """
    live = None
    if ctx.schedule is not None:  # VMs arrive and leave: vCPUs alive and hosts on change by step
        from densim.engine.lifetimes import Liveness

        vms, hosts = ctx.vms, ctx.hosts
        live = Liveness(ctx.scenario, ctx.schedule, hosts, vms.vcpus)
        live.failures = ctx.failures  # host failures (engine/failures.py): hosts down draw no power
        vcpus_per_host = live.peak_per_host(vms.host, vms.vcpus, hosts.n)[0]
        mem_per_host = live.peak_per_host(vms.host, vms.mem_bytes, hosts.n)[0]
    ctx.liveness = live
    return live, vcpus_per_host, mem_per_host


def _start_stages(ctx) -> list:
    """The active stages in dependency order (:func:`densim.engine.stages.ordered_entries`), prepared.

    Sets ``ctx.stages``; every stage is built before any is prepared, so that a stage's
    :meth:`~densim.engine.stages.Stage.prepare` may look another up.
    """
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
    return stages


def _choose_demand(ctx, stages: list, live, keep_vm: bool, chunk_steps: int, mig=None, given: bool = False) -> _Demand:
    """The run's demand mode (lean, factored or active; see :class:`_Demand`) and its chunk length
    (``mig``: the migration planner, which needs every row's CPU results: never active; ``given``: the
    caller fixed the chunk length, as a part of a split run does with the whole run's, so it is kept)."""
    sc, T = ctx.scenario, ctx.grid.n_steps
    # the CPU kernel writes per-VM and per-host step arrays only for a stage that reads them
    stage_reads = any(getattr(st, "reads_cpu_results", False) for st in stages)
    host_reads = stage_reads or any(getattr(st, "reads_host_results", False) for st in stages)
    # a stage that neither reads nor changes the VMs' demand (e.g. carbon) leaves the run lean
    demand_stages = [st for st in stages if getattr(st, "uses_vm_demand", True)]
    # without stages and VM time series no per-VM array is needed: the demand may stay factored
    lean = not demand_stages and not keep_vm
    # stages that use the demand but can take it factored (the memory stage): no (steps x VMs) window
    # unless one of them expands it; only for a source whose one channel is the CPU demand
    factored_stages = (bool(demand_stages) and not keep_vm and set(ctx.source.channels) <= {"cpu_mhz"}
                       and all(getattr(st, "accepts_factored_demand", False) for st in demand_stages))
    # VMs that arrive and leave: each chunk steps only the VM rows alive in it when no per-VM series is
    # kept, no planner moves VMs and every stage takes such a chunk (none, or carbon and memory: accepts_active_rows)
    active = (live is not None and mig is None and not keep_vm
              and all(getattr(st, "accepts_active_rows", False) for st in stages))
    if active and not sc.simulation.chunk_steps and not given:
        chunk_steps = live.chunk_steps(T, ctx.grid.step_s, ELEMENTS_PER_CHUNK // 4)  # its arrays are float64 (alive shares)
    factors = getattr(ctx.source, "window_factors", None) if (lean or factored_stages) and not active else None
    channels = ("cpu_mhz",) if lean else tuple(ctx.source.channels)
    return _Demand(stage_reads, host_reads, lean, factored_stages, active, chunk_steps, factors, channels)


def _new_chunk(r: _Run, t0: int, t1: int) -> tuple[Chunk, Any]:
    """The chunk ``[t0, t1)`` with its demand: the source's factors (returned, and handed to the stages
    when there are any), or a window of the source's channels in ``chunk.vm``."""
    ctx = r.ctx
    chunk = Chunk(t0=t0, t1=t1, step_s=ctx.grid.step_s, keep_vm_series=r.keep_vm)
    chunk.window(ctx)
    fac = r.demand.factors(ctx.grid, t0, t1) if r.demand.factors is not None else None
    if fac is not None and r.stages:
        chunk.demand_factors = fac
    if fac is None:
        win = ctx.source.window(ctx.grid, t0, t1, r.demand.channels)
        chunk.vm["cpu_demand_mhz"] = win.pop("cpu_mhz")
        chunk.vm.update(win)
        if getattr(ctx.source, "fresh_windows", False):
            chunk.owned.add("cpu_demand_mhz")
    return chunk, fac


def _before_cpu(r: _Run, chunk: Chunk) -> np.ndarray:
    """Every stage's ``before_cpu``; returns the hosts' CPU capacity for the chunk, (steps, hosts) or (1, hosts)."""
    if not r.stages:
        return r.cap0[None, :]
    # read-only: a stage that scales it assigns a new array
    chunk.host_capacity_mhz = np.broadcast_to(r.cap0, (chunk.n_steps, r.ctx.hosts.n))
    for st in r.stages:
        st.before_cpu(r.ctx, chunk)
    cap_h = chunk.host_capacity_mhz
    if cap_h.ndim == 2 and cap_h.strides[0] == 0:  # no stage changed it: one row serves every step
        cap_h = cap_h[:1]
    return cap_h


def _after_cpu(r: _Run, chunk: Chunk, out: _CpuOut) -> None:
    """Hand the CPU results the stages read to ``chunk``, run every stage's ``after_cpu``, and add the
    power stages put on the hosts (drives, controllers) to the hosts' power and energy."""
    if not r.stages:
        return
    if r.demand.stage_reads:
        chunk.vm.update(cpu_claim_mhz=out.v_claim, cpu_delivered_mhz=out.v_del, cpu_ready_s=out.v_ready)
    if r.demand.host_reads:
        chunk.host.update(cpu_demand_mhz=out.o_claim, cpu_delivered_mhz=out.o_del, utilisation=out.o_util,
                          cpu_ready_s=out.o_rready, power_w=out.o_power)
        if chunk.host_power_w is not None:  # power stages added before the CPU step
            chunk.host["power_w"] = out.o_power + chunk.host_power_w
    for st in r.stages:
        st.after_cpu(r.ctx, chunk)
    if chunk.host_power_w is not None:  # drives, controllers: into the hosts' power and energy
        # each host over the steps in time order (step_sums: also for a part of a split run holding one host)
        out.h_power = out.h_power + step_sums(chunk.host_power_w)
        if r.keep_host:
            r.host_acc.series_view("power_w", chunk.t0, chunk.n_steps)[...] += chunk.host_power_w.astype(np.float32)


def _accumulate(r: _Run, chunk: Chunk, out: _CpuOut, ready_factor: np.ndarray) -> None:
    """Add the chunk's CPU results and the stages' metrics (``chunk.vm_out``, ``vm_reduced``, ``host_out``)
    to the run's sums, maxima and kept time series."""
    ctx, vm_acc, host_acc, t0 = r.ctx, r.vm_acc, r.host_acc, chunk.t0
    vm_acc.add_reduced("cpu_demand_mhz", out.vm_dem)
    vm_acc.add_reduced("cpu_delivered_mhz", out.vm_del)
    vm_acc.add_reduced("cpu_ready_pct", out.vm_rdy, out.vm_rdy_max)
    if r.keep_vm:
        demand = chunk.vm["cpu_demand_mhz"]
        vm_acc.store("cpu_demand_mhz", t0, demand)
        vm_acc.store("cpu_delivered_mhz", t0, out.v_del)
        vm_acc.add("cpu_unserved_mhz", t0, demand - out.v_del)
        vm_acc.store("cpu_ready_pct", t0, out.v_ready * ready_factor[None, :])
    host_acc.add_reduced("cpu_demand_mhz", out.h_claim)
    host_acc.add_reduced("cpu_delivered_mhz", out.h_del)
    host_acc.add_reduced("utilisation", out.h_util, out.h_util_max)
    ctx.saturation.add_reduced("host CPU", ctx.hosts.names, out.sat_peak, out.sat_count)  # per host, per step
    host_acc.add_reduced("cpu_ready_pct", out.h_rpct, out.h_rpct_max)
    host_acc.add_reduced("power_w", out.h_power)
    for name, arr in chunk.vm_out.items():
        vm_acc.add(name, t0, arr, want_max=_by_max(ctx, name))
    for name, (s, m) in chunk.vm_reduced.items():
        vm_acc.add_reduced(name, s, m)
    for name, arr in chunk.host_out.items():
        host_acc.add(name, t0, arr, want_max=_by_max(ctx, name))


def _by_max(ctx, name: str) -> bool:
    """Whether metric ``name`` is declared with ``agg="max"`` (its maxima are kept)."""
    return ctx.metrics.get(name) is not None and ctx.metrics[name].agg == "max"


def _repeat(out: _CpuOut, host_acc, t0: int, repeat: int, keep_host: bool) -> None:
    """Count the one step just computed at ``t0`` for the ``repeat`` steps of its steady window."""
    out.repeat(repeat)
    if keep_host:
        for name in _HOST_SERIES:
            v = host_acc.series_view(name, t0, repeat)
            v[1:] = v[0]


def _placed_chunk(r: _Run, cpu: _CpuSetup, t0: int, t1: int, repeat: int = 1) -> None:
    """One chunk ``[t0, t1)`` of all the VMs: demand, stages before the CPU step, the CPU kernel,
    stages after it, the sums. The migration hooks (``capacity``, ``observe``) keep their places.
    With ``repeat`` > 1 (no stages, no migration, no VM series) the chunk is one step of a steady
    window of ``repeat`` steps (:func:`steady_segments`)."""
    ctx, mig, live, n = r.ctx, r.mig, r.live, t1 - t0
    chunk, fac = _new_chunk(r, t0, t1)
    by_step = live.chunk(ctx.grid.edges_s(t0, t1), *r.segments, ctx.hosts.n, ctx.grid.step_s) if live is not None else None
    if by_step is not None:  # the hosts the CPU step powers, for the stages that add power (GPUs) before it
        chunk.state.set_power_on(by_step[1] & cpu.host_on[None, :])
    cap_h = _before_cpu(r, chunk)
    if mig is not None:
        cap_h = mig.capacity(t0, t1, cap_h)
    host_series = {name: r.host_acc.series_view(name, t0, n) for name in _HOST_SERIES} if r.keep_host else None
    out = cpu.run(chunk.vm["cpu_demand_mhz"] if "cpu_demand_mhz" in chunk.vm else fac, cap_h, n, host_series=host_series,
                  want_stage_arrays=r.demand.stage_reads or r.keep_vm, by_step=by_step, want_host_arrays=r.demand.host_reads)
    if repeat > 1:
        _repeat(out, r.host_acc, t0, repeat, r.keep_host)
    if mig is not None:
        mig.observe(t0, t1, out, r.host_acc)
    _after_cpu(r, chunk, out)
    _accumulate(r, chunk, out, cpu.ready_factor)


def _active_stage_chunk(r: _Run, cpu: _CpuSetup, t0: int, t1: int) -> None:
    """One chunk ``[t0, t1)`` of a run whose VMs arrive and leave and whose stages all take a chunk of the
    alive VM rows (``accepts_active_rows``): :func:`_placed_chunk` over the rows ``chunk.vm_ids`` alive
    at some time in it, (steps, rows) per-VM arrays; their sums go to those rows (:meth:`Accumulator.add_at`)."""
    ctx, n = r.ctx, t1 - t0
    # the source's channels a chunk of every row reads (the memory stage reads the memory usage)
    ids, sub, by_step, demand, win = _alive_rows(ctx, cpu, r.live, t0, t1, r.demand.channels)
    chunk = Chunk(t0=t0, t1=t1, step_s=ctx.grid.step_s, keep_vm_series=False, vm_ids=ids)
    chunk.window(ctx).set_power_on(by_step[1] & cpu.host_on[None, :])
    if isinstance(demand, tuple):  # factors (VM instances through failures): expanded by a stage that asks
        chunk.demand_factors = demand
    else:
        chunk.vm["cpu_demand_mhz"] = demand
        chunk.owned.add("cpu_demand_mhz")  # a fresh window of these rows
    chunk.vm.update(win)
    cap_h = _before_cpu(r, chunk)
    host_series = {name: r.host_acc.series_view(name, t0, n) for name in _HOST_SERIES} if r.keep_host else None
    out = sub.run(chunk.vm.get("cpu_demand_mhz", demand), cap_h, n, host_series=host_series,
                  want_stage_arrays=r.demand.stage_reads, by_step=by_step, want_host_arrays=r.demand.host_reads)
    _after_cpu(r, chunk, out)
    _add_cpu_sums_at(ctx, r.vm_acc, r.host_acc, ids, out)
    for name, arr in chunk.vm_out.items():
        r.vm_acc.add_at(name, ids, arr, want_max=_by_max(ctx, name))
    for name, (s, m) in chunk.vm_reduced.items():
        r.vm_acc.add_reduced_at(name, ids, s, m)
    for name, arr in chunk.host_out.items():
        r.host_acc.add(name, t0, arr, want_max=_by_max(ctx, name))
    r.stepped[ids] += n


def _add_idle_rows(r: _Run) -> None:
    """After a run of chunks of the alive rows: every step a row was in no chunk, each of its stage
    metrics takes the stage's ``idle_vm_values`` (0 unless given: nothing to add), as a chunk of every
    row would have given it."""
    missing = r.ctx.grid.n_steps - r.stepped
    some = missing > 0
    for st in r.stages:
        for name, value in getattr(st, "idle_vm_values", {}).items():
            if value == 0 or name not in r.vm_acc.sum:
                continue
            r.vm_acc.sum[name] += value * missing
            if name in r.vm_acc.max:
                top = r.vm_acc.max[name]
                top[some] = np.maximum(top[some], value)


def run_placed(ctx, *, progress: Callable[[int, int], None] | None = None, timings: dict[str, float] | None = None,
               chunk_steps: int | None = None, keep_vm: bool | None = None):
    """The time-stepped part of a run whose VMs are placed (``ctx.vms.host``); returns a Result.

    ``chunk_steps`` and ``keep_vm`` default to :func:`default_chunk_steps` and :func:`keeps_vm_series`
    of ``ctx``; a part of a run (:mod:`densim.engine.partition`) passes the whole run's values, so
    its sums are taken over the same chunks as the whole run's.

    In order: liveness (:func:`_start_liveness`), stages (:func:`_start_stages`), the migration
    planner, the demand mode (:func:`_choose_demand`), then one :func:`_active_chunk` or
    :func:`_placed_chunk` per window of ``chunk_steps`` (:func:`densim.engine.migration.windows`).
    """
    from densim.engine.result import Result

    wall0 = time.perf_counter()
    timings = {} if timings is None else timings
    sc = ctx.scenario
    vms, hosts, grid = ctx.vms, ctx.hosts, ctx.grid
    V, H, T = vms.n, hosts.n, grid.n_steps
    perm, starts, hosts_with = _host_segments(vms.host)
    placed = vms.host >= 0
    host_idx = np.where(placed, vms.host, 0)
    vcpus_per_host, vms_per_host, mem_per_host, host_on = host_loads(ctx)
    live, vcpus_per_host, mem_per_host = _start_liveness(ctx, vcpus_per_host, mem_per_host)
    # a VM cannot use more than its vCPUs at its host's core speed
    vm_cap_mhz = (vms.vcpus * hosts.core_mhz[host_idx]).astype(np.float32)

    stages = _start_stages(ctx)
    from densim.engine.migration import planner_for, windows

    mig = planner_for(ctx, stages, live)  # VMs moved during the run (migration section), or None

    from densim.engine import cpu_kernel as K

    keep_vm = keeps_vm_series(ctx) if keep_vm is None else keep_vm
    keep_host = sc.output.host_timeseries == "on"
    vm_acc = Accumulator(T, V, keep_vm)
    host_acc = Accumulator(T, H, keep_host)
    given_chunk = bool(chunk_steps)  # a part of a split run passes the whole run's chunking (densim.engine.partition)
    chunk_steps = chunk_steps or default_chunk_steps(ctx)
    t_engine = time.perf_counter()
    cpu = _CpuSetup(ctx, perm, starts, hosts_with, placed, host_on, vcpus_per_host, vm_cap_mhz, K)
    demand = _choose_demand(ctx, stages, live, keep_vm, chunk_steps, mig, given_chunk)
    cap0 = hosts.capacity_mhz.astype(np.float32)
    r = _Run(ctx, stages, mig, live, demand, vm_acc, host_acc, keep_vm, keep_host, cap0, (perm, starts, hosts_with),
             np.zeros(V) if demand.active and stages else None)

    # steady windows (a constant demand, no event of the timeline inside): one step computed for all of them
    steady = (steady_segments(ctx, T, demand.chunk_steps, live)
              if not stages and mig is None and not keep_vm and not given_chunk else None)
    segs = steady if steady is not None else ((t0, t1, False) for t0, t1 in windows(T, demand.chunk_steps))
    for t0, t1, still in segs:
        rep, t_end = (t1 - t0, t1) if still else (1, None)
        if still:
            t1 = t0 + 1
        if demand.active and stages:
            _active_stage_chunk(r, cpu, t0, t1)
        elif demand.active:
            _active_chunk(ctx, cpu, live, vm_acc, host_acc, t0, t1, cap0[None, :], keep_host, rep)
        else:
            _placed_chunk(r, cpu, t0, t1, rep)
        if progress is not None:
            progress(t_end or t1, T)
    if r.stepped is not None:
        _add_idle_rows(r)

    timings["engine_s"] = time.perf_counter() - t_engine
    if live is not None and live.policy == "off":
        host_on = live.ever_on
    if mig is not None:  # the hosts' loads at the end; a host that had VMs at some time drew power
        vcpus_per_host, vms_per_host, mem_per_host, host_on = mig.final_loads(host_on, host_loads)
        stages = [*stages, mig]
    res = Result(ctx=ctx, vm_acc=vm_acc, host_acc=host_acc, stages=stages, host_on=host_on,
                 vcpus_per_host=vcpus_per_host, vms_per_host=vms_per_host, mem_per_host=mem_per_host,
                 timings=timings, liveness=live)
    timings["run_s"] = time.perf_counter() - wall0
    return res
