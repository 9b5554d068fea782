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

NVMe memory tiering (vSphere 9 "Memory Tiering over NVMe", :mod:`densim.models.tiering`): a host's
DRAM plus an NVMe tier of ``ratio`` times its DRAM; hot pages stay in DRAM, cold ones go to the
tier, and a VM touching a page in the tier waits for the NVMe device (queueing with every other
VM's tier faults on that host)::

    memory:
      model: vsphere-like
      tiering: {device: intel-dc-p4600-1.6tb, ratio: "1:1"}   # DRAM:NVMe, 1:1 .. 1:4
    placement: {memory_overcommit: 2.0}                        # configured memory up to DRAM + tier
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator

from densim.units import Bytes, PosBytes, Seconds

MAX_TIER_RATIO = 4.0  # vSphere 9: Mem.TierNvmePct up to 400 % of DRAM (docs/background/tiering.md)


def parse_tier_ratio(text) -> float:
    """``"1:2"`` -> 2.0 (NVMe bytes per byte of DRAM); a bare number is the NVMe share itself."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        k = float(text)
    else:
        m = re.fullmatch(r"\s*1\s*:\s*([0-9]*\.?[0-9]+)\s*", str(text))
        if m is None:
            raise ValueError(f"ratio {text!r} is not DRAM:NVMe as '1:k' (e.g. '1:2')")
        k = float(m.group(1))
    if not 0.0 < k <= MAX_TIER_RATIO:
        raise ValueError(f"ratio {text!r}: the NVMe tier must be more than 0 and at most {MAX_TIER_RATIO:g} x DRAM "
                         f"(vSphere 9's Mem.TierNvmePct goes to 400 %)")
    return k


TierRatio = Annotated[
    float,
    BeforeValidator(parse_tier_ratio),
    WithJsonSchema({"anyOf": [{"type": "string", "pattern": r"^\s*1\s*:\s*[0-9]*\.?[0-9]+\s*$"},
                              {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIER_RATIO}],
                    "description": "DRAM:NVMe as '1:k', k from 0 to 4 ('1:1' is vSphere 9's default)"}),
]


class TieringSettings(BaseModel):
    """A host memory tier on NVMe (vSphere 9 Memory Tiering): DRAM:NVMe ``ratio`` on the named host groups."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)

    device: str = Field(description="catalog device (an NVMe SSD) holding the tier; its capacity must hold ratio x DRAM")
    ratio: TierRatio
    devices_per_host: int = Field(default=1, ge=1, description="tier devices per host, striped (IOPS and parallelism add)")
    hosts: list[str] | None = Field(default=None, description="cluster.hosts[] group names with the tier (default: every group)")
    software_s: Seconds | None = Field(
        default=None, alias="fault_software_time",
        description="hypervisor time per tier fault besides the device read; default memory.fault_software_time")
    writes_per_fault: float | None = Field(
        default=None, ge=0, description="demotions (tier writes) per promotion; default memory.writes_per_fault")


class MemorySettings(BaseModel):
    """Memory over-commit settings (memory model, reclamation, swap). Owned by the memory model.

    model: none (the default) switches the mechanism off; vsphere-like runs the reclamation
    pipeline (page sharing, balloon, compression, host swap with an optional host swap cache).
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)

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
    tiering: TieringSettings | None = Field(default=None, description="NVMe memory tier (vSphere 9 Memory Tiering)")
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
