"""Memory-model parameters: a scenario's ``memory`` settings over the catalog's ``memory_models`` defaults."""

from __future__ import annotations

from densim.catalog.core import Catalog
from densim.models.memory_defaults import MemoryModelDefaults, MemoryParams
from densim.spec.memory import MemorySettings


def memory_params(s: MemorySettings, catalog: Catalog) -> MemoryParams:
    """:class:`densim.models.memory_defaults.MemoryParams` with catalog defaults filled in."""
    d = MemoryModelDefaults.model_validate(catalog.raw("memory_models", "vsphere-like" if s.model == "none" else s.model))

    def pick(v, default):
        return default if v is None else v

    return MemoryParams(
        zero_page_fraction=pick(s.zero_page_fraction, d.zero_page_fraction),
        inter_vm_sharing_fraction=pick(s.inter_vm_sharing_fraction, d.inter_vm_sharing_fraction) if s.inter_vm_sharing else 0.0,
        balloon_limit=pick(s.balloon_limit, d.balloon_limit),
        compression=s.compression,
        compression_cache_fraction=pick(s.compression_cache_fraction, d.compression_cache_fraction),
        compression_ratio=pick(s.compression_ratio, d.compression_ratio),
        software_s=pick(s.fault_software_s, d.fault_software_s),
        guest_software_s=pick(s.guest_fault_software_s, d.guest_fault_software_s),
        decompress_s=pick(s.decompress_s, d.decompress_s),
        writes_per_fault=pick(s.writes_per_fault, d.writes_per_fault),
        trap_cycles=pick(s.fault_trap_cycles, d.fault_trap_cycles),
        map_cycles=pick(s.fault_map_cycles, d.fault_map_cycles),
        io_cycles=pick(s.swap_io_cycles, d.swap_io_cycles),
        hypervisor_bytes=pick(s.hypervisor_bytes, d.hypervisor_bytes),
        overhead_per_vm_bytes=pick(s.overhead_per_vm_bytes, d.overhead_per_vm_bytes),
        use_min_free=s.min_free,
    )
