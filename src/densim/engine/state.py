"""Engine state built from a scenario: VM and host arrays, the time grid, the demand source."""

from __future__ import annotations

import math
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from densim.errors import InputError
from densim.models.power import as_table_w
from densim.plant import Plant
from densim.spec.scenario import Scenario
from densim.workloads.registry import get_format
from densim.workloads.sources import CompositeSource, DemandSource, ProfileSource
from densim.workloads.timegrid import TimeGrid


@dataclass
class VmTable:
    """The engine's VM rows: one entry per row in every array, all of shape ``(V,)``.

    A row is a VM, except in a run with ``failures:`` where it is a VM *instance*: one run of a VM on
    one host, ``[start, end)`` (:mod:`densim.engine.failures`; a VM restarted k times has k + 1 rows,
    the restarts named ``<vm>~2``, ``<vm>~3``, ...). Every per-VM array of the engine (a chunk's
    ``(steps, V)`` arrays, the accumulators, ``vms.parquet``) is indexed by these rows, in this order.

    Written by :func:`build_context` (sizes from the demand source's ``sizes``; ``host`` from the
    placement timeline when VMs arrive and leave, fail or migrate: a row is then one run of a VM on one
    host, and a landing starts a new row), else ``host`` by :func:`densim.engine.run.place_vms` (initial
    placement); a row's host never changes during the run. Read by the CPU setup of :mod:`densim.engine.run`,
    every stage, and :class:`densim.engine.result.Result`.

    Invariants: every array has length :attr:`n`; ``host`` is -1 (placed nowhere: it fits on no
    host, or under lifetimes never started) or a row of the :class:`HostTable`; ``group`` indexes
    ``group_names``.
    """

    names: np.ndarray  # (V,) object array of str
    group: np.ndarray  # (V,) int32 index into scenario.vms (= group_names)
    group_names: list[str]  # the scenario's VM group names (vms[].name), in scenario order
    vcpus: np.ndarray  # (V,) int32 virtual CPUs
    vcpu_mhz: np.ndarray  # (V,) float64 MHz: the vCPU speed the demand is expressed against
    mem_bytes: np.ndarray  # (V,) float64 configured memory (bytes)
    host: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # (V,) int64 host row, -1 = unplaced

    @property
    def n(self) -> int:
        """Rows in the table (VMs, or VM instances under failures): V."""
        return int(self.vcpus.size)


@dataclass
class HostTable:
    """The cluster's hosts: one entry per host in every array, all of shape ``(H,)`` except the power table.

    Built once per run by :func:`build_hosts` from the plant's host groups (``cluster.hosts``), in
    scenario order, each group's ``count`` hosts named ``<group label>-<i>`` (``i`` counts across
    groups); fixed for the run (a stage that changes a host's CPU capacity does so per chunk in
    :attr:`densim.engine.run.Chunk.host_capacity_mhz`, not here). Read by placement, the CPU kernel
    setup (capacity, core speed, power formulas), every stage, and ``hosts.parquet``.
    :meth:`subset` cuts it to a slice of hosts for one part of a distributed run.

    Units: MHz for CPU speeds and capacity, bytes for memory, W for power, rack units for space.
    ``power_table_w[h]`` is the host's power at 0, 10, ..., 100 % CPU utilisation (every power
    model is also written as such a table; ``fan`` and ``sqrt`` hosts are evaluated in closed form
    from ``power_idle_w``, ``power_peak_w`` and ``power_exponent``).
    """

    names: np.ndarray  # (H,) object array of str
    group: np.ndarray  # (H,) int32 index into server_names (the scenario's host groups)
    server_names: list[str]  # one label per host group
    sockets: np.ndarray
    cores: np.ndarray  # physical cores (all sockets)
    logical_cpus: np.ndarray
    core_mhz: np.ndarray
    capacity_mhz: np.ndarray  # cores x SMT gain x core MHz
    capacity_cores: np.ndarray  # cores x SMT gain (core-equivalents)
    mem_bytes: np.ndarray
    rack_units: np.ndarray
    power_kind: np.ndarray  # (H,) object array: the power model's name (linear, sqrt, fan, table)
    power_idle_w: np.ndarray
    power_peak_w: np.ndarray
    power_table_w: np.ndarray  # (H, 11) W at 0, 10, ..., 100 % utilisation
    power_exponent: np.ndarray  # the fan model's exponent r
    # every host has the same 11-point power table (one np.interp); None: decide from power_table_w.
    # A part of a run (densim.engine.partition) carries the whole run's value.
    power_one_table: bool | None = None

    @property
    def n(self) -> int:
        """Hosts in the table: H."""
        return int(self.cores.size)

    def subset(self, h0: int, h1: int) -> "HostTable":
        """Hosts ``[h0, h1)``, with the whole table's choice of power formula."""
        import dataclasses

        t = self.power_table_w
        one = bool(t.shape[0]) and bool(np.all(t == t[0])) if self.power_one_table is None else self.power_one_table
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out = {k: (v[h0:h1] if isinstance(v, np.ndarray) else v) for k, v in fields.items()}
        out["power_one_table"] = one
        return HostTable(**out)


