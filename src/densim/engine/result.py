"""Results: summary.json, per-host and per-VM Parquet tables, and the HTML report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

import densim
from densim.atomic import write_atomic, write_json_atomic
from densim.engine.state import EngineContext
from densim.engine.summary import (Core, GridInfo, ModelsInfo, PlacementInfo, Qos, SchedulingInfo, Summary, Totals,
                                   alive_steps, data_quality, ready_over_life)

# output columns, documented (the reference page is generated from this table)
VM_COLUMNS = {
    "vm": "VM name",
    "group": "VM group (scenario vms[].name)",
    "host": "host the VM was placed on ('' when it fits nowhere)",
    "placed": "whether the VM was placed",
    "vcpus": "virtual CPUs",
    "vcpu_mhz": "vCPU speed the demand is expressed against (MHz)",
    "memory_bytes": "configured memory (bytes)",
    "cpu_demand_mhz_s": "CPU demand integrated over time (MHz x s)",
    "cpu_delivered_mhz_s": "CPU delivered (MHz x s)",
    "cpu_unserved_mhz_s": "demand not delivered: host contention, the VM's own vCPU limit, or not placed (MHz x s)",
    "cpu_ready_s": "CPU Ready: time runnable vCPUs waited for a logical CPU (vCPU x s)",
    "cpu_ready_pct_mean": "CPU Ready per vCPU over the VM's own life: ready time / time alive (%)",
    "cpu_ready_pct_max": "worst step's CPU Ready per vCPU (%)",
}
HOST_COLUMNS = {
    "host": "host name",
    "server": "host group / server type",
    "powered_on": "whether the host draws power (has VMs, or unused hosts idle)",
    "vms": "VMs placed",
    "vcpus": "vCPUs placed",
    "cores": "physical cores",
    "capacity_mhz": "CPU capacity (cores x SMT gain x base MHz)",
    "memory_bytes": "host memory (bytes)",
    "memory_allocated_bytes": "configured memory of the VMs placed (bytes)",
    "rack_units": "rack units",
    "cpu_demand_mhz_s": "CPU claimed by the host's VMs (MHz x s)",
    "cpu_delivered_mhz_s": "CPU delivered (MHz x s)",
    "utilisation_mean": "mean CPU utilisation (0-1)",
    "utilisation_max": "peak step CPU utilisation (0-1)",
    "cpu_ready_pct_mean": "mean CPU Ready per vCPU (%)",
    "cpu_ready_pct_max": "worst step CPU Ready per vCPU (%)",
    "energy_j": "energy = sum of power x step (J)",
}
# added to vms.parquet when VMs arrive and leave (scheduling.lifetimes)
SCHEDULE_VM_COLUMNS = {
    "arrival_s": "when the VM (task) arrived (s, trace clock)",
    "start_s": "when it was placed and started (NaN if it never did)",
    "end_s": "when it left: start + its run length (NaN if it never started)",
    "wait_s": "scheduling delay: start - arrival",
    "status": "completed, running (at the end of the run), waiting, failed (larger than every host, or rejected), not-arrived",
}
# added to vms.parquet when VMs ask for GPUs (vms[].gpu)
GPU_VM_COLUMNS = {
    "gpu_mode": "the VM's GPU request: vgpu, mig, passthrough, or '' (none)",
    "gpu": "index of the VM's (first) GPU on its host; -1 without a GPU request or when not placed",
    "mig_start": "first memory slice of its MIG instance (NVML placement start); -1 when not a MIG instance",
}
SCHEDULE_STEP_COLUMNS = {
    "step": "step index",
    "time_s": "start of the step (s, trace clock)",
    "running": "VMs running at the start of the step",
    "waiting": "VMs waiting in the queue at the start of the step",
}
HOST_STEP_COLUMNS = {
    "step": "step index",
    "time_s": "start of the step (s, trace clock)",
    "host": "host name",
    "cpu_demand_mhz": "CPU claimed (MHz, step mean)",
    "cpu_delivered_mhz": "CPU delivered (MHz)",
    "utilisation": "CPU utilisation (0-1)",
    "cpu_ready_pct": "CPU Ready per vCPU (%)",
    "power_w": "power (W)",
}


@dataclass
class Result:
    """One finished run: its context, per-row totals and series, and the tables and summary built from them.

    Built once at the end of :func:`densim.engine.run.run_placed` (or by
    :func:`densim.engine.partition.merge_parts` for a distributed run) and not changed afterwards;
    read by the run tool, studies, sweeps, the report and ``densim serve``. The tables
    (:attr:`vms`, :attr:`hosts`, :meth:`host_steps`, :meth:`vm_steps`, :meth:`schedule_steps`) and
    :attr:`summary` are computed on first use; :meth:`write` writes them all.

    ``vm_acc``/``host_acc`` are the run's :class:`densim.engine.run.Accumulator` s over the VM rows
    (V) and hosts (H): sums over steps of per-step rates (MHz, W, %, ...), so a total in MHz x s or J
    is the sum times ``ctx.grid.step_s`` and a mean is the sum / T; maxima per row; (T, V)/(T, H)
    float32 series when kept. The per-host arrays, all (H,): ``host_on`` (drew power at some time),
    ``vcpus_per_host``/``vms_per_host``/``mem_per_host`` (vCPUs, VM rows, configured memory in bytes placed
    on the host; when VMs arrive and leave, vCPUs and memory are the peak alive at once and VM rows
    every row that ever ran there; with migration, the placement at the end).
    ``stages`` are the active stages in run order (the migration planner last, when there is one);
    each adds its sections to the summary. ``timings`` are wall-clock seconds by phase.
    """

    ctx: EngineContext
    vm_acc: Any  # densim.engine.run.Accumulator over the VM rows
    host_acc: Any  # densim.engine.run.Accumulator over the hosts
    stages: list
    host_on: np.ndarray  # (H,) bool
    vcpus_per_host: np.ndarray  # (H,) float64
    vms_per_host: np.ndarray  # (H,) int64
    mem_per_host: np.ndarray  # (H,) float64 bytes
    timings: dict[str, float] = field(default_factory=dict)
    liveness: Any = None  # densim.engine.lifetimes.Liveness when VMs arrive and leave

    # ---- tables ----------------------------------------------------------------------------
    @cached_property
    def vms(self):
        """``vms.parquet`` as a polars DataFrame: one row per VM row of the run (:data:`VM_COLUMNS`, then
        :data:`SCHEDULE_VM_COLUMNS` when VMs arrive and leave, :data:`GPU_VM_COLUMNS` when VMs ask for GPUs, then ``<metric>_<agg>`` per declared VM metric)."""
        import polars as pl

        c, v, step = self.ctx, self.vm_acc, self.ctx.grid.step_s
        T = c.grid.n_steps
        # name columns gathered from one polars string per name (a numpy unicode column is converted string by string)
        hosts_s = pl.Series([*c.hosts.names.astype(str).tolist(), ""], dtype=pl.String)
        groups_s = pl.Series([str(g) for g in c.vms.group_names], dtype=pl.String)
        cols: dict[str, Any] = {
            "vm": pl.Series(c.vms.names.astype(str).tolist(), dtype=pl.String),
            "group": groups_s.gather(np.asarray(c.vms.group, dtype=np.uint32)),
            "host": hosts_s.gather(np.where(c.vms.host >= 0, c.vms.host, c.hosts.n).astype(np.uint32)),
            "placed": c.vms.host >= 0,
            "vcpus": c.vms.vcpus,
            "vcpu_mhz": c.vms.vcpu_mhz,
            "memory_bytes": c.vms.mem_bytes,
            "cpu_demand_mhz_s": v.sum["cpu_demand_mhz"] * step,
            "cpu_delivered_mhz_s": v.sum["cpu_delivered_mhz"] * step,
            "cpu_unserved_mhz_s": (v.sum["cpu_demand_mhz"] - v.sum["cpu_delivered_mhz"]) * step,
            "cpu_ready_s": v.sum["cpu_ready_pct"] / 100.0 * c.vms.vcpus * step,
            "cpu_ready_pct_mean": ready_over_life(v.sum["cpu_ready_pct"], self.vm_alive_steps)[0],
            "cpu_ready_pct_max": v.max["cpu_ready_pct"],
        }
        if c.schedule is not None:
            from densim.placement.online import STATUS_NAMES

            sch = c.schedule
            cols.update(arrival_s=sch.arrival_s, start_s=sch.start_s, end_s=sch.end_s, wait_s=sch.wait_s,
                        status=np.array(STATUS_NAMES, dtype=object)[sch.status].astype(str))
        if getattr(c, "gpu", None) is not None:
            g = c.gpu
            cols.update(gpu_mode=np.array(["", "vgpu", "mig", "passthrough"], dtype=object)[g.kind].astype(str),
                        gpu=g.vm_gpu, mig_start=g.vm_mig_start)
        for name, m in c.metrics.items():
            if m.level == "vm" and name in v.sum:
                cols[f"{name}_{m.agg}"] = _agg(v, name, m.agg, T, step)
        return pl.DataFrame(cols)

    @cached_property
    def hosts(self):
        """``hosts.parquet`` as a polars DataFrame: one row per host (:data:`HOST_COLUMNS`, then
        ``<metric>_<agg>`` per declared host metric)."""
        import polars as pl

        c, h, step = self.ctx, self.host_acc, self.ctx.grid.step_s
        T = c.grid.n_steps
        cols: dict[str, Any] = {
            "host": c.hosts.names.astype(str),
            "server": np.array(c.hosts.server_names, dtype=object)[c.hosts.group].astype(str),
            "powered_on": self.host_on,
            "vms": self.vms_per_host,
            "vcpus": self.vcpus_per_host,
            "cores": c.hosts.cores,
            "capacity_mhz": c.hosts.capacity_mhz,
            "memory_bytes": c.hosts.mem_bytes,
            "memory_allocated_bytes": self.mem_per_host,
            "rack_units": c.hosts.rack_units,
            "cpu_demand_mhz_s": h.sum["cpu_demand_mhz"] * step,
            "cpu_delivered_mhz_s": h.sum["cpu_delivered_mhz"] * step,
            "utilisation_mean": h.sum["utilisation"] / T,
            "utilisation_max": h.max["utilisation"],
            "cpu_ready_pct_mean": h.sum["cpu_ready_pct"] / T,
            "cpu_ready_pct_max": h.max["cpu_ready_pct"],
            "energy_j": h.sum["power_w"] * step,
        }
        for name, m in c.metrics.items():
            if m.level == "host" and name in h.sum:
                cols[f"{name}_{m.agg}"] = _agg(h, name, m.agg, T, step)
        return pl.DataFrame(cols)

    def host_steps(self):
        """Long table (step x host) of the per-step host metrics, or None if not kept."""
        import polars as pl

        h = self.host_acc
        if not h.keep:
            return None
        T, H = self.ctx.grid.n_steps, self.ctx.hosts.n
        cols: dict[str, Any] = {
            "step": np.repeat(np.arange(T, dtype=np.int32), H),
            "time_s": np.repeat(self.ctx.grid.edges_s()[:-1], H),
            # one polars string per host, gathered: building 2.88 M Python strings from a numpy unicode array took 1.1 s
            "host": pl.Series(self.ctx.hosts.names.astype(str).tolist(), dtype=pl.String).gather(np.tile(np.arange(H, dtype=np.uint32), T)),
        }
        for name, arr in h.series.items():
            cols[name] = arr.ravel()
        return pl.DataFrame(cols)

    def schedule_steps(self):
        """VMs running and waiting at the start of every step (None without lifetimes)."""
        import polars as pl

        from densim.placement.online import running_and_waiting

        if self.ctx.schedule is None:
            return None
        t = self.ctx.grid.edges_s()[:-1]
        running, waiting = running_and_waiting(self.ctx.schedule, t)
        return pl.DataFrame({"step": np.arange(t.size, dtype=np.int32), "time_s": t, "running": running, "waiting": waiting})

    def vm_steps(self):
        """Long table (step x VM row) of the per-step VM metrics, or None when the run kept no VM series."""
        import polars as pl

        v = self.vm_acc
        if not v.keep:
            return None
        T, V = self.ctx.grid.n_steps, self.ctx.vms.n
        cols: dict[str, Any] = {
            "step": np.repeat(np.arange(T, dtype=np.int32), V),
            "vm": pl.Series(self.ctx.vms.names.astype(str).tolist(), dtype=pl.String).gather(np.tile(np.arange(V, dtype=np.uint32), T)),
        }
        for name, arr in v.series.items():
            cols[name] = arr.ravel()
        return pl.DataFrame(cols)

    @cached_property
    def vm_alive_steps(self) -> np.ndarray:
        """(V,) float64: steps each VM row is alive, the denominator of its CPU Ready over its life: its
        ``[start, end)`` in the schedule when VMs arrive and leave (fractional at the ends, 0 if it never
        started); every step for a placed VM otherwise, 0 for an unplaced one."""
        c = self.ctx
        if c.schedule is None:
            return np.where(c.vms.host >= 0, float(c.grid.n_steps), 0.0)
        return alive_steps(c.schedule.start_s, c.schedule.end_s, c.grid.edges_s())

    # ---- summary ---------------------------------------------------------------------------
    @cached_property
    def summary(self) -> Summary:
        """The typed :class:`~densim.engine.summary.Summary` (a read-only mapping over summary.json)."""
        c = self.ctx
        step = c.grid.step_s
        vs, hs = self.vm_acc.sum, self.host_acc.sum
        placed = c.vms.host >= 0
        ready_s = float(np.sum(vs["cpu_ready_pct"] / 100.0 * c.vms.vcpus * step))
        # each VM's CPU Ready over its own life (ready time / alive time), runs of one VM pooled
        vm_of = getattr(c.source, "vm_of", None) if c.schedule is not None else None
        vm_ready_life, lived = ready_over_life(vs["cpu_ready_pct"], self.vm_alive_steps, vm_of)
        energy_j = float(hs["power_w"].sum() * step)
        unplaced = c.vms.names[~placed].astype(str).tolist()
        # rows are runs of VMs when the event loop restarted or migrated them (engine/failures.py): count
        # VMs, not runs (a VM never started has exactly one row, unplaced; every other row is placed)
        n_vms = int(np.unique(vm_of).size) if vm_of is not None else int(c.vms.n)
        sc = c.scenario
        core = Core(
            densim_version=densim.__version__,
            scenario=sc.name,
            seed=c.seed,
            grid=GridInfo(start_s=c.grid.start_s, step_s=step, n_steps=c.grid.n_steps, horizon_s=c.grid.horizon_s),
            models=ModelsInfo(cpu_contention=sc.simulation.cpu_model, burstiness=sc.simulation.burstiness,
                              placement=sc.placement.policy, stages=[s.name for s in self.stages]),
            placement=PlacementInfo(policy=sc.placement.policy, cpu_overcommit=sc.placement.cpu_overcommit,
                                    memory_overcommit=sc.placement.memory_overcommit),
            hosts_total=int(c.hosts.n),
            hosts_used=int(np.count_nonzero(self.vms_per_host)),
            hosts_powered_on=int(np.count_nonzero(self.host_on)),
            vms_total=n_vms,
            vms_placed=n_vms - int(np.count_nonzero(~placed)),
            vms_unplaced=int(np.count_nonzero(~placed)),
            unplaced_vms=unplaced[:1000],
            rack_units_powered_on=float(c.hosts.rack_units[self.host_on].sum()),
            totals=Totals(
                cpu_demand_mhz_s=float(vs["cpu_demand_mhz"].sum() * step),
                cpu_delivered_mhz_s=float(vs["cpu_delivered_mhz"].sum() * step),
                cpu_unserved_mhz_s=float((vs["cpu_demand_mhz"].sum() - vs["cpu_delivered_mhz"].sum()) * step),
                cpu_ready_s=ready_s,
                energy_j=energy_j,
                energy_kwh=energy_j / 3.6e6,
            ),
            scheduling=self._scheduling_info(),
            data_quality=data_quality(_parts(c.source), n_vms),
            notes=source_notes(c.source) + _overspeed_notes(c),
            qos=Qos(
                cpu_ready_pct_mean=float(vm_ready_life[lived].mean()) if lived.any() else 0.0,
                cpu_ready_pct_worst_vm_mean=float(vm_ready_life.max()) if c.vms.n else 0.0,
                cpu_ready_pct_worst_step=float(self.vm_acc.max["cpu_ready_pct"].max()) if c.vms.n else 0.0,
                vms_ready_over_5pct=int(np.count_nonzero(vm_ready_life > 5.0)),
                vms_ready_over_10pct=int(np.count_nonzero(vm_ready_life > 10.0)),
            ),
        )
        out = Summary(core)
        for st in self.stages:
            st.finish(c, out.for_stage(st))
        if c.failures is not None:  # host failures and HA (engine/failures.py)
            out.for_stage(c.failures).add("failures", c.failures.summary(self))
        out.set_saturation(self.saturation)
        return out

    def _scheduling_info(self) -> SchedulingInfo | None:
        from densim.placement.online import peak_running

        c = self.ctx
        sch = c.schedule
        if sch is None:
            return None
        if getattr(c, "moves", None) is not None and getattr(c.source, "orig", None) is not None:
            # VMs that run all along, stopped or moved only by failures and maintenance: the rows are runs
            # of them, and the failures and migration sections say what happened (a tasks section would
            # count restarts and landings as tasks)
            return None
        counts = sch.counts()
        wait = sch.wait_s[np.isfinite(sch.start_s)]
        ends = sch.end_s[np.isfinite(sch.end_s)]
        live = getattr(self, "liveness", None)
        boots = int(live.boots.sum()) if live is not None else 0
        boot_j = float((live.boots * live.boot_j).sum()) if live is not None else 0.0
        s = c.scenario.scheduling
        return SchedulingInfo(
            queue=s.queue, idle_hosts=s.idle_hosts, tasks_total=int(c.vms.n), completed=counts["completed"],
            running_at_end=counts["running"], waiting_at_end=counts["waiting"], failed=counts["failed"],
            not_arrived=counts["not-arrived"],
            scheduling_delay_total_s=float(wait.sum()), scheduling_delay_mean_s=float(wait.mean()) if wait.size else 0.0,
            scheduling_delay_max_s=float(wait.max()) if wait.size else 0.0, peak_concurrent=peak_running(sch),
            # tasks still running at the end: the run went to the end of its grid
            simulated_end_s=(float(c.grid.horizon_s) if counts["running"] else
                             float(ends.max() - c.grid.start_s) if ends.size else 0.0),
            host_power_ons=boots, boot_energy_j=boot_j,
        )

    @cached_property
    def saturation(self) -> list[dict[str, Any]]:
        """Resources at or above 90 % busy in some step: host CPU, datastores, swap devices, fabric
        components (rows of :func:`densim.saturation.saturation_rows`, highest peak first)."""
        from densim.saturation import summarise

        log = self.ctx.saturation
        return summarise(log.rows()) if log is not None else []

    # ---- files -----------------------------------------------------------------------------
    def write(self, out_dir: str | Path, *, extra: Callable[[Path], None] | None = None) -> Path:
        """Write summary.json and hosts/vms(/host_steps/vm_steps).parquet; ``extra(out)`` writes more
        files (the run tool's report.html) before summary.json.

        Every file is written to a temporary name and renamed; ``summary.json`` is written last
        and removed first, so a directory with a summary.json is always complete.
        """
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").unlink(missing_ok=True)
        tables = {"vms": self.vms, "hosts": self.hosts, "host_steps": self.host_steps(), "vm_steps": self.vm_steps(),
                  "schedule_steps": self.schedule_steps()}
        if self.ctx.failures is not None:  # failures.parquet, outages.parquet
            tables.update(self.ctx.failures.tables(self.ctx.hosts.names))
        for name, df in tables.items():
            path = out / f"{name}.parquet"
            if df is None:
                path.unlink(missing_ok=True)
                continue
            write_atomic(path, lambda p, df=df: df.write_parquet(p, compression="zstd"))
        if extra is not None:
            extra(out)
        write_json_atomic(out / "summary.json", self.summary.to_dict())
        return out


def _agg(acc, name: str, agg: str, T: int, step: float) -> np.ndarray:
    if agg == "sum":
        return acc.sum[name] * step
    if agg == "max":
        return acc.max[name]
    return acc.sum[name] / T


def _nodes(source):
    """Every demand source in ``source``'s tree, depth first in VM order: composite ``parts`` and the
    ``inner`` source of a scheduled wrapper."""
    if source is None:
        return
    yield source
    for p in getattr(source, "parts", None) or ():
        yield from _nodes(p)
    yield from _nodes(getattr(source, "inner", None))


def _parts(source) -> list:
    """The leaf demand sources of ``source`` (composite parts, scheduled wrappers unwrapped), in VM order."""
    return [s for s in _nodes(source) if not getattr(s, "parts", None) and getattr(s, "inner", None) is None]


def _overspeed_notes(ctx) -> list[str]:
    """A note when placed VMs ask more CPU than their vCPUs at their host's core speed give (the engine's
    cap): count, the worst ratio and the share of its demand it can get. Only sources that know each VM's
    peak demand (``peak_mhz()``: OpenDC tasks) are checked."""
    leaves = _parts(ctx.source)
    if not any(hasattr(p, "peak_mhz") for p in leaves):
        return []
    peak = np.concatenate([np.asarray(p.peak_mhz(), dtype=np.float64) if hasattr(p, "peak_mhz") else np.zeros(p.n_vms)
                           for p in leaves])
    vms, hosts = ctx.vms, ctx.hosts
    if peak.size != vms.n:
        return []
    placed = vms.host >= 0
    core = np.where(placed, hosts.core_mhz[np.where(placed, vms.host, 0)], np.nan)
    cap = vms.vcpus * core
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(placed & (cap > 0), peak / cap, 0.0)
    over = ratio > 1.0 + 1e-9
    if not over.any():
        return []
    k = int(np.argmax(ratio))
    n = int(over.sum())
    return [f"{n:,} VM{' asks' if n == 1 else 's ask'} more CPU than its vCPUs at its host's core speed give: the worst, "
            f"{vms.names[k]}, asks {peak[k] / max(int(vms.vcpus[k]), 1):,.0f} MHz per vCPU on {core[k]:,.0f} MHz cores "
            f"({ratio[k]:.1f}x; it gets at most {100.0 / ratio[k]:.1f} % of its demand); check the trace's CPU units "
            "or the hosts' clock"]


def source_notes(source) -> list[str]:
    """The warnings of a demand source and its parts (a reader's ``column_notes``, else its ``notes``)."""
    out: list[str] = []
    for s in _nodes(source):
        got = getattr(s, "column_notes", None)
        out.extend(n for n in (got if got is not None else getattr(s, "notes", ()) or ()) if n not in out)
    return out
