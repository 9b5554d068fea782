"""A plan candidate as a host type, and the vCPUs one host may hold.

Kept apart from :mod:`densim.tools.plan.capacity` so the modules the capacity plan calls (waves, replay)
can use them without importing the plan back (tests/core/test_layers.py: no import cycles)."""

from __future__ import annotations

from densim.spec.plan import Candidate, QosSpec


def host_type_of(c: Candidate):
    from densim.placement.prefabs import HostType
    from densim.catalog.core import builtin_catalog
    from densim.plant import resolve_cpu

    from densim.tools.plan.power import capped_clock

    cpu = resolve_cpu(c.cpu, builtin_catalog())
    capped = capped_clock(c, float(cpu.base_mhz))  # a power cap: the clock a fully busy host keeps within it
    mhz = capped["clock_mhz"] if capped is not None and capped["clock_mhz"] is not None else float(cpu.base_mhz)
    return HostType(
        name=c.name, sockets=c.cpu.sockets, cores_per_socket=cpu.cores, threads_per_core=cpu.threads_per_core,
        core_mhz=mhz, mem_bytes=float(c.memory_bytes), smt_gain=float(cpu.smt_gain),
        hypervisor_mem_bytes=float(c.hypervisor_memory_bytes),
    )


def vcpu_capacity(host, q: QosSpec) -> float:
    """vCPUs one host may hold: ``qos.vcpus_per_core`` x physical cores (SMT threads not counted), the vCPU:pCore
    ratio of vSphere sizing and the very rule of a scenario's ``placement.cpu_overcommit`` (the engine's
    ``hosts.cores x cpu_overcommit``), so a plan's answer replayed with ``densim run`` has the same vCPU room."""
    return q.vcpus_per_core * host.cores
