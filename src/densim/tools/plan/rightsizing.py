"""Right-sizing: recommended vCPUs and memory per VM from observed demand.

    vcpus_rec  = clamp(ceil(P_q(cpu_mhz) x (1 + headroom) / MHz per vCPU), 1, vcpus)
    memory_rec = clamp(ceil_to(P_q(memory in use) x (1 + headroom), granule), granule, memory)

``q`` (percentile, default 95) and ``headroom`` (default 20 %) are configurable; a VM is never
sized up (densim reports under-sized VMs separately: P_q above the configured size). Without a
memory series the configured memory is kept. Capacity reclaimed = sum(configured - recommended).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from densim.workloads.inventory import Inventory


@dataclass(frozen=True)
class Rightsizing:
    names: np.ndarray
    vcpus: np.ndarray
    vcpus_rec: np.ndarray
    mem_bytes: np.ndarray
    mem_rec_bytes: np.ndarray
    cpu_pq_mhz: np.ndarray
    undersized: np.ndarray  # (N,) bool: P_q demand above the configured vCPUs
    percentile: float
    headroom: float

    @property
    def vcpus_reclaimed(self) -> int:
        return int((self.vcpus - self.vcpus_rec).sum())

    @property
    def mem_reclaimed_bytes(self) -> float:
        return float((self.mem_bytes - self.mem_rec_bytes).sum())

    def table(self) -> list[dict]:
        return [
            {"vm": str(n), "vcpus": int(v), "vcpus_recommended": int(vr), "memory_gib": m / 2**30,
             "memory_recommended_gib": mr / 2**30, "cpu_p_mhz": float(c), "undersized": bool(u)}
            for n, v, vr, m, mr, c, u in zip(self.names, self.vcpus, self.vcpus_rec, self.mem_bytes,
                                             self.mem_rec_bytes, self.cpu_pq_mhz, self.undersized)
        ]


def rightsize(inv: Inventory, percentile: float = 95.0, headroom: float = 0.2,
              mem_granule_bytes: float = 256 * 2**20) -> Rightsizing:
    if not 0 <= percentile <= 100:
        raise ValueError(f"percentile must be in [0, 100], got {percentile}")
    if headroom < 0:
        raise ValueError(f"headroom must be >= 0, got {headroom}")
    cpu_pq = inv.cpu_percentile_mhz(percentile)
    need = np.ceil(cpu_pq * (1.0 + headroom) / inv.vcpu_mhz - 1e-9)
    vcpus_rec = np.clip(need, 1, inv.vcpus).astype(np.int32)
    undersized = cpu_pq * (1.0 + headroom) > inv.capacity_mhz * (1 + 1e-9)
    if inv.mem_used_bytes is not None:
        mem_pq = inv.mem_percentile_bytes(percentile) * (1.0 + headroom)
        mem_rec = np.ceil(mem_pq / mem_granule_bytes - 1e-9) * mem_granule_bytes
        mem_rec = np.clip(mem_rec, mem_granule_bytes, inv.mem_bytes)
    else:
        mem_rec = inv.mem_bytes.copy()
    return Rightsizing(inv.names, inv.vcpus, vcpus_rec, inv.mem_bytes, mem_rec, cpu_pq, undersized,
                       percentile, headroom)
