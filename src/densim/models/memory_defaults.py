"""The catalog entry of section ``memory_models``: a hypervisor's memory-management defaults, with sources.

Kept apart from :mod:`densim.models.memory` (numba kernels) so that checking a scenario's parts
does not load the compiled model.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from densim.units import Bytes, Seconds


class MemoryModelDefaults(BaseModel):
    """Catalog entry of section ``memory_models``: a hypervisor's defaults with sources."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

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
