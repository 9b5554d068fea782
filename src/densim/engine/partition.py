"""One run split by host partitions: each part simulates a range of hosts and the VMs placed on them.

Without migration the hosts of a run are independent once the VMs are placed: a host's CPU
contention, ready time and power depend only on its own VMs' demand. A run can therefore be cut
into parts that each cover a contiguous range of hosts ``[h0, h1)`` and the VMs placed there, run
anywhere (:mod:`densim.tools.distributed` runs them on a Dask cluster), and be put back together:

1. the whole run is placed once, on the driver (:func:`plan_run`), as :func:`densim.engine.simulate`
   places it. With VMs that arrive and leave (``scheduling.lifetimes``) or host failures
   (``failures:``) the online and failover placement runs here only: every engine row (a VM, or an
   instance of one between failures) has one host for the whole run, so an HA restart on a host of
   another part is simply a row of that part. The plan carries the schedule, the failure run and
   the demand source's wrappers (not the trace data, which a worker reads again);
2. each part (:func:`run_part`) rebuilds the run's context from the same plant and seed (or from the
   plan's placement), takes its hosts and rows (:func:`part_context`: a row subset of the demand
   source, of the schedule, and the failures of its own hosts) and runs the engine over the same
   chunks of steps as the whole run (``chunk_steps`` and the VM-series choice come from the plan);
3. :func:`merge_parts` scatters every part's per-VM and per-host sums, maxima and time series into
   whole-run arrays, takes the parts' per-host loads and saturation rows, puts the stages' summary
   sections together (:data:`SPLIT_RULES`) and builds the :class:`~densim.engine.result.Result`.
   Figures of the whole run (the failures section and tables, the scheduling counts, carbon's VM-years)
   are computed once from the driver's schedule and failure run over the merged series.

Every per-VM and per-host figure is computed from the same values in the same order as in one
process (the CPU kernel works host by host; a part keeps the whole run's choice of power formula),
so the merged result equals the single-process run; tests/engine/test_partition.py checks it. Rows
placed nowhere (VMs that fit nowhere, tasks that never started) go with part 0.

A stage splits when its state is host-local: virtualization (per-host platform and clock, per-VM
factors), memory (per-host reclamation and swap devices), storage on ``per-host`` datastores (one
array per host), carbon, power_cap and gpu (per-host sums over the steps, put side by side and added over all hosts
at the end: their totals are the one process's to the bit; their counts are added and gpu's maxima taken over the
parts; a gpu part holds its hosts' GPUs and their tenants, the driver's GPU placement goes with the plan,
:func:`_part_gpu`). What couples hosts across parts is refused with
its physical reason (:func:`split_refusal`): a ``shared`` datastore (one queue for the VMs of every
host, also as the VMs' swap), the batch-job fabric, and live migration.
"""

from __future__ import annotations

import dataclasses
import inspect
import io
import pickle
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from densim.engine.state import EngineContext, SaturationLog, VmTable, build_context
from densim.errors import InputError
from densim.plant import Plant
from densim.workloads.sources import CompositeSource, SubsetSource

SPLIT = "a run split by host partitions"


@dataclass
class PlacedRun:
    """The driver's placement of a run whose VMs arrive and leave or whose hosts fail (picklable)."""

    grid: Any  # TimeGrid
    vms: VmTable  # engine rows (VMs or instances) with their host
    schedule: Any  # densim.placement.online.Schedule
    failures: Any  # densim.engine.failures.FailureRun or None
    source: bytes  # the demand source's wrappers, pickled without its leaves (the scenario's VM groups)
    leaves: list[int]  # VMs of each leaf, in order: a worker checks its rebuilt groups against them


@dataclass
class RunPlan:
    """What every part needs: the plant, the seed, the whole run's placement and chunking (picklable)."""

    plant: Plant
    seed: int
    host_of_vm: np.ndarray  # int64 per engine row, -1 placed nowhere
    n_hosts: int
    chunk_steps: int
    keep_vm: bool
    power_one_table: bool
    placed: PlacedRun | None = None  # lifetimes or failures: the driver's schedule (a part does not place again)
    gpu: Any = None  # the driver's GPU placement (densim.placement.gpu.GpuProblem) when VMs ask for GPUs


