"""Placement: one registry of named policies, for the engine and the planner alike.

Each name in :data:`POLICIES` means one thing. A :class:`PlacementPolicy` may have

* a ``kernel`` that places VMs onto a fixed set of hosts (what the engine does with a scenario's
  cluster): ``fn(vm_cpu, vm_mem, cpu_cap, mem_cap, rng, **params) -> host index per VM (-1 = no fit)``
  where ``vm_cpu`` are vCPUs, ``cpu_cap`` = cores x vCPU over-commit, ``vm_mem`` configured bytes and
  ``mem_cap`` = memory x memory over-commit;
* a ``recipe`` (filters, weighers, VM order) that opens hosts of one type as it goes (what
  ``densim plan`` does, :func:`densim.placement.prefabs.place`).

A policy that has only one of the two is refused by the other tool with a message naming the
policies that tool can use.
"""

from __future__ import annotations

import numpy as np

from densim._lazy import lazy

_h = lazy("densim.placement.heuristics")  # numba kernels, compiled or loaded on first use
from collections.abc import Callable
from dataclasses import dataclass

from densim.registry import Registry

@dataclass(frozen=True)
class Recipe:
    """How the planner places: host filters, weighers (name, weight) and the VM order."""

    name: str
    filters: tuple[str, ...]
    weighers: tuple[tuple[str, float], ...]
    order: str = "decreasing"  # or "given"
    description: str = ""


@dataclass(frozen=True)
class PlacementPolicy:
    name: str
    kernel: Callable | None = None  # onto a fixed set of hosts (the engine)
    recipe: Recipe | None = None  # opening hosts as it goes (the planner)


POLICIES: Registry[PlacementPolicy] = Registry("placement-policy", default="first-fit")
_KERNELS: dict[str, tuple[Callable, str, str]] = {}


def _kernel(name: str, *, description: str, source: str = ""):
    def deco(fn):
        _KERNELS[name] = (fn, description, source)
        return fn

    return deco


def _f64(*arrays):
    return [np.ascontiguousarray(a, dtype=np.float64) for a in arrays]


@_kernel("first-fit", description="each VM, in order, to the first host with room", source="Johnson 1973; CloudSim Plus VmAllocationPolicyFirstFit")
def first_fit(vm_cpu, vm_mem, cpu_cap, mem_cap, rng=None, **_):
    vc, vm, cc, mc = _f64(vm_cpu, vm_mem, cpu_cap, mem_cap)
    return _h.first_fit_kernel(np.arange(vc.size, dtype=np.int64), vc, vm, cc, mc)


@_kernel("first-fit-decreasing", description="first-fit over VMs sorted by decreasing size", source="Johnson 1973 (FFD <= 11/9 OPT + O(1)); Dosa 2007 (tight constant 6/9), one dimension only")
def first_fit_decreasing(vm_cpu, vm_mem, cpu_cap, mem_cap, rng=None, **_):
    vc, vm, cc, mc = _f64(vm_cpu, vm_mem, cpu_cap, mem_cap)
    return _h.first_fit_kernel(_h.decreasing_order(vc, vm, cc, mc), vc, vm, cc, mc)


@_kernel("best-fit", description="each VM to the feasible host left with the least normalised free space", source="CloudSim Plus VmAllocationPolicyBestFit")
def best_fit(vm_cpu, vm_mem, cpu_cap, mem_cap, rng=None, **_):
    vc, vm, cc, mc = _f64(vm_cpu, vm_mem, cpu_cap, mem_cap)
    return _h.scan_fit_kernel(np.arange(vc.size, dtype=np.int64), vc, vm, cc, mc, True, *_h.host_types(cc, mc))


@_kernel("worst-fit", description="each VM to the feasible host left with the most normalised free space (spreads load)", source="CloudSim Plus VmAllocationPolicySimple")
def worst_fit(vm_cpu, vm_mem, cpu_cap, mem_cap, rng=None, **_):
    vc, vm, cc, mc = _f64(vm_cpu, vm_mem, cpu_cap, mem_cap)
    return _h.worst_fit_kernel(np.arange(vc.size, dtype=np.int64), vc, vm, cc, mc, *_h.host_types(cc, mc))


@_kernel("none", description="places nothing: every VM is listed as unplaced (do-nothing policy)")
def place_none(vm_cpu, vm_mem, cpu_cap, mem_cap, rng=None, **_):
    return np.full(len(vm_cpu), -1, dtype=np.int64)


