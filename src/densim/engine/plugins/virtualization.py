"""Engine stage: virtualization overhead CPU, NUMA remote-memory cost and turbo/SMT capacity.

Switched on by ``virtualization.model: kvm`` in the scenario. Before the CPU step it

* multiplies each VM's CPU demand by ``CPI_virtual(r) / CPI_native`` (page walks under the chosen
  paging mode and page sizes, shadow page-table synchronisation, remote memory share ``r`` from the
  NUMA policy and the VM's width) and adds the I/O path cycles of its ``packets_per_s`` and ``iops``;
  under ``paging: shadow`` the synchronisation cost grows with the VM's vCPUs and with the VMs
  placed on its host (:func:`densim.models.virtualization.shadow_sync_cycles_per_kinstr`, parameters
  from the plant's resolved ``virtualization.hypervisor.shadow``);
* scales each host's capacity by the turbo clock at the step's utilisation over the base clock
  (and by ``1/smt_gain`` when SMT is off).

Workload characteristics come from the VM group's ``workload`` mapping (``cpi_core``, ``llc_mpki``,
``tlb_mpki_4k``, ``guest_large_fraction``, ``packets_per_s``, ``iops``, and under shadow paging
``pt_updates_per_kinstr``, ``context_switches_per_kinstr``); defaults are the tile benchmark's
averages and the shadow-paging entry's rates. Host platform figures come from the catalog
``virt_platforms`` entry named like the server, otherwise from ``ibm-x3650-m3-x5680`` with the
CPU's own clocks.
"""

from __future__ import annotations

import numpy as np
from densim._distributions import binom_pmf
from typing import TypedDict

from densim.engine.stages import STAGES, BaseStage
from densim.errors import InputError
from densim.models.cpu_power import turbo_frequency_mhz
from densim.models.numa import cycles_per_instruction, nodes_spanned, remote_fraction
from densim.models.virtualization import io_path_cycles, shadow_sync_cycles_per_kinstr, tlb_walk_cycles_per_kinstr

WORKLOAD_DEFAULTS = {"cpi_core": 1.0, "llc_mpki": 7.0, "tlb_mpki_4k": 2.2, "guest_large_fraction": 0.3, "packets_per_s": 0.0, "iops": 0.0}
SHADOW_RATES = ("pt_updates_per_kinstr", "context_switches_per_kinstr")  # workload keys; defaults: the shadow-paging entry
U_GRID = np.linspace(0.0, 1.0, 51)


class _VirtualizationOptional(TypedDict, total=False):
    shadow_sync_cycles_per_kinstr: dict[str, float]  # with shadow paging: mean and max over placed VMs


class VirtualizationSummary(_VirtualizationOptional):
    """``summary["virtualization"]`` (optional keys in a total=False base: see MemorySummary)."""

    model: str
    paging: str
    host_hugepages: bool
    network: str
    numa_policy: str
    mean_demand_factor: float
    mean_remote_fraction: float
    platforms: dict[str, str]  # host group -> the virt_platforms entry whose figures it uses