@dataclass
class PartResult:
    """A part's figures: sums, maxima and series of its rows (``vm_idx``) and hosts ``[h0, h1)``."""

    h0: int
    h1: int
    vm_idx: np.ndarray
    vm_sum: dict[str, np.ndarray]
    vm_max: dict[str, np.ndarray]
    vm_series: dict[str, np.ndarray]
    host_sum: dict[str, np.ndarray]
    host_max: dict[str, np.ndarray]
    host_series: dict[str, np.ndarray]
    # per host of the part: vCPUs, VMs and memory held (peak concurrent with lifetimes), powered on
    host_loads: dict[str, np.ndarray] = field(default_factory=dict)
    # per host of the part, with lifetimes or failures: power-ons and whether it was ever on
    boots: np.ndarray | None = None
    ever_on: np.ndarray | None = None
    saturation: list[dict[str, Any]] = field(default_factory=list)  # the part's rows (its hosts' resources)
    metrics: dict[str, Any] = field(default_factory=dict)  # what its stages declared
    timings: dict[str, float] = field(default_factory=dict)
    vm_steps: int = 0
    # per active stage: "host_sums" (partition_host_sums: carbon, gpu, power_cap), with "sums" (partition_sums: their
    # counts) and "max" (partition_max), or "sections" (its summary over this part),
    # "vm" (per-row arrays a whole-run summary needs), "slots" (a resource's label -> sort key)
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        """Bytes of array data in this result (what a part sends back)."""
        n = self.vm_idx.nbytes
        for d in (self.vm_sum, self.vm_max, self.vm_series, self.host_sum, self.host_max, self.host_series, self.host_loads):
            n += sum(a.nbytes for a in d.values())
        return n + sum(a.nbytes for s in self.stages.values() for a in s.get("vm", {}).values())


# How a split run puts a stage's figures together; a stage not here (and without ``partition_host_sums``, per-host
# arrays put side by side, or ``partition_sums``, counts the parts' add up, with ``partition_max`` for maxima, as
# carbon's, gpu's and power_cap's) cannot be split. "vm": per-row arrays of the stage a whole-run
# stage object takes to write its own summary; "sections": per key of a summary section, how the
# parts' values combine ("concat" lists of hosts, "union" dicts keyed by host, "slots" dicts keyed by a
# per-host datastore slot, in the whole run's slot order, "sum", "max"); a key not named must be the
# same in every part (settings), else the merge fails rather than write one part's figure.
SPLIT_RULES: dict[str, dict[str, Any]] = {
    "virtualization": {"vm": ("factor", "remote", "shadow_cyc")},
    "memory": {"sections": {"memory": {
        "hosts_short_of_memory": "concat", "hosts_swapping": "concat", "host_swapping_step_share": "union",
        "oversubscription_by_host": "union", "vms_slowed": "sum", "worst_vm_slowdown": "max",
        "fault_cpu": {"host_mean_mhz": "union", "host_peak_mhz": "union"},
        "tiering": {"hosts_tiered": "sum", "tier_gib_per_host": "max", "hosts_using_tier": "concat",
                    "tier_peak_gib_by_host": "union", "active_over_dram_by_host": "union",
                    "hosts_breaking_active_rule": "concat", "tier_device_util_peak": "max", "vms_slowed_by_tier": "sum",
                    "worst_vm_tier_slowdown": "max"}}}},
    "storage": {"slots": True, "sections": {
        "storage": {"datastores": "slots"},
        "storage_failures": {"data_loss_events": "sum", "vm_io_down_minutes": "sum", "datastores": "slots",
                             "boot_storms": "slots"}}},
}


def active_stages(ctx: EngineContext) -> list[str]:
    """Names of the stages the scenario switches on (the engine's factories decide, as in a run)."""
    from densim.engine.stages import load_plugins, ordered_entries

    load_plugins()
    return [e.name for e in ordered_entries() if e.obj(ctx) is not None]


def _splits(st) -> bool:
    return (bool(getattr(st, "partition_sums", None)) or bool(getattr(st, "partition_host_sums", None))
            or st.name in SPLIT_RULES)


