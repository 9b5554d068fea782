"""NUMA: sockets as nodes, local and remote memory latency, VMs wider than a node, co-stop.

Modelling guide §3.2-§3.3:

* A VM that fits a node (vCPUs and memory) and is bound to it is local (``r = 0``). A VM spanning
  ``n`` nodes has remote fraction ``r = 1 - 1/n`` when the guest is NUMA-unaware and a small
  residual (E 0.1-0.3) when the hypervisor exposes the topology (vNUMA) to a NUMA-aware guest.
  An unbound VM whose vCPU threads the host scheduler moves across all ``S`` nodes behaves like a
  VM spanning ``S`` nodes.
* CPI model: ``CPI = CPI_core + MPKI/1000 L_mem phi`` with ``L_mem = (1-r) L_local + r L_remote``
  (190 vs 310 cycles on a 2-socket Xeon [S21]) and ``phi`` the non-overlapped stall share.
* Co-stop: a VM of width ``w`` runs when ``w`` logical CPUs are free within the skew window;
  with ``K`` other runnable vCPUs ~ Binomial(N, u) on ``C`` logical CPUs,
  ``%CSTP ~ P(C - K < w)``.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from densim._distributions import binom_sf


class NumaSpec(BaseModel):
    """Memory latencies of a host's NUMA topology (one node per socket)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)
    local_cycles: float = Field(gt=0, description="DRAM access latency from the local socket (cycles)")
    remote_cycles: float = Field(gt=0, description="DRAM access latency across the socket interconnect (cycles)")
    stall_fraction: float = Field(default=0.5, gt=0, le=1, description="share of miss latency not overlapped (phi)")
    aware_remote_fraction: float = Field(default=0.2, ge=0, le=1, description="remote share left for a NUMA-aware guest that spans nodes (E)")
    source: str = ""


def nodes_spanned(vcpus, memory_bytes, cores_per_node: int, memory_per_node_bytes: float, nodes: int):
    """Nodes a VM needs: the larger of ``ceil(vcpus/cores)`` and ``ceil(mem/mem_per_node)``, at most ``nodes``."""
    v = np.ceil(np.asarray(vcpus, dtype=float) / cores_per_node)
    m = np.ceil(np.asarray(memory_bytes, dtype=float) / memory_per_node_bytes)
    out = np.clip(np.maximum(np.maximum(v, m), 1.0), 1.0, nodes)
    return out[()] if out.ndim == 0 else out


def remote_fraction(spanned_nodes, *, bound: bool, guest_numa_aware: bool, aware_remote_fraction: float = 0.2, host_nodes: int = 2):
    """Share of a VM's DRAM accesses served by a remote node.

    Bound to one node and fitting it: 0. Spanning ``n`` nodes (or unbound on ``host_nodes``):
    ``1 - 1/n`` for a NUMA-unaware guest, ``aware_remote_fraction`` for an aware guest with vNUMA.
    """
    n = np.asarray(spanned_nodes, dtype=float)
    if not bound:
        n = np.maximum(n, float(host_nodes))
    unaware = 1.0 - 1.0 / n
    r = np.where(n <= 1.0, 0.0, np.minimum(unaware, aware_remote_fraction) if guest_numa_aware else unaware)
    return r[()] if r.ndim == 0 else r


def memory_latency_cycles(remote_frac, local_cycles: float, remote_cycles: float):
    """Mean DRAM latency: ``(1-r) L_local + r L_remote``."""
    r = np.asarray(remote_frac, dtype=float)
    out = (1.0 - r) * local_cycles + r * remote_cycles
    return out[()] if out.ndim == 0 else out


def cycles_per_instruction(cpi_core, llc_mpki, remote_frac, numa: NumaSpec, extra_cycles_per_kinstr=0.0):
    """``CPI_core + MPKI/1000 x L_mem x phi + extra/1000`` (extra: page walks, exits per kinstr)."""
    lat = memory_latency_cycles(remote_frac, numa.local_cycles, numa.remote_cycles)
    out = np.asarray(cpi_core, dtype=float) + np.asarray(llc_mpki, dtype=float) / 1000.0 * lat * numa.stall_fraction + np.asarray(extra_cycles_per_kinstr, dtype=float) / 1000.0
    return out[()] if np.ndim(out) == 0 else out


def numa_slowdown(cpi_core, llc_mpki, remote_frac, numa: NumaSpec):
    """``CPI(r) / CPI(0)``."""
    return cycles_per_instruction(cpi_core, llc_mpki, remote_frac, numa) / cycles_per_instruction(cpi_core, llc_mpki, 0.0, numa)


def costop_probability(width: int, logical_cpus: int, other_vcpus: int, other_busy_fraction: float) -> float:
    """``P(C - K < w)``: chance that fewer than ``width`` logical CPUs are free for a runnable VM.

    ``K ~ Binomial(other_vcpus, u)`` runnable vCPUs of other VMs on ``logical_cpus``.
    """
    if width > logical_cpus:
        return 1.0
    threshold = logical_cpus - width  # co-stop when K > C - w
    return float(binom_sf(threshold, other_vcpus, other_busy_fraction))


def costop_stretch(width: int, logical_cpus: int, other_vcpus: int, other_busy_fraction: float) -> float:
    """Stretch of a wide VM's CPU time from co-stop skew: ``1 / (1 - %CSTP)`` (1 for ``width`` 1)."""
    if width <= 1:
        return 1.0
    p = costop_probability(width, logical_cpus, other_vcpus, other_busy_fraction)
    return float(np.inf) if p >= 1.0 else 1.0 / (1.0 - p)