@dataclass
class Metric:
    """A metric a stage declares (:meth:`EngineContext.declare`) before writing it to a chunk.

    ``level`` says which table it belongs to: ``"vm"`` (written as ``(steps, V)`` arrays to
    ``chunk.vm_out`` or as sums to ``chunk.vm_reduced``) or ``"host"`` (``(steps, H)`` arrays to
    ``chunk.host_out``). ``agg`` is how :class:`densim.engine.result.Result` reduces it over the
    run into the ``<name>_<agg>`` column of ``vms.parquet``/``hosts.parquet``: ``mean`` (sum over
    steps / steps), ``sum`` (sum x step seconds: a rate in ``unit`` becomes ``unit x s``) or ``max``
    (the worst step; the engine then keeps per-row maxima). ``unit`` and ``doc`` go to the
    generated output reference. Read by the engine's accumulation and by ``Result``.
    """

    name: str
    level: str  # "vm" | "host"
    agg: str  # "mean" | "sum" | "max"
    unit: str
    doc: str


class SaturationLog:
    """Busy shares of the run's resources, reduced per chunk to what ``summary["saturation"]`` needs.

    A stage (or the engine) calls :meth:`add` once per chunk for each kind of resource it models,
    with a ``(steps, resources)`` array of busy shares (1.0 = 100 %); the log keeps, per resource,
    the number of steps at or above :data:`densim.saturation.THRESHOLD` and the peak, so nothing
    the size of the run is kept. :meth:`add_steady` takes one operating point per resource (a
    model with no time axis). :meth:`rows` gives the rows of :func:`densim.saturation.saturation_rows`
    (which, how long, peak) for every resource that reached the threshold in some step.
    """

    def __init__(self, n_steps: int, step_s: float) -> None:
        from densim.saturation import THRESHOLD

        self.n_steps = int(n_steps)
        self.step_s = float(step_s)
        self.threshold = THRESHOLD
        self._series: dict[tuple[str, int], dict[str, Any]] = {}
        self._steady: list[dict[str, Any]] = []

    def add(self, kind: str, names, busy, *, key: Any = None) -> None:
        """Add a chunk of busy shares ``(steps, len(names))`` for resources of ``kind``.

        Successive chunks of one series must pass the same ``names`` (``key`` tells series of one
        kind apart when a stage reports two sets of resources of the same kind).
        """
        b = np.asarray(busy)
        if b.ndim != 2 or b.shape[1] != len(names):
            raise ValueError(f"saturation {kind!r}: busy must be (steps, {len(names)}), got {b.shape}")
        k = (kind, key)
        s = self._series.get(k)
        if s is None:
            s = self._series[k] = {"names": names, "steps": np.zeros(len(names), dtype=np.int64),
                                   "peak": np.full(len(names), -np.inf)}
        if b.shape[0] == 0 or b.shape[1] == 0:
            return
        peak = b.max(axis=0)
        hot = peak >= self.threshold
        if not hot.any():  # the common case: one reduction, no per-resource work
            np.maximum(s["peak"], peak, out=s["peak"])
            return
        cols = np.flatnonzero(hot)
        s["steps"][cols] += (b[:, cols] >= self.threshold).sum(axis=0)
        np.maximum(s["peak"], peak, out=s["peak"])

    def add_reduced(self, kind: str, names, peak, steps_over, *, key: Any = None) -> None:
        """Add a chunk already reduced per resource: its peak busy share and its steps at or above the threshold."""
        k = (kind, key)
        s = self._series.get(k)
        if s is None:
            s = self._series[k] = {"names": names, "steps": np.zeros(len(names), dtype=np.int64),
                                   "peak": np.full(len(names), -np.inf)}
        s["steps"] += steps_over
        np.maximum(s["peak"], peak, out=s["peak"])

    def add_steady(self, kind: str, names, busy) -> None:
        """One steady-state operating point per resource (no time axis): rows with ``duration_s`` None."""
        from densim.saturation import saturation_rows

        self._steady.extend(saturation_rows(list(names), np.asarray(busy, dtype=float), kind=kind, threshold=self.threshold))

    def rows(self) -> list[dict[str, Any]]:
        """Every resource at or above the threshold in some step (series) or at its operating point (steady):
        ``resource``, ``kind``, ``peak`` (busy share), ``steps``, ``duration_s`` (steps x step seconds; None
        for a steady row) and ``share_of_time`` (steps / the run's steps), steady rows first."""
        out = list(self._steady)
        T = max(self.n_steps, 1)
        for (kind, _key), s in self._series.items():
            for j in np.flatnonzero(s["steps"]):
                n = int(s["steps"][j])
                out.append({"resource": str(s["names"][j]), "kind": kind, "peak": float(s["peak"][j]), "steps": n,
                            "duration_s": float(n * self.step_s), "share_of_time": float(n / T)})
        return out


