"""The catalog entry of section ``memory_models`` (a hypervisor's memory-management defaults, with
sources) and the memory model's parameters (:class:`MemoryParams`, :class:`FaultCosts`).

Kept apart from :mod:`densim.models.memory` (numba kernels) so that checking a scenario's parts and
resolving it do not load the compiled model (:mod:`densim.models.memory` re-exports both classes).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from densim.units import Bytes, Seconds


class MemoryModelDefaults(BaseModel):
    """Catalog entry of section ``memory_models``: a hypervisor's defaults with sources."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)

    name: str
    description: str = ""
    zero_page_fraction: float
    inter_vm_sharing_fraction: float
    balloon_limit: float
    compression_cache_fraction: float
    compression_ratio: float
    fault_software_s: Seconds = Field(alias="fault_software_time")
    guest_fault_software_s: Seconds | None = Field(default=None, alias="guest_fault_software_time")
    decompress_s: Seconds = Field(alias="decompress_time")
    writes_per_fault: float
    fault_trap_cycles: float = Field(ge=0, description="host CPU cycles per fault: the exit into the hypervisor")
    fault_map_cycles: float = Field(ge=0, description="host CPU cycles per fault: page allocation and page-table update")
    swap_io_cycles: float = Field(ge=0, description="host CPU cycles per swap I/O: submission and completion")
    hypervisor_bytes: Bytes = Field(alias="hypervisor_memory")
    overhead_per_vm_bytes: Bytes = Field(alias="overhead_per_vm")
    source: str = ""
    notes: str = ""


MIB = float(1 << 20)


@dataclass(frozen=True)
class FaultCosts:
    """Per-fault software costs (seconds) and the fault overlap."""

    software_s: float = 10e-6  # hypervisor fault handling + I/O submission, per host-swap fault
    guest_software_s: float | None = None  # guest page fault + virtual disk I/O; default = software_s
    decompress_s: float = 20e-6  # per compressed page touched
    writes_per_fault: float = 1.0  # swap-out writes per swap-in (steady state: every fault evicts)
    # host CPU work per fault (cycles), see fault_cpu_cycles_per_s; defaults as catalog vsphere-like (E)
    trap_cycles: float = 1500.0  # exit into the hypervisor and back
    map_cycles: float = 3000.0  # page allocation and page-table update
    io_cycles: float = 15000.0  # per swap I/O: submission and completion in the host's block stack


@dataclass(frozen=True)
class MemoryParams:
    """Every knob of the vSphere-like model (defaults: catalog ``memory_models``, see memory.yaml)."""

    zero_page_fraction: float = 0.05
    inter_vm_sharing_fraction: float = 0.0
    balloon_limit: float = 0.65
    compression: bool = True
    compression_cache_fraction: float = 0.10
    compression_ratio: float = 2.0
    software_s: float = 10e-6
    guest_software_s: float | None = None
    decompress_s: float = 20e-6
    writes_per_fault: float = 1.0
    trap_cycles: float = 1500.0
    map_cycles: float = 3000.0
    io_cycles: float = 15000.0
    hypervisor_bytes: float = 0.0
    overhead_per_vm_bytes: float = 50 * MIB
    use_min_free: bool = True

    def costs(self) -> FaultCosts:
        return FaultCosts(self.software_s, self.guest_software_s, self.decompress_s, self.writes_per_fault,
                          self.trap_cycles, self.map_cycles, self.io_cycles)
