"""Time-sliced vGPUs sharing one GPU: what each gets of the GPU's time, its slowdown and its wait for a turn.

A physical GPU in vGPU (time-sliced) mode runs one vGPU at a time; NVIDIA's vGPU manager gives each a
time slice (the quantum ``q``) in a round robin, under one of three policies (NVIDIA vGPU knowledge base,
"vGPU Schedulers", https://docs.nvidia.com/vgpu/knowledge-base/latest/vgpu-features.html; NVIDIA AI
Enterprise "Scheduling Policies",
https://docs.nvidia.com/ai-enterprise/release-8/latest/infra-software/vgpu/features/scheduling.html):

* **best-effort** (the default): "if a VM has no task or has used up its time slice, the scheduler will
  move to the next VM": idle vGPUs cede their time to busy ones. densim takes the long-run result of a
  work-conserving round robin, max-min fair sharing (water-filling) of the GPU's time::

      g_v = min(u_v, L),    L such that sum_v min(u_v, L) = min(1, sum_v u_v)

* **equal-share**: "each running VM receives an equal fraction of GPU time regardless of its load":
  with ``N`` vGPUs on the GPU (running in the step: a VM that arrived, left, or was restarted elsewhere
  within the run counts in the steps it is alive), ``g_v = min(u_v, 1 / N)``; what an idle vGPU does not use
  is not given away;
* **fixed-share**: "each VM receives a fixed fraction of GPU time, even when other VMs are idle": the
  fraction is ``1 / cap``, ``cap`` the profile's maximum vGPUs per GPU (floor(memory / framebuffer)),
  so ``g_v = min(u_v, 1 / cap)`` however many vGPUs are on the GPU.

``u_v`` is the time the vGPU would keep the whole GPU busy on its own (its demand as a share of the
GPU's time, ``vms[].gpu.utilisation`` or the VM's CPU utilisation). Its **slowdown** is ``u_v / g_v``
(1 when it gets all it asks, and for a vGPU without demand): its GPU work takes that many times longer.
Its **wait** for a turn is the rest of a round: ``q x`` the other vGPUs that take a slice in a round --
under best-effort those with demand in the step (idle ones are skipped), under equal-share the ``N - 1``
others, under fixed-share ``cap - 1`` (the reserved slots of absent vGPUs are kept: the round is always
``cap`` slices long). It is the longest wait between two of the VM's slices, not a mean.

MIG instances (isolated hardware slices) and passthrough GPUs are not time-sliced: slowdown 1, wait 0.

Worked case (``tests/models/test_gpu_contention.py``): three vGPUs of an L4-8Q (cap = 3) at u = 0.6,
0.3 and 0.1, q = 2 ms. Best-effort: sum 1.0 <= 1, every vGPU gets its demand, slowdown 1, 1, 1, wait
2 x 2 = 4 ms. Equal-share (N = 3): each is held to 1/3: g = 1/3, 0.3, 0.1, slowdown 0.6 / (1/3) = 1.8.
With u = 0.9, 0.5, 0.1 best-effort gives 0.1 first, then 0.9 / 2 = 0.45 each: g = 0.45, 0.45, 0.1,
slowdown 2.0, 1.11, 1.
"""

from __future__ import annotations

import numpy as np

from densim._jit import njit

#: the vGPU scheduler policies, as codes for the kernel
SCHEDULERS = {"best-effort": 0, "equal-share": 1, "fixed-share": 2}


@njit
def _water_fill(d, out):
    """Max-min fair shares of capacity 1 among demands ``d`` (writes ``out``)."""
    n = d.size
    order = np.argsort(d)
    left = 1.0
    for i in range(n):
        j = order[i]
        level = left / (n - i)
        if d[j] <= level:
            out[j] = d[j]
            left -= d[j]
        else:
            for k in range(i, n):
                out[order[k]] = level
            return


@njit
def share_gpu_time(u, starts, policy, cap, quantum_s, got, wait_s, present):
    """Each tenant's share of its GPU's time in each step.

    ``u`` (T, E): the tenants' demand (share of one whole GPU's time), tenants grouped by GPU: GPU k
    holds tenants ``starts[k] .. starts[k+1]-1`` (``starts`` has K + 1 entries); ``policy[k]`` 0
    best-effort, 1 equal-share, 2 fixed-share; ``cap[k]`` the profile's vGPUs per GPU; ``quantum_s[k]``
    the time slice; ``present`` (T, E) bool: the tenant's VM runs on the GPU in the step (equal-share divides
    among those). Writes ``got`` (T, E), the share delivered, and ``wait_s`` (T, E), the longest wait for a
    turn (see the module docstring); 0 for a tenant not present."""
    T = u.shape[0]
    K = starts.size - 1
    for k in range(K):
        a, b = starts[k], starts[k + 1]
        n = b - a
        if n == 0:
            continue
        q = quantum_s[k]
        for t in range(T):
            if policy[k] == 0:
                tot = 0.0
                busy = 0
                for e in range(a, b):
                    tot += u[t, e]
                    if u[t, e] > 0.0:
                        busy += 1
                if tot <= 1.0:
                    for e in range(a, b):
                        got[t, e] = u[t, e]
                else:
                    _water_fill(u[t, a:b], got[t, a:b])
                for e in range(a, b):
                    others = busy - 1 if u[t, e] > 0.0 else busy
                    wait_s[t, e] = q * others if present[t, e] else 0.0
            else:
                running = 0
                for e in range(a, b):
                    if present[t, e]:
                        running += 1
                if running == 0:
                    continue
                share = 1.0 / running if policy[k] == 1 else 1.0 / cap[k]
                slots = running if policy[k] == 1 else cap[k]
                for e in range(a, b):
                    if present[t, e]:
                        got[t, e] = min(u[t, e], share)
                        wait_s[t, e] = q * (slots - 1)


def slowdown(u: np.ndarray, got: np.ndarray) -> np.ndarray:
    """``u / got`` where there is demand, 1 elsewhere (a vGPU that asks nothing is not slowed)."""
    u = np.asarray(u, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    out = np.ones_like(u)
    np.divide(u, got, out=out, where=(u > 0) & (got > 0))
    return out


def shares(u, starts, policy, cap, quantum_s, present=None) -> tuple[np.ndarray, np.ndarray]:
    """``(got, wait_s)`` of :func:`share_gpu_time` for float arrays (a convenience for tests and tools);
    ``present`` defaults to every tenant present in every step."""
    u = np.ascontiguousarray(np.atleast_2d(np.asarray(u, dtype=np.float64)))
    got = np.zeros_like(u)
    wait = np.zeros_like(u)
    pres = np.ones(u.shape, np.bool_) if present is None else np.ascontiguousarray(np.broadcast_to(present, u.shape),
                                                                                      dtype=np.bool_)
    share_gpu_time(u, np.asarray(starts, np.int64), np.asarray(policy, np.int64), np.asarray(cap, np.int64),
                   np.asarray(quantum_s, np.float64), got, wait, pres)
    return got, wait


__all__ = ["SCHEDULERS", "share_gpu_time", "shares", "slowdown"]