def _shared_datastore(ctx: EngineContext) -> tuple[str, str] | None:
    """(field, message) when a placed row's disks or swap live on a ``shared`` datastore."""
    sc = ctx.scenario
    st = sc.storage
    if st.model == "none":
        return None
    placed = ctx.vms.host >= 0
    if st.hci is not None and placed.any():
        return ("storage.hci", f"the HCI datastore {st.hci.name!r} spreads every VM's data over every host's disks and "
                               f"storage network (and a resync over every host up): {SPLIT} cannot give a part its latency "
                               "(run it in one process)")
    names = [d.name for d in st.datastores]
    shared = {d.name for d in st.datastores if d.scope == "shared"}
    if not shared or not placed.any():
        return None
    tail = (f"{SPLIT} cannot give a part its latency (run it in one process, or give the datastore scope: per-host, "
            "one array per host)")
    swap = sc.memory.swap_datastore if sc.memory.model != "none" else None
    if swap is not None and swap != "vm" and swap in shared:
        return ("memory.swap_datastore", f"the VMs' host swap is on datastore {swap!r}, one array (scope: shared) whose "
                                         f"queue the swap of every host joins: {tail}")
    for g in np.unique(ctx.vms.group[placed]):
        ds = sc.vms[int(g)].datastore or st.default_datastore
        if ds in shared:
            return (f"storage.datastores[{names.index(ds)}].scope",
                    f"datastore {ds!r} is one array (scope: shared) whose queue the VMs of every host join: {tail}")
    return None


def split_refusal(ctx: EngineContext) -> tuple[str, str] | None:
    """(field, one-line message with the physical reason) when the placed run ``ctx`` cannot be split by
    host partitions; None when it can."""
    from densim.engine.stages import load_plugins, ordered_entries

    if ctx.scenario.migration.model != "none":
        return "migration", f"{SPLIT} cannot move VMs between parts (run it in one process)"
    load_plugins()
    for e in ordered_entries():
        st = e.obj(ctx)
        if st is None:
            continue
        if e.name == "fabric":
            return "fabric", (f"{SPLIT} cannot run the batch-job fabric: a job's VMs on hosts of different parts share "
                              f"its NICs, switches and storage pools (run it in one process)")
        if e.name == "storage":
            why = _shared_datastore(ctx)
            if why is not None:
                return why
        if not _splits(st):
            return "", f"{SPLIT} has no rule to put the stage {e.name}'s parts together (run it in one process)"
    return None


# ---- the demand source of a placed run, without its data ------------------------------------------


def _wrappers() -> tuple[type, ...]:
    """Sources that only wrap the scenario's VM groups (the leaves build_source makes)."""
    from densim.engine.failures import InstanceSource
    from densim.workloads.tasks import ScheduledSource

    return (CompositeSource, ScheduledSource, InstanceSource)


def _leaves(source) -> list:
    """The leaf sources under ``source`` (its VM groups as build_source made them), first seen first."""
    wrappers, out, seen = _wrappers(), [], set()

    def walk(s) -> None:
        if s is None or id(s) in seen:
            return
        seen.add(id(s))
        if not isinstance(s, wrappers):
            out.append(s)
            return
        for child in (*(getattr(s, "parts", None) or ()), getattr(s, "inner", None), getattr(s, "orig", None)):
            walk(child)

    walk(source)
    return out


def _detach(source) -> tuple[bytes, list[int]]:
    """``source`` pickled with its leaves left out (each a reference by position), and their sizes."""
    leaves = _leaves(source)
    ids = {id(x): i for i, x in enumerate(leaves)}

    class Detach(pickle.Pickler):
        def persistent_id(self, obj):
            i = ids.get(id(obj))
            return None if i is None else ("leaf", i)

    buf = io.BytesIO()
    Detach(buf, protocol=5).dump(source)
    return buf.getvalue(), [x.n_vms for x in leaves]


def _attach(blob: bytes, sizes: list[int], raw) -> Any:
    """The source :func:`_detach` pickled, over the leaves of ``raw`` (the groups rebuilt from the scenario)."""
    leaves = _leaves(raw)
    if [x.n_vms for x in leaves] != sizes:
        raise ValueError(f"the plan's VM groups have {sizes} VMs, the scenario builds {[x.n_vms for x in leaves]}")

    class Attach(pickle.Unpickler):
        def persistent_load(self, pid):
            return leaves[pid[1]]

    return Attach(io.BytesIO(blob)).load()