class VirtualizationStage(BaseStage):
    summary_sections = {"virtualization": VirtualizationSummary}
    name = "virtualization"

    def prepare(self, ctx) -> None:
        sc = ctx.scenario
        v = sc.virtualization
        vms, hosts = ctx.vms, ctx.hosts
        H = hosts.n
        # per host group: platform, clocks, effective-clock curve over utilisation
        self.clock_curve = np.zeros((H, U_GRID.size), dtype=np.float32)
        plat_of_group = []
        for gi, (hg, vp) in enumerate(zip(ctx.plant.host_groups, ctx.plant.virtualization)):
            server, cpu, plat = hg.server, hg.cpu, vp.platform
            plat_of_group.append((vp, server, cpu))
            cores = cpu.cores
            k = np.arange(0, cores + 1, dtype=float)
            if v.power.turbo and cpu.turbo_mhz is not None:
                all_core = plat.all_core_turbo_mhz if vp.own else cpu.base_mhz
                f_k = turbo_frequency_mhz(k, cores, cpu.base_mhz, cpu.turbo_mhz, all_core)
            else:
                f_k = np.full_like(k, cpu.base_mhz)
            pmf = binom_pmf(k[None, :], cores, np.clip(U_GRID, 1e-6, 1.0)[:, None])
            f_eff = (pmf * k * f_k).sum(axis=1) / np.maximum((pmf * k).sum(axis=1), 1e-12)
            scale = f_eff / cpu.base_mhz
            if not v.power.smt and cpu.threads_per_core > 1:
                scale = scale / cpu.smt_gain
            self.clock_curve[hosts.group == gi] = scale.astype(np.float32)
        # per VM: demand factor and added I/O MHz (the host group decides the platform)
        V = vms.n
        placed = vms.host >= 0
        hg = np.where(placed, hosts.group[np.where(placed, vms.host, 0)], 0)
        self.factor = np.ones(V, dtype=np.float32)
        self.add_mhz = np.zeros(V, dtype=np.float32)
        self.remote = np.zeros(V, dtype=np.float32)
        self.shadow_cyc = np.zeros(V, dtype=np.float32)  # shadow-sync cycles per 1,000 instructions
        # VMs per host: the shadow-sync cost grows with it. Placement is fixed for the run; when VMs arrive
        # and leave, the most VMs alive on the host at once (the engine's liveness), not every VM it ever ran
        live = getattr(ctx, "liveness", None)
        per_host = (np.bincount(vms.host[placed], minlength=H) if live is None
                    else np.rint(live.peak_per_host(vms.host, np.ones(V), H)[0]).astype(np.int64))
        vms_on_host = per_host[np.where(placed, vms.host, 0)]
        shadow = v.hypervisor.paging == "shadow"
        for gi_vm, g in enumerate(sc.vms):
            w = dict(WORKLOAD_DEFAULTS)
            if shadow:
                w.update({k: float(getattr(ctx.plant.virtualization[0].shadow, k)) for k in SHADOW_RATES})
            for key, val in (g.workload or {}).items():
                if key in w:
                    if not isinstance(val, (int, float)) or isinstance(val, bool) or val < 0:
                        raise InputError(sc.name, f"vms[{gi_vm}].workload.{key}", "must be a number >= 0")
                    w[key] = float(val)
            for gh, (vp, server, cpu) in enumerate(plat_of_group):
                plat, exits = vp.platform, vp.exits
                sel = (vms.group == gi_vm) & (hg == gh)
                if not sel.any():
                    continue
                hv = v.hypervisor
                g_large = w["guest_large_fraction"] if hv.guest_large_pages else 0.0
                walk_v = tlb_walk_cycles_per_kinstr(w["tlb_mpki_4k"], g_large, plat.tlb, host_hugepages=hv.host_hugepages, paging=hv.paging)
                if shadow:
                    sync = shadow_sync_cycles_per_kinstr(w["pt_updates_per_kinstr"], w["context_switches_per_kinstr"], exits, vp.shadow,
                                                         vcpus=vms.vcpus[sel], vms_on_host=vms_on_host[sel])
                    self.shadow_cyc[sel] = np.asarray(sync, dtype=np.float32)
                    walk_v = walk_v + sync
                walk_n = tlb_walk_cycles_per_kinstr(w["tlb_mpki_4k"], g_large, plat.tlb, host_hugepages=False, paging="native")
                sockets = server.cpu.sockets
                span = nodes_spanned(vms.vcpus[sel], vms.mem_bytes[sel], cpu.cores, server.memory_bytes / sockets, sockets)
                r = remote_fraction(span, bound=v.numa.policy != "none" or sockets == 1, guest_numa_aware=v.numa.guest_numa_aware,
                                    aware_remote_fraction=plat.numa.aware_remote_fraction, host_nodes=sockets)
                native = cycles_per_instruction(w["cpi_core"], w["llc_mpki"], 0.0, plat.numa, walk_n)
                virt = cycles_per_instruction(w["cpi_core"], w["llc_mpki"], r, plat.numa, walk_v)
                self.factor[sel] = np.asarray(virt / native, dtype=np.float32)
                self.remote[sel] = np.asarray(r, dtype=np.float32)
                net = sum(io_path_cycles(vp.net_path, exits))
                disk = sum(io_path_cycles(vp.disk_path, exits))
                self.add_mhz[sel] = (w["packets_per_s"] * net + w["iops"] * disk) / 1e6
        self.add_mhz[~placed] = 0.0
        order = np.argsort(np.where(placed, vms.host, H), kind="stable")
        self.perm = order[: int(placed.sum())]
        self.host_sorted = vms.host[self.perm]
        ctx.declare("virt_overhead_mhz", level="vm", agg="mean", unit="MHz", doc="CPU added by virtualization overheads and remote memory")
        ctx.declare("clock_scale", level="host", agg="mean", unit="", doc="capacity scale from turbo (and SMT off) over the base clock")
        self._added = None
        self._scale = None

    def before_cpu(self, ctx, chunk) -> None:
        demand = chunk.vm["cpu_demand_mhz"]
        add = self.add_mhz[None, :]
        ws = chunk.window(ctx)
        if ws.dynamic:  # the I/O path's MHz only for the share of the step the VM is alive
            add = add * ws.alive()
        new = demand * self.factor[None, :] + add
        self._added = (new - demand).astype(np.float32)
        chunk.vm["cpu_demand_mhz"] = new.astype(demand.dtype, copy=False)
        H = ctx.hosts.n
        host_dem = np.zeros((chunk.n_steps, H), dtype=np.float64)
        if self.perm.size:
            cols = new[:, self.perm]
            starts = np.flatnonzero(np.r_[True, self.host_sorted[1:] != self.host_sorted[:-1]])
            host_dem[:, self.host_sorted[starts]] = np.add.reduceat(cols, starts, axis=1)
        cap = chunk.host_capacity_mhz
        u = np.clip(np.divide(host_dem, cap, out=np.zeros_like(host_dem), where=cap > 0), 0.0, 1.0)
        idx = u * (U_GRID.size - 1)
        lo = np.floor(idx).astype(int)
        hi = np.minimum(lo + 1, U_GRID.size - 1)
        frac = idx - lo
        hrow = np.arange(H)[None, :]
        scale = self.clock_curve[hrow, lo] * (1 - frac) + self.clock_curve[hrow, hi] * frac
        chunk.host_capacity_mhz = (cap * scale).astype(cap.dtype, copy=False)
        self._scale = scale.astype(np.float32)

    def after_cpu(self, ctx, chunk) -> None:
        chunk.vm_out["virt_overhead_mhz"] = self._added
        chunk.host_out["clock_scale"] = self._scale

    def finish(self, ctx, summary) -> None:
        v = ctx.scenario.virtualization
        summary.add("virtualization", {
            "model": v.model,
            "paging": v.hypervisor.paging,
            "host_hugepages": v.hypervisor.host_hugepages,
            "network": v.hypervisor.network,
            "numa_policy": v.numa.policy,
            "mean_demand_factor": float(self.factor.mean()) if self.factor.size else 1.0,
            "mean_remote_fraction": float(self.remote.mean()) if self.remote.size else 0.0,
            "platforms": platform_names(ctx.plant),
            **({"shadow_sync_cycles_per_kinstr": self._shadow_summary(ctx)} if v.hypervisor.paging == "shadow" else {}),
        })

    def _shadow_summary(self, ctx) -> dict[str, float]:
        sh = self.shadow_cyc[ctx.vms.host >= 0]
        return {"mean": float(sh.mean()) if sh.size else 0.0, "max": float(sh.max()) if sh.size else 0.0}


def platform_names(plant) -> dict[str, str]:
    """Per host group, the platform entry whose figures the stage used; a server with no
    ``virt_platforms`` entry of its own borrows the default platform's, and says so."""
    from densim.plant.core import DEFAULT_PLATFORM

    return {
        hg.label: hg.server.name if vp.own
        else f"{DEFAULT_PLATFORM} (default: the catalog has no virt_platforms entry for {hg.server.name})"
        for hg, vp in zip(plant.host_groups, plant.virtualization)
    }


@STAGES.register("virtualization", description="virtualization overhead CPU, NUMA remote memory, turbo/SMT capacity",
                 source="modelling guide §3.3-§3.4, §6.1",
                 # the demand factor scales all guest CPU demand, including what the fabric (batch
                 # jobs) and storage (cycles per I/O) stages add; the turbo scale applies to the
                 # capacity left after the fabric stage takes off the host storage stack's CPU
                 after=("fabric", "storage"))
def _factory(ctx):
    return VirtualizationStage() if ctx.scenario.virtualization.model == "kvm" else None
