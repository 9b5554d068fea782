"""Initial placement heuristics over two dimensions: vCPUs (with a vCPU:core over-commit ratio)
and configured memory (with a memory over-commit ratio).

The kernels are compiled with numba. First-fit uses a segment tree holding, per node, the largest
free vCPU and free memory below it, so finding the leftmost host with room costs O(log H) in the
usual case: 100,000 VMs place onto 10,000 hosts in a few tens of milliseconds. Best-fit and
worst-fit scan all hosts per VM (O(V H)).
"""

from __future__ import annotations

import numpy as np

from densim.placement._jit import njit


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


@njit
def _tree_find(tc, tm, size, c, m):
    """Leftmost leaf with tc >= c and tm >= m, or -1 (DFS with pruning)."""
    if tc[1] < c or tm[1] < m:
        return -1
    stack = np.empty(128, dtype=np.int64)
    top = 0
    stack[top] = 1
    top += 1
    while top > 0:
        top -= 1
        node = stack[top]
        if tc[node] < c or tm[node] < m:
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
def first_fit_kernel(order, vm_cpu, vm_mem, cpu_cap, mem_cap):
    n_h = cpu_cap.size
    size = 1
    while size < max(n_h, 1):
        size *= 2
    cpu_free = cpu_cap.copy()
    mem_free = mem_cap.copy()
    tc, tm = _tree_build(cpu_free, mem_free, size)
    out = np.full(vm_cpu.size, -1, dtype=np.int64)
    eps = 1e-9
    for k in range(order.size):
        v = order[k]
        h = _tree_find(tc, tm, size, vm_cpu[v] - eps, vm_mem[v] - eps * max(1.0, vm_mem[v]))
        if h >= 0:
            out[v] = h
            cpu_free[h] -= vm_cpu[v]
            mem_free[h] -= vm_mem[v]
            _tree_update(tc, tm, size, h, cpu_free[h], mem_free[h])
    return out


@njit
def scan_fit_kernel(order, vm_cpu, vm_mem, cpu_cap, mem_cap, best, host_type, type_ptr, type_hosts):
    """Best-fit (``best``) or worst-fit: the feasible host whose normalised free space after
    placement, (cpu_free - c)/cpu_cap + (mem_free - m)/mem_cap, is smallest (largest); ties go to
    the lowest host index.

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
    eps = 1e-9
    if order.size == 0:
        return out
    min_c = np.inf
    min_m = np.inf
    for k in range(order.size):
        min_c = min(min_c, vm_cpu[order[k]])
        min_m = min(min_m, vm_mem[order[k]])
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
            if cpu_free[h] + eps >= c and mem_free[h] + eps * max(1.0, m) >= m:
                s = (cpu_free[h] - c) / cpu_cap[h] + (mem_free[h] - m) / mem_cap[h]
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
        open_ = cpu_free[chosen] + eps >= min_c and mem_free[chosen] + eps * max(1.0, min_m) >= min_m
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
