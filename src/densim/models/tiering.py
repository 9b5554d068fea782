"""NVMe memory tiering (vSphere 9 "Memory Tiering over NVMe"): page placement by activity, tier faults,
the tier device under load (docs/background/tiering.md).

A tiered host has its DRAM plus an NVMe tier of ``k`` times its DRAM (DRAM:NVMe = 1:k, k <= 4).
Guest memory beyond what DRAM holds (the *spill*) lives on the tier. Pages are placed by activity,
as ESX does (hot pages in DRAM, cold ones on NVMe):

1. the spill takes idle (non-active) resident memory first, host-wide;
2. only when the host's idle memory cannot hold the spill do active pages go to the tier, a common
   share ``1 - g`` of every VM's resident active memory (``g`` = DRAM share of the active memory).

Per VM the DRAM-resident share of its active set is ``f_dram = g f_res`` (``f_res``: the share not
reclaimed by the over-commit pipeline, 1 on a host that does not reclaim). The VM's miss-ratio curve
``m`` gives the accesses that leave DRAM, ``m(f_dram)``; of those ``m(f_res)`` go to swap or the
compression cache (the memory model) and the rest to the tier: the **tier access ratio**
``m(f_dram) - m(f_res)`` (the tier *hit* ratio of the accesses leaving DRAM is that over
``m(f_dram)``). Tier faults per second of unconstrained work: ``F = r m_tier``.

Fault cost and slowdown are those of the memory model (modelling guide §2.4/2.5) with the tier device
as the one device: ``t = t_sw + t_read + W_q(lambda)``, ``X = 1/(1 + F t / theta)``, the device load
``lambda = sum F X (1 + w)`` from every VM's tier faults on the host (``w`` demotion writes per
promotion), solved as a fixed point with M/M/c queueing (:func:`densim.models.memory.solve_throughput`).

The **active-memory rule** (VMware: tier only when the active memory fits DRAM, "50 % active" at
1:1): :func:`active_rule` — per host the active memory over DRAM's guest capacity; above 1 active
pages spill and the tier faults above follow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from densim.models.devices import DeviceSpec
from densim.models.memory_defaults import FaultCosts

__all__ = ["TierPlacement", "active_rule", "place_pages", "tier_costs", "tier_device_arrays", "tier_faults", "solve_tier"]


@dataclass(frozen=True)
class TierPlacement:
    """Where resident guest memory sits on tiered hosts (per element; per segment where said)."""

    tier_bytes: np.ndarray  # guest bytes of the VM on the NVMe tier
    tier_active_bytes: np.ndarray  # of which active
    dram_active_fraction: np.ndarray  # f_dram: share of the VM's whole active set in DRAM
    spill_bytes: np.ndarray  # per segment: resident guest memory beyond DRAM's guest capacity
    active_bytes: np.ndarray  # per segment: resident active memory
    dram_share: np.ndarray  # per segment: g, DRAM share of the resident active memory


def _seg_sum(x, seg, n_seg: int) -> np.ndarray:
    return np.bincount(seg, weights=np.asarray(x, dtype=float), minlength=n_seg)


def place_pages(resident_bytes, resident_active_bytes, resident_active_fraction, seg, n_seg: int,
                dram_guest_bytes) -> TierPlacement:
    """Hot pages in DRAM, cold pages on the tier, per segment (host x step); vectorised over elements.

    ``resident_bytes``, ``resident_active_bytes``, ``resident_active_fraction`` per element (a VM in a
    step); ``seg`` its segment; ``dram_guest_bytes`` per segment (or one value): DRAM left for guest
    memory (:func:`densim.models.memory.guest_capacity_bytes` of the DRAM alone).
    """
    seg = np.asarray(seg, dtype=np.int64)
    res = np.asarray(resident_bytes, dtype=float)
    act = np.minimum(np.asarray(resident_active_bytes, dtype=float), res)
    f_res = np.asarray(resident_active_fraction, dtype=float)
    idle = res - act
    R = _seg_sum(res, seg, n_seg)
    A = _seg_sum(act, seg, n_seg)
    I = R - A  # noqa: E741
    dram = np.broadcast_to(np.asarray(dram_guest_bytes, dtype=float), (n_seg,))
    spill = np.maximum(R - np.maximum(dram, 0.0), 0.0)
    idle_out = np.minimum(spill, I)  # cold pages leave DRAM first
    act_out = spill - idle_out
    g = np.where(A > 0, 1.0 - np.divide(act_out, A, out=np.zeros(n_seg), where=A > 0), 1.0)
    g = np.clip(g, 0.0, 1.0)
    idle_share = np.divide(idle_out, I, out=np.zeros(n_seg), where=I > 0)
    tier_act = (1.0 - g[seg]) * act
    return TierPlacement(
        tier_bytes=idle_share[seg] * idle + tier_act,
        tier_active_bytes=tier_act,
        dram_active_fraction=g[seg] * f_res,
        spill_bytes=spill,
        active_bytes=A,
        dram_share=g,
    )


def active_rule(active_bytes, dram_guest_bytes) -> np.ndarray:
    """Active memory over DRAM's guest capacity (per host or segment); the rule holds at <= 1."""
    d = np.asarray(dram_guest_bytes, dtype=float)
    a = np.asarray(active_bytes, dtype=float)
    return np.divide(a, d, out=np.full(np.broadcast_shapes(a.shape, d.shape), np.inf), where=d > 0)