class _PartSource(SubsetSource):
    """Rows ``idx`` of a scheduled or instance source: its windows of those rows only (``vms`` asks for some
    of them), and its factored demand of instances (``active_factors``) where it has one."""

    def __init__(self, parent, idx: np.ndarray) -> None:
        super().__init__(parent, idx)
        self._takes_vms = "vms" in inspect.signature(parent.window).parameters

    def window(self, grid, t0, t1, channels, vms: np.ndarray | None = None):
        ids = self.idx if vms is None else self.idx[np.asarray(vms, dtype=np.int64)]
        if ids.size == 0:  # no row of the part alive in the chunk (a scheduled source gives no channel then)
            return {ch: np.zeros((t1 - t0, 0), dtype=np.float32) for ch in channels if ch in self.channels}
        if self._takes_vms:
            return self.parent.window(grid, t0, t1, channels, vms=ids)
        return {k: np.ascontiguousarray(v[:, ids]) for k, v in self.parent.window(grid, t0, t1, channels).items()}

    def active_factors(self, grid, t0, t1, ids):
        f = getattr(self.parent, "active_factors", None)
        return None if f is None else f(grid, t0, t1, self.idx[np.asarray(ids, dtype=np.int64)])


def _part_source(source, idx: np.ndarray):
    """Rows ``idx`` (ascending) of a placed run's source; a composite keeps every group (the memory stage
    reads each group's channels), a group with none of the rows being empty."""
    if isinstance(source, CompositeSource):
        parts = []
        for i, p in enumerate(source.parts):
            lo, hi = source.offsets[i], source.offsets[i + 1]
            parts.append(_part_source(p, idx[(idx >= lo) & (idx < hi)] - lo))
        return CompositeSource(parts, concat=source.concat)
    return _PartSource(source, idx)


def _subset(source, idx: np.ndarray):
    """``source.subset(idx)``; a part without VMs (hosts no VM was placed on) takes none of the first group's."""
    if idx.size == 0:
        while isinstance(source, CompositeSource):  # a composite of no parts has no sizes to concatenate
            source = source.parts[0]
    return source.subset(idx)


def _part_failures(fr, h0: int, h1: int, vm_idx: np.ndarray):
    """The failure run as a part sees it: its hosts' down intervals and per-host drive failures in the
    part's host numbering, its rows' instance times. The whole run's summary reads the driver's own."""
    if fr is None:
        return None
    on = (fr.down_host >= h0) & (fr.down_host < h1)
    ev = fr.events
    if ev.storage is not None:  # a per-host datastore's drives: host index in the part, -2 outside it
        sh = ev.storage.host
        local = np.where(sh < 0, sh, np.where((sh >= h0) & (sh < h1), sh - h0, -2))
        ev = dataclasses.replace(ev, storage=dataclasses.replace(ev.storage, host=local))
    rows = {k: None if getattr(fr, k) is None else getattr(fr, k)[vm_idx] for k in ("vm_of", "boot_from_s", "up_s")}
    return dataclasses.replace(fr, events=ev, down_host=fr.down_host[on] - h0, down_start_s=fr.down_start_s[on],
                               down_end_s=fr.down_end_s[on], down_event=fr.down_event[on], **rows)


# ---- plan, parts, merge ----------------------------------------------------------------------------


