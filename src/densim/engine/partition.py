"""One run split by host partitions: each part simulates a range of hosts and the VMs placed on them.

Without migration the hosts of a run are independent once the VMs are placed: a host's CPU
contention, ready time and power depend only on its own VMs' demand. A run can therefore be cut
into parts that each cover a contiguous range of hosts ``[h0, h1)`` and the VMs placed there, run
anywhere (:mod:`densim.tools.distributed` runs them on a Dask cluster), and be put back together:

1. the whole run is placed once (:func:`plan_run`), as :func:`densim.engine.simulate` places it;
2. each part (:func:`run_part`) rebuilds the run's context from the same plant and seed, takes its
   hosts and VMs (:func:`part_context`: a VM subset of the demand source, so a part computes or reads
   only its own VMs' demand where the source allows it) and runs the engine over the same chunks of
   steps as the whole run (``chunk_steps`` and the VM-series choice come from the plan);
3. :func:`merge_parts` scatters every part's per-VM and per-host sums, maxima and time series into
   whole-run arrays and builds the :class:`~densim.engine.result.Result`.

Every per-VM and per-host figure is computed from the same values in the same order as in one
process (the CPU kernel works host by host; a part keeps the whole run's choice of power formula),
so the merged result is identical to the single-process run, bit for bit; tests/engine/test_partition.py
checks it. VMs placed nowhere (they only have a demand) go with part 0. Stages are not split (a
datastore or a fabric is shared by hosts of several parts): a run with an active stage is refused.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from densim.engine.state import EngineContext, VmTable, build_context
from densim.errors import InputError
from densim.plant import Plant


@dataclass
class RunPlan:
    """What every part needs: the plant, the seed, the whole run's placement and chunking (picklable)."""

    plant: Plant
    seed: int
    host_of_vm: np.ndarray  # int64 per VM, -1 placed nowhere
    n_hosts: int
    chunk_steps: int
    keep_vm: bool
    power_one_table: bool


@dataclass
class PartResult:
    """A part's figures: sums, maxima and series of its VMs (``vm_idx``) and hosts ``[h0, h1)``."""

    h0: int
    h1: int
    vm_idx: np.ndarray
    vm_sum: dict[str, np.ndarray]
    vm_max: dict[str, np.ndarray]
    vm_series: dict[str, np.ndarray]
    host_sum: dict[str, np.ndarray]
    host_max: dict[str, np.ndarray]
    host_series: dict[str, np.ndarray]
    saturation_peak: np.ndarray
    saturation_steps: np.ndarray
    timings: dict[str, float] = field(default_factory=dict)
    vm_steps: int = 0
    # per stage that sums over hosts (``partition_sums``, e.g. carbon): its sums over this part's hosts
    stage_sums: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        """Bytes of array data in this result (what a part sends back)."""
        n = self.vm_idx.nbytes + self.saturation_peak.nbytes + self.saturation_steps.nbytes
        for d in (self.vm_sum, self.vm_max, self.vm_series, self.host_sum, self.host_max, self.host_series):
            n += sum(a.nbytes for a in d.values())
        return n


def active_stages(ctx: EngineContext) -> list[str]:
    """Names of the stages the scenario switches on (the engine's factories decide, as in a run)."""
    from densim.engine.stages import load_plugins, ordered_entries

    load_plugins()
    return [e.name for e in ordered_entries() if e.obj(ctx) is not None]


def _split_stages(ctx: EngineContext) -> tuple[list[str], list[str]]:
    """(stages a split run can sum over its parts, stages it cannot): a stage whose figures are sums over
    hosts and steps (``partition_sums``: carbon's energy and gCO2) adds up part by part; a stage that
    couples hosts or fixes each VM's host at the start does not."""
    from densim.engine.stages import load_plugins, ordered_entries

    load_plugins()
    ok, bad = [], []
    for e in ordered_entries():
        st = e.obj(ctx)
        if st is not None:
            (ok if getattr(st, "partition_sums", None) else bad).append(e.name)
    return ok, bad


