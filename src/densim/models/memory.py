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
and swap-out write of the host plus a background rate, with M/M/c queueing as in
:mod:`densim.models.queueing` (devices from :mod:`densim.models.devices`). A compressed page costs
``t_decompress``. Throughput (§2.5): ``X/X0 = 1 / (1 + sum_tier F_tier t_tier / theta)``; the
device load ``lambda = sum F X (1 + writes)`` is solved as a fixed point per segment (numba, the
Illinois method on a bracket), so a saturated device bounds throughput at its IOPS (utilisation
stays < 1). :func:`solve_steps` does the same for a chunk of steps when only the access rate varies.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from densim._jit import Prefaulted, get_num_threads, njit, prange
from densim.models.devices import DeviceSpec, mix_iops, mix_service_s
from densim.models.memory_defaults import FaultCosts, MemoryParams  # noqa: F401  (defined apart: no numba to resolve a scenario)
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

    Per segment (:func:`_reclaim_segments`, numba, in parallel over segments, a segment's elements
    side by side): the deficit ``sum M_cfg - capacity``; page sharing, then the balloon on idle
    memory, each a proportional take of what is still missing from the elements' capacities; then
    active reclamation at a common fraction ``phi`` of every VM's remaining resident memory, found
    by a safeguarded Newton iteration (``freed(phi)`` is piecewise linear and increasing, with kinks
    where the balloon room or the compression cache fills: a Newton step inside the bracket
    ``[lo, hi]``, bisection when it leaves it; exact once on the root's linear piece); the host swap
    cache holds the first ``swap_cache_bytes`` of the segment's swap. Sums run over a segment's
    elements in their order, so the figures are those of the vectorised version before it (kept
    in the tests), to the bit.
    """
    cfg = _kernel_array(configured_bytes)
    act = np.minimum(np.asarray(active_bytes, dtype=float), cfg)
    seg = _kernel_array(seg, dtype=np.int64)
    n = cfg.shape[0]
    n_seg = int(n_seg)

    def el(x, size):
        """``(values, 1)`` per element (or segment), or ``(one value, 0)`` when ``x`` is a scalar."""
        a = np.asarray(x, dtype=float)
        if a.ndim == 0 or a.size == 1:
            return _kernel_array(a.reshape(1)), 0
        return _kernel_array(np.broadcast_to(a, (size,))), 1

    order, start = _sort_by_segment(seg, n_seg)
    out = np.empty((8, n))
    per_seg = np.empty((3, n_seg))
    _reclaim_segments(order, start, cfg, _kernel_array(act), *el(capacity_bytes, n_seg), *el(zero_page_fraction, n),
                      *el(inter_vm_sharing_fraction, n), *el(balloon_limit, n), *el(balloon_active_share, n),
                      *el(compression_cache_fraction, n), *el(compression_ratio, n), *el(compressible_fraction, n),
                      *el(swap_cache_bytes, n_seg), int(iterations), _blocks(n_seg), out, per_seg)
    resident, shared, b_idle, bal, comp, sw_cache, sw_store, f = out
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
        deficit_bytes=per_seg[0],
        unmet_bytes=per_seg[1],
        compression_cache_bytes=per_seg[2],
    )


@njit(inline="always", error_model="numpy")
def _take(cap_el, n, remaining):
    """Proportional take of ``remaining`` from the capacities ``cap_el[:n]``: ``(share of each, what is left)``."""
    tot = 0.0
    for j in range(n):
        tot += cap_el[j]
    frac = remaining / tot if tot > 0 else 0.0  # a denormal total gives inf: clipped to 1
    return min(frac, 1.0), remaining - min(remaining, tot)


@njit(inline="always", error_model="numpy")
def _split(phi, j, rl, bas, br, pc, cc):
    """Active reclamation of element ``j`` at ``phi``: ``(evicted, ballooned, compressed, host-swapped)``."""
    e = rl[j] * phi
    b = min(bas[j] * e, br[j])
    h = e - b
    c = min(pc[j] * h, cc[j])
    return e, b, c, h - c


@njit(parallel=True, error_model="numpy")
def _reclaim_segments(order, start, cfg, act, cap, cap_k, zf, zf_k, isf, isf_k, bl, bl_k, bas, bas_k, ccf, ccf_k,
                      kappa, kappa_k, pc, pc_k, scb, scb_k, iterations, n_blocks, out, per_seg):
    """:func:`reclaim` per segment, in parallel. ``x, x_k``: a parameter and 1 (per element or segment) or 0 (one value).

    ``out`` rows (per element, in the input order): resident, shared, ballooned idle, ballooned
    active, compressed, swapped to the cache device, swapped to the store, resident share of the
    active set; ``per_seg`` rows: deficit, unmet, compression cache bytes. The segments are taken
    in ``n_blocks`` runs in parallel, each with a scratch array of its own (as long as the longest
    segment) that holds a segment's elements in segment order.
    """
    n_seg = start.size - 1
    nmax = 0
    for s in range(n_seg):
        nmax = max(nmax, start[s + 1] - start[s])
    for blk in prange(n_blocks):
        scratch = np.empty((17, nmax))
        idle_, cap_, w_, shared_, bcap_, bidle_ = scratch[0], scratch[1], scratch[2], scratch[3], scratch[4], scratch[5]
        rl_, br_, cc_, actl_, sw_, ev_ = scratch[6], scratch[7], scratch[8], scratch[9], scratch[10], scratch[11]
        bas_, pc_, ik_, b_, c_ = scratch[12], scratch[13], scratch[14], scratch[15], scratch[16]
        for s in range(blk * n_seg // n_blocks, (blk + 1) * n_seg // n_blocks):
            j0 = start[s]
            n = start[s + 1] - j0
            tot_cfg = 0.0
            for j in range(n):
                tot_cfg += cfg[order[j0 + j]]
            d = max(tot_cfg - cap[s * cap_k], 0.0)
            per_seg[0, s] = d
            # 1. page sharing: zero pages of idle memory, inter-VM sharing (of any page) if enabled
            for j in range(n):
                i = order[j0 + j]
                idle = cfg[i] - act[i]
                sic = min(zf[i * zf_k] * idle + isf[i * isf_k] * idle, idle)
                sac = min(isf[i * isf_k] * act[i], act[i])
                idle_[j] = idle
                cap_[j] = sic + sac
                w_[j] = sic / (sic + sac) if sic + sac > 0 else 1.0
            frac, d = _take(cap_, n, d)
            # 2. balloon on idle memory, up to the per-VM limit
            for j in range(n):
                i = order[j0 + j]
                shared = cap_[j] * frac
                shared_[j] = shared
                bcap = max(bl[i * bl_k] * cfg[i], 0.0)
                bcap_[j] = bcap
                cap_[j] = min(idle_[j] - shared * w_[j], bcap)
            frac, d = _take(cap_, n, d)
            # 3. active reclamation at a common fraction phi of each VM's remaining resident memory
            for j in range(n):
                i = order[j0 + j]
                b_idle = cap_[j] * frac
                bidle_[j] = b_idle
                sh_idle = shared_[j] * w_[j]
                idle_left = idle_[j] - sh_idle - b_idle
                act_left = act[i] - (shared_[j] - sh_idle)
                actl_[j] = act_left
                rl_[j] = idle_left + act_left
                br_[j] = max(bcap_[j] - b_idle, 0.0)
                kap = kappa[i * kappa_k]
                cc_[j] = ccf[i * ccf_k] * cfg[i] * kap  # guest bytes the compression cache can hold
                ik_[j] = 1.0 / kap
                bas_[j] = bas[i * bas_k]
                pc_[j] = pc[i * pc_k]
            unmet = 0.0
            phi = 1.0
            if d > 0:
                freed_max = 0.0
                for j in range(n):
                    e, b, c, _s = _split(1.0, j, rl_, bas_, br_, pc_, cc_)
                    freed_max += e - c * ik_[j]
                solve = freed_max > d
                if solve:
                    lo = 0.0
                    hi = 1.0
                    tol = 1e-10 * max(d, 1.0)
                    for _ in range(iterations):
                        gap = 0.0
                        for j in range(n):
                            e, b, c, _s = _split(phi, j, rl_, bas_, br_, pc_, cc_)
                            b_[j] = b
                            gap += e - c * ik_[j]
                        gap = gap - d
                        if not (abs(gap) > tol and hi - lo > 1e-15):
                            break
                        if gap > 0:
                            hi = phi
                        if gap < 0:
                            lo = phi
                        slope = 0.0
                        for j in range(n):
                            e = rl_[j] * phi
                            db = bas_[j] * rl_[j] if bas_[j] * e < br_[j] else 0.0
                            dc = pc_[j] * (rl_[j] - db) if pc_[j] * (e - b_[j]) < cc_[j] else 0.0
                            slope += rl_[j] - dc * ik_[j]
                        newton = phi - gap / slope if slope > 0 else np.inf
                        phi = newton if lo < newton < hi else 0.5 * (lo + hi)
                freed = 0.0
                for j in range(n):
                    e, b, c, sw = _split(phi, j, rl_, bas_, br_, pc_, cc_)
                    freed += e - c * ik_[j]
                    ev_[j] = e
                    b_[j] = b
                    c_[j] = c
                    sw_[j] = sw
                if not solve:
                    unmet = max(d - freed, 0.0)
            else:
                for j in range(n):
                    ev_[j] = 0.0
                    b_[j] = 0.0
                    c_[j] = 0.0
                    sw_[j] = 0.0
            per_seg[1, s] = unmet
            # host swap: the first swap_cache_bytes of each host's swap sit on the cache device
            sw_tot = 0.0
            ccache = 0.0
            for j in range(n):
                sw_tot += sw_[j]
                ccache += c_[j] * ik_[j]
            per_seg[2, s] = ccache
            cache_frac = min(scb[s * scb_k], sw_tot) / sw_tot if sw_tot > 0 else 0.0
            for j in range(n):
                i = order[j0 + j]
                sw = sw_[j]
                swc = sw * cache_frac
                out[1, i] = shared_[j]
                out[2, i] = bidle_[j]
                out[3, i] = b_[j]
                out[4, i] = c_[j]
                out[5, i] = swc
                out[6, i] = sw - swc
                # active share of what was evicted (victims at random over the remaining resident memory)
                act_share = actl_[j] / rl_[j] if rl_[j] > 0 else 0.0
                f = (act[i] - ev_[j] * act_share) / act[i] if act[i] > 0 else 1.0
                out[7, i] = min(max(f, 0.0), 1.0)
                out[0, i] = cfg[i] - shared_[j] - bidle_[j] - b_[j] - c_[j] - sw


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
    decreasing in ``lambda``, so the root of ``lambda - map(lambda)`` on ``[0, min(map(0), capacity))``
    is unique; the Illinois method finds it. The two devices (cache and datastore) are alternated
    ``rounds`` times (Gauss-Seidel). Only faulting elements and their segments take part; the others
    keep ``X = 1``. Each segment is solved on its own (:func:`_segment_fixed_point`, numba, in
    parallel over segments) with its elements side by side.
    """
    seg_all = np.asarray(seg, dtype=np.int64)
    total = faults.total
    idx = np.flatnonzero(total > 0)
    useg, seg = compact_segments(seg_all[idx], n_seg)
    m = useg.size
    every = idx.size == total.size  # all elements fault: no gathers needed

    def sub(a):
        a = np.broadcast_to(np.asarray(a, dtype=float), total.shape)
        return _kernel_array(a if every else a[idx])

    theta = sub(overlap)
    w, p_read, t_sw, t_gsw = _fault_constants(costs)
    fc, fs, fg, fz = sub(faults.cache), sub(faults.store), sub(faults.guest), sub(faults.compressed)

    def per_seg(x):
        return np.broadcast_to(np.asarray(x, float), (n_seg,))

    bg_s_all, bg_c_all = per_seg(background_store_iops), per_seg(background_cache_iops)
    st = store.take(useg, n_seg)
    ca = cache.take(useg, n_seg) if cache is not None else None
    st_p = _station(st, p_read, m)
    ca_p = _station(ca, p_read, m) if ca is not None else st_p
    rl_s = _kernel_array(np.broadcast_to(st.read_latency_s, (m,)))
    rl_c = _kernel_array(np.broadcast_to(ca.read_latency_s, (m,))) if ca is not None else np.zeros(m)
    bg_s, bg_c = _kernel_array(bg_s_all[useg]), _kernel_array(bg_c_all[useg])

    order, start = _sort_by_segment(seg, m)
    x_sub = np.empty(idx.size)
    ws, wc, lam_s_u, lam_c_u = np.zeros(m), np.zeros(m), np.empty(m), np.empty(m)
    _solve_segments(order, start, fz, fc, fs, fg, theta, rl_s, rl_c, ca is not None,
                    *st_p, *ca_p, bg_s, bg_c, float(costs.decompress_s), t_sw, t_gsw, w, int(rounds),
                    int(iterations), _blocks(m), x_sub, ws, wc, lam_s_u, lam_c_u)
    if every:
        x = x_sub
    else:
        x = np.ones(total.shape)
        x[idx] = x_sub

    def scatter(vals, base):
        out = np.array(np.broadcast_to(np.asarray(base, float), (n_seg,)), dtype=float)
        out[useg] = vals
        return out

    lam_s = scatter(lam_s_u, bg_s_all)
    lam_c = scatter(lam_c_u, bg_c_all)
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


# ---------------------------------------------------------------------------------------------
# the fixed point of one segment (numba): M/M/c wait, fault load, Illinois, Gauss-Seidel rounds
#
# The helpers are inlined into the two kernels (``inline="always"``): called, they cost more than
# their arithmetic (a call that passes arrays counts their references even where it is not taken).
# Each is written with one call site of the next, which keeps the kernels' compilation short;
# :func:`_poisson_cdf` (scalars only, and a loop) stays a call. The kernels divide as numpy does
# (``error_model="numpy"``: inf or nan, no exception path), like the vectorised code they replace.

_NEGLIGIBLE = 2.0**-54  # b0 W below this leaves 1 + a0 (>= 1) unchanged in float64: the load is that at W = 0
_LINEAR = 1e-8  # b0 ws + c0 wc below this: the load is linear in the waits to 1e-16 (relative)
_TOL = 1e-13  # a segment's bracket on its device load, relative


def _kernel_array(a, dtype=np.float64):
    """``a`` as a writeable C-contiguous array (a copy if need be): numba compiles a kernel once per
    argument type, and a read-only array (a broadcast, say) is a type of its own."""
    return np.require(a, dtype=dtype, requirements=["C", "W"])


def _blocks(n: int) -> int:
    """Runs of work for a parallel kernel over ``n`` segments: a few per thread (uneven segments even out)."""
    return max(1, min(n, 4 * get_num_threads()))


def _station(dev: DeviceArrays, read_fraction, n: int):
    """Per segment: the M/M/c station of a swap device as :meth:`DeviceArrays.wait_s` builds it.

    ``(service_s, servers, ln Gamma(servers + 1), saturated IOPS)``, each a float64 array of ``n``.
    """
    s = mix_service_s(dev.read_latency_s, dev.write_latency_s, read_fraction)
    cap = mix_iops(dev.read_iops, dev.write_iops, read_fraction)
    c = np.where(np.isnan(dev.parallelism), np.maximum(1.0, cap * s), dev.parallelism)
    c1 = np.asarray(c, dtype=float).ravel()
    if c1.size and np.all(c1 == c1[0]):
        lgc = np.asarray(math.lgamma(float(c1[0]) + 1.0) if np.isfinite(c1[0]) else np.nan)
    else:
        from scipy import special

        lgc = special.gammaln(np.asarray(c, dtype=float) + 1.0)
    return tuple(_kernel_array(np.broadcast_to(np.asarray(v, dtype=float), (n,))) for v in (c / cap, c, lgc, cap))


@njit(inline="always", error_model="numpy")
def _mmc_wait(lam, svc, c, lgc):
    """``(W, D)``: M/M/c mean wait at arrival rate ``lam`` and its elasticity ``D = d ln W / d ln lam``.

    ``W`` is :func:`densim.models.queueing.mmc_wait_s` for one value. Erlang C as in
    :func:`~densim.models.queueing.erlang_c`: ``B = P(N=c) / P(N<=c)`` for ``N ~ Poisson(A)``,
    ``A = lam S``, ``P(N=c) = exp(c ln A - A - lgc)`` with ``lgc = ln Gamma(c + 1)`` (``c`` need not
    be an integer), ``C = B / (1 - rho (1 - B))``, ``W = C S / (c - A)``; ``P(N <= c)`` from
    :func:`_poisson_cdf`. Differentiating in ``ln A`` (``d P(N<=c) / dA = -P(N=c)``):
    ``d ln B = c - A + A B =: beta``, ``d ln (1 - rho (1 - B)) = rho (B (1 + beta) - 1) / (1 - rho (1 - B))``,
    ``d ln (c - A) = -A / (c - A)``.
    """
    a = lam * svc
    if not a < c:
        return np.inf, np.inf
    if not a > 0:
        return 0.0, c
    pmf = np.exp(c * np.log(a) - a - lgc)
    return _wait_from(a, svc, c, pmf, _poisson_cdf(c, a, pmf))


@njit(inline="always", error_model="numpy")
def _wait_from(a, svc, c, pmf, cdf):
    """:func:`_mmc_wait`'s ``(W, D)`` from the offered load ``a``, ``P(N = c)`` and ``P(N <= c)`` (``0 < a < c``)."""
    rho = a / c
    q = 1.0 / (c - a)
    b = pmf / cdf
    den = 1.0 / (1.0 - rho * (1.0 - b))
    pw = min(max(b * den, 0.0), 1.0) if rho < 1.0 else 1.0
    beta = c - a + a * b
    return pw * svc * q, beta - rho * (b * (1.0 + beta) - 1.0) * den + a * q


@njit(error_model="numpy")
def _poisson_cdf(c, a, pmf):
    """``P(N <= c)``, ``N ~ Poisson(a)``, for ``0 < a < c``: ``Q(c + 1, a) = 1 - P(c + 1, a)``, scipy's ``gammaincc``.

    The lower regularised incomplete gamma function by its power series (DLMF 8.7.1:
    ``P(s, a) = a^s e^-a sum_k a^k / Gamma(s + k + 1)``), here with ``s = c + 1``:
    ``P = lead sum_k prod_{i=1..k} r_i``, ``lead = pmf a / (c + 1)``, ``r_i = a / (c + 1 + i)``,
    ``pmf = P(N = c)``. The terms are positive and their ratios fall, so what follows a term is below
    ``term r / (1 - r)``; the sum stops when that is below 1e-17 (in ``P``). Since ``a < c`` lies
    below the median of a Gamma(c + 1) variable (above ``c + 2/3``), ``P < 1/2`` and ``1 - P`` is
    then exact to float64 rounding (scipy agrees within 1e-14 for ``c`` up to 60, within 1e-12 at
    ``c`` = 1,000, where ``pmf``'s ``exp(c ln a ...)`` rounds the same way as in ``erlang_c``).
    """
    lead = pmf * (a / (c + 1.0))
    r = a / (c + 2.0)
    if lead * r <= 1e-17 * (1.0 - r):  # the whole sum after its first term (1) is negligible
        return 1.0 - lead
    total = 1.0
    term = 1.0
    i = 2.0
    while True:
        r = a / (c + i)
        term *= r
        total += term
        if lead * term * r <= 1e-17 * (1.0 - r):
            break
        i += 1.0
    return 1.0 - lead * total


@njit(inline="always", error_model="numpy")
def _load(fd, fcc, is_cache, a0, b0, c0, j0, j1, ws, wc, with_cache):
    """``sum_i f_i X_i``, ``X_i = 1 / (1 + a0_i + b0_i ws (+ c0_i wc))``, over a segment's elements ``j0:j1`` in order.

    ``f`` is ``fcc`` (cache faults) or ``fd`` (store and guest faults). The arrays are whole and
    the segment an index range: a slice would count references to its array at every call.
    """
    out = 0.0
    for i in range(j0, j1):
        d = 1.0 + a0[i] + b0[i] * ws
        if with_cache:
            d = d + c0[i] * wc
        out += (fcc[i] if is_cache else fd[i]) * (1.0 / d)
    return out


@njit(inline="always", error_model="numpy")
def _g(lam, wait, fd, fcc, a0, b0, c0, j0, j1, other, is_cache, with_cache, b0max, c0max, s0, s1, t1, bg, w):
    """``g(lam) = lam - (load (1 + w) + bg)`` with this device waiting ``wait = W(lam)``.

    ``load = sum_i f_i / (d_i + e_i)``, ``d_i = 1 + a0_i``, ``e_i = b0_i ws + c0_i wc``. With every
    ``e_i`` below 2^-54 it is the load at zero waits, ``s0 = sum f_i / d_i`` (the same sum: ``d_i``
    does not change in float64); below ``_LINEAR`` it is ``s0 - ws s1 - wc t1``
    (``s1 = sum f_i b0_i / d_i^2``, ``t1 = sum f_i c0_i / d_i^2``), whose error,
    ``sum f_i e_i^2 / (d_i^2 (d_i + e_i)) <= s0 max(e)^2``, is below 1e-16 of it; above, the sum
    itself (:func:`_load`).
    """
    ws, wc = (other, wait) if is_cache else (wait, other)
    e = ws * b0max + (wc * c0max if with_cache else 0.0)
    if e <= _NEGLIGIBLE:
        ld = s0
    elif e <= _LINEAR:
        ld = s0 - (ws * s1 + wc * t1)
    else:
        ld = _load(fd, fcc, is_cache, a0, b0, c0, j0, j1, ws, wc, with_cache)
    return lam - (ld * (1.0 + w) + bg)


@njit(inline="always", error_model="numpy")
def _device_wait(fd, fcc, a0, b0, c0, j0, j1, other, is_cache, with_cache, b0max, c0max, s0, s1, t1, svc, c, lgc, cap, bg, w,
                 iterations):
    """Wait of one device of one segment at the root of ``g`` on ``[0, min(-g(0), capacity)]``.

    The Illinois steps of :func:`_illinois` for one segment (written with one call of
    :func:`_mmc_wait` and of :func:`_g`, both inlined). That vectorised version stopped when the
    bracket of every segment was below 1e-10 of ``hi`` (the others went on in lock step); a
    segment stops here on its own bracket, held to ``_TOL``.

    A light load ends after ``g(hi)``, ``hi = -g(0)``: there the load is linear in the wait,
    ``g(lam) = lam - hi + K W(lam)`` (``K`` the load's slope in this wait times ``1 + w``), and
    ``delta = g(hi) = K W(hi)`` is tiny. One Newton step, ``Delta = delta / (1 + K W(hi) D / hi)``
    (``D`` from :func:`_mmc_wait`), and ``W(hi - Delta) = W(hi) (1 - D Delta / hi)`` are exact to
    ``(D Delta / hi)^2``; they are taken when that is below 1e-16 (``g`` at the new point is then
    zero to 1e-16 of ``delta``), so the root costs one M/M/c wait instead of the two or more of the
    secant steps.
    """
    lo = 0.0
    hi = 0.0
    g_lo = 0.0
    g_hi = 0.0
    lam = 0.0  # g(0) first, then g(hi), then the Illinois steps
    lam_last = 0.0
    w_last = 0.0
    side = 0
    ihi = 0.0
    own = t1 if is_cache else s1  # the load's slope in this device's wait
    for it in range(iterations + 2):
        wt, el = _mmc_wait(lam, svc, c, lgc)
        g = _g(lam, wt, fd, fcc, a0, b0, c0, j0, j1, other, is_cache, with_cache, b0max, c0max, s0, s1, t1, bg, w)
        if it == 0:
            g_lo = g
            hi = min(-g_lo, cap)
            ihi = 1.0 / hi
            lam = hi
            continue
        lam_last, w_last = lam, wt
        if it == 1:
            g_hi = g
            ws, wc = (other, wt) if is_cache else (wt, other)
            if hi == -g_lo and g >= 0 and ws * b0max + wc * c0max <= _LINEAR:
                if g == 0 or wt == 0:
                    return wt
                step = g / (1.0 + own * (1.0 + w) * wt * el * ihi)
                rel = el * step * ihi
                if rel <= 1e-8:
                    return wt * (1.0 - rel)
        else:
            if g >= 0:  # Illinois: halve the stale end's g when the same end is kept twice
                hi = lam
                if side == 1:
                    g_lo = 0.5 * g_lo
                g_hi = g
                side = 1
            else:
                lo = lam
                g_lo = g
                if side == -1:
                    g_hi = 0.5 * g_hi
                side = -1
            if abs(g) <= 1e-12 * max(lam, 1e-12):
                hi = lam
                lo = lam
        if it == iterations + 1 or not hi - lo > _TOL * max(hi, 1e-12):
            break
        denom = g_hi - g_lo
        new = (lo * g_hi - hi * g_lo) / denom if denom > 0 else 0.5 * (lo + hi)
        lam = min(max(new, lo), hi)
    return w_last if hi == lam_last else _mmc_wait(hi, svc, c, lgc)[0]


@njit(inline="always", error_model="numpy")
def _waits(fd, fcc, a0, b0, c0, j0, j1, with_cache, b0max, c0max, has_s, has_c, sums, st, ca, bg_s, bg_c, w, rounds,
           iterations):
    """``(ws, wc)``: the waits at the store and the cache device of one segment.

    ``fd`` (store + guest faults), ``fcc`` (cache faults), ``a0``, ``b0``, ``c0``: the segment's
    elements at ``j0:j1``, in order (elements without faults add nothing); the sums and maxima of
    :func:`_g` (``sums = (s0s, s1s, t1s, s0c, s1c, t1c)``: ``s`` for the store's faults, ``c`` for the
    cache's; ``st``, ``ca``: the stations, ``(service_s, servers, ln Gamma(servers + 1), IOPS)``), so a
    pass over the elements is needed only where a wait changes some element's cost by more than
    ``_LINEAR`` (a device under real load). Store and cache are alternated ``rounds`` times
    (Gauss-Seidel), the store first; written as one loop over (round, device) so that
    :func:`_device_wait` is inlined once.
    """
    s0s, s1s, t1s, s0c, s1c, t1c = sums
    st_svc, st_c, st_lgc, st_cap = st
    ca_svc, ca_c, ca_lgc, ca_cap = ca
    ws = 0.0
    wc = 0.0
    for step in range(2 * rounds if with_cache else 1):
        cache = step % 2 == 1
        if cache and not has_c:
            break
        if not cache and not has_s:
            continue
        wt = _device_wait(fd, fcc, a0, b0, c0, j0, j1, ws if cache else wc, cache, with_cache, b0max, c0max,
                          s0c if cache else s0s, s1c if cache else s1s, t1c if cache else t1s,
                          ca_svc if cache else st_svc, ca_c if cache else st_c, ca_lgc if cache else st_lgc,
                          (ca_cap if cache else st_cap) * (1.0 - 1e-9), bg_c if cache else bg_s, w, iterations)
        if cache:
            wc = wt
        else:
            ws = wt
    return ws, wc


@njit(error_model="numpy")
def _sort_by_segment(seg, m):
    """``(order, start)``: element indices grouped by segment (stable), segment ``s`` at ``order[start[s]:start[s+1]]``."""
    start = np.zeros(m + 1, dtype=np.int64)
    for i in range(seg.size):
        start[seg[i] + 1] += 1
    for s in range(m):
        start[s + 1] += start[s]
    pos = start[:-1].copy()
    order = np.empty(seg.size, dtype=np.int64)
    for i in range(seg.size):
        s = seg[i]
        order[pos[s]] = i
        pos[s] += 1
    return order, start


@njit(parallel=True, error_model="numpy")
def _solve_segments(order, start, fz, fc, fs, fg, theta, rl_s, rl_c, with_cache,
                    st_svc, st_c, st_lgc, st_cap, ca_svc, ca_c, ca_lgc, ca_cap, bg_s, bg_c,
                    dec, t_sw, t_gsw, w, rounds, iterations, n_blocks, x, ws_out, wc_out, lam_s, lam_c):
    """Every segment's fixed point (in parallel); ``x`` per element, waits and loads per segment.

    Element by element the arithmetic of the vectorised solver before it (the same expressions in
    the same order), so apart from each segment's own stopping rule the results agree to rounding.
    The segments are taken in ``n_blocks`` runs in parallel, each with a scratch array of its own
    for a segment's elements in segment order.
    """
    n_seg = start.size - 1
    nmax = 0
    for s in range(n_seg):
        nmax = max(nmax, start[s + 1] - start[s])
    for blk in prange(n_blocks):
        scratch = np.empty((5, nmax))
        fd_, fcc, a0, b0, c0 = scratch[0], scratch[1], scratch[2], scratch[3], scratch[4]
        for s in range(blk * n_seg // n_blocks, (blk + 1) * n_seg // n_blocks):
            j0 = start[s]
            n = start[s + 1] - j0
            b0max = 0.0
            c0max = 0.0
            sum_s = 0.0
            sum_c = 0.0
            s0s = 0.0
            s1s = 0.0
            t1s = 0.0
            s0c = 0.0
            s1c = 0.0
            t1c = 0.0
            for j in range(n):
                i = order[j0 + j]
                fd_[j] = fs[i] + fg[i]
                fcc[j] = fc[i]
                # X = 1 / (1 + a0 + b0 ws + c0 wc): the waits enter linearly, the rest is fixed per element
                a0[j] = (fz[i] * dec + fc[i] * (t_sw + rl_c[s]) + fs[i] * (t_sw + rl_s[s]) + fg[i] * (t_gsw + rl_s[s])) / theta[i]
                b0[j] = (fs[i] + fg[i]) / theta[i]
                c0[j] = fc[i] / theta[i]
                inv = 1.0 / (1.0 + a0[j])
                b0max = max(b0max, b0[j])
                sum_s += fd_[j]
                p = fd_[j] * inv
                s0s += p
                s1s += p * b0[j] * inv
                if with_cache:
                    c0max = max(c0max, c0[j])
                    sum_c += fcc[j]
                    t1s += p * c0[j] * inv
                    q = fcc[j] * inv
                    s0c += q
                    s1c += q * b0[j] * inv
                    t1c += q * c0[j] * inv
            ws, wc = _waits(fd_, fcc, a0, b0, c0, 0, n, with_cache, b0max, c0max, sum_s > 0, with_cache and sum_c > 0,
                            (s0s, s1s, t1s, s0c, s1c, t1c), (st_svc[s], st_c[s], st_lgc[s], st_cap[s]),
                            (ca_svc[s], ca_c[s], ca_lgc[s], ca_cap[s]), bg_s[s], bg_c[s], w, rounds, iterations)
            ws_out[s] = ws
            wc_out[s] = wc
            ls = 0.0
            lc = 0.0
            for j in range(n):
                d = 1.0 + a0[j] + b0[j] * ws
                if with_cache:
                    d = d + c0[j] * wc
                xj = 1.0 / d
                x[order[j0 + j]] = xj
                ls += fd_[j] * xj
                lc += fcc[j] * xj
            lam_s[s] = ls * (1.0 + w) + bg_s[s]
            lam_c[s] = lc * (1.0 + w) + bg_c[s]


@dataclass(frozen=True)
class StepFaults:
    """:func:`solve_steps` per (step, VM) and per (step, host), float32 like the engine's metrics."""

    fault_rate_per_s: np.ndarray  # (steps, VMs): faults per wall-clock second (F X); with series=False (VMs,) sums over the steps
    slowdown: np.ndarray  # X0 / X (series=False: sums over the steps)
    fault_cpu_mhz: np.ndarray  # host CPU handling the VM's faults (series=False: sums over the steps)
    demand_mhz: np.ndarray  # the CPU demand plus fault_cpu_mhz (the demand's dtype)
    max_slowdown: np.ndarray  # (VMs,): the largest slowdown over the steps
    host_fault_cpu_mhz: np.ndarray  # (steps, hosts)
    swap_iops: np.ndarray  # load on the store + cache device
    util_store: np.ndarray
    util_cache: np.ndarray  # 0 without a cache device
    util: np.ndarray  # the busier device's utilisation


def solve_steps(
    demand_mhz,
    vm_ids,
    vm_host,
    n_hosts: int,
    unit: FaultRates,
    access_rate_per_s,
    cpu_capacity_mhz,
    overlap,
    core_mhz,
    *,
    store: DeviceArrays,
    cache: DeviceArrays | None = None,
    costs: FaultCosts = FaultCosts(),
    background_store_iops=0.0,
    background_cache_iops=0.0,
    store_ios_per_fault: float = 1.0,
    rounds: int = 3,
    iterations: int = 40,
    series: bool = True,
    in_place: bool = False,
    factors=None,
    out=None,
) -> StepFaults:
    """Faults, throughput and fault-handling CPU of VMs whose memory stays where it is, every step of a chunk.

    When active memory is constant the reclamation is too, so each VM's faults per access
    (``unit``, from :func:`fault_rates` at an access rate of 1, one entry per VM of ``vm_ids``) are
    fixed; in step ``t`` VM ``v`` makes ``r = access_rate_per_s x clip(demand[t, v] / cpu_capacity, 0, 1)``
    accesses per second of work. Per (step, host) this is :func:`fault_rates`' split,
    :func:`solve_throughput` and :func:`fault_cpu_cycles_per_s`, done in one numba pass over the
    chunk (blocks of steps in parallel) that reads the demand once and writes the engine's float32
    metrics, with no (steps x VMs) float64 temporaries. Every fault rate and cost coefficient of an
    element is ``r`` times a constant of its VM, so those constants are taken once; the arithmetic
    then differs from the general path's in rounding only (1e-16). ``demand_mhz`` is
    ``(steps, VMs)``; VMs outside ``vm_ids`` keep no faults, slowdown 1 and their demand. Devices
    and background loads are one value or one per host.

    ``series=False``: the fault rate, slowdown and fault CPU come back as float64 sums over the
    steps per VM (of the float32 values the series would hold) instead of (steps x VMs) arrays,
    for a run that keeps no per-VM time series. Each sum is taken in step order within fixed
    parts of the steps (:data:`SUM_PARTS`, ``[s T / SUM_PARTS, (s + 1) T / SUM_PARTS)``) and the parts' sums are added in order, so it does not
    depend on the number of threads; it differs from a plain sum over the rows in rounding only.

    ``in_place=True``: the demand with the fault CPU added is written over ``demand_mhz`` (which the
    caller owns: a float32 C-ordered array), so no second (steps x VMs) array is allocated.
    ``factors=(base, col, scale)`` (a source's :meth:`~densim.workloads.sources.DemandSource.window_factors`,
    float32): the demand is ``base[t, col[v]] * scale[v]`` and is never expanded; ``demand_mhz`` is None.
    ``out``: a float32 C-ordered ``(steps, VMs)`` array (contents undefined), or a
    :class:`densim._jit.Prefaulted` one, that becomes the demand with the fault CPU added instead
    of a new array (not with ``in_place``).
    """
    if factors is not None:
        base, fcol, fscale = factors
        base = np.ascontiguousarray(base, dtype=np.float32)
        fcol = np.ascontiguousarray(fcol, dtype=np.int64)
        fscale = np.ascontiguousarray(fscale, dtype=np.float32)
        demand = base
        T, V = base.shape[0], fcol.size
    else:
        demand = np.require(demand_mhz, requirements=["C", "W"])
        T, V = demand.shape
        fcol, fscale = np.zeros(0, np.int64), np.zeros(0, np.float32)
    H = int(n_hosts)
    vm_ids = np.asarray(vm_ids, dtype=np.int64)
    host = np.asarray(vm_host, dtype=np.int64)
    # the VMs in host order (already so when they were placed in order: no permutation to apply)
    in_order = bool(np.all(host[1:] >= host[:-1]))
    order = slice(None) if in_order else np.argsort(host, kind="stable")
    hs = host[order]
    gstart = np.flatnonzero(np.r_[True, hs[1:] != hs[:-1]]) if hs.size else np.zeros(0, np.int64)
    ghost = np.ascontiguousarray(hs[gstart], dtype=np.int64)
    gstart = np.append(gstart, hs.size).astype(np.int64)
    w, p_read, t_sw, t_gsw = _fault_constants(costs)

    def per_host(x):
        return _kernel_array(np.broadcast_to(np.asarray(x, dtype=float), (H,)))

    def per_vm(x):
        return np.broadcast_to(np.asarray(x, dtype=float), (vm_ids.size,))[order]  # a view when in order

    st_p = _station(store, p_read, H)
    ca_p = _station(cache, p_read, H) if cache is not None else st_p
    rl_s = per_host(store.read_latency_s)[hs]
    rl_c = per_host(cache.read_latency_s)[hs] if cache is not None else 0.0
    bg_s, bg_c = per_host(background_store_iops), per_host(background_cache_iops)
    cyc = fault_cycles_per_tier(costs, core_mhz=per_vm(core_mhz), store_ios_per_fault=store_ios_per_fault)
    tz, tc, ts, tg = (per_vm(t) for t in (unit.compressed, unit.cache, unit.store, unit.guest))
    inv_theta = 1.0 / per_vm(overlap)
    # per VM (sorted by host), by row; all but the first two are multiplied by the accesses per second r of the step
    # (each row's last operation writes into its row: no stacked copy)
    vm_k = np.empty((9, vm_ids.size))
    vm_k[0] = per_vm(access_rate_per_s)
    np.divide(1.0, per_vm(cpu_capacity_mhz), out=vm_k[1])
    np.multiply(tz * costs.decompress_s + tc * (t_sw + rl_c) + ts * (t_sw + rl_s) + tg * (t_gsw + rl_s), inv_theta,
                out=vm_k[2])  # a0 / r
    fd = np.add(ts, tg, out=vm_k[5])  # store (+ guest) faults / r
    np.multiply(fd, inv_theta, out=vm_k[3])  # b0 / r
    np.multiply(tc, inv_theta, out=vm_k[4])  # c0 / r
    vm_k[6] = tc  # cache faults / r
    np.add(tz + tc + ts, tg, out=vm_k[7])  # all faults / r
    np.multiply(tc * cyc["cache"] + ts * cyc["store"] + tz * cyc["compressed"] + tg * cyc["guest"], 1e-6,
                out=vm_k[8])  # fault CPU MHz / r

    every = vm_ids.size == V  # every column is written: no initial values needed
    if series:
        fr = np.empty((T, V), np.float32) if every else np.zeros((T, V), np.float32)
        sd = np.empty((T, V), np.float32) if every else np.ones((T, V), np.float32)
        fcpu = np.empty((T, V), np.float32) if every else np.zeros((T, V), np.float32)
        sums = np.zeros((3, SUM_PARTS, 0))  # unused rows (the kernel indexes them in every step)
    else:
        fr = sd = fcpu = np.zeros((0, 0), np.float32)
        sums = np.zeros((3, SUM_PARTS, vm_ids.size))  # per part of the steps, per VM in host order
    if out is not None:
        dem_out = None  # taken below, as late as can be (a Prefaulted array may still be mapping its pages)
    elif factors is not None:
        # C order (base[:, fcol] may come out in F order), so that the kernel has one signature
        dem_out = np.empty((T, V), np.float32) if every else (base[:, fcol] * fscale[None, :]).astype(np.float32, order="C")
    elif in_place and demand is not demand_mhz:
        raise ValueError("solve_steps(in_place=True) needs a writeable C-ordered demand array")
    else:
        dem_out = demand if in_place else np.empty_like(demand) if every else demand.copy()
    sd_max = np.ones(V, np.float32)
    # hosts without a faulting VM carry only their background load
    util_s0 = bg_s / st_p[3]
    util_c0 = bg_c / ca_p[3] if cache is not None else np.zeros(H)

    def rows(x):
        out = np.empty((T, H), np.float32)
        out[:] = np.asarray(x, dtype=np.float32)[None, :]
        return out

    if cache is not None:
        iops, util_s, util_c, util = rows(bg_s + bg_c), rows(util_s0), rows(util_c0), rows(np.maximum(util_s0, util_c0))
    else:  # no cache device: the store's utilisation is the device utilisation (one array), the cache's is 0
        iops, util = rows(bg_s + bg_c), rows(util_s0)
        util_s, util_c = util, np.zeros((0, 0), np.float32)
    fch = np.zeros((T, H), np.float32)
    if out is not None:
        dem_out = out.get() if isinstance(out, Prefaulted) else out
        if in_place or dem_out.shape != (T, V) or dem_out.dtype != np.float32 or not dem_out.flags.c_contiguous:
            raise ValueError("solve_steps(out=...) takes a float32 C-ordered (steps, VMs) array, and not with in_place")
        if not every:  # the VMs without faults keep their demand
            dem_out[...] = base[:, fcol] * fscale[None, :] if factors is not None else demand
    _steps_kernel(demand, factors is not None, fcol, fscale, np.ascontiguousarray(vm_ids[order]), gstart, ghost, _host_tiles(gstart, STEP_TILE), vm_k, cache is not None, *st_p, *ca_p, bg_s, bg_c, w,
                  int(rounds), int(iterations), max(1, min(T, SUM_PARTS, get_num_threads())),
                  series, fr, sd, fcpu, sums, dem_out, sd_max, fch, iops, util_s, util_c, util)
    if not series:  # blocks' sums in order; VMs without faults: rate and CPU 0, slowdown 1 in every step
        tot = np.zeros((3, V))
        tot[1] = T
        part = sums[:, 0]  # the parts added in order, then placed by VM: the same floats as adding each part in place
        for b in range(1, sums.shape[1]):
            part += sums[:, b]
        tot[:, vm_ids[order]] = part
        fr, sd, fcpu = tot[0], tot[1], tot[2]
    if cache is None:
        util_c = np.broadcast_to(np.float32(0.0), (T, H))  # read-only zeros
    return StepFaults(fr, sd, fcpu, dem_out, sd_max, fch, iops, util_s, util_c, util)


RUNS = 8  # solve_steps' kernel: a tile's factored demand in at most this many runs of consecutive columns is read by slices
SUM_PARTS = 8  # solve_steps' kernel: equal parts of the steps, whole parts per thread (at most 8 threads), one partial sum each
STEP_TILE = 4096  # solve_steps' kernel: VMs (whole hosts) per tile, so that a tile's scratch rows stay in the core's cache (1 MB L2 here; 4,096 measured best of 256 to 32,768)


@njit(inline="always", error_model="numpy")
def _light_waits(nh, hosts, s0, s1, b0max, svc, c, lgc, cap, bg, w, scratch, ws):
    """The store's wait of each host of a tile (no cache device) whose load is light, else -1 (in ``ws``).

    The first two steps of :func:`_device_wait` and its closing Newton step, with the same
    expressions, taken in passes over the hosts (each host's ``hi = -g(0)``, then its M/M/c wait,
    then the step), so that the hosts' chains of dependent operations overlap instead of running
    one after another. A host for which :func:`_device_wait` would go on (a wait outside the
    linear range, ``hi`` capped by the device, a Newton step too long) gets -1 and is solved by
    :func:`_waits`; a host without faults gets 0. ``scratch``: 13 rows of at least ``nh``.
    """
    hi, av, ok, lg, pm, cd, wt, el = (scratch[0], scratch[1], scratch[2], scratch[3], scratch[4], scratch[5], scratch[6],
                                      scratch[7])
    for q in range(nh):
        h = hosts[q]
        # g(0): no wait, the load at zero waits (_g with e = 0)
        g_lo = 0.0 - (s0[q] * (1.0 + w) + bg[h])
        hi[q] = min(-g_lo, cap[h] * (1.0 - 1e-9))
    # the M/M/c wait at hi (_mmc_wait's expressions), a pass for each part so that none waits on a branch:
    # the logs, the exps, the series of P(N <= c), the rest; a host outside 0 < a < c is left to _waits
    for q in range(nh):
        h = hosts[q]
        a = hi[q] * svc[h]
        av[q] = a
        ok[q] = 1.0 if s0[q] > 0 and a < c[h] and a > 0 else 0.0
        lg[q] = np.log(a if ok[q] > 0 else 1.0)
    for q in range(nh):
        h = hosts[q]
        pm[q] = np.exp(c[h] * lg[q] - av[q] - lgc[h])
    _poisson_cdfs(nh, hosts, c, av, pm, ok, cd, scratch[8], scratch[9], scratch[10], scratch[11], scratch[12])
    for q in range(nh):
        h = hosts[q]
        wt[q], el[q] = _wait_from(av[q], svc[h], c[h], pm[q], cd[q])
    # _device_wait's closing Newton step, every host's expressions computed and the outcome selected
    # (no branch, so the pass vectorises): 0 without faults, -1 where _waits must go on, else the wait
    for q in range(nh):
        pm[q] = bg[hosts[q]]  # the host's background load (pm is free again)
    for q in range(nh):
        s0q = s0[q]
        bgq = pm[q]
        lam = hi[q]
        g_lo = 0.0 - (s0q * (1.0 + w) + bgq)
        t = wt[q]
        e = t * b0max[q] + 0.0
        ld = s0q if e <= _NEGLIGIBLE else s0q - (t * s1[q] + 0.0 * 0.0)
        g = lam - (ld * (1.0 + w) + bgq)
        ihi = 1.0 / lam
        step = g / (1.0 + s1[q] * (1.0 + w) * t * el[q] * ihi)
        rel = el[q] * step * ihi
        newton = t if (g == 0) | (t == 0) else (t * (1.0 - rel) if rel <= 1e-8 else -1.0)
        solved = (ok[q] > 0) & (e <= _LINEAR) & (lam == -g_lo) & (g >= 0) & (t * b0max[q] + 0.0 * 0.0 <= _LINEAR)
        ws[q] = (newton if solved else -1.0) if s0q > 0 else 0.0


@njit(inline="always", error_model="numpy")
def _poisson_cdfs(nh, hosts, c, av, pm, ok, cd, cq, lead, term, total, done):
    """:func:`_poisson_cdf` of every host of a tile with ``ok``, in lock step (1 elsewhere): the same floats.

    Each host's series takes the same terms in the same order as :func:`_poisson_cdf`; the passes
    over the hosts have no branches (a host whose series has stopped keeps its sums), so they vectorise.
    """
    for q in range(nh):
        cq[q] = c[hosts[q]]
    active = 0
    for q in range(nh):
        a = av[q]
        cc = cq[q]
        ld = pm[q] * (a / (cc + 1.0))
        r = a / (cc + 2.0)
        stop = ld * r <= 1e-17 * (1.0 - r) or not ok[q] > 0
        lead[q] = ld
        term[q] = 1.0
        total[q] = 1.0
        done[q] = 1.0 if stop else 0.0
        active += 0 if stop else 1
    i = 2.0
    while active > 0:
        active = 0
        for q in range(nh):
            a = av[q]
            r = a / (cq[q] + i)
            go = done[q] == 0.0
            nt = term[q] * r
            tt = total[q] + nt
            stop = lead[q] * nt * r <= 1e-17 * (1.0 - r)
            term[q] = nt if go else term[q]
            total[q] = tt if go else total[q]
            done[q] = 1.0 if go and stop else done[q]
            active += 1 if go and not stop else 0
        i += 1.0
    for q in range(nh):
        cd[q] = 1.0 - lead[q] * total[q] if ok[q] > 0 else 1.0


def _host_tiles(gstart, size: int) -> np.ndarray:
    """Tiles of whole hosts: ``tiles[i]:tiles[i+1]`` are the host groups of tile ``i``.

    A tile holds the groups whose first VM falls in one stretch of ``size`` VMs (so about ``size``
    VMs, more by at most its last host's); the kernel sizes its scratch rows from the tiles.
    """
    first = gstart[:-1] // max(1, int(size))
    return np.append(np.flatnonzero(np.r_[True, first[1:] != first[:-1]]) if first.size else np.zeros(0, np.int64),
                     first.size).astype(np.int64)


@njit(parallel=True, error_model="numpy")
def _steps_kernel(demand, factored, fcol, fscale, vm, gstart, ghost, tiles, vm_k, with_cache, st_svc, st_c, st_lgc, st_cap, ca_svc, ca_c,
                  ca_lgc, ca_cap, bg_s, bg_c, w, rounds, iterations, n_blocks, series, fr, sd, fcpu, sums, dem_out, sd_max, fch, iops,
                  util_s, util_c, util):
    """:func:`solve_steps`' pass: blocks of steps in parallel; tiles of whole hosts; per step of a tile its VMs' faults, fixed points, outputs.

    Each thread takes whole parts of the steps (:data:`SUM_PARTS`); within them the VMs (sorted by
    host) are taken in tiles of whole hosts (:data:`STEP_TILE` VMs), every step of the parts for one
    tile before the next, so the tile's scratch rows and per-VM sums stay in the core's cache. Per
    step of a tile:

    * element-wise passes (each reads and writes a few rows, indexed from 0 within the tile, so
      that it vectorises) build each element's coefficients;
    * per host, its VMs in order, the sums of :func:`_waits` (without a cache device, two
      neighbouring hosts with as many VMs in one loop, as for the loads below);
    * the fixed points: without a cache device the light loads' in passes over the tile's hosts
      (:func:`_light_waits`), the others by :func:`_waits`;
    * per host its waits spread over its VMs' elements, then element-wise passes over the tile
      compute ``X`` and the fault CPU (a host outside the linear range below is redone with the
      division);
    * per host, its VMs in order, the host's loads and fault CPU; two neighbouring hosts with as
      many VMs are summed in one loop, so that the two hosts' chains of additions overlap (each
      sum still adds its own VMs in order: the same floats);
    * element-wise passes write the per-VM outputs.

    The sums over a host's VMs are taken in VM order and those over the steps in step order, as
    before this layout, so the results are the same floats (checked on the 100k rung and the golden
    outputs; the layout was measured 1.9x faster on one thread than one pass over all of a step's
    VMs, whose loops did not vectorise). Where the waits are in the linear range (``_LINEAR``),
    ``X = (1 / d)(1 - e / d)`` (``d = 1 + a0``, ``e = b0 ws + c0 wc``; relative error
    ``(e / d)^2 < 1e-16``) needs no second division; the slowdown is ``d + e``. ``vm_k`` holds the
    per-VM constants by row (see :func:`solve_steps`).
    """
    T = demand.shape[0]
    k = vm.size
    contiguous = True  # the VMs in host order are columns vm[0], vm[0] + 1, ...
    for j in range(k):
        if vm[j] != vm[0] + j:
            contiguous = False
            break
    v0 = vm[0] if k else 0
    k_rate, k_icap, k_a0, k_b0, k_c0, k_fd, k_fc, k_tot, k_cpu = (vm_k[0], vm_k[1], vm_k[2], vm_k[3], vm_k[4], vm_k[5],
                                                                  vm_k[6], vm_k[7], vm_k[8])
    n_tiles = tiles.size - 1
    width = 1
    hosts = 1
    for ti in range(n_tiles):
        width = max(width, gstart[tiles[ti + 1]] - gstart[tiles[ti]])
        hosts = max(hosts, tiles[ti + 1] - tiles[ti])
    vmax_b = np.full((n_blocks, k), -np.inf, dtype=np.float32)
    for blk in prange(n_blocks):
        # per element of a tile: r, a0, b0, c0, 1/d, fd, fcc, fcc/d, e, X, fault CPU
        buf = np.zeros((13, width))
        e_ws, e_wc = buf[11], buf[12]
        e_r, e_a0, e_b0, e_c0, e_inv, e_fd = buf[0], buf[1], buf[2], buf[3], buf[4], buf[5]
        e_fcc, e_q, e_e, e_x, e_cpu = buf[6], buf[7], buf[8], buf[9], buf[10]
        e_dm = np.zeros(width, dtype=np.float32)
        runs = np.zeros(RUNS + 1, dtype=np.int64)
        # per host of a tile: the sums of _waits and the light-load pass's wait (-1: not light); that pass's scratch
        hb = np.zeros((9, hosts))
        h_scr = np.zeros((13, hosts))
        h_b0max, h_c0max, h_s0s, h_s1s, h_t1s, h_s0c, h_s1c, h_t1c = hb[0], hb[1], hb[2], hb[3], hb[4], hb[5], hb[6], hb[7]
        h_ws = hb[8]
        vmax = vmax_b[blk]
        for ti in range(n_tiles):
            g0 = tiles[ti]
            g1 = tiles[ti + 1]
            J0 = gstart[g0]
            n = gstart[g1] - J0
            nh = g1 - g0
            # the tile's rows as views (indices from 0: no negative-index wrap to check, so the passes vectorise)
            t_rate, t_icap, t_a0, t_b0, t_c0 = k_rate[J0:J0 + n], k_icap[J0:J0 + n], k_a0[J0:J0 + n], k_b0[J0:J0 + n], k_c0[J0:J0 + n]
            t_fd, t_fc, t_tot, t_cpu = k_fd[J0:J0 + n], k_fc[J0:J0 + n], k_tot[J0:J0 + n], k_cpu[J0:J0 + n]
            t_vmax = vmax[J0:J0 + n]
            t_vm = vm[J0:J0 + n]
            t_fcol = fcol[v0 + J0:v0 + J0 + n] if factored and contiguous else fcol[:0]
            t_fscale = fscale[v0 + J0:v0 + J0 + n] if factored and contiguous else fscale[:0]
            # the tile's factored columns in runs of consecutive columns (a trace per VM, or traces
            # replayed in turn): a run's demand is a slice of the step's row; more than RUNS runs: gathered
            nr = 0
            for i in range(t_fcol.size):
                if i == 0 or t_fcol[i] != t_fcol[i - 1] + 1:
                    if nr < RUNS:
                        runs[nr] = i
                    nr += 1
            if nr <= RUNS:
                runs[nr] = n
            # whole parts of the steps per thread block, so that no two threads add to one partial sum
            for sb in range(blk * SUM_PARTS // n_blocks, (blk + 1) * SUM_PARTS // n_blocks):
                s_fr, s_sd, s_fc = sums[0, sb, J0:J0 + n], sums[1, sb, J0:J0 + n], sums[2, sb, J0:J0 + n]  # empty rows with series
                for t in range(sb * T // SUM_PARTS, (sb + 1) * T // SUM_PARTS):
                    row = demand[t]
                    d_row = dem_out[t, v0 + J0:v0 + J0 + n] if contiguous else dem_out[t, :0]
                    # the tile's demand, then the coefficients: accesses per second of work follow the VM's CPU use
                    if factored:
                        if contiguous and nr <= RUNS:
                            for r in range(nr):
                                a = runs[r]
                                m = runs[r + 1] - a
                                c = t_fcol[a]
                                x_dm, x_row, x_sc = e_dm[a:a + m], row[c:c + m], t_fscale[a:a + m]
                                for i in range(m):
                                    x_dm[i] = x_row[i] * x_sc[i]
                        elif contiguous:
                            for i in range(n):
                                e_dm[i] = row[t_fcol[i]] * t_fscale[i]
                        else:
                            for i in range(n):
                                v = t_vm[i]
                                e_dm[i] = row[fcol[v]] * fscale[v]
                    elif contiguous:
                        r_row = row[v0 + J0:v0 + J0 + n]
                        for i in range(n):
                            e_dm[i] = r_row[i]
                    else:
                        for i in range(n):
                            e_dm[i] = row[t_vm[i]]
                    for i in range(n):
                        e_r[i] = t_rate[i] * min(max(np.float64(e_dm[i]) * t_icap[i], 0.0), 1.0)
                    for i in range(n):
                        a0 = e_r[i] * t_a0[i]
                        e_a0[i] = a0
                        e_inv[i] = 1.0 / (1.0 + a0)
                    for i in range(n):
                        e_b0[i] = e_r[i] * t_b0[i]
                        e_fd[i] = e_r[i] * t_fd[i]
                    for i in range(n):
                        # counted in the cache device's load even without one, as solve_throughput does
                        e_fcc[i] = e_r[i] * t_fc[i]
                    if with_cache:
                        for i in range(n):
                            e_c0[i] = e_r[i] * t_c0[i]
                            e_q[i] = e_fcc[i] * e_inv[i]
                    # per host, its VMs in order: the sums of _waits (without a cache device, two hosts of
                    # as many VMs at a time, so that their sums' chains overlap)
                    q = 0
                    while q < nh:
                        j0 = gstart[g0 + q] - J0
                        j1 = gstart[g0 + q + 1] - J0
                        m = j1 - j0
                        if not with_cache and q + 1 < nh and gstart[g0 + q + 2] - gstart[g0 + q + 1] == m:
                            b0max = 0.0
                            s0s = 0.0
                            s1s = 0.0
                            b0max2 = 0.0
                            s0s2 = 0.0
                            s1s2 = 0.0
                            for i in range(j0, j1):
                                p = e_fd[i] * e_inv[i]
                                b0max = max(b0max, e_b0[i])
                                s0s += p
                                s1s += p * e_b0[i] * e_inv[i]
                                i2 = i + m
                                p2 = e_fd[i2] * e_inv[i2]
                                b0max2 = max(b0max2, e_b0[i2])
                                s0s2 += p2
                                s1s2 += p2 * e_b0[i2] * e_inv[i2]
                            h_b0max[q] = b0max
                            h_s0s[q] = s0s
                            h_s1s[q] = s1s
                            h_b0max[q + 1] = b0max2
                            h_s0s[q + 1] = s0s2
                            h_s1s[q + 1] = s1s2
                            q += 2
                            continue
                        b0max = 0.0
                        c0max = 0.0
                        s0s = 0.0
                        s1s = 0.0
                        t1s = 0.0
                        s0c = 0.0
                        s1c = 0.0
                        t1c = 0.0
                        for i in range(j0, j1):
                            # the terms are computed here: the loop waits on its sums, not on these
                            p = e_fd[i] * e_inv[i]
                            b0max = max(b0max, e_b0[i])
                            s0s += p
                            s1s += p * e_b0[i] * e_inv[i]
                            if with_cache:
                                c0max = max(c0max, e_c0[i])
                                t1s += p * e_c0[i] * e_inv[i]
                                s0c += e_q[i]
                                s1c += e_q[i] * e_b0[i] * e_inv[i]
                                t1c += e_q[i] * e_c0[i] * e_inv[i]
                        h_b0max[q] = b0max
                        h_c0max[q] = c0max
                        h_s0s[q] = s0s
                        h_s1s[q] = s1s
                        h_t1s[q] = t1s
                        h_s0c[q] = s0c
                        h_s1c[q] = s1c
                        h_t1c[q] = t1c
                        q += 1
                    # the fixed points: without a cache device, a light load's (one M/M/c wait, see
                    # _device_wait) in passes over the tile's hosts, so that the hosts' waits overlap
                    if not with_cache:
                        _light_waits(nh, ghost[g0:g0 + nh], h_s0s, h_s1s, h_b0max, st_svc, st_c, st_lgc, st_cap, bg_s, w, h_scr, h_ws)
                    for q in range(nh):
                        g = g0 + q
                        j0 = gstart[g] - J0
                        j1 = gstart[g + 1] - J0
                        h = ghost[g]
                        ws = 0.0
                        wc = 0.0
                        if not with_cache and h_ws[q] >= 0:
                            ws = h_ws[q]
                        elif h_s0s[q] > 0 or h_s0c[q] > 0:
                            ws, wc = _waits(e_fd, e_fcc, e_a0, e_b0, e_c0, j0, j1, with_cache, h_b0max[q], h_c0max[q], h_s0s[q] > 0,
                                            h_s0c[q] > 0, (h_s0s[q], h_s1s[q], h_t1s[q], h_s0c[q], h_s1c[q], h_t1c[q]),
                                            (st_svc[h], st_c[h], st_lgc[h], st_cap[h]), (ca_svc[h], ca_c[h], ca_lgc[h], ca_cap[h]),
                                            bg_s[h], bg_c[h], w, rounds, iterations)
                        h_scr[2, q] = 1.0 if ws * h_b0max[q] + wc * h_c0max[q] <= _LINEAR else 0.0
                        e_ws[j0:j1] = ws
                        if with_cache:
                            e_wc[j0:j1] = wc
                    # X and the fault CPU, element by element (the linear form; a host outside it below)
                    if with_cache:
                        for i in range(n):
                            e_e[i] = e_b0[i] * e_ws[i] + e_c0[i] * e_wc[i]
                    else:
                        for i in range(n):
                            e_e[i] = e_b0[i] * e_ws[i]
                    for i in range(n):
                        iv = e_inv[i]
                        x = iv * (1.0 - e_e[i] * iv)
                        e_x[i] = x
                        e_cpu[i] = x * (e_r[i] * t_cpu[i])
                    for q in range(nh):
                        if h_scr[2, q] == 0.0:
                            j0 = gstart[g0 + q] - J0
                            j1 = gstart[g0 + q + 1] - J0
                            for i in range(j0, j1):
                                x = 1.0 / (1.0 + e_a0[i] + e_e[i])
                                e_x[i] = x
                                e_cpu[i] = x * (e_r[i] * t_cpu[i])
                    # per host, its VMs in order: its loads and fault CPU (two hosts of as many VMs at a time,
                    # so that their sums' chains overlap; each sum is still taken in its VMs' order)
                    q = 0
                    while q < nh:
                        g = g0 + q
                        j0 = gstart[g] - J0
                        j1 = gstart[g + 1] - J0
                        m = j1 - j0
                        ls = 0.0
                        lc = 0.0
                        cpu_h = 0.0
                        ls2 = 0.0
                        lc2 = 0.0
                        cpu_h2 = 0.0
                        pair = q + 1 < nh and gstart[g + 2] - gstart[g + 1] == m
                        if pair:
                            q_x, q_fd, q_fcc, q_cpu = e_x[j0:j1], e_fd[j0:j1], e_fcc[j0:j1], e_cpu[j0:j1]
                            r_x, r_fd, r_fcc, r_cpu = e_x[j1:j1 + m], e_fd[j1:j1 + m], e_fcc[j1:j1 + m], e_cpu[j1:j1 + m]
                            for i in range(m):
                                x = q_x[i]
                                ls += q_fd[i] * x
                                lc += q_fcc[i] * x
                                cpu_h += q_cpu[i]
                                x2 = r_x[i]
                                ls2 += r_fd[i] * x2
                                lc2 += r_fcc[i] * x2
                                cpu_h2 += r_cpu[i]
                        else:
                            q_x, q_fd, q_fcc, q_cpu = e_x[j0:j1], e_fd[j0:j1], e_fcc[j0:j1], e_cpu[j0:j1]
                            for i in range(m):
                                x = q_x[i]
                                ls += q_fd[i] * x
                                lc += q_fcc[i] * x
                                cpu_h += q_cpu[i]
                        for k2 in range(2 if pair else 1):
                            h = ghost[g + k2]
                            if k2 == 1:
                                ls, lc, cpu_h = ls2, lc2, cpu_h2
                            lam_s = ls * (1.0 + w) + bg_s[h]
                            lam_c = lc * (1.0 + w) + bg_c[h]
                            fch[t, h] = cpu_h
                            iops[t, h] = lam_s + lam_c
                            us = lam_s / st_cap[h]
                            uc = lam_c / ca_cap[h] if with_cache else 0.0
                            util_s[t, h] = us
                            if with_cache:
                                util_c[t, h] = uc
                            util[t, h] = max(us, uc)
                        q += 2 if pair else 1
                    # the VMs' outputs, element by element
                    if not series:  # sums over the steps of the float32 values, in step order within a part of the steps
                        for i in range(n):
                            s_fr[i] += np.float64(np.float32(e_x[i] * (e_r[i] * t_tot[i])))
                        for i in range(n):
                            s32 = np.float32(1.0 + e_a0[i] + e_e[i])
                            s_sd[i] += np.float64(s32)
                            t_vmax[i] = max(t_vmax[i], s32)
                        for i in range(n):
                            s_fc[i] += np.float64(np.float32(e_cpu[i]))
                    elif contiguous:
                        fr_row, sd_row, fc_row = fr[t, v0 + J0:v0 + J0 + n], sd[t, v0 + J0:v0 + J0 + n], fcpu[t, v0 + J0:v0 + J0 + n]
                        for i in range(n):
                            fr_row[i] = e_x[i] * (e_r[i] * t_tot[i])
                        for i in range(n):
                            s32 = np.float32(1.0 + e_a0[i] + e_e[i])
                            sd_row[i] = s32
                            t_vmax[i] = max(t_vmax[i], s32)
                        for i in range(n):
                            fc_row[i] = e_cpu[i]
                    else:
                        for i in range(n):
                            v = t_vm[i]
                            fr[t, v] = e_x[i] * (e_r[i] * t_tot[i])
                            s32 = np.float32(1.0 + e_a0[i] + e_e[i])
                            sd[t, v] = s32
                            t_vmax[i] = max(t_vmax[i], s32)
                            fcpu[t, v] = e_cpu[i]
                    if contiguous:
                        for i in range(n):
                            d_row[i] = e_dm[i] + np.float32(e_cpu[i])
                    else:
                        for i in range(n):
                            dem_out[t, t_vm[i]] = e_dm[i] + np.float32(e_cpu[i])
    if T > 0:
        for j in range(k):
            m = vmax_b[0, j]
            for blk in range(1, n_blocks):
                m = max(m, vmax_b[blk, j])
            sd_max[vm[j]] = m


@njit
def _fault_load_split(f, a0, b0, c0, ws, wc, seg_s, seg_c, seg_out, m, with_cache):
    """Fault load per segment when the store and the cache have different segments.

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
    zero_page_fraction=None,
    inter_vm_sharing_fraction=None,
) -> HostResult:
    """Reclamation, faults and throughput for every element in one call. ``zero_page_fraction`` and
    ``inter_vm_sharing_fraction`` (per element, e.g. from guest images: :func:`densim.models.page_sharing.element_fractions`)
    replace ``params``' when given."""
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
        zero_page_fraction=params.zero_page_fraction if zero_page_fraction is None else zero_page_fraction,
        inter_vm_sharing_fraction=(params.inter_vm_sharing_fraction if inter_vm_sharing_fraction is None
                                   else inter_vm_sharing_fraction),
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
