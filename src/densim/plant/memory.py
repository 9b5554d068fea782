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


def tiering_parts(s: MemorySettings, catalog: Catalog, host_groups, issues) -> tuple:
    """The NVMe tier's device and which host groups have it (``memory.tiering``), checked.

    Appends ``(field path, problem)`` to ``issues`` and returns ``(device, per-group flags)``, or
    ``(None, ())`` when tiering is off or a problem was found. Refused: a device that is not an NVMe
    SSD (vSphere 9 tiers to NVMe only), a device without a capacity, a tier that does not fit on the
    host's devices (``ratio x DRAM > devices_per_host x capacity``), unknown host group names.
    """
    from densim.models.devices import DeviceSpec

    t = s.tiering
    if t is None:
        return None, ()
    n0 = len(issues)
    dev = issues.get(catalog, "devices", t.device, DeviceSpec, "memory.tiering.device")
    if dev is not None:
        if dev.kind != "nvme_ssd":
            issues.append(("memory.tiering.device", f"device {t.device!r} is a {dev.kind}: the memory tier is an NVMe SSD "
                                                    "(vSphere 9 Memory Tiering uses NVMe devices only)"))
        elif dev.capacity_bytes is None:
            issues.append(("memory.tiering.device", f"device {t.device!r} has no capacity: the tier's size (ratio x DRAM) "
                                                    "must be checked against it (give capacity)"))
    if host_groups is None:
        return (dev, ()) if len(issues) == n0 else (None, ())
    labels = [g.label for g in host_groups]
    if t.hosts is not None:
        for i, name in enumerate(t.hosts):
            if name not in labels:
                issues.append((f"memory.tiering.hosts[{i}]", f"no host group {name!r} (groups: {', '.join(labels)})"))
    on = tuple(t.hosts is None or g.label in t.hosts for g in host_groups)
    if dev is not None and dev.capacity_bytes is not None:
        room = t.devices_per_host * float(dev.capacity_bytes)
        for g, tiered in zip(host_groups, on):
            need = t.ratio * float(g.server.memory_bytes)
            if tiered and need > room * (1 + 1e-9):
                issues.append(("memory.tiering.ratio",
                               f"host group {g.label!r}: a 1:{t.ratio:g} tier of {g.server.memory_bytes / 2**30:.0f} GiB DRAM "
                               f"needs {need / 2**30:.0f} GiB of NVMe but {t.devices_per_host} x {t.device} hold "
                               f"{room / 2**30:.0f} GiB (raise devices_per_host or lower the ratio)"))
    return (dev, on) if len(issues) == n0 else (None, ())
