"""Exact or time-limited placement with OR-Tools CP-SAT, reporting the gap to the lower bound.

Multi-dimensional bin packing on identical hosts: VM ``j`` has integer sizes ``s[j, d]`` in each
dimension ``d`` (vCPUs, MiB, CPU demand per time window ...), a host has capacities ``cap[d]``.

    x[j, h] in {0, 1}   VM j on host h        y[h] in {0, 1}   host h used
    sum_h x[j, h] = 1                     every VM placed once
    sum_j s[j, d] x[j, h] <= cap[d] y[h]  capacity in every dimension
    x[j, h] + x[k, h] <= 1                anti-affinity pairs
    y[h] >= y[h + 1];  x[j, h] = 0 for h > j (VMs sorted by size)   symmetry breaking
    minimise sum_h y[h]

The host count of a warm start (first-fit decreasing, or any placement passed in) bounds ``h`` and
is given to the solver as a hint, so the answer is never worse than it. The solver stops at
``max_deterministic_time`` (reproducible) and reports ``best bound`` and the gap; the bound is at
least :func:`volume_lower_bound`. CP-SAT needs integer sizes: callers scale (vCPUs x 1, MiB, MHz).
Source: OR-Tools CP-SAT (Perron & Didier, Google); see ../shared/reference/ecosystem.md §2.2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class OptResult:
    host_of_vm: np.ndarray
    n_hosts: int
    lower_bound: int  # best proven bound on the host count
    status: str  # OPTIMAL, FEASIBLE (time limit hit), or WARM_START (solver found nothing better)
    gap: float  # (n_hosts - lower_bound) / n_hosts
    warm_start_hosts: int
    wall_s: float

    @property
    def optimal(self) -> bool:
        return self.n_hosts == self.lower_bound


def volume_lower_bound(sizes: np.ndarray, cap: np.ndarray) -> int:
    """max over dimensions of ceil(sum / capacity), and the count of items over half a host in one dimension."""
    sizes = np.asarray(sizes, dtype=np.float64)
    cap = np.asarray(cap, dtype=np.float64)
    if sizes.shape[0] == 0:
        return 0
    lb = int(np.ceil((sizes.sum(axis=0) / cap).max() - 1e-9))
    big = int((sizes > cap[None, :] / 2).any(axis=1).sum()) if sizes.shape[1] == 1 else int((sizes > cap[None, :] / 2).sum(axis=0).max())
    return max(lb, big, 1)


def ffd_vector(sizes: np.ndarray, cap: np.ndarray, anti: np.ndarray | None = None) -> np.ndarray:
    """First-fit decreasing for vectors (sort key: the largest share of a host over dimensions)."""
    sizes = np.asarray(sizes, dtype=np.float64)
    cap = np.asarray(cap, dtype=np.float64)
    n, d = sizes.shape
    order = np.argsort(-(sizes / cap).max(axis=1), kind="stable")
    load = np.zeros((0, d))
    groups: list[set] = []
    host_of = np.full(n, -1, dtype=np.int64)
    for j in order:
        fits = (load + sizes[j] <= cap + 1e-9).all(axis=1)
        if anti is not None and anti[j]:
            fits &= np.array([anti[j] not in g for g in groups], dtype=bool)
        hs = np.flatnonzero(fits)
        if hs.size:
            h = int(hs[0])
        else:
            if (sizes[j] > cap + 1e-9).any():
                raise ValueError(f"item {j} does not fit an empty host")
            load = np.vstack([load, np.zeros(d)])
            groups.append(set())
            h = load.shape[0] - 1
        load[h] += sizes[j]
        if anti is not None and anti[j]:
            groups[h].add(anti[j])
        host_of[j] = h
    return host_of


def optimise(
    sizes: np.ndarray,
    cap: np.ndarray,
    *,
    anti_affinity: np.ndarray | None = None,
    warm_start: np.ndarray | None = None,
    max_deterministic_time: float = 10.0,
    max_time_s: float = 60.0,
    workers: int = 1,
    seed: int = 0,
) -> OptResult:
    """Minimise hosts for integer ``sizes`` (N x D) and capacities ``cap`` (D,) with CP-SAT."""
    import time

    from ortools.sat.python import cp_model

    t_start = time.perf_counter()
    sizes = np.asarray(np.rint(sizes), dtype=np.int64)
    cap = np.asarray(np.floor(cap), dtype=np.int64)
    n, d = sizes.shape
    if (sizes > cap[None, :]).any():
        j = int(np.flatnonzero((sizes > cap[None, :]).any(axis=1))[0])
        raise ValueError(f"VM {j} does not fit an empty host (sizes {sizes[j].tolist()} > capacity {cap.tolist()})")
    start = ffd_vector(sizes, cap, anti_affinity) if warm_start is None else np.asarray(warm_start, dtype=np.int64)
    n_start = int(start.max()) + 1 if n else 0
    lb0 = volume_lower_bound(sizes, cap)
    if n == 0 or n_start <= lb0:
        return OptResult(start, n_start, n_start, "OPTIMAL", 0.0, n_start, time.perf_counter() - t_start)

    # sort VMs by size so "VM j only on hosts <= j" breaks symmetry; renumber the warm start to match
    order = np.argsort(-(sizes / np.maximum(cap, 1)).max(axis=1), kind="stable")
    s = sizes[order]
    hs = n_start
    m = cp_model.CpModel()
    x = {}
    for jj in range(n):
        for h in range(min(hs, jj + 1)):
            x[jj, h] = m.NewBoolVar(f"x{jj}_{h}")
    y = [m.NewBoolVar(f"y{h}") for h in range(hs)]
    for jj in range(n):
        m.AddExactlyOne(x[jj, h] for h in range(min(hs, jj + 1)))
    for h in range(hs):
        members = [jj for jj in range(h, n)]
        for dd in range(d):
            coeffs = s[members, dd]
            nz = [(jj, int(c)) for jj, c in zip(members, coeffs) if c > 0]
            if nz:
                m.Add(sum(c * x[jj, h] for jj, c in nz) <= int(cap[dd]) * y[h])
        for jj in members:
            m.AddImplication(x[jj, h], y[h])
        if h + 1 < hs:
            m.AddImplication(y[h + 1], y[h])
    if anti_affinity is not None:
        labels = np.asarray(anti_affinity, dtype=object)[order]
        by_group: dict[str, list[int]] = {}
        for jj, g in enumerate(labels):
            if g:
                by_group.setdefault(g, []).append(jj)
        for members in by_group.values():
            if len(members) > 1:
                for h in range(hs):
                    m.AddAtMostOne(x[jj, h] for jj in members if (jj, h) in x)
    m.Add(sum(y) >= lb0)
    m.Minimize(sum(y))
    # hint: the warm start relabelled so that host numbers respect the symmetry breaking
    relabel: dict[int, int] = {}
    hint_host = np.empty(n, dtype=np.int64)
    for jj in range(n):
        old = int(start[order[jj]])
        if old not in relabel:
            relabel[old] = len(relabel)
        hint_host[jj] = relabel[old]
    if all(hint_host[jj] <= jj for jj in range(n)):
        for (jj, h), var in x.items():
            m.AddHint(var, int(hint_host[jj] == h))
        for h in range(hs):
            m.AddHint(y[h], int(h < n_start))
    solver = cp_model.CpSolver()
    solver.parameters.max_deterministic_time = float(max_deterministic_time)
    solver.parameters.max_time_in_seconds = float(max_time_s)
    solver.parameters.num_workers = int(workers)
    solver.parameters.random_seed = int(seed)
    st = solver.Solve(m)
    bound = max(lb0, int(np.ceil(solver.BestObjectiveBound() - 1e-9))) if st in (cp_model.OPTIMAL, cp_model.FEASIBLE) else lb0
    if st in (cp_model.OPTIMAL, cp_model.FEASIBLE) and int(round(solver.ObjectiveValue())) <= n_start:
        host_sorted = np.array([next(h for h in range(min(hs, jj + 1)) if solver.Value(x[jj, h])) for jj in range(n)])
        # compact host numbers
        used = np.unique(host_sorted)
        remap = {int(h): i for i, h in enumerate(used)}
        host_of = np.empty(n, dtype=np.int64)
        host_of[order] = [remap[int(h)] for h in host_sorted]
        n_hosts = int(used.size)
        status = "OPTIMAL" if st == cp_model.OPTIMAL else "FEASIBLE"
    else:
        host_of, n_hosts, status = start, n_start, "WARM_START"
    if st == cp_model.OPTIMAL:
        bound = n_hosts
    bound = min(bound, n_hosts)
    gap = (n_hosts - bound) / n_hosts if n_hosts else 0.0
    return OptResult(host_of, n_hosts, bound, status, gap, n_start, time.perf_counter() - t_start)