def plan_run(plant: Plant, seed: int | None = None) -> tuple[RunPlan, EngineContext, dict[str, float]]:
    """Build and place the whole run once; returns the plan for the parts, the placed context and timings.

    Raises :class:`~densim.errors.InputError` (one line, the physical reason) when the run cannot be split."""
    from densim.engine.run import ELEMENTS_PER_CHUNK, default_chunk_steps, keeps_vm_series, place_vms

    t0 = time.perf_counter()
    ctx = build_context(plant, seed)
    timings = {"build_s": time.perf_counter() - t0}
    sc = plant.spec
    if sc.migration.model != "none":  # before placing: nothing to place for
        raise InputError(sc.name, *split_refusal(ctx))
    t1 = time.perf_counter()
    place_vms(ctx)  # with lifetimes or failures build_context placed them (online, failover) already
    timings["placement_s"] = time.perf_counter() - t1
    why = split_refusal(ctx)
    if why is not None:
        raise InputError(sc.name, *why)
    keep_vm = keeps_vm_series(ctx)
    chunk = default_chunk_steps(ctx)
    placed = None
    if ctx.schedule is not None:
        if not sc.simulation.chunk_steps and not keep_vm and not active_stages(ctx):
            # the engine steps only the rows alive in a chunk, chunked by the whole run's concurrency (run_placed)
            from densim.engine.lifetimes import Liveness

            chunk = Liveness(sc, ctx.schedule, ctx.hosts, ctx.vms.vcpus).chunk_steps(
                ctx.grid.n_steps, ctx.grid.step_s, ELEMENTS_PER_CHUNK // 4)
        blob, sizes = _detach(ctx.source)
        placed = PlacedRun(grid=ctx.grid, vms=ctx.vms, schedule=ctx.schedule, failures=ctx.failures, source=blob,
                           leaves=sizes)
    t = ctx.hosts.power_table_w
    plan = RunPlan(plant=plant, seed=ctx.seed, host_of_vm=np.asarray(ctx.vms.host, dtype=np.int64), n_hosts=ctx.hosts.n,
                   chunk_steps=chunk, keep_vm=keep_vm, power_one_table=bool(t.shape[0]) and bool(np.all(t == t[0])),
                   placed=placed, gpu=getattr(ctx, "gpu", None))
    return plan, ctx, timings


def host_ranges(host_of_vm: np.ndarray, n_hosts: int, parts: int) -> list[tuple[int, int]]:
    """Contiguous host ranges, at most ``parts``, each with about the same number of placed VMs."""
    parts = max(1, min(int(parts), n_hosts))
    placed = host_of_vm[host_of_vm >= 0]
    per_host = np.bincount(placed, minlength=n_hosts).astype(np.float64) + 1e-9  # empty hosts weigh a little
    cum = np.cumsum(per_host)
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, parts) / parts, side="right")
    edges = np.unique(np.r_[0, np.clip(cuts, 1, n_hosts - 1) if n_hosts > 1 else [], n_hosts].astype(np.int64))
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def part_vms(host_of_vm: np.ndarray, h0: int, h1: int, first: bool) -> np.ndarray:
    """The rows of part ``[h0, h1)``, ascending; the first part also takes the rows placed nowhere."""
    sel = (host_of_vm >= h0) & (host_of_vm < h1)
    if first:
        sel |= host_of_vm < 0
    return np.flatnonzero(sel)


#: fields of a GpuProblem per host (first axis) and per engine row, as a part takes them
_GPU_HOST = ("host_model", "host_ngpu", "gmode", "gkey", "gused", "gowner")
_GPU_ROW = ("kind", "req", "count", "vm_gpu", "vm_mig_start", "vm_mask", "first_run")


def _part_gpu(p, h0: int, h1: int, vm_idx: np.ndarray):
    """The driver's GPU placement as part ``[h0, h1)`` sees it: its hosts' GPUs, its rows' requests and GPUs, and
    each passthrough GPU's owner renumbered to the part's rows (an owner sits on the part's hosts, so is one of them)."""
    if p is None:
        return None
    out = {k: getattr(p, k)[h0:h1] for k in _GPU_HOST}
    out.update({k: getattr(p, k)[vm_idx] for k in _GPU_ROW})
    own = out["gowner"]
    out["gowner"] = np.where(own >= 0, np.searchsorted(vm_idx, np.maximum(own, 0)), -1).astype(own.dtype)
    return dataclasses.replace(p, **out)