def tier_access_ratio(miss_dram, miss_resident) -> np.ndarray:
    """Accesses that find their page on the tier: ``m(f_dram) - m(f_res)`` (>= 0)."""
    return np.clip(np.asarray(miss_dram, dtype=float) - np.asarray(miss_resident, dtype=float), 0.0, 1.0)


def tier_device_arrays(dev: DeviceSpec, devices_per_host: int = 1):
    """The tier's device(s) of one host as :class:`densim.models.memory.DeviceArrays`: ``n`` devices
    striped add their IOPS and their parallel units (same QD1 latency)."""
    from densim.models.memory import DeviceArrays

    one = DeviceArrays.from_spec(dev)
    n = float(devices_per_host)
    par = one.parallelism * n  # nan stays nan: IOPS x QD1 latency, which the sum of IOPS scales by n
    return DeviceArrays(one.read_latency_s, one.write_latency_s, one.read_iops * n, one.write_iops * n, par)


def tier_costs(software_s: float, writes_per_fault: float, base: FaultCosts) -> FaultCosts:
    """Per-fault costs of a tier fault: the hypervisor's software time and the demotion writes; the
    host CPU cycles (trap, page-table update, I/O) are the memory model's."""
    return FaultCosts(software_s=software_s, guest_software_s=None, decompress_s=base.decompress_s,
                      writes_per_fault=writes_per_fault, trap_cycles=base.trap_cycles, map_cycles=base.map_cycles,
                      io_cycles=base.io_cycles)


def tier_faults(access_rate_per_s, tier_ratio):
    """Tier faults per second of unconstrained work as a :class:`densim.models.memory.FaultRates`
    whose one tier is ``store`` (the tier device)."""
    from densim.models.memory import FaultRates

    m = np.asarray(tier_ratio, dtype=float)
    f = np.asarray(access_rate_per_s, dtype=float) * m
    z = np.zeros_like(f)
    return FaultRates(compressed=z, cache=z, store=f, guest=z, miss_ratio=m)


def solve_tier(faults, seg, n_seg: int, *, device, costs: FaultCosts, overlap=1.0):
    """Throughput per element and the tier device's load per segment (the memory model's fixed point
    with the tier device as its one device): :class:`densim.models.memory.Throughput`."""
    from densim.models.memory import solve_throughput

    return solve_throughput(faults, seg, n_seg, store=device, costs=costs, overlap=overlap)