@dataclass
class EngineContext:
    """Everything a run reads and the stages share: the resolved scenario, hosts, VM rows, demand, time grid.

    Built by :func:`build_context` (or, for one part of a distributed run, by
    :func:`densim.engine.partition.part_context`) and handed to every stage hook
    (``prepare``/``before_cpu``/``after_cpu``/``finish``, :mod:`densim.engine.stages`) and to
    :class:`densim.engine.result.Result`. Shapes: ``vms`` has V rows, ``hosts`` H rows, ``grid``
    T steps of ``grid.step_s`` seconds; the demand source gives (steps, V) windows of the VM rows.

    Who writes what: :func:`build_context` sets ``plant``, ``grid``, ``vms``, ``hosts``, ``source``,
    ``rng``, ``seed`` and, when VMs arrive and leave or fail, ``schedule`` and ``failures``;
    :func:`densim.engine.run.run_placed` sets ``stages`` (the active stages by name, in run order)
    and ``liveness``; stages add to ``metrics`` through :meth:`declare` and to ``saturation``
    through :func:`densim.engine.stages.add_saturation`. ``ctx.vms.host`` is the only placement
    state: initial placement, the online schedule and landed migrations all write it there.

    Invariants: ``source.n_vms == vms.n``; the grid is fixed before the run starts (a run with
    lifetimes or failures fixes it while planning the schedule); ``liveness`` is None exactly when
    ``schedule`` is None once the run started (None: every VM row is alive at every step).
    """

    plant: Plant
    grid: TimeGrid
    vms: VmTable
    hosts: HostTable
    source: DemandSource
    rng: np.random.Generator
    seed: int
    metrics: dict[str, Metric] = field(default_factory=dict)
    saturation: SaturationLog | None = None
    stages: dict[str, Any] = field(default_factory=dict)  # active stages by name (set by the engine)
    schedule: Any = None  # densim.placement.online.Schedule when VMs arrive and leave (scheduling.lifetimes)
    failures: Any = None  # densim.engine.failures.FailureRun when the scenario has a failures: section
    # densim.engine.lifetimes.Liveness when VMs arrive and leave (lifetimes or failures): THE one place a
    # stage reads which VM is alive when (alive shares and masks per step, peaks per host); set by the engine
    liveness: Any = None
    # densim.placement.failover.Failover when the one event loop placed the VMs (failures or maintenance):
    # its migrations (``.mig``, engine rows in columns M_INST_SRC/M_INST_DST) are charged by engine/migration.py
    moves: Any = None
    # densim.placement.gpu.GpuProblem when VMs ask for GPUs: the GPUs' state and each VM's GPU after placement
    gpu: Any = None

    def __post_init__(self) -> None:
        if self.saturation is None:
            self.saturation = SaturationLog(self.grid.n_steps, self.grid.step_s)

    @property
    def scenario(self) -> Scenario:
        """What the user wrote (settings the stages read); parts come resolved from :attr:`plant`."""
        return self.plant.spec

    def stage(self, name: str):
        """The active stage ``name``, or None when the scenario switches it off."""
        return self.stages.get(name)

    def declare(self, name: str, *, level: str, agg: str = "mean", unit: str = "", doc: str = "") -> None:
        """Declare metric ``name`` (see :class:`Metric`) before a stage writes it to a chunk; a second
        declaration of one name replaces the first. Raises ValueError on a level or aggregation
        other than ``vm``/``host`` and ``mean``/``sum``/``max``."""
        if level not in ("vm", "host") or agg not in ("mean", "sum", "max"):
            raise ValueError(f"bad metric declaration {name!r}: level {level!r}, agg {agg!r}")
        self.metrics[name] = Metric(name, level, agg, unit, doc)


