"""Engine stage ``fabric``: batch jobs on shared storage feed the time-stepped engine.

When ``fabric.model`` is ``fluid`` the stage runs the batch jobs of ``fabric.tenants`` with
:func:`densim.models.jobs.simulate_jobs` (event-driven fluid model, max-min fair sharing of every
shared component) in ``prepare``. Job time 0 is the start of the simulation grid. Then per chunk:

* ``before_cpu`` adds each job VM's busy vCPUs (user + system) to the VM's CPU demand, each worth
  the host's capacity / logical CPUs in MHz (the fitted job CPU costs are logical-CPU seconds), and takes the host's storage-stack CPU (transport cycles per I/O and per byte) off
  the host's capacity, so the engine's CPU model, CPU Ready and power see the job;
* ``after_cpu`` writes per-VM ``job_iowait_vcpus`` and ``job_storage_mb_per_s``;
* saturation: every component's mean utilisation over the job run (one operating point, kind
  ``fabric component``), since the jobs model keeps no per-step component busy series;
* ``finish`` adds ``summary["fabric"]``: per-tenant runtimes, stage times and bottlenecks, CPU
  shares, per-host CPU and per-component utilisation.

The jobs model places each tenant's VMs evenly over its host group; the k-th VM of a VM group in
the engine is the k-th VM of that group in the jobs model. Choose placement settings that put the
same number of VMs on each host (e.g. ``cpu_overcommit`` just above the VMs' vCPUs per core) if
the engine's host-level CPU figures should match the jobs model's.
"""

from __future__ import annotations

import numpy as np

from typing import Any, TypedDict

from densim.engine.stages import STAGES, BaseStage


class FabricSummary(TypedDict):
    """``summary["fabric"]``."""

    tenants: list[dict[str, Any]]  # per tenant: runtime, stage times, bottleneck
    hosts: list[dict[str, Any]]  # per host: storage-stack CPU
    components: list[dict[str, Any]]  # the 20 busiest fabric components


