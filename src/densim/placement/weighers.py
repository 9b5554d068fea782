"""Placement weighers: how good is each open host for VM ``j``? Higher is better.

A weigher is ``fn(state, j) -> (n_open,) float``, chosen by name from :data:`WEIGHERS`; a policy
combines several with multipliers (``score = sum m_i * w_i``) and takes the best host, the lowest
index on ties (so "first" gives first-fit).
"""

from __future__ import annotations

import numpy as np

from densim.registry import Registry

WEIGHERS: Registry = Registry("placement-weigher", default="first")


@WEIGHERS.register("first", description="prefer the lowest-numbered host (first-fit)")
def w_first(state, j: int) -> np.ndarray:
    return -np.arange(state.n_open, dtype=np.float64) / max(state.n_open, 1)


def _fill_after(state, j: int) -> np.ndarray:
    p = state.p
    h = slice(0, state.n_open)
    cap = p.capacity
    cpu = (state.vcpus_used[h] + p.vcpus[j]) / cap[0]
    mem = (state.mem_used_bytes[h] + p.mem_bytes[j]) / cap[1]
    if p.cpu_w_mhz is not None:
        cpu = np.maximum(cpu, (state.cpu_w_mhz[h] + p.cpu_w_mhz[:, j]).max(axis=1) / p.host.capacity_mhz)
    return cpu + mem


@WEIGHERS.register("pack", description="prefer the host left fullest after placing (best-fit)")
def w_pack(state, j: int) -> np.ndarray:
    return _fill_after(state, j)


@WEIGHERS.register("spread", description="prefer the host left emptiest after placing (worst-fit)")
def w_spread(state, j: int) -> np.ndarray:
    return -_fill_after(state, j)


@WEIGHERS.register(
    "complement",
    description="time-series aware: prefer the host whose peak CPU demand grows least when the VM is added "
    "(VMs whose peaks do not coincide share a host)",
)
def w_complement(state, j: int) -> np.ndarray:
    p = state.p
    if p.cpu_w_mhz is None:
        return np.zeros(state.n_open)
    h = slice(0, state.n_open)
    before = state.cpu_w_mhz[h].max(axis=1)
    after = (state.cpu_w_mhz[h] + p.cpu_w_mhz[:, j]).max(axis=1)
    own_peak = max(float(p.cpu_w_mhz[:, j].max()), 1e-9)
    # 1 = adding the VM does not raise the host's peak at all; 0 = the peaks coincide exactly
    return 1.0 - (after - before) / own_peak