def build_hosts(plant: Plant) -> HostTable:
    """The :class:`HostTable` of ``plant``'s host groups, in scenario order (see the class for units)."""
    names, grp, snames = [], [], []
    cols: dict[str, list] = {k: [] for k in ("sockets", "cores", "logical", "core_mhz", "gain", "mem", "ru", "kind", "idle", "peak", "table", "exp")}
    for gi, hg in enumerate(plant.host_groups):
        server, cpu, count, label = hg.server, hg.cpu, hg.count, hg.label
        snames.append(label)
        for _ in range(count):
            names.append(f"{label}-{len(names)}")
        grp += [gi] * count
        sockets = server.cpu.sockets
        cols["sockets"] += [sockets] * count
        cols["cores"] += [sockets * cpu.cores] * count
        cols["logical"] += [sockets * cpu.cores * cpu.threads_per_core] * count
        cols["core_mhz"] += [cpu.base_mhz] * count
        cols["gain"] += [cpu.smt_gain if cpu.threads_per_core > 1 else 1.0] * count
        cols["mem"] += [server.memory_bytes] * count
        cols["ru"] += [server.rack_units] * count
        p = server.power
        cols["kind"] += [p.model] * count
        cols["idle"] += [p.idle_w or 0.0] * count
        cols["peak"] += [p.peak_w or p.idle_w or 0.0] * count
        cols["table"] += [as_table_w(p)] * count
        cols["exp"] += [p.exponent] * count
    cores = np.array(cols["cores"], dtype=np.float64)
    gain = np.array(cols["gain"], dtype=np.float64)
    core_mhz = np.array(cols["core_mhz"], dtype=np.float64)
    return HostTable(
        names=np.array(names, dtype=object),
        group=np.array(grp, dtype=np.int32),
        server_names=snames,
        sockets=np.array(cols["sockets"], dtype=np.int32),
        cores=cores,
        logical_cpus=np.array(cols["logical"], dtype=np.float64),
        core_mhz=core_mhz,
        capacity_mhz=cores * gain * core_mhz,
        capacity_cores=cores * gain,
        mem_bytes=np.array(cols["mem"], dtype=np.float64),
        rack_units=np.array(cols["ru"], dtype=np.float64),
        power_kind=np.array(cols["kind"], dtype=object),
        power_idle_w=np.array(cols["idle"], dtype=np.float64),
        power_peak_w=np.array(cols["peak"], dtype=np.float64),
        power_table_w=np.array(cols["table"], dtype=np.float64).reshape(len(names), 11),
        power_exponent=np.array(cols["exp"], dtype=np.float64),
    )


def build_source(sc: Scenario, seed: int) -> tuple[DemandSource, list[str], np.ndarray]:
    """The demand of every VM group: a synthetic profile, or a trace opened through the format registry."""
    parts: list[DemandSource] = []
    traces: dict[tuple[str, str, int | None], Any] = {}
    for gi, g in enumerate(sc.vms):
        if g.profile is not None:
            src = ProfileSource(g.name, g.profile, g.count, g.vcpus, g.vcpu_mhz or 2000.0, g.memory_bytes, seed + 7919 * (gi + 1))
            if g.arrivals is not None:
                from densim.workloads.tasks import synthetic_lifetimes

                src.start_s, src.end_s = synthetic_lifetimes(g.arrivals, g.count, sc.simulation.start_s or 0.0,
                                                             seed + 7919 * (gi + 1) + 1)
            parts.append(src)
            continue
        t = g.trace
        fmt = get_format(t.format, t.path, f"vms[{gi}].trace.format")
        if not fmt.replayable:
            raise InputError(t.path, f"vms[{gi}].trace.format", f"format {t.format!r} is read by 'densim plan', not by the engine")
        key = (t.format, t.path, t.limit)
        if key not in traces:
            traces[key] = fmt.open(Path(t.path), limit=t.limit)
        src = fmt.to_source(traces[key], g)
        if g.sizes is not None:  # per-VM sizes instead of the trace's (densim plan's right-sized VMs)
            from densim.placement.given import sizes_override

            src.sizes = sizes_override(src.sizes, g.sizes, f"vms[{gi}].sizes", sc.base_dir)
        parts.append(src)
    group = np.concatenate([np.full(p.n_vms, i, dtype=np.int32) for i, p in enumerate(parts)])
    return CompositeSource(parts), [g.name for g in sc.vms], group