@_kernel("given", description="each VM on the host an assignment file names (placement.assignment: columns vm, host), "
                         "refused if a host's vCPUs or memory exceed its capacity; a plan's answer (densim plan writes one)",
         source="densim.placement.given")
def given(vm_cpu, vm_mem, cpu_cap, mem_cap, rng=None, assignment=None, **_):
    from densim.placement.given import place_given

    return place_given(vm_cpu, vm_mem, cpu_cap, mem_cap, assignment=assignment)


# Recipes of the planner (filters: densim.placement.filters; weighers: densim.placement.weighers)
_RECIPES = {
    "first-fit": (Recipe("first-fit", ("capacity",), (("first", 1.0),), "given", "first host with room, VMs in the given order"), ""),
    "first-fit-decreasing": (Recipe("first-fit-decreasing", ("capacity", "demand"), (("first", 1.0),), "decreasing",
                                    "first-fit decreasing on allocations and per-window demand"), "Johnson 1973; Coffman et al."),
    "best-fit-decreasing": (Recipe("best-fit-decreasing", ("capacity", "demand"), (("pack", 1.0),), "decreasing",
                                   "fullest host with room, largest VMs first"), ""),
    "spread": (Recipe("spread", ("capacity", "demand", "anti_affinity"), (("spread", 1.0),), "decreasing",
                      "emptiest host with room (load balancing)"), ""),
    "consolidate": (Recipe("consolidate", ("capacity", "demand", "numa_fit", "anti_affinity", "ready"), (("pack", 1.0),), "decreasing",
                           "fewest hosts: capacity, NUMA fit, anti-affinity and the CPU Ready bound; best-fit"), ""),
    "timeseries": (Recipe("timeseries", ("capacity", "demand", "numa_fit", "anti_affinity", "ready"), (("complement", 1.0), ("pack", 0.25)),
                          "decreasing", "time-series aware: VMs whose peaks do not coincide share a host; CPU Ready bound"), ""),
    "stack": (Recipe("stack", ("none",), (("first", 1.0),), "given", "every VM on the first host, no checks (the planner's do-nothing)"), ""),
}

for _name in sorted(set(_KERNELS) | set(_RECIPES)):
    _fn, _desc, _src = _KERNELS.get(_name, (None, "", ""))
    _rec, _rsrc = _RECIPES.get(_name, (None, ""))
    _where = "engine and planner" if _fn and _rec else ("engine only" if _fn else "planner only")
    POLICIES.add(_name, PlacementPolicy(_name, _fn, _rec), description=f"{_desc or _rec.description} ({_where})",
                 source=_src or _rsrc)


def engine_policies() -> list[str]:
    return [e.name for e in POLICIES if e.obj.kernel is not None]


def planner_policies() -> list[str]:
    return [e.name for e in POLICIES if e.obj.recipe is not None]


def place(policy: str, vm_cpu, vm_mem, cpu_cap, mem_cap, rng=None, gpu=None, **params) -> np.ndarray:
    """Run the named policy onto fixed hosts; returns int64 host index per VM (-1 where it fits nowhere).

    ``gpu``: a :class:`densim.placement.gpu.GpuProblem` when VMs ask for GPUs: the GPU column is then
    tested with :func:`densim.placement.gpu.gpu_fit` next to the CPU and memory fit (and its GPU state
    and each VM's GPU are written into it)."""
    if gpu is not None and policy == "given":  # the file's hosts; each VM's GPU on its host (placement.gpu_policy)
        from densim.placement.given import place_given
        from densim.placement.gpu import place_given_gpu

        host = place_given(vm_cpu, vm_mem, cpu_cap, mem_cap, rng=rng, **params)
        place_given_gpu(host, gpu, params["assignment"])
        return host
    if gpu is not None:
        from densim.placement.gpu import place_gpu

        return place_gpu(policy, vm_cpu, vm_mem, cpu_cap, mem_cap, gpu)
    pol = POLICIES.get(policy)
    if pol.kernel is None:
        raise KeyError(f"placement policy {policy!r} opens hosts as it places (densim plan); onto a scenario's hosts: "
                       f"{', '.join(engine_policies())}")
    return np.asarray(pol.kernel(vm_cpu, vm_mem, cpu_cap, mem_cap, rng=rng, **params), dtype=np.int64)


__all__ = ["POLICIES", "PlacementPolicy", "Recipe", "engine_policies", "place", "planner_policies"]