def part_context(ctx: EngineContext, plan: RunPlan, h0: int, h1: int, vm_idx: np.ndarray) -> EngineContext:
    """The context of one part: hosts ``[h0, h1)`` and rows ``vm_idx`` with their placement (and, for a
    placed run, their schedule and the failures of the part's hosts)."""
    v = ctx.vms
    host = plan.host_of_vm[vm_idx]
    local = np.where(host >= 0, host - h0, -1)
    vms = VmTable(names=v.names[vm_idx], group=v.group[vm_idx], group_names=v.group_names, vcpus=v.vcpus[vm_idx],
                  vcpu_mhz=v.vcpu_mhz[vm_idx], mem_bytes=v.mem_bytes[vm_idx], host=local)
    hosts = ctx.hosts.subset(h0, h1)
    hosts.power_one_table = plan.power_one_table
    if ctx.schedule is None:
        sub = EngineContext(plant=ctx.plant, grid=ctx.grid, vms=vms, hosts=hosts, source=_subset(ctx.source, vm_idx),
                            rng=ctx.rng, seed=ctx.seed)
        sub.gpu = _part_gpu(plan.gpu, h0, h1, vm_idx)
        return sub
    sub = EngineContext(plant=ctx.plant, grid=ctx.grid, vms=vms, hosts=hosts, source=_part_source(ctx.source, vm_idx),
                        rng=ctx.rng, seed=ctx.seed)
    s = ctx.schedule
    # the part's Liveness (built by the engine from sub.schedule) is the part's rows
    sub.schedule = dataclasses.replace(s, host=local, start_s=s.start_s[vm_idx], end_s=s.end_s[vm_idx],
                                       arrival_s=s.arrival_s[vm_idx], status=s.status[vm_idx])
    sub.failures = _part_failures(ctx.failures, h0, h1, vm_idx)
    sub.gpu = _part_gpu(plan.gpu, h0, h1, vm_idx)
    return sub


def _context(plan: RunPlan) -> EngineContext:
    """The whole run's context on a worker: built from the plant, or, for a placed run, from the plan's
    placement and the scenario's VM groups (no placement runs again)."""
    if plan.placed is None:
        return build_context(plan.plant, plan.seed)
    from densim.engine.state import build_hosts, build_source
    from densim.rng import make_rng

    p = plan.placed
    raw, _, _ = build_source(plan.plant.spec, plan.seed)
    ctx = EngineContext(plant=plan.plant, grid=p.grid, vms=p.vms, hosts=build_hosts(plan.plant),
                        source=_attach(p.source, p.leaves, raw), rng=make_rng(plan.seed), seed=plan.seed)
    ctx.schedule, ctx.failures = p.schedule, p.failures
    return ctx


def _stage_payload(st, sub: EngineContext, h0: int) -> dict[str, Any]:
    """What the merge needs of a part's stage: its sums, or its summary sections over the part, per-row
    arrays, and the order of its per-host resources in the whole run."""
    from densim.engine.summary import StageSummary

    if getattr(st, "partition_host_sums", None) or getattr(st, "partition_sums", None):
        # per-host arrays over the part's hosts in their order (carbon, gpu, power_cap), counts, maxima
        return {"host_sums": {k: np.asarray(getattr(st, k)) for k in getattr(st, "partition_host_sums", ())},
                "sums": {k: getattr(st, k) for k in getattr(st, "partition_sums", ())},
                "max": {k: getattr(st, k) for k in getattr(st, "partition_max", ())}}
    rule = SPLIT_RULES[st.name]
    out: dict[str, Any] = {"vm": {k: getattr(st, k) for k in rule.get("vm", ())}}
    if "sections" in rule:
        view = StageSummary.standalone(st)
        st.finish(sub, view)
        out["sections"] = {k: view[k] for k in view}
    if rule.get("slots"):  # storage: slot label -> (datastore, host in the whole run), the whole run's slot order
        out["slots"] = {name: (int(d), int(hh) + h0 if hh >= 0 else -1)
                        for name, d, hh in zip(st.slot_names, st.slot_ds, st.slot_host)}
    return out


