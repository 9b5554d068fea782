"""Engine stage ``memory``: memory over-commit per VM and host, every step (modelling guide §2).

Switched on by ``memory.model: vsphere-like`` in the scenario. Per chunk it flattens the
(steps x VMs) arrays of the VMs on hosts that are short of memory into one element array,
runs :func:`densim.models.memory.reclaim`, :func:`~densim.models.memory.fault_rates` and
:func:`~densim.models.memory.solve_throughput` on it (vectorised; the only loop is over blocks
of time steps to bound memory use), and writes per-VM and per-host metrics. When active memory
is constant in time (profiles rather than trace memory usage) it reclaims once per VM and runs
the per-step fault-cost fixed point over the faulting VMs only (:func:`densim.models.memory.solve_steps`,
one numba pass per chunk unless swap lives on a datastore); where memory sits is then a constant
row per VM (read-only broadcasts), which keeps the stage's cost near zero unless VMs actually
fault.

Active memory per VM and step: the trace's memory usage when it has one (Bitbrains CSV,
profiles), else the VM's memory workload profile (``workload.memory_profile`` of its group, or
``memory.workload``) times its configured memory. The profile's fault intensity applies at 100 %
CPU use of the VM and scales with its CPU demand in the step.

The stage works in ``before_cpu``: the fault rate follows the VM's own demand (before other stages
add overhead cycles to it), and the hypervisor's fault handling costs host CPU (trap, page-table
update, swap I/O submission and completion, decompression;
:func:`densim.models.memory.fault_cpu_cycles_per_s`), added to the faulting VM's CPU demand for the
CPU model: ``mem_fault_cpu_mhz`` per VM and per host, ``summary.memory.fault_cpu``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import numpy as np

from densim._jit import Prefaulted
from densim._lazy import lazy
from densim.engine.stages import STAGES, BaseStage, add_saturation
from densim.models.workload_memory import MemoryWorkload

M = lazy("densim.models.memory")  # its numba kernels: loaded when a run has the memory model on

BLOCK_ELEMENTS = 2_000_000  # elements (step x VM) per vectorised block
HOST_PREFIXED = ("mem_swapped_gib", "mem_fault_cpu_mhz")  # names at both levels: the host column is host_<name>

VM_METRICS = {
    "mem_active_gib": ("GiB", "active memory (trace memory usage or profile active fraction)"),
    "mem_resident_gib": ("GiB", "guest memory backed by host memory"),
    "mem_shared_gib": ("GiB", "saved by page sharing (zero pages; inter-VM if on)"),
    "mem_ballooned_gib": ("GiB", "taken by the balloon driver (idle first, then guest paging)"),
    "mem_compressed_gib": ("GiB", "guest memory held in the compression cache"),
    "mem_swapped_gib": ("GiB", "guest memory in host swap (cache device + datastore)"),
    "mem_fault_rate_per_s": ("1/s", "faults on reclaimed memory per second"),
    "mem_slowdown": ("x", "completion-time stretch from memory faults (1 = none)"),
    "mem_fault_cpu_mhz": ("MHz", "host CPU handling the VM's faults (trap, page-table update, swap I/O, decompression)"),
}
HOST_METRICS = {
    "mem_deficit_gib": ("GiB", "configured + overheads + minFree beyond host memory"),
    "mem_swapped_gib": ("GiB", "host swap in use"),
    "mem_swapping": ("share", "1 when the host swaps or compresses active memory in the step"),
    "mem_swap_iops": ("IOPS", "swap-in and swap-out I/O on the swap devices"),
    "mem_swap_device_util": ("share", "utilisation of the busiest swap device"),
    "mem_fault_cpu_mhz": ("MHz", "host CPU handling its VMs' memory faults (added to their CPU demand)"),
}


TIER_VM_METRICS = {  # declared only with memory.tiering
    "mem_tier_gib": ("GiB", "guest memory on the NVMe memory tier"),
    "mem_tier_fault_rate_per_s": ("1/s", "accesses per second that found their page on the NVMe tier"),
    "mem_tier_slowdown": ("x", "completion-time stretch from NVMe tier faults alone (1 = none)"),
}
TIER_HOST_METRICS = {
    "host_mem_tier_gib": ("GiB", "guest memory on the host's NVMe tier"),
    "mem_tier_iops": ("IOPS", "tier reads (promotions) and writes (demotions) on the tier device(s)"),
    "mem_tier_device_util": ("share", "utilisation of the host's NVMe tier device(s)"),
}


class _MemorySummaryOptional(TypedDict, total=False):
    swap_datastore: str  # only when swap goes to the storage stage's datastores
    tiering: dict  # only with memory.tiering: ratio, device, tier use, the active-memory rule per host


class MemorySummary(_MemorySummaryOptional):
    """``summary["memory"]`` (``swap_datastore`` is optional: a base with total=False, because
    ``NotRequired`` is not seen under postponed annotations on Python 3.11)."""

    model: str
    swap_device: str
    swap_cache_device: str | None
    swap_cache_gib: float
    hosts_short_of_memory: list[str]
    hosts_swapping: list[str]
    host_swapping_step_share: dict[str, float]
    oversubscription_by_host: dict[str, float]
    vms_slowed: int
    worst_vm_slowdown: float
    fault_cpu: dict  # cycles per fault by tier, host CPU the fault handling took (mean and peak MHz per host)


class _DeviceNames(Sequence):
    """``"<device>@<host>"`` for every host, made when read (the saturation log reads only the busy ones)."""

    def __init__(self, device: str, hosts) -> None:
        self.device = device
        self.hosts = hosts

    def __len__(self) -> int:
        return len(self.hosts)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return f"{self.device}@{self.hosts[i]}"


class MemoryStage(BaseStage):
    accepts_factored_demand = True  # the demand is read through chunk.demand() or passed factored to solve_steps
    # a chunk of the VM rows alive in it (chunk.vm_ids; see prepare for the settings that need every row)
    accepts_active_rows = True
    idle_vm_values = {"mem_slowdown": 1.0, "mem_tier_slowdown": 1.0}  # a row not alive: no stretch; the rest 0
    summary_sections = {"memory": MemorySummary}
    name = "memory"

    def __init__(self, ctx) -> None:
        mem = ctx.plant.memory  # resolved parts (densim.plant.resolve checked every reference)
        self.settings = ctx.scenario.memory
        self.params = mem.params
        self.store = M.DeviceArrays.from_spec(mem.swap_device)
        self.cache = M.DeviceArrays.from_spec(mem.swap_cache_device) if mem.swap_cache_device is not None else None
        # where host swap lives: swap_device (today's unloaded device) or a storage datastore
        self.coupled = self.settings.swap_datastore is not None
        self.ios_per_fault = M.PAGE_BYTES / self.settings.swap_block_size_bytes
        self.profiles: list[MemoryWorkload] = list(mem.profiles)  # one memory profile per VM group
        self.images = mem.images or None  # per VM group: its guest image (workload.guest_image) or None
        # NVMe memory tiering (memory.tiering): the tier device per host and the tier-fault costs
        self.tiering = self.settings.tiering if getattr(mem, "tier_device", None) is not None else None
        if self.tiering is not None:
            from densim.models import tiering as TI

            t, p = self.tiering, self.params
            self.tier_dev = TI.tier_device_arrays(mem.tier_device, t.devices_per_host)
            self.tier_costs = TI.tier_costs(p.software_s if t.software_s is None else t.software_s,
                                            p.writes_per_fault if t.writes_per_fault is None else t.writes_per_fault,
                                            p.costs())
            self.tier_groups = np.asarray(mem.tier_groups, dtype=bool)

    def prepare(self, ctx) -> None:
        vms, hosts = ctx.vms, ctx.hosts
        g = vms.group

        def per_vm(field: str) -> np.ndarray:  # a profile value per VM, by its group
            values = np.array([getattr(p, field) for p in self.profiles], dtype=float)
            return np.full(vms.n, values[0]) if values.size == 1 else values[g]

        self.active_frac = per_vm("active_fraction")
        self.rate = per_vm("total_access_rate_per_s")
        self.bas = per_vm("balloon_active_share")
        self.comp = per_vm("compressible_fraction")
        if self.images is not None:  # page sharing by guest image (_sharing_fractions)
            names = sorted({i.name for i in self.images if i is not None})
            of_group = np.array([-1 if i is None else names.index(i.name) for i in self.images], dtype=np.int64)
            by_name = {i.name: i for i in self.images if i is not None}
            self.img_vm = of_group[g]
            self.img_zs = np.array([by_name[n].zero_fraction + by_name[n].self_fraction for n in names])
            self.img_f = np.array([by_name[n].shared_fraction for n in names])
            self.img_unique = np.array([by_name[n].unique for n in names], dtype=bool)
            self.numa_h = np.maximum(np.asarray(hosts.sockets, dtype=float), 1.0)
        self.theta = per_vm("overlap")
        # miss-ratio model per VM group (a short loop over groups, never over VMs)
        self.miss_group = np.asarray(g, dtype=np.int64)
        # which groups' sources report memory usage
        parts = getattr(ctx.source, "parts", [ctx.source])
        has_mem = np.array(["mem_used_bytes" in getattr(p, "channels", ()) for p in parts], dtype=bool)
        mode = self.settings.trace_memory
        if has_mem.size != len(ctx.scenario.vms):
            has_mem = np.zeros(len(ctx.scenario.vms), bool)
        # auto: a trace's memory usage wins; for a synthetic profile (whose active_memory_fraction
        # defaults to 0.5) an explicitly named memory profile wins
        named = np.array([bool((grp.workload or {}).get("memory_profile")) and grp.profile is not None
                          for grp in ctx.scenario.vms], dtype=bool)
        if mode == "auto":
            self.use_trace_mem = (has_mem & ~named)[g]
        else:
            self.use_trace_mem = (has_mem & (mode == "on"))[g]
        placed = vms.host >= 0
        H = hosts.n
        p = self.params
        # a chunk of only the VM rows alive in it (densim.engine.stages, "Alive rows"): swap on a datastore (the
        # storage stage's per-VM swap slots and queues) and the NVMe tier (_tier, _tier_place: (steps, VMs)
        # arrays of every row) stay on chunks of every row
        self.accepts_active_rows = not (self.coupled or self.tiering is not None)
        self._cfg_all = np.where(placed, vms.mem_bytes, 0.0)
        live = getattr(ctx, "liveness", None)
        if live is None:
            cfg_h = np.bincount(vms.host[placed], weights=vms.mem_bytes[placed], minlength=H)
            n_h = np.bincount(vms.host[placed], minlength=H).astype(float)
        else:  # VMs arrive and leave: a host holds the VMs alive on it at once, at the instant its need peaks
            need, cfg_h, n_h = live.peak_per_host(
                vms.host, np.stack([vms.mem_bytes + p.overhead_per_vm_bytes, vms.mem_bytes, np.ones(vms.n)]), H)
        ovh = n_h * p.overhead_per_vm_bytes
        self.capacity_h = M.guest_capacity_bytes(hosts.mem_bytes, n_h, p)
        # memory tiering: DRAM's guest capacity stays as it is; the tier adds ratio x DRAM before reclamation starts
        self.tier_h = np.zeros(H)
        if self.tiering is not None:
            self.tier_h = self.tiering.ratio * np.asarray(hosts.mem_bytes, float) * self.tier_groups[np.asarray(hosts.group)]
            self.dram_cap_h = self.capacity_h
            self.capacity_h = self.capacity_h + self.tier_h
        self.deficit_h = np.maximum(cfg_h - self.capacity_h, 0.0)
        self.cfg_h = cfg_h
        self.ratio_h = M.oversubscription(cfg_h, hosts.mem_bytes, p.hypervisor_bytes, ovh)
        # only VMs on hosts short of memory need the model; the rest stay fully resident
        self.hosts_short = np.flatnonzero(self.deficit_h > 0)
        self.vm_idx = np.flatnonzero(placed & (self.deficit_h[np.where(placed, vms.host, 0)] > 0))
        self._short_vm = np.zeros(vms.n, dtype=bool)  # on a host short of memory (vm_idx), by row
        self._short_vm[self.vm_idx] = True
        self._rec1 = None  # one-step reclamation, reused while active memory is constant
        self._solve_args = None  # solve_steps' per-VM arguments, taken in the first chunk
        self._host_idx = vms.host[self.vm_idx]
        self._cap_vm = vms.vcpus * vms.vcpu_mhz
        self.swap_steps = np.zeros(H)
        self._store_names = _DeviceNames(self.settings.swap_device, hosts.names)
        self._cache_names = _DeviceNames(self.settings.swap_cache_device, hosts.names) if self.cache is not None else []
        self.max_slowdown = np.ones(vms.n)
        # host CPU of fault handling: decompression cycles at the host's core clock; per-host totals for the summary
        self._core_mhz_vm = np.asarray(hosts.core_mhz, dtype=float)[np.where(placed, vms.host, 0)]
        self._costs = p.costs()
        self._store_ios = self.ios_per_fault if self.coupled else 1.0
        self.fault_mhz_sum = np.zeros(H)
        self.fault_mhz_peak = np.zeros(H)
        for name, (unit, doc) in VM_METRICS.items():
            ctx.declare(name, level="vm", agg="max" if name == "mem_slowdown" else "mean", unit=unit, doc=doc)
        for name, (unit, doc) in HOST_METRICS.items():
            ctx.declare("host_" + name if name in HOST_PREFIXED else name, level="host",
                        agg="max" if name.endswith("util") else "mean", unit=unit, doc=doc)
        if self.tiering is not None:
            self._prepare_tier(ctx, placed)

    def _active(self, chunk, idx, cfg, b0, b1, cols=None):
        """Active bytes (steps b0..b1, VMs idx): trace memory usage where available, else profile.
        ``cols``: the VMs' columns in the chunk's arrays (default ``idx``: a chunk of every row)."""
        act = np.broadcast_to(self.active_frac[idx] * cfg, (b1 - b0, idx.size))
        mem_used = chunk.vm.get("mem_used_bytes")
        if mem_used is not None and self.use_trace_mem[idx].any():
            used = np.minimum(np.asarray(mem_used[b0:b1][:, idx if cols is None else cols], dtype=float), cfg[None, :])
            act = np.where(self.use_trace_mem[idx][None, :], used, act)
        return act

    def _sharing_fractions(self, cfg, act, seg, host, n, idx, sel=None):
        """Per element (step, VM) the zero and inter-VM sharing fractions from the VMs' guest images
        (:func:`densim.models.page_sharing.element_fractions`): ``n_i`` counts the VMs of each image among the
        elements of the same host and step, the VMs alive there (a VM not alive has 0 configured bytes here), so it
        follows arrivals, departures, restarts and moves; one copy kept per NUMA node (the host's sockets)."""
        from densim.models.page_sharing import element_fractions

        p = self.params
        img, numa = np.tile(self.img_vm[idx], n), np.tile(self.numa_h[host], n)
        if sel is not None:
            img, numa = img[sel], numa[sel]
        return element_fractions(img, cfg, act, seg, numa,
                                 zero_self=self.img_zs, shared=self.img_f, unique=self.img_unique,
                                 inter_vm=self.settings.inter_vm_sharing, zero_default=p.zero_page_fraction,
                                 inter_default=p.inter_vm_sharing_fraction)

    def _reclaim(self, cfg, act, host, H, n, idx, capacity=None, sel=None):
        """The reclamation pipeline for the (n steps x VMs idx) elements, or only the flat elements ``sel`` of them
        (each segment keeps its capacity; an element left out holds nothing the pipeline would count)."""
        p = self.params
        k = idx.size
        cfg_el = np.broadcast_to(cfg, (n, k)).ravel()
        act_el = np.asarray(act, float).ravel()
        seg = M.segments(host, H, n)
        pick = (lambda a: a) if sel is None else (lambda a: a[sel])  # noqa: E731
        cfg_el, act_el, seg = pick(cfg_el), pick(act_el), pick(seg)
        if self.images is None:
            zf, isf = p.zero_page_fraction, p.inter_vm_sharing_fraction
        else:
            zf, isf = self._sharing_fractions(cfg_el, np.minimum(act_el, cfg_el), seg, host, n, idx, sel)
        return M.reclaim(
            cfg_el, act_el, seg, n * H,
            np.broadcast_to(self.capacity_h if capacity is None else capacity, (n, H)).ravel(),
            zero_page_fraction=zf, inter_vm_sharing_fraction=isf,
            balloon_limit=p.balloon_limit, balloon_active_share=pick(np.tile(self.bas[idx], n)),
            compression_cache_fraction=p.compression_cache_fraction if p.compression else 0.0,
            compression_ratio=p.compression_ratio,
            compressible_fraction=pick(np.tile(self.comp[idx], n)) if p.compression else 0.0,
            swap_cache_bytes=self.settings.swap_cache_bytes if self.cache is not None else 0.0,
        )

    def _all_fit(self, chunk, cfg_all, T, V, H, rows=None) -> None:
        """No host short of memory: every VM fully resident (``rows``: the chunk's VM rows, None: all)."""
        zero_v = np.broadcast_to(np.float32(0.0), (T, V))
        zero_h = np.broadcast_to(np.float32(0.0), (T, H))
        for name in VM_METRICS:
            chunk.vm_out[name] = zero_v
        chunk.vm_out["mem_slowdown"] = np.broadcast_to(np.float32(1.0), (T, V))
        chunk.vm_out["mem_resident_gib"] = np.broadcast_to((cfg_all / M.GIB).astype(np.float32), (T, V))
        gid = np.arange(V) if rows is None else rows
        if chunk.vm.get("mem_used_bytes") is not None and self.use_trace_mem.any():
            chunk.vm_out["mem_active_gib"] = (self._active(chunk, gid, cfg_all, 0, T, np.arange(V)) / M.GIB).astype(np.float32)
        else:
            af = self.active_frac if rows is None else self.active_frac[rows]
            chunk.vm_out["mem_active_gib"] = np.broadcast_to((af * cfg_all / M.GIB).astype(np.float32), (T, V))
        for name in HOST_METRICS:
            chunk.host_out["host_" + name if name in HOST_PREFIXED else name] = zero_h
        chunk.host_out["mem_deficit_gib"] = np.broadcast_to((self.deficit_h / M.GIB).astype(np.float32), (T, H))

    def before_cpu(self, ctx, chunk) -> None:
        # the tier faults follow the VM's own demand, before the swap faults' CPU is added to it
        tier_demand = self._tier_demand(chunk) if self.tiering is not None else None
        self._before_cpu_swap(ctx, chunk)
        if self.tiering is not None:
            self._tier(ctx, chunk, tier_demand)

    def _before_cpu_swap(self, ctx, chunk) -> None:
        vms, hosts = ctx.vms, ctx.hosts
        # the chunk's VM columns: every row, or the rows alive in it (chunk.vm_ids); idx are the rows of
        # the VMs on hosts short of memory (per-VM parameters are read there), col their columns
        rows = chunk.vm_ids
        T, H = chunk.n_steps, hosts.n
        if rows is None:
            V, idx, cfg_all = vms.n, self.vm_idx, self._cfg_all
            col = idx
        else:
            V, cfg_all = rows.size, self._cfg_all[rows]
            col = np.flatnonzero(self._short_vm[rows])
            idx = rows[col]
        if self.vm_idx.size == 0:
            # no host is short of memory: constant rows, handed out as read-only broadcasts
            self._all_fit(chunk, cfg_all, T, V, H, rows)
            if chunk.window(ctx).dynamic:  # a VM holds memory only while it lives
                alive = chunk.window(ctx).alive_mask(rows)
                for name in ("mem_resident_gib", "mem_active_gib"):
                    chunk.vm_out[name] = (chunk.vm_out[name] * alive).astype(np.float32)
            return
        ws = chunk.window(ctx)
        if not ws.dynamic and self._active_is_static(chunk):
            self._static(ctx, chunk, cfg_all, T, V, H)
            return
        out_vm = {k: np.zeros((T, V), dtype=np.float32) for k in VM_METRICS}
        out_vm["mem_slowdown"][:] = 1.0
        out_vm["mem_resident_gib"][:] = (cfg_all / M.GIB).astype(np.float32)[None, :]
        out_vm["mem_active_gib"][:] = self._active(chunk, np.arange(V) if rows is None else rows, cfg_all, 0, T,
                                                   np.arange(V)) / M.GIB
        out_h = {k: np.zeros((T, H), dtype=np.float32) for k in HOST_METRICS}
        out_h["mem_deficit_gib"][:] = (self.deficit_h / M.GIB).astype(np.float32)[None, :]
        k = idx.size
        every = k == V  # all VMs under pressure: plain slices instead of column scatter
        block = max(1, BLOCK_ELEMENTS // max(k, 1))
        cfg = cfg_all[col]
        host = vms.host[idx]
        cap_vm = (vms.vcpus * vms.vcpu_mhz)[idx]
        demand = chunk.demand()
        # per-device busy shares for the saturation log (only the devices that exist as such)
        # (without a cache device the store's utilisation is mem_swap_device_util itself: no copy)
        util_s = np.zeros((T, H), np.float32) if not self.coupled and self.cache is not None else None
        util_c = np.zeros((T, H), np.float32) if self.cache is not None else None
        swap_io = np.zeros((T, V), np.float32) if self.coupled else None
        if ws.dynamic:  # VMs arrive and leave: only those alive in a step hold memory (on any host)
            alive_v = ws.alive_mask(rows)
            out_vm["mem_resident_gib"] *= alive_v
            out_vm["mem_active_gib"] *= alive_v
            alive = alive_v if every else alive_v[:, col]
        for b0 in range(0, T, block):  # blocks of time steps only
            b1 = min(T, b0 + block)
            n = b1 - b0
            seg = M.segments(host, H, n)
            util = np.clip((demand[b0:b1] if every else np.take(demand[b0:b1], col, axis=1)) / cap_vm[None, :], 0.0, 1.0)
            sel = None
            if not ws.dynamic:
                rec = self._reclaim(cfg, self._active(chunk, idx, cfg, b0, b1), host, H, n, idx)
            else:
                live = alive[b0:b1]
                cfg_t = cfg[None, :] * live
                cell = (np.arange(n)[:, None] * H + host[None, :]).ravel()  # VMs alive per (step, host)
                n_h = np.bincount(cell, weights=live.ravel(), minlength=n * H).reshape(n, H)
                cap_t = M.guest_capacity_bytes(ctx.hosts.mem_bytes[None, :], n_h, self.params) + self.tier_h[None, :]
                sel = self._pressed(cfg_t, cap_t, live, cell, n, H, idx) if not self.coupled else None
                rec = self._reclaim(cfg_t, self._active(chunk, idx, cfg, b0, b1, col) * live, host, H, n, idx, capacity=cap_t,
                                    sel=sel)
            pick = (lambda a: a) if sel is None else (lambda a: a[sel])  # noqa: E731
            miss = self._miss(pick(np.tile(self.miss_group[idx], n)), rec.resident_active_fraction)
            f = M.fault_rates(rec, pick((self.rate[idx][None, :] * util).ravel()), miss_ratio_values=miss)
            tp = self._solve(f, pick(seg), n * H, pick(np.tile(self.theta[idx], n)), ctx=ctx, chunk=chunk, b0=b0, n=n,
                             vm_ids=idx)
            sl = slice(b0, b1)
            fcpu = M.fault_cpu_cycles_per_s(f, tp.throughput, self._costs, core_mhz=pick(np.tile(self._core_mhz_vm[idx], n)),
                                            store_ios_per_fault=self._store_ios) / 1e6
            seg = pick(seg)

            if sel is not None:  # the elements left out keep the all-fit values the arrays were filled with
                at_step, at_col = b0 + sel // k, (sel % k if every else col[sel % k])

            def put(name, arr):
                if sel is not None:
                    out_vm[name][at_step, at_col] = arr
                    return
                a = arr.reshape(n, k)
                if every:
                    out_vm[name][sl] = a
                else:
                    out_vm[name][sl, col] = a

            put("mem_resident_gib", rec.resident_bytes / M.GIB)
            put("mem_shared_gib", rec.shared_bytes / M.GIB)
            put("mem_ballooned_gib", rec.ballooned_bytes / M.GIB)
            put("mem_compressed_gib", rec.compressed_bytes / M.GIB)
            put("mem_swapped_gib", rec.swapped_bytes / M.GIB)
            put("mem_fault_rate_per_s", tp.fault_rate_per_s)
            put("mem_slowdown", tp.slowdown)
            put("mem_fault_cpu_mhz", fcpu)
            hs = lambda a: M.seg_sum(a, seg, n * H).reshape(n, H)  # noqa: E731
            out_h["mem_fault_cpu_mhz"][sl] = hs(fcpu)
            out_h["mem_swapped_gib"][sl] = hs(rec.swapped_bytes) / M.GIB
            out_h["mem_swapping"][sl] = hs(rec.swapped_bytes + rec.compressed_bytes + rec.ballooned_active_bytes) > 0
            out_h["mem_swap_iops"][sl] = (tp.load_store_iops + tp.load_cache_iops).reshape(n, H)
            out_h["mem_swap_device_util"][sl] = np.maximum(tp.util_store, tp.util_cache).reshape(n, H)
            if util_s is not None:
                util_s[sl] = tp.util_store.reshape(n, H)
            if util_c is not None:
                util_c[sl] = tp.util_cache.reshape(n, H)
            if swap_io is not None:
                put_io = tp.extra["store_iops_el"].reshape(n, k)
                if every:
                    swap_io[sl] = put_io
                else:
                    swap_io[sl, col] = put_io
        self._emit(chunk, out_vm, out_h)
        if util_s is None and not self.coupled:
            util_s = out_h["mem_swap_device_util"]
        self._publish(ctx, chunk, util_s, util_c, swap_io)

    def _pressed(self, cfg_t, cap_t, live, cell, n, H, idx):
        """Flat elements (step x VM) the pipeline must see in a block of a run whose VMs arrive and leave, or None
        for all: a VM alive in a step on a host whose alive VMs' memory may exceed its capacity then. Every other
        element holds its configured memory with no fault, as the pipeline would give it (deficit 0: nothing
        shared, ballooned, compressed or swapped, and faults come only from reclaimed memory, whatever the miss
        ratio at full residency), so it keeps the values the output arrays start with. The need is compared with a
        margin, so a host-step the kernel's own sum might find short is kept too."""
        need = np.bincount(cell, weights=cfg_t.ravel(), minlength=n * H)
        maybe = need > cap_t.ravel() * (1.0 - 1e-9)
        if maybe.all():
            return None
        return np.flatnonzero(maybe[cell] & (live.ravel() > 0))

    def _active_is_static(self, chunk) -> bool:
        """True when no VM under pressure takes its active memory from a trace (it is constant)."""
        return not (chunk.vm.get("mem_used_bytes") is not None and self.use_trace_mem[self.vm_idx].any())

    def _miss(self, group, resident_active_fraction):
        """Miss ratio per element, each VM group with its own miss-ratio model (a loop over groups)."""
        miss = np.zeros(group.size)
        for gi in np.unique(group):
            sel = group == gi
            prof = self.profiles[gi]
            miss[sel] = M.miss_ratio(prof.miss_model, resident_active_fraction[sel], **prof.miss_params())
        return miss

    def _solve(self, faults, seg, n_seg, overlap, *, ctx, chunk, b0: int, n: int, vm_ids):
        """Fault-cost fixed point for the elements (steps b0..b0+n of the chunk) x VMs ``vm_ids``."""
        p = self.params
        if not self.coupled:
            return M.solve_throughput(faults, seg, n_seg, store=self.store, cache=self.cache, costs=p.costs(),
                                      overlap=overlap, background_store_iops=self.settings.background_swap_iops)
        # swap on a datastore: its latency (other VMs' I/O + swap) is the store fault cost
        storage = ctx.stage("storage")
        S = storage.slot_ds.size
        queue = storage.swap_queues(chunk, b0, b0 + n)
        store_seg = (np.arange(n, dtype=np.int64)[:, None] * S + storage.swap_slot[vm_ids][None, :]).ravel()
        return M.solve_throughput_on_datastores(faults, seg, n_seg, store_seg, n * S, queue=queue, cache=self.cache,
                                                costs=p.costs(), overlap=overlap, ios_per_fault=self.ios_per_fault)

    def _publish(self, ctx, chunk, util_s, util_c, swap_io) -> None:
        """Swap devices' busy shares to the saturation log; swap I/O to the storage stage."""
        if util_s is not None:  # with swap_datastore the store is a datastore, reported by the storage stage
            add_saturation(ctx, "swap device", self._store_names, util_s, key="store")
        if util_c is not None:
            add_saturation(ctx, "swap device", self._cache_names, util_c, key="cache")
        if swap_io is not None:
            from densim.models.storage.vmio import add_swap_io

            w = float(self.params.writes_per_fault)
            add_swap_io(chunk, swap_io * np.float32(1.0 / (1.0 + w)), swap_io * np.float32(w / (1.0 + w)))

    def _emit(self, chunk, out_vm, out_h, demand=None, max_slowdown=None) -> None:
        """Hand the metrics to the engine and add the fault-handling CPU to the VMs' demand.

        ``demand`` (the demand with the fault CPU added) and ``max_slowdown`` (per VM over the steps)
        when the caller has them already.
        """
        if demand is not None:
            chunk.vm["cpu_demand_mhz"] = demand
        else:
            fc = out_vm["mem_fault_cpu_mhz"]
            if fc.strides != (0, 0) or fc.flat[0] != 0:  # a zero broadcast adds nothing
                demand = chunk.demand()
                chunk.vm["cpu_demand_mhz"] = (demand + fc).astype(demand.dtype, copy=False)
        fh = np.asarray(out_h["mem_fault_cpu_mhz"])
        self.fault_mhz_sum += fh.sum(axis=0)
        np.maximum(self.fault_mhz_peak, fh.max(axis=0), out=self.fault_mhz_peak)
        for name, arr in out_vm.items():
            chunk.vm_out[name] = arr
        for name, arr in out_h.items():
            chunk.host_out["host_" + name if name in HOST_PREFIXED else name] = arr
        self.swap_steps += out_h["mem_swapping"].sum(axis=0)
        if max_slowdown is None:
            max_slowdown = out_vm["mem_slowdown"].max(axis=0)
        if chunk.vm_ids is None:
            np.maximum(self.max_slowdown, max_slowdown, out=self.max_slowdown)
        else:  # the chunk's columns are its rows
            self.max_slowdown[chunk.vm_ids] = np.maximum(self.max_slowdown[chunk.vm_ids], max_slowdown)

    def _new_demand(self, chunk, T: int, V: int) -> Prefaulted | None:
        """The (steps x VMs) array solve_steps will write the demand with the fault CPU into, its pages
        mapped on the other core from now on (:class:`densim._jit.Prefaulted`); None when no VM
        faults, when swap is on a datastore (no solve_steps) or when it writes into the chunk's own
        demand array (float32, C-ordered, writeable and held by nobody else)."""
        if self.coupled or (self._fidx.size == 0 and self.settings.background_swap_iops <= 0):
            return None
        d = chunk.vm.get("cpu_demand_mhz")
        if (d is not None and "cpu_demand_mhz" in chunk.owned and d.dtype == np.float32 and d.flags.c_contiguous
                and d.flags.writeable):
            return None
        return Prefaulted((T, V), np.float32)

    def _static(self, ctx, chunk, cfg_all, T, V, H) -> None:
        """Active memory constant in time (profiles, no trace memory): reclaim once, per VM.

        Where each VM's memory sits does not change from step to step, so those metrics are
        constant rows (read-only broadcasts). Only the fault rate varies, with the VM's CPU use,
        and only VMs whose active memory was reclaimed fault: the per-step fault-cost fixed point
        runs over those VMs alone (their devices' load comes from them plus any background load).
        """
        idx = self.vm_idx
        out = None if self._rec1 is None else self._new_demand(chunk, T, V)
        if self._rec1 is None:
            cfg = cfg_all[idx]
            host = self._host_idx
            rec = self._reclaim(cfg, self._active(chunk, idx, cfg, 0, 1), host, H, 1, idx)
            miss = self._miss(self.miss_group[idx], rec.resident_active_fraction)
            unit = M.fault_rates(rec, 1.0, miss_ratio_values=miss)  # faults per access: F / r
            faulting = unit.total * self.rate[idx] > 0
            self._rec1 = rec
            self._unit = unit
            self._fidx = np.flatnonzero(faulting)
            out = self._new_demand(chunk, T, V)  # its pages are mapped while the rows below are built

            def row(a_idx, base):
                if idx.size == V:  # every VM is on a host short of memory: the row is theirs
                    return np.asarray(a_idx, dtype=np.float32)
                out = np.array(base, dtype=np.float32)
                out[idx] = a_idx
                return out

            zero_v = np.zeros(V, np.float32)
            self._rows_vm = {
                "mem_active_gib": (self.active_frac * cfg_all / M.GIB).astype(np.float32),
                "mem_resident_gib": row(rec.resident_bytes / M.GIB, cfg_all / M.GIB),
                "mem_shared_gib": row(rec.shared_bytes / M.GIB, zero_v),
                "mem_ballooned_gib": row(rec.ballooned_bytes / M.GIB, zero_v),
                "mem_compressed_gib": row(rec.compressed_bytes / M.GIB, zero_v),
                "mem_swapped_gib": row(rec.swapped_bytes / M.GIB, zero_v),
            }
            seg1 = M.segments(host, H, 1)
            self._rows_h = {
                "mem_deficit_gib": (self.deficit_h / M.GIB).astype(np.float32),
                "mem_swapped_gib": (M.seg_sum(rec.swapped_bytes, seg1, H) / M.GIB).astype(np.float32),
                "mem_swapping": (M.seg_sum(rec.swapped_bytes + rec.compressed_bytes + rec.ballooned_active_bytes, seg1, H) > 0
                                 ).astype(np.float32),
            }
        out_vm = {name: np.broadcast_to(r, (T, V)) for name, r in self._rows_vm.items()}
        out_h = {name: np.broadcast_to(r, (T, H)) for name, r in self._rows_h.items()}
        fidx = self._fidx
        if fidx.size == 0 and self.settings.background_swap_iops <= 0:
            out_vm["mem_fault_rate_per_s"] = np.broadcast_to(np.float32(0.0), (T, V))
            out_vm["mem_slowdown"] = np.broadcast_to(np.float32(1.0), (T, V))
            out_vm["mem_fault_cpu_mhz"] = np.broadcast_to(np.float32(0.0), (T, V))
            out_h["mem_fault_cpu_mhz"] = np.broadcast_to(np.float32(0.0), (T, H))
            out_h["mem_swap_iops"] = np.broadcast_to(np.float32(0.0), (T, H))
            out_h["mem_swap_device_util"] = np.broadcast_to(np.float32(0.0), (T, H))
            self._emit(chunk, out_vm, out_h)
            return
        vms_idx = self.vm_idx[fidx]
        u = self._unit
        if not self.coupled:  # one numba pass over the chunk: faults, fixed point per (step, host), outputs
            factored = "cpu_demand_mhz" not in chunk.vm and chunk.demand_factors is not None
            demand = None if factored else chunk.demand()
            own = out is None  # solve_steps writes the fault CPU into the chunk's own demand array
            if self._solve_args is None:  # the faulting VMs' constants: the same in every chunk
                every = vms_idx.size == V  # every VM faults (the indices are 0..V-1): the arrays as they are, no copies

                def pick(x, i):
                    return x if every else x[i]

                self._solve_args = (vms_idx, pick(self._host_idx, fidx),
                                    M.FaultRates(*(pick(getattr(u, name), fidx) for name in ("compressed", "cache", "store",
                                                                                             "guest", "miss_ratio"))),
                                    *(pick(x, vms_idx) for x in (self.rate, self._cap_vm, self.theta, self._core_mhz_vm)))
            ids, hosts_of, unit, rate, cap, theta, core = self._solve_args
            res = M.solve_steps(demand, ids, hosts_of, H, unit, rate, cap, theta, core, store=self.store, cache=self.cache, costs=self._costs,
                                background_store_iops=self.settings.background_swap_iops, store_ios_per_fault=self._store_ios,
                                series=chunk.keep_vm_series, in_place=own,
                                factors=chunk.demand_factors if factored else None, out=out)
            if chunk.keep_vm_series:
                out_vm.update(mem_fault_rate_per_s=res.fault_rate_per_s, mem_slowdown=res.slowdown,
                              mem_fault_cpu_mhz=res.fault_cpu_mhz)
            else:  # sums over the chunk's steps (and the slowdown's maximum): no (steps x VMs) arrays
                chunk.vm_reduced.update(mem_fault_rate_per_s=(res.fault_rate_per_s, None),
                                        mem_slowdown=(res.slowdown, res.max_slowdown.astype(np.float64)),
                                        mem_fault_cpu_mhz=(res.fault_cpu_mhz, None))
            out_h.update(mem_fault_cpu_mhz=res.host_fault_cpu_mhz, mem_swap_iops=res.swap_iops, mem_swap_device_util=res.util)
            self._emit(chunk, out_vm, out_h, demand=res.demand_mhz, max_slowdown=res.max_slowdown)
            cached = self.cache is not None
            self._publish(ctx, chunk, res.util_store if cached else res.util, res.util_cache if cached else None, None)
            return
        k = fidx.size
        fr = np.zeros((T, V), np.float32)
        sd = np.ones((T, V), np.float32)
        fc = np.zeros((T, V), np.float32)
        fch = np.zeros((T, H), np.float32)
        core_mhz = self._core_mhz_vm[vms_idx]
        iops = np.zeros((T, H), np.float32)
        util_d = np.zeros((T, H), np.float32)
        tiers = {name: getattr(u, name)[fidx] for name in ("compressed", "cache", "store", "guest", "miss_ratio")}
        host = self._host_idx[fidx]
        demand = chunk.demand()
        cap_vm = self._cap_vm[vms_idx]
        rate = self.rate[vms_idx]
        theta = self.theta[vms_idx]
        block = max(1, BLOCK_ELEMENTS // max(k, 1))
        # per-device busy shares for the saturation log (only the devices that exist as such)
        # (without a cache device the store's utilisation is mem_swap_device_util itself: no copy)
        util_s = np.zeros((T, H), np.float32) if not self.coupled and self.cache is not None else None
        util_c = np.zeros((T, H), np.float32) if self.cache is not None else None
        swap_io = np.zeros((T, V), np.float32) if self.coupled else None
        for b0 in range(0, T, block):
            b1 = min(T, b0 + block)
            n = b1 - b0
            # np.take keeps C order (a[:, idx] may not, and every ravel below would then copy)
            r = rate[None, :] * np.clip(np.take(demand[b0:b1], vms_idx, axis=1) / cap_vm[None, :], 0.0, 1.0)  # accesses/s
            # a tier no VM uses (e.g. no swap cache device) is a read-only zero broadcast, not an array
            f = M.FaultRates(**{name: np.tile(t, n) if name == "miss_ratio" else
                                ((r * t[None, :]).ravel() if t.any() else np.broadcast_to(0.0, (n * k,)))
                                for name, t in tiers.items()})
            seg = M.segments(host, H, n)
            tp = self._solve(f, seg, n * H, np.tile(theta, n), ctx=ctx, chunk=chunk, b0=b0, n=n, vm_ids=vms_idx)
            sl = slice(b0, b1)
            fcpu = M.fault_cpu_cycles_per_s(f, tp.throughput, self._costs, core_mhz=np.tile(core_mhz, n),
                                            store_ios_per_fault=self._store_ios) / 1e6
            fc[sl, vms_idx] = fcpu.reshape(n, k)
            fch[sl] = M.seg_sum(fcpu, seg, n * H).reshape(n, H)
            fr[sl, vms_idx] = tp.fault_rate_per_s.reshape(n, k)
            sd[sl, vms_idx] = tp.slowdown.reshape(n, k)
            iops[sl] = (tp.load_store_iops + tp.load_cache_iops).reshape(n, H)
            util_d[sl] = np.maximum(tp.util_store, tp.util_cache).reshape(n, H)
            if util_s is not None:
                util_s[sl] = tp.util_store.reshape(n, H)
            if util_c is not None:
                util_c[sl] = tp.util_cache.reshape(n, H)
            if swap_io is not None:
                swap_io[sl, vms_idx] = tp.extra["store_iops_el"].reshape(n, k)
        out_vm["mem_fault_rate_per_s"] = fr
        out_vm["mem_slowdown"] = sd
        out_vm["mem_fault_cpu_mhz"] = fc
        out_h["mem_fault_cpu_mhz"] = fch
        out_h["mem_swap_iops"] = iops
        out_h["mem_swap_device_util"] = util_d
        self._emit(chunk, out_vm, out_h)
        if util_s is None and not self.coupled:
            util_s = out_h["mem_swap_device_util"]
        self._publish(ctx, chunk, util_s, util_c, swap_io)

    # ------------------------------------------------------------------ NVMe memory tiering
    def _prepare_tier(self, ctx, placed) -> None:
        """The VMs on tiered hosts whose configured memory (at its peak) is beyond DRAM: the only ones that can
        have pages on the tier; the tier metrics declared."""
        vms, hosts = ctx.vms, ctx.hosts
        spills = (self.tier_h > 0) & (self.cfg_h > self.dram_cap_h)
        self.tier_idx = np.flatnonzero(placed & spills[np.where(placed, vms.host, 0)])
        self._tier_static = None  # placement per VM, kept while active memory is constant
        self._tier_names = _DeviceNames(self.tiering.device, hosts.names)
        H = hosts.n
        self.tier_peak_gib_h = np.zeros(H)
        self.tier_active_peak_h = np.zeros(H)  # active memory / DRAM guest capacity, worst step (the active-memory rule)
        self.tier_util_peak_h = np.zeros(H)
        self.tier_max_slowdown = np.ones(vms.n)
        for name, (unit, doc) in TIER_VM_METRICS.items():
            ctx.declare(name, level="vm", agg="max" if name.endswith("slowdown") else "mean", unit=unit, doc=doc)
        for name, (unit, doc) in TIER_HOST_METRICS.items():
            ctx.declare(name, level="host", agg="max" if name.endswith("util") else "mean", unit=unit, doc=doc)

    def _tier_demand(self, chunk):
        """The tier VMs' CPU demand (steps x VMs), copied before the swap stage adds its fault CPU."""
        if self.tier_idx.size == 0:
            return None
        return np.take(np.asarray(chunk.demand()), self.tier_idx, axis=1).astype(np.float64)

    def _tier_place(self, ctx, chunk, b0, b1, alive):
        """Page placement for steps b0..b1 of the tier VMs: (tier bytes, tier access ratio, host active) per element."""
        from densim.models import tiering as TI

        vms, H, n = ctx.vms, ctx.hosts.n, b1 - b0
        tidx = self.tier_idx
        cfg = vms.mem_bytes[tidx]
        host = vms.host[tidx]
        act = np.asarray(self._active(chunk, tidx, cfg, b0, b1), float)
        cap, dram = self.capacity_h, self.dram_cap_h
        if alive is not None:  # VMs arrive and leave: only the living hold memory; overheads of the living
            live = alive[b0:b1]
            cfg_t = cfg[None, :] * live
            act = act * live
            cell = (np.arange(n)[:, None] * H + host[None, :]).ravel()
            n_h = np.bincount(cell, weights=live.ravel(), minlength=n * H).reshape(n, H)
            dram = M.guest_capacity_bytes(ctx.hosts.mem_bytes[None, :], n_h, self.params)
            cap = dram + self.tier_h[None, :]
        else:
            cfg_t = np.broadcast_to(cfg, (n, tidx.size))
        rec = self._reclaim(cfg_t, act, host, H, n, tidx, capacity=cap)
        seg = M.segments(host, H, n)
        res_act = rec.active_bytes * rec.resident_active_fraction
        pl = TI.place_pages(rec.resident_bytes, res_act, rec.resident_active_fraction, seg, n * H,
                            np.broadcast_to(dram, (n, H)).ravel())
        groups = np.tile(self.miss_group[tidx], n)
        ratio = TI.tier_access_ratio(self._miss(groups, pl.dram_active_fraction),
                                     self._miss(groups, rec.resident_active_fraction))
        host_active = M.seg_sum(np.asarray(act, float).ravel(), seg, n * H).reshape(n, H)
        rule = TI.active_rule(host_active, np.broadcast_to(dram, (n, H)))
        return pl.tier_bytes.reshape(n, -1), ratio.reshape(n, -1), rule

    def _tier(self, ctx, chunk, demand_t) -> None:
        """Tier faults at the tier device under load: metrics, slowdown and fault CPU merged into the memory stage's."""
        vms, hosts = ctx.vms, ctx.hosts
        T, V, H = chunk.n_steps, vms.n, hosts.n
        tidx = self.tier_idx
        k = tidx.size
        if k == 0:
            for name in TIER_VM_METRICS:
                chunk.vm_out[name] = np.broadcast_to(np.float32(1.0 if name.endswith("slowdown") else 0.0), (T, V))
            for name in TIER_HOST_METRICS:
                chunk.host_out[name] = np.broadcast_to(np.float32(0.0), (T, H))
            return
        ws = chunk.window(ctx)
        alive = ws.alive_mask(tidx) if ws.dynamic else None
        static = alive is None and not (chunk.vm.get("mem_used_bytes") is not None and self.use_trace_mem[tidx].any())
        host = vms.host[tidx]
        cap_vm = self._cap_vm[tidx]
        rate, theta, core = self.rate[tidx], self.theta[tidx], self._core_mhz_vm[tidx]
        tier_gib = np.zeros((T, V), np.float32)
        fr = np.zeros((T, V), np.float32)
        sd = np.ones((T, V), np.float32)
        fc = np.zeros((T, k))
        h_gib = np.zeros((T, H), np.float32)
        h_iops = np.zeros((T, H), np.float32)
        h_util = np.zeros((T, H), np.float32)
        h_cpu = np.zeros((T, H))
        block = max(1, BLOCK_ELEMENTS // k)
        for b0 in range(0, T, block):
            b1 = min(T, b0 + block)
            n = b1 - b0
            if static:
                if self._tier_static is None:
                    tb, ratio, rule = self._tier_place(ctx, chunk, 0, 1, None)
                    self._tier_static = (tb[0], ratio[0], rule[0])
                tb1, ratio1, rule1 = self._tier_static
                tb, ratio, rule = np.broadcast_to(tb1, (n, k)), np.broadcast_to(ratio1, (n, k)), rule1[None, :]
            else:
                tb, ratio, rule = self._tier_place(ctx, chunk, b0, b1, alive)
            np.maximum(self.tier_active_peak_h, np.where(self.tier_h > 0, rule, 0.0).max(axis=0), out=self.tier_active_peak_h)
            r = rate[None, :] * np.clip(demand_t[b0:b1] / cap_vm[None, :], 0.0, 1.0)
            from densim.models import tiering as TI

            f = TI.tier_faults(r.ravel(), np.ascontiguousarray(ratio).ravel())
            seg = M.segments(host, H, n)
            tp = TI.solve_tier(f, seg, n * H, device=self.tier_dev, costs=self.tier_costs, overlap=np.tile(theta, n))
            cpu = M.fault_cpu_cycles_per_s(f, tp.throughput, self.tier_costs, core_mhz=np.tile(core, n)) / 1e6
            sl = slice(b0, b1)
            tier_gib[sl, tidx] = tb / M.GIB
            fr[sl, tidx] = tp.fault_rate_per_s.reshape(n, k)
            sd[sl, tidx] = tp.slowdown.reshape(n, k)
            fc[sl] = cpu.reshape(n, k)
            h_gib[sl] = M.seg_sum(np.ascontiguousarray(tb).ravel(), seg, n * H).reshape(n, H) / M.GIB
            h_iops[sl] = tp.load_store_iops.reshape(n, H)
            h_util[sl] = tp.util_store.reshape(n, H)
            h_cpu[sl] = M.seg_sum(cpu, seg, n * H).reshape(n, H)
        chunk.vm_out.update(mem_tier_gib=tier_gib, mem_tier_fault_rate_per_s=fr, mem_tier_slowdown=sd)
        chunk.host_out.update(host_mem_tier_gib=h_gib, mem_tier_iops=h_iops, mem_tier_device_util=h_util)
        np.maximum(self.tier_peak_gib_h, h_gib.max(axis=0), out=self.tier_peak_gib_h)
        np.maximum(self.tier_util_peak_h, h_util.max(axis=0), out=self.tier_util_peak_h)
        add_saturation(ctx, "memory tier device", self._tier_names, h_util, key="tier")
        # merged into the memory stage's figures: the stretches add (1 + sum F t / theta over every tier,
        # each tier's fixed point solved on its own), the fault CPU adds to the VM's demand
        extra = sd[:, tidx] - np.float32(1.0)
        if "mem_slowdown" in chunk.vm_out:
            m = np.array(chunk.vm_out["mem_slowdown"], dtype=np.float32)
            m[:, tidx] += extra
            chunk.vm_out["mem_slowdown"] = m
            worst = m[:, tidx].max(axis=0)
        else:  # sums over the chunk's steps; the worst step bounded by the sum of the two worst stretches
            s_, mx = chunk.vm_reduced["mem_slowdown"]
            s_, mx = np.array(s_, dtype=np.float64), np.array(mx, dtype=np.float64)
            s_[tidx] += extra.sum(axis=0)
            mx[tidx] += extra.max(axis=0)
            chunk.vm_reduced["mem_slowdown"] = (s_, mx)
            worst = mx[tidx]
        self.max_slowdown[tidx] = np.maximum(self.max_slowdown[tidx], worst)
        self.tier_max_slowdown[tidx] = np.maximum(self.tier_max_slowdown[tidx], sd[:, tidx].max(axis=0))
        if "mem_fault_cpu_mhz" in chunk.vm_out:
            c = np.array(chunk.vm_out["mem_fault_cpu_mhz"], dtype=np.float32)
            c[:, tidx] += fc.astype(np.float32)
            chunk.vm_out["mem_fault_cpu_mhz"] = c
        else:
            s_, mx = chunk.vm_reduced["mem_fault_cpu_mhz"]
            s_ = np.array(s_, dtype=np.float64)
            s_[tidx] += fc.sum(axis=0)
            chunk.vm_reduced["mem_fault_cpu_mhz"] = (s_, mx)
        hc = np.array(chunk.host_out["host_mem_fault_cpu_mhz"], dtype=np.float32) + h_cpu.astype(np.float32)
        chunk.host_out["host_mem_fault_cpu_mhz"] = hc
        self.fault_mhz_sum += h_cpu.sum(axis=0)
        np.maximum(self.fault_mhz_peak, hc.max(axis=0), out=self.fault_mhz_peak)
        d = chunk.demand()
        new = d if ("cpu_demand_mhz" in chunk.owned and d.flags.writeable) else np.array(d)
        new[:, tidx] += fc.astype(new.dtype)
        chunk.vm["cpu_demand_mhz"] = new

    def _tier_summary(self, hosts) -> dict:
        t = self.tiering
        tiered = np.flatnonzero(self.tier_h > 0)
        names = [str(h) for h in np.asarray(hosts.names)[tiered]]
        rule = self.tier_active_peak_h[tiered]
        busy = self.tier_peak_gib_h[tiered] > 0
        return {
            "device": t.device,
            "ratio": f"1:{t.ratio:g}",
            "devices_per_host": t.devices_per_host,
            "hosts_tiered": len(names),
            "tier_gib_per_host": float(self.tier_h[tiered][0] / M.GIB) if tiered.size else 0.0,
            "hosts_using_tier": [n for n, b in zip(names, busy) if b],
            "tier_peak_gib_by_host": {n: float(g) for n, g, b in zip(names, self.tier_peak_gib_h[tiered], busy) if b},
            # the active-memory rule: active memory fits DRAM (vSphere's "at most 50 % active" at 1:1)
            "active_over_dram_by_host": {n: float(r) for n, r, b in zip(names, rule, busy) if b},
            "hosts_breaking_active_rule": [n for n, r in zip(names, rule) if r > 1.0 + 1e-9],
            "tier_device_util_peak": float(self.tier_util_peak_h.max(initial=0.0)),
            "vms_slowed_by_tier": int(np.count_nonzero(self.tier_max_slowdown > 1.0 + 1e-9)),
            "worst_vm_tier_slowdown": float(self.tier_max_slowdown.max(initial=1.0)),
        }

    def finish(self, ctx, summary) -> None:
        hosts, vms = ctx.hosts, ctx.vms
        T = max(ctx.grid.n_steps, 1)
        share = self.swap_steps / T
        swapping = np.flatnonzero(share > 0)
        s = self.settings
        summary.add("memory", {
            "model": s.model,
            "swap_device": s.swap_device,
            "swap_cache_device": s.swap_cache_device,
            "swap_cache_gib": s.swap_cache_bytes / M.GIB,
            **({"swap_datastore": s.swap_datastore} if self.coupled else {}),
            "hosts_short_of_memory": [str(hosts.names[h]) for h in self.hosts_short],
            "hosts_swapping": [str(hosts.names[h]) for h in swapping],
            "host_swapping_step_share": {str(hosts.names[h]): float(share[h]) for h in swapping},
            "oversubscription_by_host": {str(hosts.names[h]): float(self.ratio_h[h]) for h in np.flatnonzero(self.cfg_h > 0)},
            "vms_slowed": int(np.count_nonzero(self.max_slowdown > 1.0 + 1e-9)),
            "worst_vm_slowdown": float(self.max_slowdown.max()) if vms.n else 1.0,
            "fault_cpu": self._fault_cpu_summary(hosts, T),
            **({"tiering": self._tier_summary(hosts)} if self.tiering is not None else {}),
        })

    def _fault_cpu_summary(self, hosts, T: int) -> dict:
        """Cycles per fault by tier and the host CPU fault handling took (mean and peak MHz per host)."""
        c = M.fault_cycles_per_tier(self._costs, core_mhz=0.0, store_ios_per_fault=self._store_ios)
        busy = np.flatnonzero(self.fault_mhz_peak > 0)
        return {
            "cycles_per_fault": {"host_swap_cache": float(c["cache"]), "host_swap_store": float(c["store"]),
                                 "compressed_before_decompression": float(c["compressed"]), "guest_paging": float(c["guest"])},
            "decompress_s": float(self._costs.decompress_s),
            "host_mean_mhz": {str(hosts.names[h]): float(self.fault_mhz_sum[h] / T) for h in busy},
            "host_peak_mhz": {str(hosts.names[h]): float(self.fault_mhz_peak[h]) for h in busy},
        }


@STAGES.register("memory", description="memory over-commit: sharing, balloon, compression, host swap (guide §2)",
                 source="modelling guide §2")
def memory_stage(ctx):
    return MemoryStage(ctx) if ctx.scenario.memory.model != "none" else None


def _kernels(scenario) -> tuple[str, ...]:
    """The memory model's numba kernels a run calls (loaded ahead: :mod:`densim.engine.preload`)."""
    if scenario.memory.model == "none":
        return ()
    return ("densim._jit:_touch_pages",
            *(f"densim.models.memory:{k}" for k in ("_sort_by_segment", "_reclaim_segments", "_steps_kernel")))


memory_stage.kernels = _kernels
