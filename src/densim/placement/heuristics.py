"""Initial placement heuristics over two dimensions: vCPUs (with a vCPU:core over-commit ratio)
and configured memory (with a memory over-commit ratio).

The kernels are compiled with numba. First-fit uses a segment tree holding, per node, the largest
free vCPU and free memory below it, so finding the leftmost host with room costs O(log H) in the
usual case: 100,000 VMs place onto 10,000 hosts in a few tens of milliseconds. Best-fit scans only
the partly filled hosts plus one empty host per host type; worst-fit keeps one max-tree per host
type (branch and bound for the feasible host with the most free space). Hosts that cannot take the
smallest VM leave the trees, and a VM at least as large as one that fit nowhere is not searched for
(free capacity only shrinks). benchmarks/placement_bench.py measures all four at 100k -> 10k.
"""

from __future__ import annotations

import numpy as np

from densim._jit import njit
from densim.placement.capacity import fits


@njit
def _tree_build(cpu_free, mem_free, size):
    tc = np.full(2 * size, -1.0)
    tm = np.full(2 * size, -1.0)
    for i in range(cpu_free.size):
        tc[size + i] = cpu_free[i]
        tm[size + i] = mem_free[i]
    for i in range(size - 1, 0, -1):
        tc[i] = max(tc[2 * i], tc[2 * i + 1])
        tm[i] = max(tm[2 * i], tm[2 * i + 1])
    return tc, tm


@njit(inline="always")
def _tree_find_in(tc, tm, size, c, m, stack):
    """Leftmost leaf where a VM of ``c`` vCPUs and ``m`` bytes :func:`~densim.placement.capacity.fits`
    (tc, tm: the largest free vCPUs and memory below each node), or -1 (DFS with pruning; ``stack``:
    scratch of at least 2 x the tree's depth + 1 slots, so a caller per event allocates nothing)."""
    if not fits(tc[1], tm[1], c, m):
        return -1
    top = 0
    stack[top] = 1
    top += 1
    while top > 0:
        top -= 1
        node = stack[top]
        if not fits(tc[node], tm[node], c, m):
            continue
        if node >= size:
            return node - size
        # push right first so left is explored first
        stack[top] = 2 * node + 1
        top += 1
        stack[top] = 2 * node
        top += 1
    return -1


@njit
def _tree_find(tc, tm, size, c, m):
    """:func:`_tree_find_in` with its own scratch stack."""
    return _tree_find_in(tc, tm, size, c, m, np.empty(128, dtype=np.int64))


@njit(inline="always")
def _tree_update(tc, tm, size, leaf, cval, mval):
    i = size + leaf
    tc[i] = cval
    tm[i] = mval
    i //= 2
    while i >= 1:
        tc[i] = max(tc[2 * i], tc[2 * i + 1])
        tm[i] = max(tm[2 * i], tm[2 * i + 1])
        i //= 2


@njit
def _smallest(order, vm_cpu, vm_mem):
    """The smallest vCPU count and memory among the VMs to place (hosts below either are full)."""
    min_c = np.inf
    min_m = np.inf
    for k in range(order.size):
        min_c = min(min_c, vm_cpu[order[k]])
        min_m = min(min_m, vm_mem[order[k]])
    return min_c, min_m


@njit
def _known_misfit(fail_c, fail_m, n_fail, c, m):
    """True if a VM at least as large as one that already fit nowhere is asked for: free capacity
    only shrinks, so it cannot fit either (saves a fruitless search of the whole tree)."""
    for i in range(n_fail):
        if c >= fail_c[i] and m >= fail_m[i]:
            return True
    return False


@njit
def _remember_misfit(fail_c, fail_m, n_fail, c, m):
    if n_fail < fail_c.size:
        fail_c[n_fail] = c
        fail_m[n_fail] = m
        return n_fail + 1
    return n_fail


@njit
def first_fit_kernel(order, vm_cpu, vm_mem, cpu_cap, mem_cap):
    n_h = cpu_cap.size
    size = 1
    while size < max(n_h, 1):
        size *= 2
    cpu_free = cpu_cap.copy()
    mem_free = mem_cap.copy()
    tc, tm = _tree_build(cpu_free, mem_free, size)
    out = np.full(vm_cpu.size, -1, dtype=np.int64)
    fail_c, fail_m = np.empty(512), np.empty(512)  # VMs that fit nowhere (at most 512 remembered)
    n_fail = 0
    min_c, min_m = _smallest(order, vm_cpu, vm_mem)
    for k in range(order.size):
        v = order[k]
        if _known_misfit(fail_c, fail_m, n_fail, vm_cpu[v], vm_mem[v]):
            continue
        h = _tree_find(tc, tm, size, vm_cpu[v], vm_mem[v])
        if h < 0:
            n_fail = _remember_misfit(fail_c, fail_m, n_fail, vm_cpu[v], vm_mem[v])
        if h >= 0:
            out[v] = h
            cpu_free[h] -= vm_cpu[v]
            mem_free[h] -= vm_mem[v]
            if not fits(cpu_free[h], mem_free[h], min_c, min_m):
                # full for every VM: out of the tree, so its spare capacity in the other dimension
                # no longer lures searches into subtrees where nothing fits
                _tree_update(tc, tm, size, h, -1.0, -1.0)
            else:
                _tree_update(tc, tm, size, h, cpu_free[h], mem_free[h])
    return out


