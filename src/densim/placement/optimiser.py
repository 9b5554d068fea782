"""Exact or time-limited placement with OR-Tools CP-SAT, reporting the gap to the lower bound.

Multi-dimensional bin packing on identical hosts: VM ``j`` has integer sizes ``s[j, d]`` in each
dimension ``d`` (vCPUs, MiB, CPU demand per time window ...), a host has capacities ``cap[d]``.

    x[j, h] in {0, 1}   VM j on host h        y[h] in {0, 1}   host h used
    sum_h x[j, h] = 1                     every VM placed once
    sum_j s[j, d] x[j, h] <= cap[d] y[h]  capacity in every dimension
    x[j, h] + x[k, h] <= 1                anti-affinity pairs
    y[h] >= y[h + 1];  x[j, h] = 0 for h > j (VMs sorted by size)   symmetry breaking
    minimise sum_h y[h]

When many VMs share a size (real inventories: a handful of standard flavours), the model counts
VMs per size type and host instead, ``n[t, h] in 0..count_t`` with the same capacity rows, which is
far smaller and drops the symmetry between identical VMs.

The host count of a warm start (first-fit decreasing, or any placement passed in) bounds ``h`` and
is given to the solver as a hint, so the answer is never worse than it. The solver stops at
``max_deterministic_time`` (reproducible) and reports ``best bound`` and the gap; the bound is at
least :func:`volume_lower_bound`. CP-SAT needs integer sizes: callers scale (vCPUs x 1, MiB, MHz).
Source: OR-Tools CP-SAT (Perron & Didier, Google); see ../shared/reference/ecosystem.md §2.2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from densim.placement.capacity import fits_rows


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
        fits = fits_rows(cap - load, sizes[j])
        if anti is not None and anti[j]:
            fits &= np.array([anti[j] not in g for g in groups], dtype=bool)
        hs = np.flatnonzero(fits)
        if hs.size:
            h = int(hs[0])
        else:
            if not fits_rows(cap, sizes[j]):
                raise ValueError(f"item {j} does not fit an empty host")
            load = np.vstack([load, np.zeros(d)])
            groups.append(set())
            h = load.shape[0] - 1
        load[h] += sizes[j]
        if anti is not None and anti[j]:
            groups[h].add(anti[j])
        host_of[j] = h
    return host_of


def foundation_ffd(sizes: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """The foundation's first-fit-decreasing (``densim.placement`` "first-fit-decreasing") on
    (vCPU-like, memory-like) sizes with identical hosts; host numbers compacted to 0..k-1."""
    from densim.placement import place

    n = sizes.shape[0]
    raw = place("first-fit-decreasing", sizes[:, 0], sizes[:, 1], np.full(n, float(cap[0])), np.full(n, float(cap[1])))
    if (raw < 0).any():
        return raw
    _, compact = np.unique(raw, return_inverse=True)
    return compact.astype(np.int64)


def optimise(
    sizes: np.ndarray,
    cap: np.ndarray,
    *,
    anti_affinity: np.ndarray | None = None,
    warm_start: np.ndarray | None = None,
    max_deterministic_time: float = 10.0,
    max_time_s: float = 30.0,
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
    if warm_start is None:
        start = ffd_vector(sizes, cap, anti_affinity)
        if d == 2 and anti_affinity is None and n:
            alt = foundation_ffd(sizes, cap)
            if (alt >= 0).all() and alt.max() < start.max():
                start = alt
    else:
        start = np.asarray(warm_start, dtype=np.int64)
        _, start = np.unique(start, return_inverse=True)  # compact host numbers 0..k-1
        load = np.zeros((int(start.max()) + 1 if n else 0, d))
        np.add.at(load, start, sizes)
        if (load > cap[None, :]).any():  # an invalid warm start is replaced by first-fit decreasing
            start = ffd_vector(sizes, cap, anti_affinity)
    n_start = int(start.max()) + 1 if n else 0
    lb0 = volume_lower_bound(sizes, cap)
    if n == 0 or n_start <= lb0:
        return OptResult(start, n_start, n_start, "OPTIMAL", 0.0, n_start, time.perf_counter() - t_start)

    labels = None if anti_affinity is None else np.asarray(anti_affinity, dtype=object)
    # VMs of identical size (and no anti-affinity group) are interchangeable: model counts per size
    # "type" when that shrinks the model, else one Boolean per VM and host
    key = [tuple(row) + ((labels[j], j) if labels is not None and labels[j] else ()) for j, row in enumerate(sizes.tolist())]
    types: dict[tuple, list[int]] = {}
    for j, k in enumerate(key):
        types.setdefault(k, []).append(j)
    hs = n_start
    m = cp_model.CpModel()
    y = [m.NewBoolVar(f"y{h}") for h in range(hs)]
    for h in range(hs - 1):
        m.AddImplication(y[h + 1], y[h])
    hint: dict = {}
    if len(types) <= n // 2:
        kind = "types"
        tlist = list(types.values())
        ts = np.array([sizes[v[0]] for v in tlist])
        cnt = [len(v) for v in tlist]
        nv = {}
        for t in range(len(tlist)):
            per_host = int(min(cnt[t], np.min(np.where(ts[t] > 0, cap // np.maximum(ts[t], 1), cnt[t]))))
            for h in range(hs):
                nv[t, h] = m.NewIntVar(0, per_host, f"n{t}_{h}")
                m.Add(nv[t, h] <= per_host * y[h])
            m.Add(sum(nv[t, h] for h in range(hs)) == cnt[t])
        for h in range(hs):
            for dd in range(d):
                m.Add(sum(int(ts[t, dd]) * nv[t, h] for t in range(len(tlist)) if ts[t, dd] > 0) <= int(cap[dd]) * y[h])
        if labels is not None:
            groups: dict[str, list[int]] = {}
            for t, members in enumerate(tlist):
                g = labels[members[0]]
                if g:
                    groups.setdefault(g, []).append(t)
            for ts_g in groups.values():
                if len(ts_g) > 1:
                    for h in range(hs):
                        m.Add(sum(nv[t, h] for t in ts_g) <= 1)
        for t, members in enumerate(tlist):
            for h in range(hs):
                hint[nv[t, h]] = int(np.sum(start[members] == h))
    else:
        kind = "vms"
        # sort VMs by size so "VM j only on hosts <= j" breaks symmetry
        order = np.argsort(-(sizes / np.maximum(cap, 1)).max(axis=1), kind="stable")
        s = sizes[order]
        x = {}
        for jj in range(n):
            for h in range(min(hs, jj + 1)):
                x[jj, h] = m.NewBoolVar(f"x{jj}_{h}")
        for jj in range(n):
            m.AddExactlyOne(x[jj, h] for h in range(min(hs, jj + 1)))
        for h in range(hs):
            members = list(range(h, n))
            for dd in range(d):
                nz = [(jj, int(s[jj, dd])) for jj in members if s[jj, dd] > 0]
                if nz:
                    m.Add(sum(c * x[jj, h] for jj, c in nz) <= int(cap[dd]) * y[h])
            for jj in members:
                m.AddImplication(x[jj, h], y[h])
        if labels is not None:
            lab = labels[order]
            by_group: dict[str, list[int]] = {}
            for jj, g in enumerate(lab):
                if g:
                    by_group.setdefault(g, []).append(jj)
            for members in by_group.values():
                if len(members) > 1:
                    for h in range(hs):
                        m.AddAtMostOne(x[jj, h] for jj in members if (jj, h) in x)
        # the warm start relabelled by first appearance respects "host <= j"
        relabel: dict[int, int] = {}
        for jj in range(n):
            old = int(start[order[jj]])
            if old not in relabel:
                relabel[old] = len(relabel)
            for h in range(min(hs, jj + 1)):
                hint[x[jj, h]] = int(relabel[old] == h)
    for h in range(hs):
        hint[y[h]] = int(h < n_start)
    for var, val in hint.items():
        m.AddHint(var, val)
    m.Add(sum(y) >= lb0)
    m.Minimize(sum(y))
    solver = cp_model.CpSolver()
    solver.parameters.max_deterministic_time = float(max_deterministic_time)
    solver.parameters.max_time_in_seconds = float(max_time_s)
    solver.parameters.num_workers = int(workers)
    solver.parameters.random_seed = int(seed)
    # the x[j, h] model is large and loose: deep presolve probing can eat the whole budget before the
    # search starts, so keep presolve light and let the search (seeded with the hint) work
    solver.parameters.cp_model_probing_level = 0
    solver.parameters.symmetry_level = 0
    solver.parameters.max_presolve_iterations = 1
    st = solver.Solve(m)
    bound = max(lb0, int(np.ceil(solver.BestObjectiveBound() - 1e-9))) if st in (cp_model.OPTIMAL, cp_model.FEASIBLE) else lb0
    if st in (cp_model.OPTIMAL, cp_model.FEASIBLE) and int(round(solver.ObjectiveValue())) <= n_start:
        raw = np.empty(n, dtype=np.int64)
        if kind == "types":
            for t, members in enumerate(tlist):
                pos = 0
                for h in range(hs):
                    k = int(solver.Value(nv[t, h]))
                    raw[members[pos:pos + k]] = h
                    pos += k
        else:
            raw[order] = [next(h for h in range(min(hs, jj + 1)) if solver.Value(x[jj, h])) for jj in range(n)]
        used = np.unique(raw)
        remap = np.full(hs, -1, dtype=np.int64)
        remap[used] = np.arange(used.size)
        host_of = remap[raw]
        n_hosts = int(used.size)
        status = "OPTIMAL" if st == cp_model.OPTIMAL else "FEASIBLE"
    else:
        host_of, n_hosts, status = start, n_start, "WARM_START"
    if st == cp_model.OPTIMAL:
        bound = n_hosts
    bound = min(bound, n_hosts)
    gap = (n_hosts - bound) / n_hosts if n_hosts else 0.0
    return OptResult(host_of, n_hosts, bound, status, gap, n_start, time.perf_counter() - t_start)
