"""Memory over-commit settings (memory model, reclamation, swap). Owned by the memory model.

Every numeric field left out takes its default from the catalog entry named by ``model`` in the
section ``memory_models`` (``src/densim/catalog/memory.yaml``), where each default carries its
source. Device names refer to the catalog section ``devices``.

Example::

    memory:
      model: vsphere-like
      swap_device: fc-san-lun            # the VMs' datastore (.vswp and guest paging)
      swap_cache_device: intel-dc-s3710-400gb
      swap_cache_size: 64 GiB            # the first 64 GiB of host swap go to the SSD
      workload: generic-server           # profile for VMs without workload.memory_profile

Where host swap lives: by default on ``swap_device``, a catalog device whose only load is the
host's own swap (plus ``background_swap_iops``). With the storage stage on
(``storage.model: queueing``) ``swap_datastore`` puts it on a datastore instead, so that swap
traffic loads the datastore and the datastore's latency (with every VM's I/O on it) is the fault
cost::

    memory:
      model: vsphere-like
      swap_datastore: vm                 # each VM's .vswp on its own datastore (vSphere default)
      # swap_datastore: swap-lun         # or every host's swap on storage.datastores[] 'swap-lun'
                                         # (a per-host datastore: the host's own instance)
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from densim.units import Bytes, PosBytes, Seconds


class MemorySettings(BaseModel):
    """Memory over-commit settings (memory model, reclamation, swap). Owned by the memory model.

    model: none (the default) switches the mechanism off; vsphere-like runs the reclamation
    pipeline (page sharing, balloon, compression, host swap with an optional host swap cache).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    model: Literal["none", "vsphere-like"] = "none"
    # reclamation
    zero_page_fraction: float | None = Field(default=None, ge=0, le=1, description="share of idle memory that is zero pages")
    inter_vm_sharing: bool = Field(default=False, description="inter-VM page sharing (off by default since 2014/15)")
    inter_vm_sharing_fraction: float | None = Field(default=None, ge=0, le=1)
    balloon_limit: float | None = Field(default=None, ge=0, le=1, description="per-VM balloon limit, share of configured memory")
    compression: bool = True
    compression_cache_fraction: float | None = Field(default=None, ge=0, le=1)
    compression_ratio: float | None = Field(default=None, ge=1)
    min_free: bool = Field(default=True, description="keep ESXi's minFree (899 MB + 1 % above 28 GB) free")
    hypervisor_bytes: Bytes | None = Field(default=None, alias="hypervisor_memory", description="host memory the hypervisor keeps")
    overhead_per_vm_bytes: Bytes | None = Field(default=None, alias="overhead_per_vm")
    # fault cost
    fault_software_s: Seconds | None = Field(default=None, alias="fault_software_time")
    guest_fault_software_s: Seconds | None = Field(default=None, alias="guest_fault_software_time")
    decompress_s: Seconds | None = Field(default=None, alias="decompress_time")
    writes_per_fault: float | None = Field(default=None, ge=0)
    # host CPU per fault (added to the faulting VM's CPU demand)
    fault_trap_cycles: float | None = Field(default=None, ge=0, description="host CPU cycles per fault: the exit into the hypervisor")
    fault_map_cycles: float | None = Field(default=None, ge=0, description="host CPU cycles per fault: page allocation and page-table update")
    swap_io_cycles: float | None = Field(default=None, ge=0, description="host CPU cycles per swap I/O: submission and completion")
    # devices
    swap_device: str = Field(default="fc-san-lun", description="catalog device holding the VMs' swap files / virtual disks")
    swap_cache_device: str | None = Field(default=None, description="catalog device used as host swap cache")
    swap_cache_bytes: Bytes = Field(default=0.0, alias="swap_cache_size")
    background_swap_iops: float = Field(default=0.0, ge=0, description="other load on the swap device, IOPS")
    swap_datastore: str | None = Field(
        default=None,
        description="put host swap and guest paging on a storage datastore instead of swap_device: 'vm' (each VM's "
                    "own datastore) or the name of a storage.datastores[] entry; needs storage.model: queueing",
    )
    swap_block_size_bytes: PosBytes = Field(
        default=4096.0, alias="swap_block_size",
        description="bytes per swap I/O with swap_datastore (4 KiB: one page per I/O); swap IOPS = faults x 4 KiB / this",
    )
    # demand
    workload: str = Field(default="generic-server", description="memory_workloads profile for VMs that name none")
    trace_memory: Literal["auto", "on", "off"] = Field(
        default="auto", description="take active memory from the trace's memory usage when it has one"
    )

    @model_validator(mode="after")
    def _cache(self) -> "MemorySettings":
        if self.swap_cache_bytes > 0 and self.swap_cache_device is None:
            raise ValueError("swap_cache_size needs swap_cache_device")
        if self.swap_datastore is not None and self.background_swap_iops > 0:
            raise ValueError("background_swap_iops is other load on swap_device; with swap_datastore the datastore's "
                             "other load is the VMs' own I/O from the storage stage")
        return self
