"""NUMA placement policies: which node each VM's vCPUs and memory live on.

* ``none``: no binding; the host scheduler spreads vCPU threads over every node (node -1 = all).
* ``manual``: the administrator's pinning (VM name -> node), as the tuned SPECvirt result did by hand.
* ``auto``: automatic node binding as a user-space balancing daemon would do it (numad-style):
  bind each VM at start to the node with the most free resources it knows of (committed vCPUs per
  logical CPU, with room for the VM's memory), then periodically compare observed node loads and
  move the VM that best halves the gap when the imbalance exceeds a threshold. It is never told
  the workloads' loads in advance.

All functions are pure: arrays in, arrays out.
"""

from __future__ import annotations

import numpy as np

from densim.placement.capacity import within

UNBOUND = -1


def place_none(n_vms: int) -> np.ndarray:
    """Every VM unbound."""
    return np.full(n_vms, UNBOUND, dtype=int)


def place_manual(names: list[str], pinning: dict[str, int], nodes: int) -> np.ndarray:
    """Node of each VM from ``pinning`` (exact VM name first, then the part before the last '-'/'.')."""
    out = np.full(len(names), UNBOUND, dtype=int)
    for i, name in enumerate(names):
        node = pinning.get(name)
        if node is None:
            for sep in ("-", "."):
                if sep in name and name.rsplit(sep, 1)[0] in pinning:
                    node = pinning[name.rsplit(sep, 1)[0]]
                    break
        if node is not None:
            if not 0 <= int(node) < nodes:
                raise ValueError(f"pinning of {name!r} to node {node}: the host has nodes 0..{nodes - 1}")
            out[i] = int(node)
    return out


def place_auto_start(vcpus: np.ndarray, memory_bytes: np.ndarray, nodes: int, logical_cpus_per_node: int,
                     memory_per_node_bytes: float, existing: np.ndarray | None = None) -> np.ndarray:
    """Bind VMs in start order: each to the node with the fewest committed vCPUs per logical CPU
    that still has room for its memory (ties: lowest index); unbound when no node has room.

    ``existing`` (same length, -1 = not yet placed) keeps VMs already running where they are.
    """
    n = len(vcpus)
    out = np.full(n, UNBOUND, dtype=int) if existing is None else existing.copy()
    committed = np.zeros(nodes)
    mem_used = np.zeros(nodes)
    for i in range(n):
        if out[i] >= 0:
            committed[out[i]] += vcpus[i]
            mem_used[out[i]] += memory_bytes[i]
    for i in range(n):  # VM start events happen one at a time (not inside a time step)
        if out[i] >= 0:
            continue
        fits = within(memory_per_node_bytes - mem_used, memory_bytes[i])
        if not fits.any():
            continue
        score = np.where(fits, committed / logical_cpus_per_node, np.inf)
        node = int(np.argmin(score))
        out[i] = node
        committed[node] += vcpus[i]
        mem_used[node] += memory_bytes[i]
    return out


def rebalance(node_of_vm: np.ndarray, observed_cycles_per_s: np.ndarray, memory_bytes: np.ndarray, nodes: int,
              node_capacity_cycles_per_s: float, memory_per_node_bytes: float, threshold: float, max_moves: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """One balancer pass from observed per-VM CPU use.

    While the busiest and idlest nodes' utilisations differ by more than ``threshold`` (and at most
    ``max_moves`` times), move the VM on the busiest node whose load is closest to half the gap,
    if the idlest node has room for its memory and the move narrows the gap.
    Returns (new node per VM, boolean mask of the VMs moved).
    """
    node = node_of_vm.copy()
    moved = np.zeros(len(node), dtype=bool)
    bound = node >= 0
    for _ in range(max_moves):
        load = np.bincount(node[bound], weights=observed_cycles_per_s[bound], minlength=nodes) / node_capacity_cycles_per_s
        mem = np.bincount(node[bound], weights=memory_bytes[bound], minlength=nodes)
        hi, lo = int(np.argmax(load)), int(np.argmin(load))
        gap = load[hi] - load[lo]
        if gap <= threshold:
            break
        cand = np.flatnonzero((node == hi) & ~moved & within(memory_per_node_bytes - mem[lo], memory_bytes))
        if cand.size == 0:
            break
        share = observed_cycles_per_s[cand] / node_capacity_cycles_per_s
        best = cand[int(np.argmin(np.abs(share - gap / 2.0)))]
        new_gap = abs(gap - 2.0 * observed_cycles_per_s[best] / node_capacity_cycles_per_s)
        if new_gap >= gap:
            break
        node[best] = lo
        moved[best] = True
    return node, moved


def pin_balanced(load: np.ndarray, memory_bytes: np.ndarray, nodes: int, memory_per_node_bytes: float) -> np.ndarray:
    """A hand-tuner's pinning: VMs in start order, each to the node with the least *known* load
    (the tuner studied the VMs' resource use beforehand) that has room for its memory.
    Prefix-consistent: the first ``k`` VMs are pinned the same whatever follows.
    """
    out = np.full(len(load), UNBOUND, dtype=int)
    node_load = np.zeros(nodes)
    node_mem = np.zeros(nodes)
    for i in range(len(load)):  # a one-off plan, not a time step
        fits = within(memory_per_node_bytes - node_mem, memory_bytes[i])
        if not fits.any():
            continue
        node = int(np.argmin(np.where(fits, node_load, np.inf)))
        out[i] = node
        node_load[node] += load[i]
        node_mem[node] += memory_bytes[i]
    return out