def plan_run(plant: Plant, seed: int | None = None) -> tuple[RunPlan, EngineContext, dict[str, float]]:
    """Build and place the whole run once; returns the plan for the parts, the placed context and timings."""
    from densim.engine.run import default_chunk_steps, keeps_vm_series, place_vms

    t0 = time.perf_counter()
    ctx = build_context(plant, seed)
    timings = {"build_s": time.perf_counter() - t0}
    _, stages = _split_stages(ctx)
    if stages:
        raise InputError(plant.spec.name, "", f"a run split by host partitions models CPU and power only; this scenario "
                                              f"switches on the stage(s) {', '.join(stages)} (run it in one process)")
    if ctx.scenario.migration.model != "none":
        raise InputError(plant.spec.name, "migration", "a run split by host partitions cannot move VMs between parts "
                                                       "(run it in one process)")
    if ctx.schedule is not None:
        raise InputError(plant.spec.name, "scheduling.lifetimes", "a run split by host partitions does not yet follow VMs "
                                                                  "that arrive and leave (run it in one process, or set "
                                                                  "scheduling.lifetimes: off)")
    t1 = time.perf_counter()
    place_vms(ctx)
    timings["placement_s"] = time.perf_counter() - t1
    t = ctx.hosts.power_table_w
    plan = RunPlan(plant=plant, seed=ctx.seed, host_of_vm=np.asarray(ctx.vms.host, dtype=np.int64), n_hosts=ctx.hosts.n,
                   chunk_steps=default_chunk_steps(ctx), keep_vm=keeps_vm_series(ctx),
                   power_one_table=bool(t.shape[0]) and bool(np.all(t == t[0])))
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
    """The VMs of part ``[h0, h1)``, ascending; the first part also takes the VMs placed nowhere."""
    sel = (host_of_vm >= h0) & (host_of_vm < h1)
    if first:
        sel |= host_of_vm < 0
    return np.flatnonzero(sel)


def part_context(ctx: EngineContext, plan: RunPlan, h0: int, h1: int, vm_idx: np.ndarray) -> EngineContext:
    """The context of one part: hosts ``[h0, h1)`` and VMs ``vm_idx`` with their placement."""
    v = ctx.vms
    host = plan.host_of_vm[vm_idx]
    vms = VmTable(names=v.names[vm_idx], group=v.group[vm_idx], group_names=v.group_names, vcpus=v.vcpus[vm_idx],
                  vcpu_mhz=v.vcpu_mhz[vm_idx], mem_bytes=v.mem_bytes[vm_idx], host=np.where(host >= 0, host - h0, -1))
    hosts = ctx.hosts.subset(h0, h1)
    hosts.power_one_table = plan.power_one_table
    return EngineContext(plant=ctx.plant, grid=ctx.grid, vms=vms, hosts=hosts, source=ctx.source.subset(vm_idx),
                         rng=ctx.rng, seed=ctx.seed)


def run_part(plan: RunPlan, h0: int, h1: int, *, threads: int | None = None) -> PartResult:
    """Run the hosts ``[h0, h1)`` of a planned run (anywhere: this is what a worker calls)."""
    from densim._jit import set_threads
    from densim.engine.run import run_placed

    t0 = time.perf_counter()
    prev = set_threads(threads) if threads is not None else None
    try:
        ctx = build_context(plan.plant, plan.seed)
        if ctx.vms.n != plan.host_of_vm.size or ctx.hosts.n != plan.n_hosts:
            raise ValueError(f"the plan has {plan.host_of_vm.size} VMs on {plan.n_hosts} hosts, the plant builds "
                             f"{ctx.vms.n} on {ctx.hosts.n}")
        vm_idx = part_vms(plan.host_of_vm, h0, h1, first=h0 == 0)
        sub = part_context(ctx, plan, h0, h1, vm_idx)
        build_s = time.perf_counter() - t0
        res = run_placed(sub, chunk_steps=plan.chunk_steps, keep_vm=plan.keep_vm)
    finally:
        if prev is not None:
            set_threads(prev)
    sat = sub.saturation._series.get(("host CPU", None))
    h = h1 - h0
    va, ha = res.vm_acc, res.host_acc
    return PartResult(h0=h0, h1=h1, vm_idx=vm_idx, vm_sum=dict(va.sum), vm_max=dict(va.max), vm_series=dict(va.series),
                      host_sum=dict(ha.sum), host_max=dict(ha.max), host_series=dict(ha.series),
                      saturation_peak=sat["peak"] if sat else np.full(h, -np.inf),
                      saturation_steps=sat["steps"] if sat else np.zeros(h, dtype=np.int64),
                      timings={"build_s": build_s, **res.timings, "part_s": time.perf_counter() - t0},
                      vm_steps=int(vm_idx.size) * sub.grid.n_steps,
                      stage_sums={st.name: {k: getattr(st, k) for k in st.partition_sums}
                                  for st in res.stages if getattr(st, "partition_sums", None)})