def run_part(plan: RunPlan, h0: int, h1: int, *, threads: int | None = None) -> PartResult:
    """Run the hosts ``[h0, h1)`` of a planned run (anywhere: this is what a worker calls)."""
    from densim._jit import set_threads
    from densim.engine.run import run_placed

    t0 = time.perf_counter()
    prev = set_threads(threads) if threads is not None else None
    try:
        ctx = _context(plan)
        if ctx.vms.n != plan.host_of_vm.size or ctx.hosts.n != plan.n_hosts:
            raise ValueError(f"the plan has {plan.host_of_vm.size} VMs on {plan.n_hosts} hosts, the plant builds "
                             f"{ctx.vms.n} on {ctx.hosts.n}")
        vm_idx = part_vms(plan.host_of_vm, h0, h1, first=h0 == 0)
        sub = part_context(ctx, plan, h0, h1, vm_idx)
        build_s = time.perf_counter() - t0
        res = run_placed(sub, chunk_steps=plan.chunk_steps, keep_vm=plan.keep_vm)
        stages = {st.name: _stage_payload(st, sub, h0) for st in res.stages}
    finally:
        if prev is not None:
            set_threads(prev)
    va, ha, live = res.vm_acc, res.host_acc, res.liveness
    return PartResult(h0=h0, h1=h1, vm_idx=vm_idx, vm_sum=dict(va.sum), vm_max=dict(va.max), vm_series=dict(va.series),
                      host_sum=dict(ha.sum), host_max=dict(ha.max), host_series=dict(ha.series),
                      host_loads={"vcpus": res.vcpus_per_host, "vms": res.vms_per_host, "mem": res.mem_per_host,
                                  "on": res.host_on},
                      boots=None if live is None else live.boots, ever_on=None if live is None else live.ever_on,
                      saturation=sub.saturation.rows(), metrics=dict(sub.metrics),
                      timings={"build_s": build_s, **res.timings, "part_s": time.perf_counter() - t0},
                      vm_steps=int(vm_idx.size) * sub.grid.n_steps, stages=stages)


class _MergedSaturation(SaturationLog):
    """The whole run's saturation log: the parts' rows (each resource belongs to one part's hosts)."""

    def __init__(self, n_steps: int, step_s: float, rows: list[dict[str, Any]]) -> None:
        super().__init__(n_steps, step_s)
        self._rows = rows

    def rows(self) -> list[dict[str, Any]]:
        return [*self._rows, *super().rows()]


class _MergedStage:
    """A stage of a split run in the result: its name and the summary sections put together from its parts."""

    def __init__(self, name: str, summary_sections: dict[str, type], sections: dict[str, dict[str, Any]]) -> None:
        self.name = name
        self.summary_sections = summary_sections
        self.sections = sections

    def finish(self, ctx, summary) -> None:
        for k, v in self.sections.items():
            summary.add(k, v)


def _combine(rule, values: list, where: str, slots: dict[str, tuple[int, int]]):
    """The parts' ``values`` of one summary key put together by ``rule`` (see :data:`SPLIT_RULES`)."""
    if isinstance(rule, dict):
        return {k: _combine(rule.get(k, "same"), [v[k] for v in values], f"{where}.{k}", slots)
                for k in values[0]}
    if rule == "concat":
        return [x for v in values for x in v]
    if rule in ("union", "slots"):
        out: dict[str, Any] = {}
        for v in values:
            out.update(v)
        if rule == "slots":  # the whole run's order: by datastore, then host
            out = dict(sorted(out.items(), key=lambda kv: slots[kv[0]]))
        return out
    if rule == "sum":
        return sum(values)
    if rule == "max":
        return max(values)
    if any(v != values[0] for v in values[1:]):
        raise ValueError(f"{where} differs between the parts of a split run and has no rule to merge them")
    return values[0]