@njit
def scan_fit_kernel(order, vm_cpu, vm_mem, cpu_cap, mem_cap, best, host_type, type_ptr, type_hosts):
    """Best-fit (``best``) or worst-fit: the feasible host whose normalised free space after
    placement, (cpu_free/cpu_cap + mem_free/mem_cap) - (c/cpu_cap + m/mem_cap), is smallest
    (largest); ties go to the lowest host index.

    Only hosts that can still matter are scanned: the partly filled hosts that have room for the
    smallest VM, plus one representative per host type (same CPU and memory capacity) of the
    untouched hosts, its lowest-index empty host (all empty hosts of a type score alike, and they
    are used in index order). A host that cannot take the smallest VM leaves the scan for good.
    Best-fit keeps few hosts partly filled, so it costs O(VMs x (open hosts + types)) instead of
    O(VMs x hosts); worst-fit opens every host and stays O(VMs x hosts).
    ``type_hosts[type_ptr[t]:type_ptr[t + 1]]`` are the hosts of type ``t`` in ascending order.
    """
    n_h = cpu_cap.size
    n_types = type_ptr.size - 1
    cpu_free = cpu_cap.copy()
    mem_free = mem_cap.copy()
    out = np.full(vm_cpu.size, -1, dtype=np.int64)
    if order.size == 0:
        return out
    min_c, min_m = _smallest(order, vm_cpu, vm_mem)
    partial = np.empty(n_h, dtype=np.int64)
    pos = np.full(n_h, -1, dtype=np.int64)
    n_partial = 0
    next_empty = type_ptr[:-1].copy()
    for k in range(order.size):
        v = order[k]
        c = vm_cpu[v]
        m = vm_mem[v]
        chosen = -1
        score_best = 0.0
        for i in range(n_partial + n_types):
            if i < n_partial:
                h = partial[i]
            else:
                t = i - n_partial
                if next_empty[t] >= type_ptr[t + 1]:
                    continue
                h = type_hosts[next_empty[t]]
            if fits(cpu_free[h], mem_free[h], c, m):
                s = (cpu_free[h] / cpu_cap[h] + mem_free[h] / mem_cap[h]) - (c / cpu_cap[h] + m / mem_cap[h])
                if chosen < 0 or (best and s < score_best) or ((not best) and s > score_best) or (s == score_best and h < chosen):
                    chosen = h
                    score_best = s
        if chosen < 0:
            continue
        out[v] = chosen
        cpu_free[chosen] -= c
        mem_free[chosen] -= m
        if pos[chosen] < 0:  # an empty host: the next one of its type becomes the representative
            next_empty[host_type[chosen]] += 1
        open_ = fits(cpu_free[chosen], mem_free[chosen], min_c, min_m)
        if pos[chosen] < 0 and open_:
            pos[chosen] = n_partial
            partial[n_partial] = chosen
            n_partial += 1
        elif pos[chosen] >= 0 and not open_:  # full for every VM: swap-remove from the scan
            i = pos[chosen]
            last = partial[n_partial - 1]
            partial[i] = last
            pos[last] = i
            n_partial -= 1
            pos[chosen] = -2
        elif pos[chosen] < 0:
            pos[chosen] = -2  # filled in one go: neither empty nor open
    return out


@njit
def _wf_query(ts, tc, tm, off, size, c, m, stack):
    """Leftmost leaf of one host type's tree with the largest free-space sum ``ts`` among leaves
    where the VM :func:`~densim.placement.capacity.fits` (branch and bound; -1 if none).
    ``stack``: scratch, >= 128."""
    best_i = -1
    best_s = -np.inf
    top = 0
    stack[top] = 1
    top += 1
    while top > 0:
        top -= 1
        node = stack[top]
        k = off + node
        if ts[k] < best_s or not fits(tc[k], tm[k], c, m):
            continue
        # the first leaf below ``node``: a tie cannot beat a leaf further left
        first = node
        while first < size:
            first *= 2
        if ts[k] == best_s and first - size > best_i:
            continue
        if node >= size:
            best_s = ts[k]
            best_i = node - size
            continue
        left = 2 * node
        right = left + 1
        # visit the child with the larger bound first; on equal bounds the left one
        if ts[off + right] > ts[off + left]:
            stack[top] = left
            top += 1
            stack[top] = right
            top += 1
        else:
            stack[top] = right
            top += 1
            stack[top] = left
            top += 1
    return best_i


@njit
def _wf_set(ts, tc, tm, off, size, i, sval, cval, mval):
    j = size + i
    ts[off + j] = sval
    tc[off + j] = cval
    tm[off + j] = mval
    j //= 2
    while j >= 1:
        a = off + 2 * j
        ts[off + j] = max(ts[a], ts[a + 1])
        tc[off + j] = max(tc[a], tc[a + 1])
        tm[off + j] = max(tm[a], tm[a + 1])
        j //= 2