def merge_parts(ctx: EngineContext, parts: list[PartResult], timings: dict[str, float] | None = None):
    """The whole run's Result from its parts (``ctx``: the placed whole-run context of :func:`plan_run`)."""
    from densim.engine.result import Result
    from densim.engine.run import Accumulator, host_loads

    V, H, T = ctx.vms.n, ctx.hosts.n, ctx.grid.n_steps
    parts = sorted(parts, key=lambda p: p.h0)
    covered = np.zeros(H, dtype=np.int64)
    for p in parts:
        covered[p.h0:p.h1] += 1
    if not np.all(covered == 1):
        raise ValueError("the parts do not cover every host exactly once")
    first = parts[0]
    vm_acc = Accumulator(T, V, bool(first.vm_series))
    host_acc = Accumulator(T, H, bool(first.host_series))
    for acc, n, kinds in ((vm_acc, V, ("vm_sum", "vm_max", "vm_series")), (host_acc, H, ("host_sum", "host_max", "host_series"))):
        for kind, attr in zip(kinds, ("sum", "max", "series")):
            out = getattr(acc, attr)
            for name, a in getattr(first, kind).items():
                out[name] = np.zeros((T, n) if attr == "series" else n, dtype=a.dtype)
            for p in parts:
                for name, a in getattr(p, kind).items():
                    if kind.startswith("vm"):
                        out[name][..., p.vm_idx] = a
                    else:
                        out[name][..., p.h0:p.h1] = a
    peak = np.concatenate([p.saturation_peak for p in parts])
    steps = np.concatenate([p.saturation_steps for p in parts])
    ctx.saturation.add_reduced("host CPU", ctx.hosts.names, peak, steps)
    ctx.stages = {}
    stages = []
    ok, _ = _split_stages(ctx)
    from densim.engine.stages import STAGES

    for name in ok:  # the whole run's stage, holding the sums of its parts
        st = STAGES.entry(name).obj(ctx)
        for k in st.partition_sums:
            setattr(st, k, sum(p.stage_sums.get(name, {}).get(k, 0.0) for p in parts))
        stages.append(st)
        ctx.stages[name] = st
    vcpus_per_host, vms_per_host, mem_per_host, host_on = host_loads(ctx)
    return Result(ctx=ctx, vm_acc=vm_acc, host_acc=host_acc, stages=stages, host_on=host_on, vcpus_per_host=vcpus_per_host,
                  vms_per_host=vms_per_host, mem_per_host=mem_per_host, timings=dict(timings or {}))


def simulate_in_parts(plant: Plant, parts: int, *, seed: int | None = None):
    """The run split into ``parts`` host ranges, run one after the other in this process (for tests and
    as the reference of the distributed run)."""
    plan, ctx, timings = plan_run(plant, seed)
    results = [run_part(plan, h0, h1) for h0, h1 in host_ranges(plan.host_of_vm, plan.n_hosts, parts)]
    return merge_parts(ctx, results, timings)