def build_grid(sc: Scenario, source: DemandSource) -> TimeGrid:
    """The run's time grid when no VM arrives or leaves: from ``simulation.start`` (else the traces' start,
    else 0) over ``simulation.horizon`` (else to the traces' end), in whole steps (the last one may
    reach past the horizon). InputError when no horizon can be found or the traces end before the start."""
    sim = sc.simulation
    span = source.span_s()
    start = sim.start_s if sim.start_s is not None else (span[0] if span else 0.0)
    if sim.horizon_s is not None:
        horizon = sim.horizon_s
    elif span is not None:
        horizon = span[1] - start
    else:
        raise InputError(sc.name, "simulation.horizon", "required when no VM group is driven by a trace")
    if horizon <= 0:
        raise InputError(sc.name, "simulation.horizon", "the traces end before the simulation starts")
    n = max(1, int(math.ceil(horizon / sim.step_s - 1e-9)))
    return TimeGrid(start_s=float(start), step_s=float(sim.step_s), n_steps=n)


def _given_groups(source: DemandSource) -> tuple[list[str], np.ndarray]:
    """The VM groups of a given source: its own (``group_names`` and ``group_of_vm``, e.g. densim plan's landing VMs
    split by GPU request, one scenario VM group each), else one group named after the source."""
    names = getattr(source, "group_names", None)
    if names is not None:
        return list(names), np.asarray(source.group_of_vm, dtype=np.int32)
    return [getattr(source, "group_name", "synthetic")], np.zeros(source.n_vms, dtype=np.int32)


def build_context(plant: Plant, seed: int | None = None, source: DemandSource | None = None) -> EngineContext:
    """Arrays for ``plant``: hosts, VMs and their demand source, the time grid, the seeded generator.

    ``source`` replaces the scenario's VM groups with one demand source (a synthetic trace, say):
    its VMs form one group named after the source (or the groups it names, :func:`_given_groups`), and its own time grid (cut to the scenario's
    horizon when one is set) is the run's grid.
    """
    from densim.rng import make_rng

    sc = plant.spec
    seed = sc.simulation.seed if seed is None else int(seed)
    hosts = build_hosts(plant)
    sched = frun = fsched = moves = gpu = None
    from densim.workloads.tasks import lifetimes

    # a given source whose VMs arrive (per-VM start_s/end_s: densim plan's migration waves landing VMs) is scheduled
    # like the scenario's own groups: online placement, failures and maintenance on the one timeline
    given_arrivals = source is not None and lifetimes(source) is not None
    if source is None or given_arrivals:
        from densim.engine.lifetimes import plan_schedule, wants_lifetimes

        if source is None:
            source, group_names, group = build_source(sc, seed)
        else:
            group_names, group = _given_groups(source)
        from densim.engine.failures import wants_timeline
        from densim.placement.gpu import problem_of
        from densim.workloads.sources import vm_gpu_counts

        timeline = wants_timeline(sc)
        lt = wants_lifetimes(sc, source) if not timeline else None
        # the VMs' GPU requests, placed by the same loop as their CPU and memory (None: no VM asks for a GPU)
        gpu = (problem_of(sc, plant, hosts.group, group, group_names, vm_gpu_counts(source, plant.host_groups))
               if (timeline or lt is not None) else None)
        if timeline:  # host failures, HA restarts, maintenance evacuations: rows are VM instances (engine/failures.py)
            from densim.engine.failures import plan_failures

            source, grid, fsched, vm_of, frun, moves, gpu = plan_failures(sc, source, hosts, seed, group, build_grid,
                                                                          plant.datastores, gpu=gpu)
            group = group[vm_of]
        elif lt is not None:
            sched = plan_schedule(sc, source, hosts, lt, gpu=gpu)
            source, grid = sched.source, sched.grid
        else:
            grid = build_grid(sc, source)
    else:
        group_names, group = _given_groups(source)
        grid = source.grid(sc.simulation.horizon_s)
    s = source.sizes
    vms = VmTable(names=s.names, group=group, group_names=group_names, vcpus=s.vcpus, vcpu_mhz=s.vcpu_mhz, mem_bytes=s.mem_bytes)
    ctx = EngineContext(plant=plant, grid=grid, vms=vms, hosts=hosts, source=source, rng=make_rng(seed), seed=seed)
    if sched is not None:
        ctx.schedule = sched.schedule
        vms.host = sched.schedule.host
    if gpu is not None:  # placed over time: each row's GPUs (a static placement's come from place_vms)
        ctx.gpu = gpu
    if fsched is not None:
        ctx.schedule = fsched
        ctx.failures = frun  # None without a failures: section (maintenance only)
        ctx.moves = moves  # the event loop's migrations (densim.placement.failover.Failover.mig), read by the planner
        vms.host = fsched.host
    return ctx
