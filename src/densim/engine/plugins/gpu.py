"""Engine stage ``gpu``: the power of the hosts' GPUs, added to host power (so energy and carbon include it).

Active when a host group has GPUs (``cluster.hosts[].gpus``). Each physical GPU j of a powered-on host
draws, in each step t,

    P_j,t = idle_j + (max_j - idle_j) x b_j,t,      b_j,t = min(1, sum over its tenants v of w_v x u_v,t)

with the catalog's ``idle_power`` and ``max_power`` of its model (linear in the busy share, as the CPU
``linear`` power model), and the tenants' weights ``w``: 1 for a passthrough VM on each of its GPUs,
1 for a time-sliced vGPU (its ``u`` is a share of the whole GPU's time; the vGPUs of one GPU add up and the
GPU is at most fully busy), ``compute_slices / 7`` for a MIG instance (isolated slices: a 3g instance fully
busy keeps 3/7 of the GPU busy). ``u_v,t`` is ``vms[].gpu.utilisation`` of the VM's group, or, when the group
does not give one, the VM's CPU utilisation in that step (its CPU demand / (vCPUs x vCPU speed), at most 1).
A GPU without tenants draws its idle power while its host is on (``cluster.unused_hosts``). The power goes
to the hosts through ``Chunk.add_host_power`` before the CPU step, so ``power_w``, ``energy_j`` and the
carbon stage's input include it; the stage writes ``gpu_power_w`` and ``gpu_busy`` per host and step and
``summary["gpu"]``. See docs/background/gpus.md.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from densim.engine.stages import STAGES, BaseStage
from densim.models.gpu import MIG_COMPUTE_SLICES


class GpuSummary(TypedDict):
    """``summary["gpu"]``."""

    gpus: int  # physical GPUs in the cluster
    gpus_with_tenants: int  # GPUs that hold a passthrough VM, a vGPU or a MIG instance
    vms_with_gpu: int  # VMs that ask for a GPU
    vms_with_gpu_unplaced: int  # of those, placed nowhere
    energy_kwh: float  # energy of the GPUs over the run (included in totals.energy_kwh)
    mean_busy: float  # mean busy share over the powered GPUs and the run's steps


class GpuStage(BaseStage):
    name = "gpu"
    summary_sections = {"gpu": GpuSummary}

    def __init__(self, ctx) -> None:
        hosts, plant = ctx.hosts, ctx.plant
        groups = plant.host_groups
        self.n_gpu = np.array([groups[g].gpu_count for g in hosts.group], np.int64)  # (H,)
        G = int(self.n_gpu.max()) if self.n_gpu.size else 0
        self.G = max(G, 1)
        idle = np.array([groups[g].gpu.idle_power_w if groups[g].gpu else 0.0 for g in hosts.group])
        peak = np.array([groups[g].gpu.max_power_w if groups[g].gpu else 0.0 for g in hosts.group])
        exists = np.arange(self.G)[None, :] < self.n_gpu[:, None]  # (H, G): GPU slot g is a real GPU
        self.idle = (idle[:, None] * exists).reshape(-1)  # (H*G,) W, 0 for slots that are no GPU
        self.span = ((peak - idle)[:, None] * exists).reshape(-1)
        self.exists = exists.reshape(-1)
        fixed = [g.gpu.utilisation if g.gpu is not None else None for g in ctx.scenario.vms]
        self.fixed_u = fixed
        # the VMs' CPU demand is read only when a GPU group gives no utilisation
        self.uses_vm_demand = any(g.gpu is not None and g.gpu.utilisation is None for g in ctx.scenario.vms)
        self.accepts_factored_demand = True
        self.energy_j = 0.0
        self.busy_sum = 0.0
        self.busy_n = 0

    def prepare(self, ctx) -> None:
        from densim.engine.run import host_loads
        from densim.errors import InputError

        H, G = ctx.hosts.n, self.G
        if ctx.schedule is not None:  # hosts that switch on and off, fail, or empty during the run
            raise InputError(ctx.plant.source, "cluster.hosts[].gpus", "GPU power over time (VMs that arrive and leave, "
                             "failures, maintenance) is not built yet: GPUs are powered by a placement made once at "
                             "the start")
        self.host_on = host_loads(ctx)[3].astype(bool)  # (H,)
        self.on_slots = np.repeat(self.host_on, G) & self.exists
        p = ctx.gpu
        vm_idx, cols, w = [], [], []
        if p is not None:
            if p.gmode.shape[0] != H:
                raise InputError(ctx.scenario.name, "cluster.hosts[].gpus", "GPU power of a run split over hosts is not "
                                 "built yet")
            from densim.placement.gpu import MIG, VGPU

            host = ctx.vms.host
            owner = p.gowner[:, :G]
            hh, gg = np.nonzero(owner >= 0)  # passthrough: the VM on each of its GPUs, weight 1
            vm_idx.append(owner[hh, gg])
            cols.append(hh * G + gg)
            w.append(np.ones(hh.size))
            shared = np.flatnonzero(((p.kind == VGPU) | (p.kind == MIG)) & (host >= 0))
            vm_idx.append(shared)
            cols.append(host[shared] * G + p.vm_gpu[shared])
            ws = np.ones(shared.size)
            mig = p.kind[shared] == MIG
            if mig.any():
                m = p.host_model[host[shared[mig]]]
                ws[mig] = p.mig_compute[m, p.req[shared[mig]]] / MIG_COMPUTE_SLICES
            w.append(ws)
            self.tenant_gpus = int(np.count_nonzero((p.gmode[:, :G] != 0) & self.exists.reshape(H, G)))
            self.vms_with_gpu = int(np.count_nonzero(p.kind != 0))
            self.unplaced = int(np.count_nonzero((p.kind != 0) & (host < 0)))
        else:
            self.tenant_gpus = self.vms_with_gpu = self.unplaced = 0
        vm_idx = np.concatenate(vm_idx) if vm_idx else np.zeros(0, np.int64)
        cols = np.concatenate(cols) if cols else np.zeros(0, np.int64)
        w = np.concatenate(w) if w else np.zeros(0)
        order = np.argsort(cols, kind="stable")
        self.e_vm, self.e_col, self.e_w = vm_idx[order].astype(np.int64), cols[order].astype(np.int64), w[order]
        starts = np.flatnonzero(np.r_[True, self.e_col[1:] != self.e_col[:-1]]) if self.e_col.size else np.zeros(0, np.int64)
        self.e_starts, self.e_ucols = starts, self.e_col[starts]
        # per tenant VM: a fixed utilisation (its group's), or NaN to take its CPU utilisation per step
        grp = ctx.vms.group[self.e_vm]
        self.e_fixed = np.array([np.nan if self.fixed_u[g] is None else self.fixed_u[g] for g in grp], dtype=np.float64)
        self.e_cpu = np.isnan(self.e_fixed)
        vms = ctx.vms
        self.full_mhz = np.maximum(vms.vcpus.astype(np.float64) * vms.vcpu_mhz, 1e-9)
        ctx.declare("gpu_power_w", level="host", agg="mean", unit="W", doc="power of the host's GPUs (in power_w)")
        ctx.declare("gpu_busy", level="host", agg="mean", unit="share", doc="mean busy share of the host's GPUs")

    def before_cpu(self, ctx, chunk) -> None:
        n, H, G = chunk.n_steps, ctx.hosts.n, self.G
        busy = np.zeros((n, H * G))
        if self.e_vm.size:
            u = np.broadcast_to(self.e_fixed, (n, self.e_vm.size)).copy()
            if self.e_cpu.any():
                vmi = self.e_vm[self.e_cpu]
                dem = np.asarray(chunk.demand(), dtype=np.float64)[:, vmi]
                u[:, self.e_cpu] = np.clip(dem / self.full_mhz[vmi][None, :], 0.0, 1.0)
            busy[:, self.e_ucols] = np.add.reduceat(u * self.e_w[None, :], self.e_starts, axis=1)
        np.minimum(busy, 1.0, out=busy)
        busy *= self.on_slots[None, :]
        watts = (self.idle[None, :] + self.span[None, :] * busy) * self.on_slots[None, :]
        host_w = watts.reshape(n, H, G).sum(axis=2)
        chunk.add_host_power(host_w)
        per_host_busy = busy.reshape(n, H, G).sum(axis=2) / np.maximum(self.n_gpu, 1)[None, :]
        chunk.host_out["gpu_power_w"] = host_w.astype(np.float32)
        chunk.host_out["gpu_busy"] = per_host_busy.astype(np.float32)
        self.energy_j += float(host_w.sum()) * chunk.step_s
        self.busy_sum += float(busy[:, self.on_slots].sum())
        self.busy_n += n * int(self.on_slots.sum())

    def finish(self, ctx, summary) -> None:
        summary.add("gpu", {
            "gpus": int(self.n_gpu.sum()),
            "gpus_with_tenants": self.tenant_gpus,
            "vms_with_gpu": self.vms_with_gpu,
            "vms_with_gpu_unplaced": self.unplaced,
            "energy_kwh": self.energy_j / 3.6e6,
            "mean_busy": self.busy_sum / self.busy_n if self.busy_n else 0.0,
        })


@STAGES.register("gpu", description="GPU power from each GPU's busy share (passthrough, vGPU, MIG tenants), added to host power",
                 source="densim.engine.plugins.gpu; docs/background/gpus.md", before=("carbon",))
def gpu_stage(ctx):
    return GpuStage(ctx) if any(g.gpu is not None for g in ctx.plant.host_groups) else None
