"""The memory check's answer for one placement (:func:`densim.tools.plan.qos.memory_check`, and the tiered
check of :mod:`densim.tools.plan.tiering`): its own module so the two do not import each other."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class MemoryCheck:
    slowdown_worst: np.ndarray  # (H,) worst VM's slowdown over all steps (1 = none)
    vm_slowdown_max: np.ndarray  # (N,)
    hosts_short: int  # hosts whose configured memory exceeds what the memory model can give VMs
    swapped_gib_peak: np.ndarray  # (H,) peak host swap in use


def step_blocks(idx, cfg, hosts, cap_vm, cpu_mhz, mem_used_bytes, active_fraction: float, n_hosts: int,
                block_elements: int):
    """The memory checks' blocks of steps over the VMs ``idx`` (those on hosts short of memory): per block of at
    most ``block_elements`` (step, VM) cells, ``(steps, act, util, seg)``: each VM's active bytes (the measured
    memory in use capped at its configured ``cfg``, else ``active_fraction`` x ``cfg``), its CPU utilisation
    (demand / capacity ``cap_vm``, clipped to [0, 1]) and the host segments of the block's cells (``hosts``: each
    VM's host)."""
    from densim.models import memory as M

    k = idx.size
    block = max(1, block_elements // k)
    t_total = cpu_mhz.shape[0]
    for t0 in range(0, t_total, block):
        t1 = min(t_total, t0 + block)
        steps = t1 - t0
        if mem_used_bytes is not None:
            act = np.minimum(mem_used_bytes[t0:t1][:, idx].astype(float), cfg[None, :])
        else:
            act = np.broadcast_to(active_fraction * cfg, (steps, k))
        util = np.clip(cpu_mhz[t0:t1][:, idx] / cap_vm[None, :], 0.0, 1.0)
        yield steps, act, util, M.segments(hosts, n_hosts, steps)
