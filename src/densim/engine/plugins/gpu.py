"""Engine stage ``gpu``: the power of the hosts' GPUs, added to host power (so energy and carbon include it).

Active when a host group has GPUs (``cluster.hosts[].gpus``). Each physical GPU j of a powered-on host
draws, in each step t,

    P_j,t = idle_j + (max_j - idle_j) x b_j,t,      b_j,t = min(1, sum over its tenants v of w_v x u_v,t)

with the catalog's ``idle_power`` and ``max_power`` of its model (linear in the busy share, as the CPU
``linear`` power model), and the tenants' weights ``w``: 1 for a passthrough VM on each of its GPUs,
1 for a time-sliced vGPU (its ``u`` is a share of the whole GPU's time; the vGPUs of one GPU add up and the
GPU is at most fully busy), ``compute_slices / 7`` for a MIG instance (isolated slices: a 3g instance fully
busy keeps 3/7 of the GPU busy). ``u_v,t`` is, first choice, the trace's own GPU busy share: for a VM of an OpenDC
trace group whose ``vms[].gpu`` is ``{mode: passthrough}`` without count (its task's ``gpu_count`` whole GPUs), the
source's ``gpu_util`` channel, the step's mean of ``gpu_usage / gpu_capacity`` over the task's fragments (each
clipped to [0, 1]; zero outside the task's run, so it is not scaled again by the share of the step the VM is alive);
else ``vms[].gpu.utilisation`` of the VM's group; else, when the group gives neither, the VM's CPU utilisation in
that step (its CPU demand / (vCPUs x vCPU speed), at most 1).
A GPU without tenants draws its idle power while its host is on (``cluster.unused_hosts``). The power goes
to the hosts through ``Chunk.add_host_power`` before the CPU step, so ``power_w``, ``energy_j`` and the
carbon stage's input include it; the stage writes ``gpu_power_w`` and ``gpu_busy`` per host and step and
``summary["gpu"]``.

Time-sliced vGPUs contend for their GPU's time (:mod:`densim.models.gpu_contention`): each vGPU's demand
``u_v`` is cut to what the GPU's scheduler (``cluster.hosts[].gpus.scheduler``: best-effort, equal-share,
fixed-share) gives it, ``g_v``; the GPU's busy share is then ``sum g_v`` (an equal- or fixed-share GPU
may idle while a vGPU waits), and every VM gets ``gpu_slowdown`` (``u_v / g_v``; 1 for MIG, passthrough
and VMs without a GPU) and ``gpu_wait_ms`` (the longest wait for its next time slice) per step.
A GPU's power limit (``cluster.hosts[].gpus.power_limit``, set by the operator; or lowered by the host's
``power_cap``, :mod:`densim.engine.plugins.power_cap`) is met by its clock (:mod:`densim.models.gpu_power`):
a GPU whose draw would pass its limit ``L`` runs at clock scale ``sigma`` and draws ``L``; its tenants'
GPU throughput falls by ``max(1, b / sigma)`` (``gpu_power_slowdown`` per VM and step, and the
``power_limit_*`` keys of ``summary["gpu"]``). Every float sum (energy, busy shares, slowdowns, demand, limits)
is kept per host, each host's columns added step by step and its GPUs and tenants in order
(:func:`densim.engine.stages.host_sums`), and added over the hosts only in :meth:`GpuStage.finish`. A split run
(:mod:`densim.engine.partition`) puts the parts' per-host arrays side by side (``partition_host_sums``), adds their
counts (``partition_sums``) and takes the largest of their maxima (``partition_max``): a part holds its hosts'
GPUs and their tenants, so every figure is the one process's to the bit.

See docs/background/gpus.md.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from densim.engine.stages import STAGES, BaseStage, host_sums, scattered_host_sums, step_sums


class _GpuLimitKeys(TypedDict, total=False):
    """With a GPU power limit (``gpus.power_limit``) or a power cap on GPU hosts (optional keys in a total=False base)."""

    power_limited_gpu_steps: int  # powered GPU-steps whose draw its limit held down
    power_limit_mean_w_when_limited: float | None  # mean limit over those GPU-steps
    power_limit_clock_mean_when_limited: float | None  # mean clock scale sigma over them
    power_limit_unserved_share: float  # share of the GPUs' busy time (at full clock) not served: sum max(b - sigma, 0) / sum b
    power_limit_vm_slowdown_mean: float  # mean over GPU VM-steps with GPU demand of max(1, b / sigma)
    power_limit_vm_slowdown_worst: float
    power_limit_energy_saved_kwh: float  # GPU energy the limits held back (draw at full clock - limit)


class GpuSummary(_GpuLimitKeys):
    """``summary["gpu"]``."""

    gpus: int  # physical GPUs in the cluster
    gpus_with_tenants: int  # GPUs that hold a passthrough VM, a vGPU or a MIG instance
    vms_with_gpu: int  # VMs that ask for a GPU
    vms_with_gpu_unplaced: int  # of those, placed nowhere
    energy_kwh: float  # energy of the GPUs over the run (included in totals.energy_kwh)
    mean_busy: float  # mean busy share over the powered GPUs and the run's steps
    vgpus: int  # placed VMs with a time-sliced vGPU
    vgpu_slowdown_mean: float  # mean over vGPU VM-steps with GPU demand of u / g (1: no contention)
    vgpu_slowdown_worst: float  # the worst vGPU VM-step's slowdown
    vgpu_demand_unserved_share: float  # share of the vGPUs' GPU demand the schedulers did not serve
    vgpu_wait_ms_worst: float  # the longest wait for a time slice of any vGPU in any step


class GpuStage(BaseStage):
    name = "gpu"
    summary_sections = {"gpu": GpuSummary}
    # a run split by host partitions puts its parts' per-host float sums side by side (added over all hosts in
    # finish, as in one process), adds up their counts and takes the largest maxima
    partition_host_sums = ("energy_j_h", "busy_h", "sd_h", "v_dem_h", "v_got_h", "lim_w_h", "lim_sigma_h", "lim_lost_h",
                           "lim_busy_h", "lim_vsd_h", "lim_saved_h")
    partition_sums = ("busy_n", "sd_n", "tenant_gpus", "vms_with_gpu", "unplaced", "n_vgpu", "lim_steps", "lim_vsd_n")
    partition_max = ("sd_max", "wait_max", "lim_vsd_max")

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
        # power limits: each GPU's own (gpus.power_limit, else its max power) and the lowest it accepts (catalog
        # power_limit_min; none known: its own, so a power cap cannot lower it)
        specs = [ctx.scenario.cluster.hosts[g.index].gpus for g in groups]
        own = np.array([min(groups[g].gpu.max_power_w, specs[g].power_limit_w or np.inf) if groups[g].gpu else 0.0
                        for g in range(len(groups))], np.float64)
        lo = np.array([groups[g].gpu.power_limit_min_w or own[g] if groups[g].gpu else 0.0 for g in range(len(groups))],
                      np.float64)
        self.own_limit = (own[hosts.group][:, None] * exists).reshape(-1)  # (H*G,) W
        self.limit_min = (np.minimum(lo, own)[hosts.group][:, None] * exists).reshape(-1)
        self.own_limited = bool(np.any(own < np.array([groups[g].gpu.max_power_w if groups[g].gpu else 0.0
                                                       for g in range(len(groups))]) - 1e-9))
        capped = any(ctx.scenario.cluster.hosts[g.index].power_cap_w is not None for g in groups if g.gpu is not None)
        self.may_limit = self.own_limited or capped  # the power_limit_* figures and gpu_power_slowdown
        self.tenant_gpus = self.vms_with_gpu = self.unplaced = self.n_vgpu = 0
        self.lim_steps = self.lim_vsd_n = 0
        self.lim_vsd_max = 1.0
        H = hosts.n
        self.col_host = np.arange(H * self.G) // self.G  # (H*G,) the host of each GPU slot
        # per host, summed over the run: GPU energy (J), busy share over powered GPU-steps, vGPU slowdown over the
        # vGPU VM-steps with demand, vGPU demand and share got; where a power limit binds: the limit (W), the
        # clock scale, the busy share not served, the busy share of every powered GPU-step, the tenant VMs'
        # slowdown over their VM-steps with GPU demand, the energy held back (J)
        self.energy_j_h, self.busy_h, self.sd_h, self.v_dem_h, self.v_got_h = (np.zeros(H) for _ in range(5))
        self.lim_w_h, self.lim_sigma_h, self.lim_lost_h, self.lim_busy_h, self.lim_vsd_h, self.lim_saved_h = (
            np.zeros(H) for _ in range(6))
        fixed = [g.gpu.utilisation if g.gpu is not None else None for g in ctx.scenario.vms]
        self.fixed_u = fixed
        # groups whose GPU busy share is the trace's own (an OpenDC trace's gpu_usage: the source's gpu_util channel)
        self.trace_u = np.array([g.gpu is not None and g.gpu.mode == "passthrough" and g.gpu.count is None
                                 and g.gpu.utilisation is None for g in ctx.scenario.vms], bool)
        # the VMs' CPU demand is read only when a GPU group gives no utilisation
        self.uses_vm_demand = any(g.gpu is not None and g.gpu.utilisation is None for g in ctx.scenario.vms)
        self.accepts_factored_demand = True
        self.busy_n = 0
        self.sd_n = 0
        self.sd_max = 1.0
        self.wait_max = 0.0

    def prepare(self, ctx) -> None:
        from densim.errors import InputError

        G = self.G
        p = ctx.gpu
        vm_idx, cols, w = [], [], []
        if p is not None:
            if p.vm_mask.size != ctx.vms.n:
                raise InputError(ctx.scenario.name, "cluster.hosts[].gpus", "the GPU placement does not cover this "
                                 "run's rows")
            from densim.placement.gpu import gpu_tenants

            # one entry per (row, GPU it holds): each row's GPUs are the bits of its mask on its host (a row is a VM,
            # or one run of a VM on one host when VMs restart or migrate: its GPUs are fixed within the row); a row
            # without a request holds no GPU, whatever its mask (the online placement leaves NaN there, cast to int)
            host = ctx.vms.host
            rr, cc, ws = gpu_tenants(p, host, G)
            vm_idx.append(rr)
            cols.append(cc)
            w.append(ws)
            self.tenant_gpus = int(np.unique(cc).size)  # GPUs that hold a tenant at some time
            asks = p.kind != 0  # (rows that are runs of VMs, after restarts or migrations: each VM counted once)
            self.vms_with_gpu = int(np.count_nonzero(asks & p.first_run))
            self.unplaced = int(np.count_nonzero(asks & (host < 0)))
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
        # (a given source replacing the scenario's groups has one group, its own: no trace GPU channel)
        own = len(ctx.vms.group_names) == len(ctx.scenario.vms)
        self.e_trace = self.trace_u[grp] if own else np.zeros(grp.size, bool)
        self.e_cpu = np.isnan(self.e_fixed) & ~self.e_trace
        self._time_slices(ctx, p, G)
        self.n_vgpu = int(np.count_nonzero(p.first_run[self.v_vm])) if p is not None else 0
        self.t_vm, self.t_inv = np.unique(self.e_vm, return_inverse=True)  # tenant VMs, and each entry's
        self.t_host = ctx.vms.host[self.t_vm].astype(np.int64)  # each tenant row's host (a row holding a GPU is placed)
        vms = ctx.vms
        self.full_mhz = np.maximum(vms.vcpus.astype(np.float64) * vms.vcpu_mhz, 1e-9)
        if p is not None:
            ctx.declare("gpu_slowdown", level="vm", agg="mean", unit="x",
                        doc="GPU slowdown of a time-sliced vGPU: demand / share its GPU's scheduler gave (1: none)")
            ctx.declare("gpu_wait_ms", level="vm", agg="max", unit="ms",
                        doc="longest wait of a time-sliced vGPU for its next time slice (0 without vGPU)")
        if self.may_limit:
            ctx.declare("gpu_power_slowdown", level="vm", agg="mean", unit="x",
                        doc="GPU throughput slowdown a GPU power limit costs: busy share at full clock / clock scale "
                            "(1: the limit does not bind or the slower GPU keeps up)")
        ctx.declare("gpu_power_w", level="host", agg="mean", unit="W", doc="power of the host's GPUs (in power_w)")
        ctx.declare("gpu_busy", level="host", agg="mean", unit="share", doc="mean busy share of the host's GPUs")

    def _time_slices(self, ctx, p, G) -> None:
        """The vGPU tenants (entries of ``e_*``) grouped by GPU, with each GPU's scheduler, profile cap and quantum."""
        from densim.models.gpu_contention import SCHEDULERS
        from densim.placement.gpu import VGPU

        self.has_vgpu_out = p is not None
        is_v = np.zeros(self.e_vm.size, bool)
        if p is not None and self.e_vm.size:
            is_v = p.kind[self.e_vm] == VGPU  # a passthrough VM's entries (its GPUs) are kind PASS
        self.v_idx = np.flatnonzero(is_v)  # sorted by GPU column, as e_col is
        vcol = self.e_col[self.v_idx]
        first = np.flatnonzero(np.r_[True, vcol[1:] != vcol[:-1]]) if vcol.size else np.zeros(0, np.int64)
        self.v_starts = np.r_[first, vcol.size].astype(np.int64)
        gcols = vcol[first]
        host = gcols // G if gcols.size else np.zeros(0, np.int64)
        groups = ctx.plant.host_groups
        specs = [ctx.scenario.cluster.hosts[groups[g].index].gpus for g in range(len(groups))]
        hg = ctx.hosts.group[host]
        self.v_policy = np.array([SCHEDULERS[specs[g].scheduler] for g in hg], np.int64)
        self.v_quantum = np.array([specs[g].time_slice_s for g in hg], np.float64)
        vm0 = self.e_vm[self.v_idx[first]] if first.size else np.zeros(0, np.int64)
        self.v_cap = (p.vcap[p.host_model[host], p.req[vm0]].astype(np.int64) if first.size
                      else np.zeros(0, np.int64))
        self.v_vm = self.e_vm[self.v_idx]
        self.v_host = vcol // G if vcol.size else np.zeros(0, np.int64)  # each vGPU entry's host

    def before_cpu(self, ctx, chunk) -> None:
        n, H, G = chunk.n_steps, ctx.hosts.n, self.G
        win = chunk.window(ctx)
        # the GPUs of the hosts drawing power in each step (the CPU step's own power mask: a host with no VM alive
        # and unused_hosts: off, or down, draws nothing)
        self.on_slots = np.repeat(win.power_on, G, axis=1) & self.exists[None, :]  # (steps, H*G)
        busy = np.zeros((n, H * G))
        if self.e_vm.size:
            u = np.broadcast_to(self.e_fixed, (n, self.e_vm.size)).copy()
            if self.e_cpu.any():
                vmi = self.e_vm[self.e_cpu]
                dem = np.asarray(chunk.demand(), dtype=np.float64)[:, vmi]
                u[:, self.e_cpu] = np.clip(dem / self.full_mhz[vmi][None, :], 0.0, 1.0)
            alive = None
            if win.dynamic:  # a tenant asks for its GPU only while its row is alive (share of the step); a share
                # taken from the VM's CPU demand already has it (the source masks the demand by the alive share)
                alive = win.alive(self.e_vm).astype(np.float64)
                fixed = ~(self.e_cpu | self.e_trace)
                u[:, fixed] *= alive[:, fixed]
            if self.e_trace.any():  # the trace's GPU busy share (already zero outside the VM's run)
                g = chunk.vm.get("gpu_util")
                if g is None:
                    raise RuntimeError("gpu stage: the demand source gave no 'gpu_util' channel for the VMs whose GPU busy "
                                       "share comes from their OpenDC trace")
                u[:, self.e_trace] = np.clip(np.asarray(g, dtype=np.float64)[:, self.e_vm[self.e_trace]], 0.0, 1.0)
            self._contend(ctx, chunk, u, alive)  # vGPU demand cut to the scheduler's share (u is changed in place)
            busy[:, self.e_ucols] = np.add.reduceat(u * self.e_w[None, :], self.e_starts, axis=1)
        elif self.has_vgpu_out:
            self._contend(ctx, chunk, np.zeros((n, 0)), None)
        np.minimum(busy, 1.0, out=busy)
        busy *= self.on_slots
        self._busy = busy
        self._full_w = (self.idle[None, :] + self.span[None, :] * busy) * self.on_slots  # at full clock
        self._limit = np.broadcast_to(self.own_limit, busy.shape)  # each GPU's power limit this chunk
        self._watts = np.minimum(self._full_w, self._limit) if self.own_limited else self._full_w
        self._lowered = (np.zeros(0, np.int64), np.zeros(0, np.int64))  # GPU-steps a power cap lowers (lower_limits)
        chunk.add_host_power(self.host_power_w())

    def host_power_w(self) -> np.ndarray:
        """(steps, H) W the hosts' GPUs draw in this chunk, at their limits so far."""
        n = self._watts.shape[0]
        return self._watts.reshape(n, -1, self.G).sum(axis=2)

    def slot_power_w(self, hosts: np.ndarray) -> np.ndarray:
        """(steps, H', G) W each GPU of ``hosts`` draws in this chunk at its limit so far (0 for slots without a GPU)."""
        G = self.G
        cols = (hosts[:, None] * G + np.arange(G)[None, :]).reshape(-1)
        return self._watts[:, cols].reshape(-1, hosts.size, G)

    def lower_limits(self, chunk, hosts: np.ndarray, limit_w: np.ndarray) -> None:
        """The power cap lowers every GPU of ``hosts`` (H',) to ``limit_w`` (steps, H') W (inf: unchanged; never
        below a card's ``power_limit_min``); their lower draw goes to host power."""
        n, G = self._watts.shape[0], self.G
        limit_w = np.asarray(limit_w, np.float64)
        some = np.isfinite(limit_w).any(axis=0)  # hosts the cap lowers in some step of the chunk
        hosts, limit_w = hosts[some], limit_w[:, some]
        cols = (hosts[:, None] * G + np.arange(G)[None, :]).reshape(-1)  # the hosts' GPU slots, host by host
        lim = np.repeat(limit_w, G, axis=1)
        lim = np.maximum(np.minimum(lim, self._limit[:, cols]), self.limit_min[cols][None, :])
        limit = np.array(self._limit, copy=True)
        limit[:, cols] = lim
        self._limit = limit
        new = np.minimum(self._full_w[:, cols], lim)
        delta = np.zeros((n, self._watts.shape[1] // G))
        delta[:, hosts] = (new - self._watts[:, cols]).reshape(n, hosts.size, G).sum(axis=2)
        chunk.add_host_power(delta)
        if self._watts is self._full_w:
            self._watts = self._full_w.copy()
        self._watts[:, cols] = new
        r, c = np.nonzero(lim < self.own_limit[cols][None, :])  # the GPU-steps the cap lowered below their own limit
        self._lowered = (r, cols[c])

    def cap_cost(self, hosts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What the power cap's lower limits cost the GPUs of ``hosts`` (H',) in this chunk, beyond their own limits:
        (busy share at full clock, of it no longer served, W held back), each per host of ``hosts`` summed over its
        GPU-steps (:func:`densim.engine.stages.host_sums`: a host's figure is the same in a part of a split run)."""
        from densim.models.gpu_power import limited_clock_scale

        n, G = self._busy.shape[0], self.G
        busy = step_sums(self._busy.reshape(n, -1, G)[:, hosts].sum(axis=2))  # each host's GPUs per step, then its steps
        r, c = self._lowered  # (elsewhere the cap costs nothing)
        if not r.size:
            return busy, np.zeros(hosts.size), np.zeros(hosts.size)
        b, full, lim, own = self._busy[r, c], self._full_w[r, c], self._limit[r, c], self.own_limit[c]
        idle, span = self.idle[c], self.span[c]
        lost = (np.maximum(b - limited_clock_scale(b, idle, span, lim), 0.0)
                - np.maximum(b - limited_clock_scale(b, idle, span, own), 0.0))
        held = np.minimum(full, own) - np.minimum(full, lim)
        H = self._busy.shape[1] // G
        return (busy, scattered_host_sums(c, lost, self.col_host, H)[hosts],
                scattered_host_sums(c, held, self.col_host, H)[hosts])

    def after_cpu(self, ctx, chunk) -> None:
        n, H, G = self._busy.shape[0], ctx.hosts.n, self.G
        busy, watts = self._busy, self._watts
        host_w = self.host_power_w()
        per_host_busy = busy.reshape(n, H, G).sum(axis=2) / np.maximum(self.n_gpu, 1)[None, :]
        chunk.host_out["gpu_power_w"] = host_w.astype(np.float32)
        chunk.host_out["gpu_busy"] = per_host_busy.astype(np.float32)
        self.energy_j_h += step_sums(host_w) * chunk.step_s
        # per host: its GPUs added in each step, then its steps in time order (busy is 0 on the slots drawing no power)
        busy_h = step_sums(busy.reshape(n, H, G).sum(axis=2))
        self.busy_h += busy_h
        self.busy_n += int(self.on_slots.sum())
        if self.may_limit:
            self._limited(ctx, chunk, busy, watts, busy_h)

    def _limited(self, ctx, chunk, busy, watts, busy_h) -> None:
        """Per GPU-step whose limit binds: its clock scale, the work it cannot serve, the tenants' slowdown."""
        from densim.models.gpu_power import limited_clock_scale

        n, H = busy.shape[0], ctx.hosts.n
        bind = (self._full_w > self._limit * (1 + 1e-12)) & self.on_slots
        sd = np.ones_like(busy)
        if bind.any():
            r, c = np.nonzero(bind)
            sig = limited_clock_scale(busy[r, c], self.idle[c], self.span[c], self._limit[r, c])
            sd[r, c] = np.divide(busy[r, c], sig, out=np.ones_like(sig), where=sig > 0)
            np.maximum(sd, 1.0, out=sd)
            self.lim_steps += int(r.size)
            self.lim_w_h += scattered_host_sums(c, self._limit[r, c], self.col_host, H)
            self.lim_sigma_h += scattered_host_sums(c, sig, self.col_host, H)
            self.lim_lost_h += scattered_host_sums(c, np.maximum(busy[r, c] - sig, 0.0), self.col_host, H)
            self.lim_saved_h += scattered_host_sums(c, self._full_w[r, c] - watts[r, c], self.col_host, H) * chunk.step_s
        self.lim_busy_h += busy_h
        out = np.ones((n, ctx.vms.n), np.float32)
        if self.e_vm.size:  # a tenant VM's slowdown: the worst of its GPUs' (a passthrough VM may have several)
            vsd = np.ones((n, self.t_vm.size))
            np.maximum.at(vsd, (slice(None), self.t_inv), sd[:, self.e_col])
            asked = np.zeros((n, self.t_vm.size), bool)
            np.logical_or.at(asked, (slice(None), self.t_inv), busy[:, self.e_col] > 0)
            self.lim_vsd_h += host_sums(np.where(asked, vsd, 0.0), self.t_host, H)
            self.lim_vsd_n += int(asked.sum())
            self.lim_vsd_max = max(self.lim_vsd_max, float(vsd.max()))
            out[:, self.t_vm] = vsd
        chunk.vm_out["gpu_power_slowdown"] = out

    def _contend(self, ctx, chunk, u, alive) -> None:
        """Time-sliced vGPUs: the share each gets, its slowdown and wait (``u``'s vGPU columns become the share).
        ``alive`` (steps, entries) or None: the share of each step each tenant's row is alive; an equal-share GPU
        divides its time among the vGPUs alive in the step."""
        from densim.models.gpu_contention import share_gpu_time, slowdown

        n, V = chunk.n_steps, ctx.vms.n
        if not self.v_idx.size:  # no time-sliced vGPU placed: every VM at slowdown 1, no wait (read-only views)
            if self.has_vgpu_out:
                chunk.vm_out["gpu_slowdown"] = np.broadcast_to(np.float32(1.0), (n, V))
                chunk.vm_out["gpu_wait_ms"] = np.broadcast_to(np.float32(0.0), (n, V))
            return
        sd_out = np.ones((n, V), np.float32)
        wait_out = np.zeros((n, V), np.float32)
        if self.v_idx.size:
            dem = np.ascontiguousarray(u[:, self.v_idx])
            got = np.zeros_like(dem)
            wait = np.zeros_like(dem)
            present = (np.ones_like(dem, dtype=np.bool_) if alive is None
                       else np.ascontiguousarray(alive[:, self.v_idx] > 0))
            share_gpu_time(dem, self.v_starts, self.v_policy, self.v_cap, self.v_quantum, got, wait, present)
            u[:, self.v_idx] = got
            sd = slowdown(dem, got)
            sd_out[:, self.v_vm] = sd
            wait_out[:, self.v_vm] = wait * 1e3
            asked = dem > 0
            H = ctx.hosts.n
            self.sd_h += host_sums(np.where(asked, sd, 0.0), self.v_host, H)
            self.sd_n += int(asked.sum())
            self.sd_max = max(self.sd_max, float(sd.max()))
            self.v_dem_h += host_sums(dem, self.v_host, H)
            self.v_got_h += host_sums(got, self.v_host, H)
            self.wait_max = max(self.wait_max, float(wait.max()) * 1e3)
        if self.has_vgpu_out:
            chunk.vm_out["gpu_slowdown"] = sd_out
            chunk.vm_out["gpu_wait_ms"] = wait_out

    def finish(self, ctx, summary) -> None:
        def total(a: np.ndarray) -> float:  # a per-host sum over all hosts, in host order (also in a split run)
            return float(a.sum())

        lim = {}
        if self.may_limit:
            k = self.lim_steps
            lim_busy = total(self.lim_busy_h)
            lim = {"power_limited_gpu_steps": int(k),
                   "power_limit_mean_w_when_limited": total(self.lim_w_h) / k if k else None,
                   "power_limit_clock_mean_when_limited": total(self.lim_sigma_h) / k if k else None,
                   "power_limit_unserved_share": total(self.lim_lost_h) / lim_busy if lim_busy > 0 else 0.0,
                   "power_limit_vm_slowdown_mean": total(self.lim_vsd_h) / self.lim_vsd_n if self.lim_vsd_n else 1.0,
                   "power_limit_vm_slowdown_worst": self.lim_vsd_max,
                   "power_limit_energy_saved_kwh": total(self.lim_saved_h) / 3.6e6}
        v_dem, v_got = total(self.v_dem_h), total(self.v_got_h)
        summary.add("gpu", {
            "gpus": int(self.n_gpu.sum()),
            "gpus_with_tenants": int(self.tenant_gpus),
            "vms_with_gpu": int(self.vms_with_gpu),
            "vms_with_gpu_unplaced": int(self.unplaced),
            "energy_kwh": total(self.energy_j_h) / 3.6e6,
            "mean_busy": total(self.busy_h) / self.busy_n if self.busy_n else 0.0,
            "vgpus": int(self.n_vgpu),
            "vgpu_slowdown_mean": total(self.sd_h) / self.sd_n if self.sd_n else 1.0,
            "vgpu_slowdown_worst": self.sd_max,
            "vgpu_demand_unserved_share": 1.0 - v_got / v_dem if v_dem > 0 else 0.0,
            "vgpu_wait_ms_worst": self.wait_max,
            **lim,
        })


@STAGES.register("gpu", description="GPU power from each GPU's busy share (passthrough, vGPU, MIG tenants), added to host power",
                 source="densim.engine.plugins.gpu; docs/background/gpus.md", before=("carbon",))
def gpu_stage(ctx):
    return GpuStage(ctx) if any(g.gpu is not None for g in ctx.plant.host_groups) else None