class FabricStage(BaseStage):
    summary_sections = {"fabric": FabricSummary}
    name = "fabric"

    def prepare(self, ctx) -> None:
        from densim.models.jobs import simulate_jobs

        self.system = ctx.plant.fabric  # built and checked by densim.plant.resolve
        self.result = simulate_jobs(self.system)
        groups = list(ctx.vms.group_names)
        vm_of_flow = np.full(len(self.system.flows), -1, dtype=np.int64)
        first_runs = _first_runs(ctx)
        for ti, ten in enumerate(ctx.scenario.fabric.tenants):
            g = groups.index(ten.vms)
            engine_vms = first_runs[ctx.vms.group[first_runs] == g]
            flows = self.system.tenants[ti].flows
            vm_of_flow[flows] = engine_vms[: len(flows)]
        self.vm_of_flow = vm_of_flow
        self._check_lives(ctx)
        # saturation: the jobs model keeps each component's busy time over the job run, not per step,
        # so components enter as one operating point each (their mean utilisation over the job run)
        log = getattr(ctx, "saturation", None)
        if log is not None and self.result.components:
            comps = self.result.components
            log.add_steady("fabric component", [c["component"] for c in comps], [c["mean_utilisation"] for c in comps])
        ctx.declare("job_cpu_busy_vcpus", level="vm", agg="mean", unit="vCPUs", doc="vCPUs busy with batch-job work")
        ctx.declare("job_iowait_vcpus", level="vm", agg="mean", unit="vCPUs", doc="vCPUs idle while job tasks wait on block I/O")
        ctx.declare("job_storage_mb_per_s", level="vm", agg="mean", unit="MB/s", doc="batch-job storage throughput")

    def _check_lives(self, ctx) -> None:
        """Refuse a job VM that is not alive for the whole of its job (it arrives late, leaves early, or
        its host fails during the job): the fluid job model runs each job once, before the engine, on
        VMs that are there throughout; it cannot start a task on a VM not yet there, nor re-run the
        tasks (and data) lost with a failed host, so the job's runtime would be wrong."""
        live = getattr(ctx, "liveness", None)
        if live is None:
            return
        from densim.errors import InputError

        t0 = ctx.grid.start_s
        for ti, ten in enumerate(self.system.tenants):
            res = self.result.tenants[ti]
            lo, hi = t0 + ten.start_s, t0 + ten.start_s + res["runtime_s"]
            vms = self.vm_of_flow[ten.flows]
            vms = vms[vms >= 0]
            bad = vms[~live.lives_through(lo, hi)[vms]]
            if bad.size:
                v = int(bad[0])
                st, en = live.sch.start_s[v], live.sch.end_s[v]
                life = "never runs" if np.isnan(st) else f"is alive {st - t0:.0f}..{en - t0:.0f} s"
                cut = np.isfinite(en) and en < hi  # its run ends inside the job: a failure, or a migration landing
                moves = getattr(ctx, "moves", None)
                migrated = moves is not None and moves.mig is not None and moves.mig.size > 0
                failed = getattr(ctx, "failures", None) is not None
                why = ""
                if cut:
                    why = {(True, False): " (its host fails during the job)", (False, True): " (it is live-migrated "
                           "during the job)", (True, True): " (its host fails or it is live-migrated during the job)"
                           }.get((failed, migrated), "")
                raise InputError(ctx.scenario.name, f"fabric.tenants[{ti}].vms",
                                 f"job VM {ctx.vms.names[v]} {life}{why} but its job runs {ten.start_s:.0f}.."
                                 f"{ten.start_s + res['runtime_s']:.0f} s: the batch-job model runs a job once on VMs "
                                 "that live through it (it cannot start tasks on a VM not yet there or re-run tasks "
                                 "lost with a failed host)")

    def _means(self, ctx, chunk, name: str) -> np.ndarray:
        ev = self.result.events
        out = np.zeros((chunk.n_steps, ctx.vms.n), dtype=np.float32)
        if ev is None:
            return out
        edges = (np.arange(chunk.t0, chunk.t1 + 1) * chunk.step_s).astype(float)
        per_flow = ev.step_means(name, edges)
        ok = self.vm_of_flow >= 0
        out[:, self.vm_of_flow[ok]] = per_flow[:, ok]
        return out

    def before_cpu(self, ctx, chunk) -> None:
        busy = self._means(ctx, chunk, "busy_vcpus")
        host_idx = np.where(ctx.vms.host >= 0, ctx.vms.host, 0)
        # a job vCPU-second is a logical-CPU-second (the fitted costs were measured with SMT siblings
        # busy), worth capacity / logical CPUs of the host's MHz
        mhz = (ctx.hosts.capacity_mhz / ctx.hosts.logical_cpus)[host_idx].astype(np.float32)
        chunk.vm["cpu_demand_mhz"] = chunk.vm["cpu_demand_mhz"] + busy * mhz[None, :]
        chunk.vm_out["job_cpu_busy_vcpus"] = busy
        host_io = self._means(ctx, chunk, "host_io_threads")
        if host_io.any():
            per_host = np.zeros((chunk.n_steps, ctx.hosts.n), dtype=np.float32)
            placed = ctx.vms.host >= 0
            np.add.at(per_host.T, ctx.vms.host[placed], host_io[:, placed].T)
            per_thread = (ctx.hosts.capacity_mhz / ctx.hosts.logical_cpus)[None, :]
            chunk.host_capacity_mhz = np.maximum(chunk.host_capacity_mhz - per_host * per_thread, 0.0)

    def after_cpu(self, ctx, chunk) -> None:
        chunk.vm_out["job_iowait_vcpus"] = self._means(ctx, chunk, "iowait_vcpus")
        chunk.vm_out["job_storage_mb_per_s"] = self._means(ctx, chunk, "storage_bps") / np.float32(1e6)

    def finish(self, ctx, summary) -> None:
        summary.add("fabric", {
            "tenants": self.result.tenants,
            "hosts": self.result.hosts,
            "components": sorted(self.result.components, key=lambda c: -c["mean_utilisation"])[:20],
        })


def _first_runs(ctx) -> np.ndarray:
    """Engine rows that are a VM's first run, ascending by VM: every row, unless host failures or
    maintenance migrations made rows VM instances (then the k-th VM of a group is its first instance,
    not the k-th row)."""
    vm_of = getattr(ctx.source, "vm_of", None)  # densim.engine.failures.InstanceSource
    if vm_of is None or getattr(ctx, "schedule", None) is None:
        return np.arange(ctx.vms.n)
    vm_of = np.asarray(vm_of, dtype=np.int64)
    start = np.asarray(ctx.schedule.start_s, dtype=float)
    order = np.lexsort((np.where(np.isnan(start), np.inf, start), vm_of))
    first = np.r_[True, vm_of[order][1:] != vm_of[order][:-1]] if order.size else np.zeros(0, bool)
    return order[first]


@STAGES.register(
    "fabric",
    description="batch jobs on shared storage and fabrics (fluid max-min fair sharing, closed-loop tasks)",
    source="modelling guide §5; docs/background/shared-storage.md",
)
def fabric_stage(ctx):
    if ctx.scenario.fabric.model == "none":
        return None
    return FabricStage()
