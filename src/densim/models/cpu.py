"""CPU contention: delivered CPU under fair sharing, and CPU Ready (modelling guide §3.1-3.2).

Per host and step, with ``C`` the host's throughput in core-equivalents (cores x SMT gain) and
``N`` its vCPUs, the runnable vCPUs ``K`` have mean ``mu = demand / core MHz``. Contention models
give the expected number of runnable vCPUs that find no logical CPU, ``E[(K - C)^+]``; times the
step length that is ready time in vCPU-seconds. Delivered CPU is max-min fair among the VMs of an
overloaded host (equal shares, as a proportional-share scheduler with equal shares gives).
"""

from __future__ import annotations

import numpy as np

from densim.models.queueing import expected_excess
from densim.registry import Registry

CPU_CONTENTION: Registry = Registry("cpu-contention", default="binomial")


@CPU_CONTENTION.register("none", description="no ready time at all (do-nothing model)")
def ready_none(mean_runnable, n_vcpus, capacity_cores, burstiness=1.0, variance=None):
    return np.zeros_like(np.asarray(mean_runnable, dtype=np.float64))


@CPU_CONTENTION.register(
    "fluid", description="ready only from deterministic overload: max(mu - C, 0)", source="fluid limit of §3.2"
)
def ready_fluid(mean_runnable, n_vcpus, capacity_cores, burstiness=1.0, variance=None):
    return np.maximum(np.asarray(mean_runnable, dtype=np.float64) - capacity_cores, 0.0)


@CPU_CONTENTION.register(
    "binomial",
    description="independent vCPUs, each runnable with its VM's utilisation u_j: E[(K-C)^+], K a sum of Bernoulli "
                "variables (mean sum v_j u_j, variance sum v_j u_j (1 - u_j)), normal approximation, variance x burstiness",
    source="modelling guide §3.2 (binomial occupancy); Kingman (1961) burstiness factor",
)
def ready_binomial(mean_runnable, n_vcpus, capacity_cores, burstiness=1.0, variance=None):
    """``E[(K - C)^+]`` per host-step. ``variance``: ``sum_j v_j u_j (1 - u_j)`` over each host's VMs (what the
    engine passes); None: the pooled ``N p (1 - p)`` with ``p = mu / N``, equal to it when every vCPU is
    equally busy and larger otherwise (a sum of Bernoulli variables with unequal ``p`` varies less than a
    binomial of their mean)."""
    mu_all = np.asarray(mean_runnable, dtype=np.float64)
    n_all = np.broadcast_to(np.asarray(n_vcpus, dtype=np.float64), mu_all.shape)
    c_all = np.broadcast_to(np.asarray(capacity_cores, dtype=np.float64), mu_all.shape)
    out = np.zeros(mu_all.shape)
    # K can never exceed N: with N <= C nothing ever waits; only evaluate where waiting is possible
    live = n_all > c_all
    if not live.any():
        return out
    mu = np.minimum(mu_all[live], n_all[live])
    n = n_all[live]
    c = c_all[live]
    if variance is None:
        p = np.divide(mu, n, out=np.zeros_like(mu), where=n > 0)
        var = burstiness * n * p * (1.0 - p)
    else:
        var = burstiness * np.broadcast_to(np.asarray(variance, dtype=np.float64), mu_all.shape)[live]
    out[live] = expected_excess(mu, var, c)
    return out


def maxmin_share(demand: np.ndarray, capacity: float | np.ndarray) -> np.ndarray:
    """Max-min fair allocation of ``capacity`` among rows' demands (last axis = claimants).

    ``demand`` (G, k) padded with zeros; returns allocations with sum <= capacity and each <= demand:
    ``min(demand, maxmin_level(demand, capacity))``.
    """
    d = np.asarray(demand, dtype=np.float64)
    return np.minimum(d, maxmin_level(d, capacity)[..., None])


def maxmin_level(demand: np.ndarray, capacity: float | np.ndarray) -> np.ndarray:
    """The water-filling level of each row: claimants get ``min(demand, level)`` and the row's allocations sum to
    ``capacity``; ``inf`` where the demands fit (nobody is capped). Sort, then find the level where the remaining
    capacity is split equally among the claimants not yet served. Also a host's one GPU power limit under a budget
    (:func:`densim.models.gpu_power.shared_limit_w`)."""
    d = np.asarray(demand, dtype=np.float64)
    cap = np.broadcast_to(np.asarray(capacity, dtype=np.float64), d.shape[:-1])
    s = np.sort(d, axis=-1)
    k = s.shape[-1]
    csum = np.cumsum(s, axis=-1)
    before = csum - s  # sum of smaller demands
    remaining_slots = k - np.arange(k)
    level_at = (cap[..., None] - before) / remaining_slots  # level if claimant i is the first capped
    capped = level_at < s  # claimant i cannot be fully served
    first = np.where(capped.any(axis=-1), np.argmax(capped, axis=-1), k)
    idx = np.minimum(first, k - 1)
    level = np.take_along_axis(level_at, idx[..., None], axis=-1)[..., 0]
    return np.where(first < k, level, np.inf)
