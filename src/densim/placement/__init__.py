"""Placement: initial VM -> host assignment by named policies.

A policy is ``fn(vm_cpu, vm_mem, cpu_cap, mem_cap, rng, **params) -> host index per VM (-1 = no fit)``
where ``vm_cpu`` are vCPUs, ``cpu_cap`` = cores x vCPU over-commit, ``vm_mem`` configured bytes and
``mem_cap`` = memory x memory over-commit.
"""

from __future__ import annotations

import numpy as np

from densim._lazy import lazy

_h = lazy("densim.placement.heuristics")  # numba kernels, compiled or loaded on first use
from densim.registry import Registry

POLICIES: Registry = Registry("placement-policy", default="first-fit")


def _f64(*arrays):
    return [np.ascontiguousarray(a, dtype=np.float64) for a in arrays]


@POLICIES.register("first-fit", description="each VM, in order, to the first host with room", source="Johnson 1973; CloudSim Plus VmAllocationPolicyFirstFit")
def first_fit(vm_cpu, vm_mem, cpu_cap, mem_cap, rng=None, **_):
    vc, vm, cc, mc = _f64(vm_cpu, vm_mem, cpu_cap, mem_cap)
    return _h.first_fit_kernel(np.arange(vc.size, dtype=np.int64), vc, vm, cc, mc)


@POLICIES.register("first-fit-decreasing", description="first-fit over VMs sorted by decreasing size", source="Johnson 1973 (FFD <= 11/9 OPT + O(1)); Dosa 2007 (tight constant 6/9), one dimension only")
def first_fit_decreasing(vm_cpu, vm_mem, cpu_cap, mem_cap, rng=None, **_):
    vc, vm, cc, mc = _f64(vm_cpu, vm_mem, cpu_cap, mem_cap)
    return _h.first_fit_kernel(_h.decreasing_order(vc, vm, cc, mc), vc, vm, cc, mc)


@POLICIES.register("best-fit", description="each VM to the feasible host left with the least normalised free space", source="CloudSim Plus VmAllocationPolicyBestFit")
def best_fit(vm_cpu, vm_mem, cpu_cap, mem_cap, rng=None, **_):
    vc, vm, cc, mc = _f64(vm_cpu, vm_mem, cpu_cap, mem_cap)
    return _h.scan_fit_kernel(np.arange(vc.size, dtype=np.int64), vc, vm, cc, mc, True, *_h.host_types(cc, mc))


@POLICIES.register("worst-fit", description="each VM to the feasible host left with the most normalised free space (spreads load)", source="CloudSim Plus VmAllocationPolicySimple")
def worst_fit(vm_cpu, vm_mem, cpu_cap, mem_cap, rng=None, **_):
    vc, vm, cc, mc = _f64(vm_cpu, vm_mem, cpu_cap, mem_cap)
    return _h.worst_fit_kernel(np.arange(vc.size, dtype=np.int64), vc, vm, cc, mc, *_h.host_types(cc, mc))


@POLICIES.register("none", description="places nothing: every VM is listed as unplaced (do-nothing policy)")
def place_none(vm_cpu, vm_mem, cpu_cap, mem_cap, rng=None, **_):
    return np.full(len(vm_cpu), -1, dtype=np.int64)


def place(policy: str, vm_cpu, vm_mem, cpu_cap, mem_cap, rng=None, **params) -> np.ndarray:
    """Run the named policy; returns int64 host index per VM (-1 where it fits nowhere)."""
    return np.asarray(POLICIES.get(policy)(vm_cpu, vm_mem, cpu_cap, mem_cap, rng=rng, **params), dtype=np.int64)


__all__ = ["POLICIES", "place"]