def _merged_stages(ctx: EngineContext, parts: list[PartResult]) -> list:
    """The whole run's stages, in the engine's order, holding the figures of their parts."""
    from densim.engine.stages import STAGES, load_plugins, ordered_entries

    load_plugins()
    V = ctx.vms.n
    out = []
    for e in ordered_entries():
        name = e.name
        if name not in parts[0].stages:
            continue
        pay = [p.stages[name] for p in parts]
        st = STAGES.entry(name).obj(ctx)
        if "host_sums" in pay[0]:
            # per-host arrays (carbon, gpu, power_cap): the parts' hosts side by side, in the whole run's order, so
            # the stage adds them over the hosts as one process does; counts added, maxima the largest
            order = np.argsort([p.h0 for p in parts], kind="stable")
            for k in getattr(st, "partition_host_sums", ()):
                setattr(st, k, np.concatenate([pay[i]["host_sums"][k] for i in order]))
            for k in getattr(st, "partition_sums", ()):
                setattr(st, k, sum(x["sums"][k] for x in pay))
            for k in getattr(st, "partition_max", ()):
                setattr(st, k, max(x["max"][k] for x in pay))
        elif pay[0]["vm"]:  # per-row arrays (virtualization): the whole run's stage writes its own summary
            for k, a in pay[0]["vm"].items():
                whole = np.zeros(V, dtype=a.dtype)
                for p, x in zip(parts, pay):
                    whole[p.vm_idx] = x["vm"][k]
                setattr(st, k, whole)
        if "sections" in pay[0]:
            slots: dict[str, tuple[int, int]] = {}
            for x in pay:
                slots.update(x.get("slots", {}))
            rules = SPLIT_RULES[name]["sections"]
            st = _MergedStage(name, st.summary_sections,
                              {sec: _combine(rules.get(sec, {}), [x["sections"][sec] for x in pay], f"{name}.{sec}", slots)
                               for sec in pay[0]["sections"]})
        ctx.stages[name] = st
        out.append(st)
    return out


def merge_parts(ctx: EngineContext, parts: list[PartResult], timings: dict[str, float] | None = None):
    """The whole run's Result from its parts (``ctx``: the placed whole-run context of :func:`plan_run`)."""
    from densim.engine.result import Result
    from densim.engine.run import Accumulator

    V, H, T = ctx.vms.n, ctx.hosts.n, ctx.grid.n_steps
    parts = sorted(parts, key=lambda p: p.h0)
    covered = np.zeros(H, dtype=np.int64)
    for p in parts:
        covered[p.h0:p.h1] += 1
    if not np.all(covered == 1):
        raise ValueError("the parts do not cover every host exactly once")
    for p in parts:
        ctx.metrics.update(p.metrics)
    vm_acc = Accumulator(T, V, any(p.vm_series for p in parts))
    host_acc = Accumulator(T, H, any(p.host_series for p in parts))
    for acc, n, kinds in ((vm_acc, V, ("vm_sum", "vm_max", "vm_series")), (host_acc, H, ("host_sum", "host_max", "host_series"))):
        for kind, attr in zip(kinds, ("sum", "max", "series")):
            out = getattr(acc, attr)
            for p in parts:  # every metric any part has (a part's stage may report one only where it occurs)
                for name, a in getattr(p, kind).items():
                    if name not in out:
                        out[name] = np.zeros((T, n) if attr == "series" else n, dtype=a.dtype)
                    if kind.startswith("vm"):
                        out[name][..., p.vm_idx] = a
                    else:
                        out[name][..., p.h0:p.h1] = a
    ctx.saturation = _MergedSaturation(T, ctx.grid.step_s, [r for p in parts for r in p.saturation])
    loads = {k: np.concatenate([p.host_loads[k] for p in parts]) for k in ("vcpus", "vms", "mem", "on")}
    live = None
    if ctx.schedule is not None:  # the whole run's liveness: the driver's schedule, the parts' hosts' power-ons
        from densim.engine.lifetimes import Liveness

        live = Liveness(ctx.scenario, ctx.schedule, ctx.hosts, ctx.vms.vcpus)
        live.failures = ctx.failures
        live.boots = np.concatenate([p.boots for p in parts])
        live.ever_on = np.concatenate([p.ever_on for p in parts])
    ctx.liveness = live
    ctx.stages = {}
    stages = _merged_stages(ctx, parts)
    return Result(ctx=ctx, vm_acc=vm_acc, host_acc=host_acc, stages=stages, host_on=loads["on"],
                  vcpus_per_host=loads["vcpus"], vms_per_host=loads["vms"], mem_per_host=loads["mem"],
                  timings=dict(timings or {}), liveness=live)


def simulate_in_parts(plant: Plant, parts: int, *, seed: int | None = None):
    """The run split into ``parts`` host ranges, run one after the other in this process (for tests and
    as the reference of the distributed run)."""
    plan, ctx, timings = plan_run(plant, seed)
    results = [run_part(plan, h0, h1) for h0, h1 in host_ranges(plan.host_of_vm, plan.n_hosts, parts)]
    return merge_parts(ctx, results, timings)
