"""Hypervisor memory over-commit: reclamation pipeline, miss ratio, fault cost and slowdown.

Pure, vectorised array functions (modelling guide §2). Everything works on *flat element
arrays*: one element per (time step, VM) with a segment id ``seg`` naming its (time step, host)
pair, so a whole engine chunk is one call and there is no Python loop over VMs or hosts.
:func:`segments` builds ``seg`` from a ``(steps, n_vms)`` layout.

Pipeline per host and step, in the order a vSphere-like hypervisor applies it as free memory
falls through its thresholds (§2.2: High → TPS, Soft → balloon, Hard → compression + swap):

1. **page sharing** (TPS): zero pages of idle memory, plus inter-VM sharing when switched on
   (off by default since 2014/15; 2 MB pages are broken up only under pressure, so sharing is
   only counted when the host is short of memory);
2. **balloon** on idle memory (the guest gives free/idle pages first), up to the per-VM limit
   (default 65 % of configured memory);
3. **active reclamation**: the host takes a common fraction ``phi`` of every VM's remaining resident
   memory, victims at random. A share ``balloon_active_share`` of it (bounded by what is left of
   the balloon limit) is given up by the guest through the balloon — the guest then pages to its
   own virtual disk on the datastore; the rest goes to the compression cache (pages that compress
   to <= 2 KiB, until the per-VM cache limit) and to host swap. The first ``swap_cache_bytes``
   of host swap per host sit on a host swap cache device (e.g. a local SSD), the rest on the
   datastore. ``phi`` is found by bisection so that the memory freed equals the deficit.

Demand side (§2.3): per VM the resident fraction ``f`` of its active set gives a miss ratio
``m(f)`` from the miss-ratio registry (``random`` replacement by default, ``table`` for a
measured curve). Faults per second of unconstrained work ``F = r_acc * m`` are split over the
tiers in proportion to the active bytes each tier holds.

Fault cost (§2.4): ``t = t_sw + t_read(device) + W_q(device)``; the device's load is every fault
and swap-out write of the host plus a background rate, with M/M/c queueing from
:mod:`densim.models.queueing` (devices from :mod:`densim.models.devices`). A compressed page costs
``t_decompress``. Throughput (§2.5): ``X/X0 = 1 / (1 + sum_tier F_tier t_tier / theta)``; the
device load ``lambda = sum F X (1 + writes)`` is solved as a fixed point by bisection, so a
saturated device bounds throughput at its IOPS (utilisation stays < 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from densim._jit import njit
from densim.models.devices import DeviceSpec, mix_iops, mix_service_s
from densim.models.queueing import mmc_wait_s
from densim.registry import Registry

GIB = float(1 << 30)
MIB = float(1 << 20)
PAGE_BYTES = 4096.0  # one guest page per swap-in fault

# ---------------------------------------------------------------------------------------------
# helpers


def segments(host, n_hosts: int, n_steps: int) -> np.ndarray:
    """Segment id ``step * n_hosts + host`` for every element of a ``(n_steps, n_vms)`` array, flat."""
    h = np.asarray(host, dtype=np.int64)
    return (np.arange(n_steps, dtype=np.int64)[:, None] * int(n_hosts) + h[None, :]).ravel()


def seg_sum(x, seg, n_seg: int) -> np.ndarray:
    """Sum of ``x`` per segment (``np.bincount``; vectorised segment reduction)."""
    x = np.broadcast_to(np.asarray(x, dtype=float), np.shape(seg))
    return np.bincount(seg, weights=x, minlength=n_seg)


def compact_segments(seg, n_seg: int):
    """``(used, local)``: the sorted segment ids present in ``seg`` and each element's index into them.

    Same result as ``np.unique(seg, return_inverse=True)`` for ids in ``[0, n_seg)``, in O(n + n_seg)
    without sorting.
    """
    present = np.zeros(int(n_seg), dtype=bool)
    present[seg] = True
    used = np.flatnonzero(present)
    local = np.cumsum(present, dtype=np.int64) - 1
    return used, local[seg]


@njit
def _fault_load(f, a0, b0, c0, ws, wc, seg, m, with_cache):
    """Per segment ``sum_i f_i X_i`` with ``X_i = 1 / (1 + a0_i + b0_i ws[seg_i] (+ c0_i wc[seg_i]))``.

    One pass over the elements instead of numpy's five temporaries; the same floating-point
    operations in the same order as ``np.bincount(seg, weights=f / (1 + a0 + b0 ws[seg] ...))``.
    """
    out = np.zeros(m)
    for i in range(f.size):
        s = seg[i]
        d = 1.0 + a0[i] + b0[i] * ws[s]
        if with_cache:
            d = d + c0[i] * wc[s]
        out[s] += f[i] * (1.0 / d)
    return out


def min_free_bytes(host_memory_bytes):
    """ESXi ``minFree``: 899 MB for the first 28 GB of host RAM plus 1 % of the rest (§2.2, [S6]).

    Checks: 48 GB -> 1,099 MB; 144 GB -> 2,059 MB (the cited 2,086.84 MB counts 1 % of 146.8 GB).
    """
    m = np.asarray(host_memory_bytes, dtype=float)
    return 899.0 * MIB + 0.01 * np.maximum(m - 28.0 * GIB, 0.0)


def oversubscription(configured_bytes_sum, host_memory_bytes, hypervisor_bytes, overhead_bytes_sum):
    """``R = sum M_cfg / (M_host - M_hv - sum M_ovh)`` (§2.1)."""
    return np.asarray(configured_bytes_sum, float) / (
        np.asarray(host_memory_bytes, float) - np.asarray(hypervisor_bytes, float) - np.asarray(overhead_bytes_sum, float)
    )


# ---------------------------------------------------------------------------------------------
# miss-ratio models


MissRatioFn = Callable[..., np.ndarray]
MISS_RATIO: Registry[MissRatioFn] = Registry("miss-ratio", default="random")


@MISS_RATIO.register("none", description="no misses: reclaimed memory is never touched again")
def miss_none(resident_fraction, **_):
    return np.zeros_like(np.asarray(resident_fraction, dtype=float))


@MISS_RATIO.register(
    "random",
    description="random replacement (or uniform access) over the active set: m = 1 - f",
    source="modelling guide §2.3: vSphere picks swap victims at random [S50c][S7]",
)
def miss_random(resident_fraction, **_):
    f = np.clip(np.asarray(resident_fraction, dtype=float), 0.0, 1.0)
    return 1.0 - f


@MISS_RATIO.register(
    "table",
    description="measured miss-ratio curve: table of (resident fraction, miss ratio), linear in between",
    source="modelling guide §2.3 item 3 (e.g. from reuse distances of a trace)",
)
def miss_table(resident_fraction, *, table=None, **_):
    if not table:
        raise ValueError("miss-ratio model 'table' needs 'table': [[resident_fraction, miss_ratio], ...]")
    pts = np.asarray(sorted((float(a), float(b)) for a, b in table), dtype=float)
    f = np.clip(np.asarray(resident_fraction, dtype=float), 0.0, 1.0)
    # the curve ends at (1, 0): a fully resident active set does not miss
    xs = np.concatenate([pts[:, 0], [1.0]]) if pts[-1, 0] < 1.0 else pts[:, 0]
    ys = np.concatenate([pts[:, 1], [0.0]]) if pts[-1, 0] < 1.0 else pts[:, 1]
    return np.interp(f, xs, ys)


def miss_ratio(name: str, resident_fraction, **params) -> np.ndarray:
    """Miss ratio of the active set by model name (registry ``miss-ratio``)."""
    return MISS_RATIO.get(name)(resident_fraction, **params)


# ---------------------------------------------------------------------------------------------
# reclamation


@dataclass(frozen=True)
class Reclamation:
    """Where each VM's configured memory is (per element) and the host totals (per segment).

    Conservation per element: ``resident + shared + ballooned + compressed + swapped = configured``
    (``compressed`` and ``swapped`` count guest bytes; the compression cache itself occupies
    ``compressed / ratio`` of host memory, inside ``resident``'s host budget).
    """

    configured_bytes: np.ndarray
    active_bytes: np.ndarray
    resident_bytes: np.ndarray
    shared_bytes: np.ndarray
    ballooned_idle_bytes: np.ndarray
    ballooned_active_bytes: np.ndarray  # guest-paged to the VM's own virtual disk
    compressed_bytes: np.ndarray
    swapped_cache_bytes: np.ndarray
    swapped_store_bytes: np.ndarray
    resident_active_fraction: np.ndarray  # f: resident share of the active set
    deficit_bytes: np.ndarray  # per segment: memory the host had to find
    unmet_bytes: np.ndarray  # per segment: what even full reclamation could not free
    compression_cache_bytes: np.ndarray  # per segment: host memory used by compressed pages

    @property
    def ballooned_bytes(self) -> np.ndarray:
        return self.ballooned_idle_bytes + self.ballooned_active_bytes

    @property
    def swapped_bytes(self) -> np.ndarray:
        return self.swapped_cache_bytes + self.swapped_store_bytes

    def total_bytes(self) -> np.ndarray:
        return self.resident_bytes + self.shared_bytes + self.ballooned_bytes + self.compressed_bytes + self.swapped_bytes


def reclaim(
    configured_bytes,
    active_bytes,
    seg,
    n_seg: int,
    capacity_bytes,
    *,
    zero_page_fraction=0.0,
    inter_vm_sharing_fraction=0.0,
    balloon_limit=0.65,
    balloon_active_share=0.0,
    compression_cache_fraction=0.10,
    compression_ratio=2.0,
    compressible_fraction=0.5,
    swap_cache_bytes=0.0,
    iterations: int = 64,
) -> Reclamation:
    """Run the reclamation pipeline for every segment (host x step) at once.

    ``capacity_bytes`` (per segment) is the host memory available to guest memory:
    ``M_host - M_hv - minFree - sum M_ovh``. Per-element parameters broadcast against the elements;
    ``swap_cache_bytes`` broadcasts against the segments.
    """
    cfg = np.asarray(configured_bytes, dtype=float)
    act = np.minimum(np.asarray(active_bytes, dtype=float), cfg)
    seg = np.asarray(seg, dtype=np.int64)
    n = cfg.shape[0]

    def el(x):
        return np.broadcast_to(np.asarray(x, dtype=float), (n,))

    zf, isf, bl, bas = el(zero_page_fraction), el(inter_vm_sharing_fraction), el(balloon_limit), el(balloon_active_share)
    ccf, kappa, pc = el(compression_cache_fraction), el(compression_ratio), el(compressible_fraction)
    cap = np.broadcast_to(np.asarray(capacity_bytes, dtype=float), (n_seg,))
    idle = cfg - act

    deficit = np.maximum(seg_sum(cfg, seg, n_seg) - cap, 0.0)
    d = deficit.copy()

    def take(capacity_el, remaining):
        """Proportional take of ``remaining`` (per segment) from element capacities."""
        tot = seg_sum(capacity_el, seg, n_seg)
        with np.errstate(over="ignore"):  # a denormal capacity gives inf, clipped to 1 below
            frac = np.divide(remaining, tot, out=np.zeros(n_seg), where=tot > 0)
        frac = np.minimum(frac, 1.0)
        got = capacity_el * frac[seg]
        return got, remaining - np.minimum(remaining, tot)

    # 1. page sharing: zero pages of idle memory, inter-VM sharing (of any page) if enabled
    share_idle_cap = np.minimum(zf * idle + isf * idle, idle)
    share_act_cap = np.minimum(isf * act, act)
    shared, d = take(share_idle_cap + share_act_cap, d)
    w = np.divide(share_idle_cap, share_idle_cap + share_act_cap, out=np.ones(n), where=(share_idle_cap + share_act_cap) > 0)
    shared_idle = shared * w
    shared_act = shared - shared_idle

    # 2. balloon on idle memory, up to the per-VM limit
    b_cap = np.maximum(bl * cfg, 0.0)
    b_idle, d = take(np.minimum(idle - shared_idle, b_cap), d)

    # 3. active reclamation at a common fraction phi of each VM's remaining resident memory
    idle_left = idle - shared_idle - b_idle
    act_left = act - shared_act
    res_left = idle_left + act_left
    b_room = np.maximum(b_cap - b_idle, 0.0)
    c_cap = ccf * cfg * kappa  # guest bytes the compression cache can hold
    inv_k = 1.0 / kappa

    ev, bal, comp, sw = (np.zeros(n) for _ in range(4))
    unmet = np.zeros(n_seg)
    active_seg = d > 0
    if np.any(active_seg):
        # only the elements of hosts that still need memory take part in the bisection
        idx = np.flatnonzero(active_seg[seg])
        sg = seg[idx]
        rl_, bas_, br_, cc_, pc_, ik_ = res_left[idx], bas[idx], b_room[idx], c_cap[idx], pc[idx], inv_k[idx]

        def split(phi_el):
            e = rl_ * phi_el
            b = np.minimum(bas_ * e, br_)
            h = e - b
            c = np.minimum(pc_ * h, cc_)
            return e, b, c, h - c

        full = split(np.ones(idx.size))
        freed_max = seg_sum(full[0] - full[2] * ik_, sg, n_seg)
        solve = active_seg & (freed_max > d)
        # freed(phi) is piecewise linear and increasing (kinks where the balloon room or the
        # compression cache fills): safeguarded Newton, i.e. a Newton step inside the bracket
        # [lo, hi] and bisection when the step leaves it; exact once on the root's linear piece.
        phi = np.ones(n_seg)
        lo = np.zeros(n_seg)
        hi = np.ones(n_seg)
        tol = 1e-10 * np.maximum(d, 1.0)
        for _ in range(iterations):
            e, b, c, _s = split(phi[sg])
            gap = seg_sum(e - c * ik_, sg, n_seg) - d
            live = solve & (np.abs(gap) > tol) & (hi - lo > 1e-15)
            if not np.any(live):
                break
            hi = np.where(live & (gap > 0), phi, hi)
            lo = np.where(live & (gap < 0), phi, lo)
            db = np.where(bas_ * e < br_, bas_ * rl_, 0.0)
            dc = np.where(pc_ * (e - b) < cc_, pc_ * (rl_ - db), 0.0)
            slope = seg_sum(rl_ - dc * ik_, sg, n_seg)
            newton = phi - np.divide(gap, slope, out=np.full(n_seg, np.inf), where=slope > 0)
            ok = (newton > lo) & (newton < hi)
            phi = np.where(live, np.where(ok, newton, 0.5 * (lo + hi)), phi)
        phi = np.where(solve, phi, 1.0)
        e, b, c, s_ = split(phi[sg])
        ev[idx], bal[idx], comp[idx], sw[idx] = e, b, c, s_
        freed = seg_sum(e - c * ik_, sg, n_seg)
        unmet = np.where(active_seg & ~solve, np.maximum(d - freed, 0.0), 0.0)

    # active share of what was evicted (victims at random over the remaining resident memory)
    act_share = np.divide(act_left, res_left, out=np.zeros(n), where=res_left > 0)
    evicted_active = ev * act_share
    f = np.divide(act - evicted_active, act, out=np.ones(n), where=act > 0)
    f = np.clip(f, 0.0, 1.0)

    # host swap: the first swap_cache_bytes of each host's swap sit on the cache device
    sw_tot = seg_sum(sw, seg, n_seg)
    cache_b = np.broadcast_to(np.asarray(swap_cache_bytes, dtype=float), (n_seg,))
    cache_frac = np.divide(np.minimum(cache_b, sw_tot), sw_tot, out=np.zeros(n_seg), where=sw_tot > 0)
    sw_cache = sw * cache_frac[seg]
    sw_store = sw - sw_cache

    resident = cfg - shared - b_idle - bal - comp - sw
    return Reclamation(
        configured_bytes=cfg,
        active_bytes=act,
        resident_bytes=resident,
        shared_bytes=shared,
        ballooned_idle_bytes=b_idle,
        ballooned_active_bytes=bal,
        compressed_bytes=comp,
        swapped_cache_bytes=sw_cache,
        swapped_store_bytes=sw_store,
        resident_active_fraction=f,
        deficit_bytes=deficit,
        unmet_bytes=unmet,
        compression_cache_bytes=seg_sum(comp * inv_k, seg, n_seg),
    )


# ---------------------------------------------------------------------------------------------
# faults


@dataclass(frozen=True)
class FaultRates:
    """Faults per second of unconstrained work, per element and tier."""

    compressed: np.ndarray
    cache: np.ndarray  # host swap on the host swap cache device
    store: np.ndarray  # host swap on the datastore
    guest: np.ndarray  # guest paging (balloon) on the VM's virtual disk (datastore)
    miss_ratio: np.ndarray

    @property
    def total(self) -> np.ndarray:
        return self.compressed + self.cache + self.store + self.guest


def fault_rates(rec: Reclamation, access_rate_per_s, *, miss_model: str = "random", miss_params=None,
                miss_ratio_values=None) -> FaultRates:
    """``F = r_acc * m(f)`` split over tiers by the active bytes each tier holds (random victims).

    ``miss_ratio_values`` (per element) replaces the model when VMs use different miss models.
    """
    r = np.broadcast_to(np.asarray(access_rate_per_s, dtype=float), rec.configured_bytes.shape)
    if miss_ratio_values is not None:
        m = np.asarray(miss_ratio_values, dtype=float)
    else:
        m = miss_ratio(miss_model, rec.resident_active_fraction, **(miss_params or {}))
    out = rec.ballooned_active_bytes + rec.compressed_bytes + rec.swapped_cache_bytes + rec.swapped_store_bytes
    total = r * m

    def part(x):
        return total * np.divide(x, out, out=np.zeros_like(total), where=out > 0)

    return FaultRates(
        compressed=part(rec.compressed_bytes),
        cache=part(rec.swapped_cache_bytes),
        store=part(rec.swapped_store_bytes),
        guest=part(rec.ballooned_active_bytes),
        miss_ratio=m,
    )


def fault_cycles_per_tier(costs: "FaultCosts", *, core_mhz=0.0, store_ios_per_fault: float = 1.0) -> dict[str, np.ndarray]:
    """Host CPU cycles to handle one fault of each tier (modelling guide §2.4, ``t_sw`` as CPU work).

    * host swap (``cache``, ``store``): trap + page-table update + the fault's swap I/O, ``1 + w`` I/Os
      (the read and the ``w`` swap-out writes it causes; ``store_ios_per_fault`` I/Os per page when swap
      lives on a datastore with a larger block) each through the host block stack:
      ``C_trap + C_map + k (1 + w) C_io``;
    * ``compressed``: trap + update + decompression, ``C_trap + C_map + t_decompress f_core``;
    * ``guest`` (ballooned guest paging to its own virtual disk): the guest handles its own fault (no
      exit under EPT/NPT) and does the I/O: ``C_map + (1 + w) C_io``.
    """
    w = float(costs.writes_per_fault)
    base = float(costs.trap_cycles + costs.map_cycles)
    io = (1.0 + w) * float(costs.io_cycles)
    return {
        "cache": np.asarray(base + io),
        "store": np.asarray(base + float(store_ios_per_fault) * io),
        "compressed": base + float(costs.decompress_s) * np.asarray(core_mhz, dtype=float) * 1e6,
        "guest": np.asarray(float(costs.map_cycles) + io),
    }


def fault_cpu_cycles_per_s(faults: FaultRates, throughput, costs: "FaultCosts", *, core_mhz=0.0, store_ios_per_fault: float = 1.0):
    """Host CPU cycles per wall-clock second spent handling faults, per element.

    ``X sum_tier F_tier c_tier``: the faults actually taken per second (``F X``, the throughput ``X``
    from :func:`solve_throughput`) times the cycles of each (:func:`fault_cycles_per_tier`).
    ``core_mhz`` (scalar or per element) converts the decompression time to cycles.
    """
    c = fault_cycles_per_tier(costs, core_mhz=core_mhz, store_ios_per_fault=store_ios_per_fault)
    per_work = faults.cache * c["cache"] + faults.store * c["store"] + faults.compressed * c["compressed"] + faults.guest * c["guest"]
    return np.asarray(throughput, dtype=float) * per_work


@dataclass(frozen=True)
class DeviceArrays:
    """A swap device's datasheet figures as arrays (one value, or one per segment)."""

    read_latency_s: np.ndarray
    write_latency_s: np.ndarray
    read_iops: np.ndarray
    write_iops: np.ndarray
    parallelism: np.ndarray  # nan: IOPS x QD1 latency (Little's law), as in devices.py

    @classmethod
    def from_spec(cls, dev: DeviceSpec) -> "DeviceArrays":
        return cls(
            np.asarray(dev.read_latency_s, float),
            np.asarray(dev.write_latency_s, float),
            np.asarray(dev.read_iops, float),
            np.asarray(dev.write_iops, float),
            np.asarray(np.nan if dev.parallelism is None else dev.parallelism, float),
        )

    @classmethod
    def from_specs(cls, devs: list[DeviceSpec], index) -> "DeviceArrays":
        """Per-segment arrays: segment ``s`` uses ``devs[index[s]]``."""
        idx = np.asarray(index, dtype=np.int64)
        cols = [cls.from_spec(d) for d in devs]
        pick = lambda attr: np.array([getattr(c, attr) for c in cols], dtype=float)[idx]  # noqa: E731
        return cls(*(pick(a) for a in ("read_latency_s", "write_latency_s", "read_iops", "write_iops", "parallelism")))

    def take(self, useg, n_seg: int) -> "DeviceArrays":
        """The values of segments ``useg`` (fields that are per segment are indexed, scalars kept)."""

        def t(a):
            a = np.asarray(a, float)
            return np.broadcast_to(a, (n_seg,))[useg] if a.ndim else a

        return DeviceArrays(*(t(getattr(self, f)) for f in ("read_latency_s", "write_latency_s", "read_iops", "write_iops", "parallelism")))

    def wait_s(self, iops, read_fraction):
        """M/M/c queueing delay under an open load (same station as ``devices.device_response_s``)."""
        s = mix_service_s(self.read_latency_s, self.write_latency_s, read_fraction)
        cap = mix_iops(self.read_iops, self.write_iops, read_fraction)
        c = np.where(np.isnan(self.parallelism), np.maximum(1.0, cap * s), self.parallelism)
        return mmc_wait_s(iops, c / cap, c)

    def capacity_iops(self, read_fraction):
        return mix_iops(self.read_iops, self.write_iops, read_fraction)


@dataclass(frozen=True)
class FaultCosts:
    """Per-fault software costs (seconds) and the fault overlap."""

    software_s: float = 10e-6  # hypervisor fault handling + I/O submission, per host-swap fault
    guest_software_s: float | None = None  # guest page fault + virtual disk I/O; default = software_s
    decompress_s: float = 20e-6  # per compressed page touched
    writes_per_fault: float = 1.0  # swap-out writes per swap-in (steady state: every fault evicts)
    # host CPU work per fault (cycles), see fault_cpu_cycles_per_s; defaults as catalog vsphere-like (E)
    trap_cycles: float = 1500.0  # exit into the hypervisor and back
    map_cycles: float = 3000.0  # page allocation and page-table update
    io_cycles: float = 15000.0  # per swap I/O: submission and completion in the host's block stack


@dataclass(frozen=True)
class Throughput:
    """Result of the fault-cost fixed point."""

    throughput: np.ndarray  # X / X0 per element
    fault_rate_per_s: np.ndarray  # faults per wall-clock second (F X) per element
    cost_cache_s: np.ndarray  # per segment: fault cost at the cache device (incl. queueing)
    cost_store_s: np.ndarray  # per segment: fault cost at the datastore
    load_cache_iops: np.ndarray  # per segment
    load_store_iops: np.ndarray
    util_cache: np.ndarray
    util_store: np.ndarray
    extra: dict = field(default_factory=dict)

    @property
    def slowdown(self) -> np.ndarray:
        """Completion-time stretch ``X0 / X`` (1 = no slowdown)."""
        return 1.0 / self.throughput


def solve_throughput(
    faults: FaultRates,
    seg,
    n_seg: int,
    *,
    store: DeviceArrays,
    cache: DeviceArrays | None = None,
    costs: FaultCosts = FaultCosts(),
    overlap=1.0,
    background_store_iops=0.0,
    background_cache_iops=0.0,
    rounds: int = 3,
    iterations: int = 40,
) -> Throughput:
    """Per-element throughput ``X/X0 = 1/(1 + sum F t / theta)`` with device queueing as a fixed point.

    For each device the load ``lambda`` solves ``lambda = sum_i F_i,dev X_i (1 + w) + background``
    where ``X_i`` uses the fault cost at the waiting time produced by ``lambda``; the map is
    decreasing in ``lambda``, so bisection on ``[0, min(lambda(0), capacity))`` finds it. The two
    devices (cache and datastore) are alternated ``rounds`` times (Gauss-Seidel). Only faulting
    elements and their segments take part; the others keep ``X = 1``.
    """
    seg_all = np.asarray(seg, dtype=np.int64)
    total = faults.total
    idx = np.flatnonzero(total > 0)
    useg, seg = compact_segments(seg_all[idx], n_seg)
    m = useg.size
    every = idx.size == total.size  # all elements fault: no gathers needed

    def sub(a):
        return a if every else a[idx]

    theta = sub(np.broadcast_to(np.asarray(overlap, dtype=float), total.shape))
    w, p_read, t_sw, t_gsw = _fault_constants(costs)
    fc, fs, fg, fz = sub(faults.cache), sub(faults.store), sub(faults.guest), sub(faults.compressed)

    def per_seg(x):
        return np.broadcast_to(np.asarray(x, float), (n_seg,))

    bg_s_all, bg_c_all = per_seg(background_store_iops), per_seg(background_cache_iops)
    st = store.take(useg, n_seg)
    ca = cache.take(useg, n_seg) if cache is not None else None
    bg_s, bg_c = bg_s_all[useg], bg_c_all[useg]
    rl_s = np.broadcast_to(st.read_latency_s, (m,))
    rl_c = np.broadcast_to(ca.read_latency_s, (m,)) if ca is not None else np.zeros(m)

    def at_el(a):
        """A per-segment value per element (a device's scalar figure stays a scalar)."""
        a = np.asarray(a, float)
        return a if a.ndim == 0 else a[seg]

    rl_s_el = at_el(st.read_latency_s)
    rl_c_el = at_el(ca.read_latency_s) if ca is not None else 0.0

    # X = 1 / (1 + a + b ws + c wc): the waits enter linearly, the rest is fixed per element
    a0 = (fz * costs.decompress_s + fc * (t_sw + rl_c_el) + fs * (t_sw + rl_s_el) + fg * (t_gsw + rl_s_el)) / theta
    b0 = (fs + fg) / theta
    c0 = fc / theta if ca is not None else None

    def x_of(wc, ws):
        if c0 is None:  # no cache device: wc is 0
            return 1.0 / (1.0 + a0 + b0 * ws[seg])
        return 1.0 / (1.0 + a0 + b0 * ws[seg] + c0 * wc[seg])

    a0_c, b0_c = np.ascontiguousarray(a0, dtype=float), np.ascontiguousarray(b0, dtype=float)
    c0_c = np.ascontiguousarray(c0, dtype=float) if c0 is not None else np.zeros(1)
    wc = np.zeros(m)
    ws = np.zeros(m)
    fd_s = fs + fg
    has_s = seg_sum(fd_s, seg, m) > 0
    has_c = (seg_sum(fc, seg, m) > 0) if ca is not None else np.zeros(m, bool)

    def solve(dev, f_dev, bg, other, is_cache, mask):
        """Root of g(lam) = lam - load(wait(lam)) (increasing) by the Illinois method."""
        cap = np.broadcast_to(dev.capacity_iops(p_read), (m,)) * (1.0 - 1e-9)

        f_c = np.ascontiguousarray(f_dev, dtype=float)

        def g(lam):
            wait = np.where(mask, dev.wait_s(lam, p_read), 0.0)
            wc_, ws_ = (wait, other) if is_cache else (other, wait)
            load = _fault_load(f_c, a0_c, b0_c, c0_c, ws_, wc_, seg, m, c0 is not None)
            return lam - (load * (1.0 + w) + bg)

        lo = np.zeros(m)
        g_lo = g(lo)
        hi = np.minimum(-g_lo, cap)  # load at zero wait, capped below saturation
        hi = _illinois(g, hi, iterations, mask=mask, g_lo=g_lo)
        return np.where(mask, dev.wait_s(hi, p_read), 0.0)

    for _ in range(rounds if ca is not None else 1):
        if np.any(has_s):
            ws = solve(st, fd_s, bg_s, wc, False, has_s)
        if ca is None or not np.any(has_c):
            break
        wc = solve(ca, fc, bg_c, ws, True, has_c)
    x_sub = x_of(wc, ws)
    if every:
        x = x_sub
    else:
        x = np.ones(total.shape)
        x[idx] = x_sub

    def scatter(vals, base):
        out = np.array(np.broadcast_to(np.asarray(base, float), (n_seg,)), dtype=float)
        out[useg] = vals
        return out

    lam_s = scatter(seg_sum(fd_s * x_sub, seg, m) * (1.0 + w) + bg_s, bg_s_all)
    lam_c = scatter(seg_sum(fc * x_sub, seg, m) * (1.0 + w) + bg_c, bg_c_all)
    util_s = lam_s / per_seg(store.capacity_iops(p_read))
    util_c = lam_c / per_seg(cache.capacity_iops(p_read)) if cache is not None else np.zeros(n_seg)
    return Throughput(
        throughput=x,
        fault_rate_per_s=total * x,
        cost_cache_s=scatter(t_sw + rl_c + wc, t_sw + per_seg(cache.read_latency_s)) if cache is not None else np.zeros(n_seg),
        cost_store_s=scatter(t_sw + rl_s + ws, t_sw + per_seg(store.read_latency_s)),
        load_cache_iops=lam_c,
        load_store_iops=lam_s,
        util_cache=util_c,
        util_store=util_s,
    )


@njit
def _fault_load_split(f, a0, b0, c0, ws, wc, seg_s, seg_c, seg_out, m, with_cache):
    """Like :func:`_fault_load` when the store and the cache have different segments.

    ``X_i = 1 / (1 + a0_i + b0_i ws[seg_s_i] (+ c0_i wc[seg_c_i]))``; the sum of ``f_i X_i`` is
    taken per ``seg_out`` (the segments of the device being solved).
    """
    out = np.zeros(m)
    for i in range(f.size):
        d = 1.0 + a0[i] + b0[i] * ws[seg_s[i]]
        if with_cache:
            d = d + c0[i] * wc[seg_c[i]]
        out[seg_out[i]] += f[i] * (1.0 / d)
    return out


def _fault_constants(costs) -> tuple[float, float, float, float]:
    """``(w, p_read, t_sw, t_gsw)``: writes per fault, read share of swap I/O, host and guest software time."""
    w = float(costs.writes_per_fault)
    t_sw = float(costs.software_s)
    return w, 1.0 / (1.0 + w), t_sw, float(t_sw if costs.guest_software_s is None else costs.guest_software_s)


def _illinois(g, hi, iterations: int, *, mask=None, g_lo=None):
    """Root of the increasing ``g`` on ``[0, hi]`` per segment (``g(0) <= 0 <= g(hi)``), vectorised.

    ``mask`` limits the convergence test to the segments that are solved; ``g_lo`` is ``g(0)`` when
    the caller has it already.
    """
    lo = np.zeros_like(hi)
    g_lo = g(lo) if g_lo is None else g_lo
    g_hi = g(hi)
    side = np.zeros_like(hi)
    for _ in range(iterations):
        width = hi - lo
        wide = width > 1e-10 * np.maximum(hi, 1e-12)
        if not np.any(wide if mask is None else mask & wide):
            break
        denom = g_hi - g_lo
        new = np.where(denom > 0, (lo * g_hi - hi * g_lo) / np.where(denom > 0, denom, 1.0), 0.5 * (lo + hi))
        new = np.clip(new, lo, hi)
        g_new = g(new)
        pos = g_new >= 0
        # Illinois: halve the stale end's g when the same end is kept twice
        hi, lo = np.where(pos, new, hi), np.where(pos, lo, new)
        g_lo = np.where(pos, np.where(side == 1, 0.5 * g_lo, g_lo), g_new)
        g_hi = np.where(pos, g_new, np.where(side == -1, 0.5 * g_hi, g_hi))
        side = np.where(pos, 1, -1)
        done = np.abs(g_new) <= 1e-12 * np.maximum(new, 1e-12)
        hi = np.where(done, new, hi)
        lo = np.where(done, new, lo)
    return hi


def solve_throughput_on_datastores(
    faults: FaultRates,
    seg,
    n_seg: int,
    store_seg,
    n_store_seg: int,
    *,
    queue,
    cache: DeviceArrays | None = None,
    costs: FaultCosts = FaultCosts(),
    overlap=1.0,
    background_cache_iops=0.0,
    ios_per_fault: float = 1.0,
    rounds: int = 3,
    iterations: int = 40,
) -> Throughput:
    """:func:`solve_throughput` with host swap (and guest paging) on *loaded datastores*.

    The store tier of element ``i`` lives on datastore segment ``store_seg[i]`` (a (step, datastore)
    pair, shared by every host swapping to it); ``seg`` stays the (step, host) segment of the
    host swap cache device. The fault cost on the store is ``t_sw + R(lambda)``, where ``R`` is the
    datastore's mean I/O latency from the storage model with the other VMs' I/O on it plus the swap
    load ``lambda`` (``queue.latency_s(lambda, useg)``, see
    :class:`densim.models.storage.vmio.SwapQueues`); it replaces the unloaded device latency plus
    M/M/c wait of :func:`solve_throughput`. Per datastore segment ``lambda`` solves

        ``lambda = k (1 + w) sum_i (F_store,i + F_guest,i) X_i``,
        ``X_i = 1 / (1 + (a_i + (F_store,i + F_guest,i) R(lambda)) / theta_i)``

    (``k`` = swap I/Os per fault, ``w`` = swap-out writes per fault, ``a_i`` the cost of the other
    tiers and the software time). The right side falls as ``lambda`` rises, so the root of
    ``g(lambda) = lambda - rhs(lambda)`` on ``[0, rhs(0)]`` is unique; it is found by the Illinois
    method for every segment at once. The cache device (per host) and the datastores are
    alternated ``rounds`` times. ``extra`` holds ``store_iops_el`` (swap I/Os per second per
    element, reads + writes), ``store_latency_s`` and ``store_useg`` (per datastore segment used).
    """
    seg_all = np.asarray(seg, dtype=np.int64)
    sseg_all = np.asarray(store_seg, dtype=np.int64)
    total = faults.total
    idx = np.flatnonzero(total > 0)
    useg, seg_c = compact_segments(seg_all[idx], n_seg)
    usseg, seg_s = compact_segments(sseg_all[idx], n_store_seg)
    m, ms = useg.size, usseg.size
    every = idx.size == total.size

    def sub(a):
        return a if every else a[idx]

    theta = sub(np.broadcast_to(np.asarray(overlap, dtype=float), total.shape))
    w, p_read, t_sw, t_gsw = _fault_constants(costs)
    fc, fs, fg, fz = (np.broadcast_to(sub(np.broadcast_to(x, total.shape)), (idx.size,))
                      for x in (faults.cache, faults.store, faults.guest, faults.compressed))
    ca = cache.take(useg, n_seg) if cache is not None else None
    bg_c_all = np.broadcast_to(np.asarray(background_cache_iops, float), (n_seg,))
    bg_c = bg_c_all[useg]
    rl_c = np.asarray(ca.read_latency_s, float) if ca is not None else np.zeros(())
    rl_c_el = rl_c if rl_c.ndim == 0 else rl_c[seg_c]
    a0 = (fz * costs.decompress_s + fc * (t_sw + rl_c_el) + fs * t_sw + fg * t_gsw) / theta
    b0 = (fs + fg) / theta
    c0 = fc / theta if ca is not None else None
    a0_c, b0_c = np.ascontiguousarray(a0, dtype=float), np.ascontiguousarray(b0, dtype=float)
    c0_c = np.ascontiguousarray(c0, dtype=float) if c0 is not None else np.zeros(1)
    fd_s = np.ascontiguousarray(fs + fg, dtype=float)
    f_c = np.ascontiguousarray(fc, dtype=float)
    with_cache = c0 is not None
    per_io = (1.0 + w) * float(ios_per_fault)
    lat_of = queue.bind(usseg, p_read)
    has_s = seg_sum(fd_s, seg_s, ms) > 0 if ms else np.zeros(0, bool)
    wc = np.zeros(m)
    lam_s = np.zeros(ms)
    R = np.where(has_s, lat_of(lam_s), 0.0)

    for _ in range(rounds if with_cache else 1):
        if np.any(has_s):
            def g_s(lam, wc=wc):
                r = np.where(has_s, lat_of(lam), 0.0)
                return lam - _fault_load_split(fd_s, a0_c, b0_c, c0_c, r, wc, seg_s, seg_c, seg_s, ms, with_cache) * per_io

            lam_s = _illinois(g_s, np.maximum(-g_s(np.zeros(ms)), 0.0), iterations)
            R = np.where(has_s, lat_of(lam_s), 0.0)
        if not with_cache or not np.any(f_c > 0):
            break
        cap = np.broadcast_to(ca.capacity_iops(p_read), (m,)) * (1.0 - 1e-9)

        def g_c(lam, R=R):
            wait = ca.wait_s(lam, p_read)
            return lam - (_fault_load_split(f_c, a0_c, b0_c, c0_c, R, wait, seg_s, seg_c, seg_c, m, True) * (1.0 + w) + bg_c)

        lam_c0 = _illinois(g_c, np.minimum(np.maximum(-g_c(np.zeros(m)), 0.0), cap), iterations)
        wc = np.asarray(ca.wait_s(lam_c0, p_read), float) * (seg_sum(f_c, seg_c, m) > 0)

    x_sub = 1.0 / (1.0 + a0 + b0 * R[seg_s] + (c0 * wc[seg_c] if with_cache else 0.0))
    if every:
        x = x_sub
    else:
        x = np.ones(total.shape)
        x[idx] = x_sub
    store_el = np.zeros(total.shape)
    store_el[idx] = fd_s * x_sub * per_io
    lam_c = np.array(bg_c_all, dtype=float)
    lam_c[useg] = seg_sum(fc * x_sub, seg_c, m) * (1.0 + w) + bg_c
    util_c = lam_c / np.broadcast_to(cache.capacity_iops(p_read), (n_seg,)) if cache is not None else np.zeros(n_seg)
    cost_c = np.zeros(n_seg)
    if cache is not None:
        cost_c = t_sw + np.array(np.broadcast_to(cache.read_latency_s, (n_seg,)), dtype=float)
        cost_c[useg] += wc
    lam_s_seg = np.zeros(n_seg)
    np.add.at(lam_s_seg, seg_all[idx], store_el[idx])
    return Throughput(
        throughput=x,
        fault_rate_per_s=total * x,
        cost_cache_s=cost_c,
        cost_store_s=np.zeros(n_seg),  # per datastore segment, in extra["store_latency_s"] (+ t_sw)
        load_cache_iops=lam_c,
        load_store_iops=lam_s_seg,  # swap I/O each host sends to its datastore(s)
        util_cache=util_c,
        util_store=np.zeros(n_seg),  # the datastores' utilisation is the storage stage's
        extra={"store_iops_el": store_el, "store_latency_s": R, "store_useg": usseg, "store_iops_seg": lam_s},
    )


# ---------------------------------------------------------------------------------------------
# one-call convenience for studies and tests


@dataclass(frozen=True)
class MemoryParams:
    """Every knob of the vSphere-like model (defaults: catalog ``memory_models``, see memory.yaml)."""

    zero_page_fraction: float = 0.05
    inter_vm_sharing_fraction: float = 0.0
    balloon_limit: float = 0.65
    compression: bool = True
    compression_cache_fraction: float = 0.10
    compression_ratio: float = 2.0
    software_s: float = 10e-6
    guest_software_s: float | None = None
    decompress_s: float = 20e-6
    writes_per_fault: float = 1.0
    trap_cycles: float = 1500.0
    map_cycles: float = 3000.0
    io_cycles: float = 15000.0
    hypervisor_bytes: float = 0.0
    overhead_per_vm_bytes: float = 50 * MIB
    use_min_free: bool = True

    def costs(self) -> FaultCosts:
        return FaultCosts(self.software_s, self.guest_software_s, self.decompress_s, self.writes_per_fault,
                          self.trap_cycles, self.map_cycles, self.io_cycles)


def guest_capacity_bytes(host_memory_bytes, n_vms, params: MemoryParams):
    """Host memory left for guest memory: ``M_host - M_hv - n_vms x M_ovh - minFree`` (guide §2.2)."""
    mh = np.asarray(host_memory_bytes, dtype=float)
    mf = min_free_bytes(mh) if params.use_min_free else 0.0
    return mh - params.hypervisor_bytes - np.asarray(n_vms, dtype=float) * params.overhead_per_vm_bytes - mf


@dataclass(frozen=True)
class HostResult:
    rec: Reclamation
    faults: FaultRates
    tp: Throughput
    oversubscription: np.ndarray  # per segment
    capacity_bytes: np.ndarray  # per segment


def evaluate(
    configured_bytes,
    active_bytes,
    seg,
    n_seg: int,
    host_memory_bytes,
    params: MemoryParams,
    *,
    store: DeviceArrays,
    cache: DeviceArrays | None = None,
    swap_cache_bytes=0.0,
    access_rate_per_s=0.0,
    balloon_active_share=0.0,
    compressible_fraction=0.5,
    overlap=1.0,
    miss_model: str = "random",
    miss_params=None,
    background_store_iops=0.0,
) -> HostResult:
    """Reclamation, faults and throughput for every element in one call."""
    seg = np.asarray(seg, dtype=np.int64)
    cfg = np.asarray(configured_bytes, dtype=float)
    n_vm_seg = np.bincount(seg, minlength=n_seg).astype(float)
    ovh = n_vm_seg * params.overhead_per_vm_bytes
    mh = np.broadcast_to(np.asarray(host_memory_bytes, float), (n_seg,))
    capacity = guest_capacity_bytes(mh, n_vm_seg, params)
    r = oversubscription(seg_sum(cfg, seg, n_seg), mh, params.hypervisor_bytes, ovh)
    rec = reclaim(
        cfg,
        active_bytes,
        seg,
        n_seg,
        capacity,
        zero_page_fraction=params.zero_page_fraction,
        inter_vm_sharing_fraction=params.inter_vm_sharing_fraction,
        balloon_limit=params.balloon_limit,
        balloon_active_share=balloon_active_share,
        compression_cache_fraction=params.compression_cache_fraction if params.compression else 0.0,
        compression_ratio=params.compression_ratio,
        compressible_fraction=compressible_fraction if params.compression else 0.0,
        swap_cache_bytes=swap_cache_bytes if cache is not None else 0.0,
    )
    f = fault_rates(rec, access_rate_per_s, miss_model=miss_model, miss_params=miss_params)
    tp = solve_throughput(
        f, seg, n_seg, store=store, cache=cache, costs=params.costs(), overlap=overlap,
        background_store_iops=background_store_iops,
    )
    return HostResult(rec, f, tp, r, capacity)


from densim.models.memory_defaults import MemoryModelDefaults  # noqa: E402,F401  (re-export)
