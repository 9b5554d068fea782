"""Placement filters: which open hosts may take VM ``j``? Each returns a bool mask over open hosts.

A filter is ``fn(state, j) -> (n_open,) bool`` and is chosen by name from :data:`FILTERS`; a policy
is a list of filter names plus weighers (:mod:`densim.placement.weighers`). All work is vectorised
over hosts (and time windows); the only loop is over VMs, in placement order.

``state`` is a :class:`densim.placement.prefabs.HostState`; ``state.p`` its
:class:`densim.placement.prefabs.PackingProblem`.
"""

from __future__ import annotations

import numpy as np

from densim.models.queueing import expected_excess
from densim.placement.capacity import fits_mask
from densim.registry import Registry

FILTERS: Registry = Registry("placement-filter", default="none")


@FILTERS.register("none", description="accepts every host")
def f_none(state, j: int) -> np.ndarray:
    return np.ones(state.n_open, dtype=bool)


@FILTERS.register(
    "capacity",
    description="vCPUs <= cpu_overcommit x logical CPUs and configured memory <= memory_overcommit x host memory",
    source="OpenStack Nova CoreFilter/RamFilter allocation ratios; VMware vCPU:pCPU consolidation ratios",
)
def f_capacity(state, j: int) -> np.ndarray:
    p = state.p
    h = slice(0, state.n_open)
    cap = p.capacity
    return fits_mask(cap[0] - state.vcpus_used[h], cap[1] - state.mem_used_bytes[h], p.vcpus[j], p.mem_bytes[j])


@FILTERS.register(
    "demand",
    description="in every time window the summed CPU demand fits the host's MHz x target utilisation, the "
    "summed memory in use fits its memory, and the summed disk IOPS fit its datastore's budget at the latency bound",
)
def f_demand(state, j: int) -> np.ndarray:
    p = state.p
    h = slice(0, state.n_open)
    ok = np.ones(state.n_open, dtype=bool)
    if p.cpu_w_mhz is not None:
        ok &= ((state.cpu_w_mhz[h] + p.cpu_w_mhz[:, j]) <= p.host.capacity_mhz * p.max_cpu_utilisation + 1e-6).all(axis=1)
    if p.mem_w_bytes is not None:
        ok &= ((state.mem_w_bytes[h] + p.mem_w_bytes[:, j]) <= p.host.usable_mem_bytes + 1e-3).all(axis=1)
    if p.io_w_iops is not None:
        ok &= ((state.io_w_iops[h] + p.io_w_iops[:, j]) <= p.io_cap_iops * (1 + 1e-9)).all(axis=1)
    return ok


def ready_pct_worst(mean_k, var_k, umax, logical_capacity, n_vcpus=None) -> np.ndarray:
    """Worst VM's CPU Ready % per vCPU for a host, per window (binomial occupancy, normal approximation).

    ``K`` = runnable vCPUs on the host, mean ``sum v_j u_j`` and variance ``sum v_j u_j (1 - u_j)``;
    ``C`` = logical capacity (cores x SMT gain). With fair sharing each runnable vCPU waits a share
    ``E[(K - C)+] / E[K]`` of its runnable time, so a vCPU busy a fraction ``u`` sees ready
    ``100 u E[(K - C)+] / E[K]`` %. Summed over vCPUs this is ``E[(K - C)+]`` (the guide's host figure,
    ../shared/reference/modelling-guide.md §3.2). ``K`` cannot exceed the host's vCPU count
    ``n_vcpus``: where ``n_vcpus <= C`` nothing ever waits (as in the engine's ``binomial`` model).
    """
    if n_vcpus is None:
        ee = expected_excess(mean_k, var_k, logical_capacity)
    else:  # evaluated only where the host can have more runnable vCPUs than C (elementwise: the same values)
        mean_b, var_b, c_b, n_b = np.broadcast_arrays(np.asarray(mean_k, dtype=np.float64), np.asarray(var_k, dtype=np.float64),
                                                      np.asarray(logical_capacity, dtype=np.float64), np.asarray(n_vcpus))
        over = n_b > c_b
        ee = np.zeros(mean_b.shape)
        if over.any():
            ee[over] = expected_excess(mean_b[over], var_b[over], c_b[over])
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(mean_k > 0, ee / np.maximum(mean_k, 1e-12), 0.0)
    return 100.0 * umax * share


@FILTERS.register(
    "ready",
    description="CPU Ready of the worst VM stays below the bound in every time window (binomial/normal ready model)",
    source="modelling-guide §3.2; VMware: < 5 % ready per vCPU is healthy",
)
def f_ready(state, j: int) -> np.ndarray:
    p = state.p
    if p.u_w is None:
        return np.ones(state.n_open, dtype=bool)
    h = slice(0, state.n_open)
    u = p.u_w[:, j]
    v = float(p.vcpus[j])
    mean = state.k_mean[h] + v * u
    var = state.k_var[h] + v * u * (1.0 - u)
    umax = np.maximum(state.u_max[h], u)
    n = (state.vcpus_used[h] + v)[:, None]
    r = ready_pct_worst(mean, var, umax, p.host.logical_capacity, n)
    return (r <= p.ready_bound_pct).all(axis=1)


@FILTERS.register("anti_affinity", description="no two VMs of the same anti-affinity group on one host")
def f_anti_affinity(state, j: int) -> np.ndarray:
    p = state.p
    g = p.anti_affinity[j] if p.anti_affinity is not None else None
    if g is None or g == "":
        return np.ones(state.n_open, dtype=bool)
    return np.array([g not in s for s in state.groups[: state.n_open]], dtype=bool)


@FILTERS.register(
    "numa_fit",
    description="the VM's vCPUs fit one socket's logical CPUs and its memory one socket's memory",
    source="modelling-guide §3.3: VMs wider than a NUMA node pay remote-memory and co-stop penalties",
)
def f_numa_fit(state, j: int) -> np.ndarray:
    p = state.p
    fits = p.vcpus[j] <= p.host.logical_cpus_per_socket and p.mem_bytes[j] <= p.host.mem_bytes / p.host.sockets
    return np.full(state.n_open, bool(fits))