@njit
def worst_fit_kernel(order, vm_cpu, vm_mem, cpu_cap, mem_cap, host_type, type_ptr, type_hosts):
    """Worst-fit with one max-tree per host type: same answer as :func:`scan_fit_kernel` with
    ``best=False`` in O(log hosts) per VM in the usual case instead of O(hosts).

    Within a type the score (cpu_free/cpu_cap + mem_free/mem_cap) - (c/cpu_cap + m/mem_cap) is the
    free-space sum minus a constant, so the best host of the type is the feasible one with the
    largest sum (leftmost on ties); the types' winners are then compared by score.
    """
    n_types = type_ptr.size - 1
    out = np.full(vm_cpu.size, -1, dtype=np.int64)
    sizes = np.empty(n_types, dtype=np.int64)
    offs = np.empty(n_types, dtype=np.int64)
    total = 0
    for t in range(n_types):
        n_t = type_ptr[t + 1] - type_ptr[t]
        size = 1
        while size < max(n_t, 1):
            size *= 2
        sizes[t] = size
        offs[t] = total
        total += 2 * size
    ts = np.full(total, -np.inf)
    tc = np.full(total, -np.inf)
    tm = np.full(total, -np.inf)
    cpu_free = cpu_cap.copy()
    mem_free = mem_cap.copy()
    for t in range(n_types):
        for i in range(type_ptr[t + 1] - type_ptr[t]):
            h = type_hosts[type_ptr[t] + i]
            _wf_set(ts, tc, tm, offs[t], sizes[t], i, cpu_free[h] / cpu_cap[h] + mem_free[h] / mem_cap[h], cpu_free[h], mem_free[h])
    fail_c, fail_m = np.empty(512), np.empty(512)  # VMs that fit nowhere (at most 512 remembered)
    n_fail = 0
    min_c, min_m = _smallest(order, vm_cpu, vm_mem)
    stack = np.empty(128, dtype=np.int64)
    for k in range(order.size):
        v = order[k]
        c = vm_cpu[v]
        m = vm_mem[v]
        if _known_misfit(fail_c, fail_m, n_fail, c, m):
            continue
        chosen = -1
        chosen_t = -1
        chosen_i = -1
        score_best = 0.0
        for t in range(n_types):
            if type_ptr[t + 1] == type_ptr[t]:
                continue
            h0 = type_hosts[type_ptr[t]]  # every host of the type has the same capacities
            # bound: the type's largest free-space sum (its tree root) scored as its best host would be;
            # the score is monotone in the sum, so a type whose bound is below the best so far cannot win
            root = offs[t] + 1
            if chosen >= 0 and ts[root] - (c / cpu_cap[h0] + m / mem_cap[h0]) < score_best:
                continue
            i = _wf_query(ts, tc, tm, offs[t], sizes[t], c, m, stack)
            if i < 0:
                continue
            h = type_hosts[type_ptr[t] + i]
            s = (cpu_free[h] / cpu_cap[h] + mem_free[h] / mem_cap[h]) - (c / cpu_cap[h] + m / mem_cap[h])
            if chosen < 0 or s > score_best or (s == score_best and h < chosen):
                chosen = h
                chosen_t = t
                chosen_i = i
                score_best = s
        if chosen < 0:
            n_fail = _remember_misfit(fail_c, fail_m, n_fail, c, m)
            continue
        out[v] = chosen
        cpu_free[chosen] -= c
        mem_free[chosen] -= m
        if not fits(cpu_free[chosen], mem_free[chosen], min_c, min_m):
            _wf_set(ts, tc, tm, offs[chosen_t], sizes[chosen_t], chosen_i, -np.inf, -np.inf, -np.inf)  # full for every VM
        else:
            _wf_set(ts, tc, tm, offs[chosen_t], sizes[chosen_t], chosen_i,
                    cpu_free[chosen] / cpu_cap[chosen] + mem_free[chosen] / mem_cap[chosen], cpu_free[chosen], mem_free[chosen])
    return out


def host_types(cpu_cap: np.ndarray, mem_cap: np.ndarray):
    """``(type per host, CSR pointer, hosts by type in ascending order)`` for hosts of equal capacities."""
    keys = np.stack([np.asarray(cpu_cap, np.float64), np.asarray(mem_cap, np.float64)], axis=1)
    if keys.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros(0, np.int64)
    _, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1).astype(np.int64)
    order = np.argsort(inv, kind="stable").astype(np.int64)
    ptr = np.concatenate([[0], np.cumsum(np.bincount(inv))]).astype(np.int64)
    return inv, ptr, order


def decreasing_order(vm_cpu: np.ndarray, vm_mem: np.ndarray, cpu_cap: np.ndarray, mem_cap: np.ndarray) -> np.ndarray:
    """VMs by decreasing size, size = max of the VM's share of a mean host in each dimension."""
    size = np.maximum(vm_cpu / max(float(cpu_cap.mean()), 1e-12), vm_mem / max(float(mem_cap.mean()), 1e-12))
    return np.argsort(-size, kind="stable").astype(np.int64)
