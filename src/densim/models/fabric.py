"""Shared storage pools, fabrics and the path from a host to its storage (modelling guide §5.1).

A storage *target* (an NVMe-oF enclosure, an iSCSI/FC array) has back-end devices
(:class:`densim.models.devices.DeviceSpec`) under a protection scheme, controllers with a bandwidth
and an IOPS cap (and optionally a write-back cache), and front-end ports. A host reaches it through
a *transport* (local PCIe NVMe, NVMe-oF over RDMA with an RDMA NIC or a hardware NVMe-oF host
adapter, NVMe/TCP, iSCSI, Fibre Channel), a host adapter with ``ports x port_speed`` (capped by its
PCIe slot) and a switch.

Every shared thing is a *component* with a capacity in its own unit:

========================  ==============================  ======================================
component                 capacity                         load per byte of I/O
========================  ==============================  ======================================
host adapter rx / tx      ``min(ports*speed, host_bus)``   1 byte (reads arrive on rx, writes tx)
switch                    switching capacity               1 byte
target ports out / in     ``controllers*ports*speed``      1 byte (reads leave, writes enter)
controller bandwidth      ``controllers*bandwidth``        1 byte
controller IOPS           ``controllers*iops``             ``1/io_size`` I/Os
back-end drives           drive count (drive-seconds/s)    drive time per byte, writes x RAID penalty
host CPU                  logical CPUs (thread-s/s)        ``(cyc_io/io_size + cyc_byte) / Hz``
========================  ==============================  ======================================

Drive time per byte (one drive busy for that long): SSDs, with many internal units, are limited by
the larger of their bandwidth and IOPS limits, ``max(1/BW, 1/(IOPS*B))``; an HDD pays one
positioning per I/O when many streams interleave, ``(1/IOPS_depth + B/BW)/B`` (modelling guide §4.1).

The latency of one I/O of ``B`` bytes seen by the issuing task (modelling guide §5.1):
``t_io = t_transport + t_switch + t_target + t_device + sum_c S_c(B) / (1 - rho_c)``, where
``S_c(B)`` is the transfer time of the I/O on component ``c`` (a single port, one controller, one
drive) and the stretch of a ``c``-server component (``c`` = its ports or drives; M/M/c,
:func:`densim.models.sharing.mmc_stretch`, ``1/(1-rho)`` for one server) makes latency grow with
utilisation. A write-back cache returns writes at controller latency
while the drives keep up (the fluid solver caps the throughput when they do not).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from densim.errors import PartError
from densim.models.devices import DeviceSpec
from densim.units import Bytes, BytesPerSecond, PerSecond, Seconds

_CFG = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)

RAID_WRITE_PENALTY = {"none": 1.0, "raid0": 1.0, "raid1": 2.0, "raid10": 2.0, "raid5": 4.0, "raid6": 6.0}
"""Back-end device writes per host write (modelling guide §4.2, [S35])."""


class NicSpec(BaseModel):
    """A host adapter: Ethernet NIC, RDMA NIC, hardware NVMe-oF adapter or FC HBA."""

    model_config = _CFG

    name: str
    kind: Literal["ethernet", "rdma", "nvmeof-hba", "fc-hba"]
    ports: int = Field(default=1, gt=0)
    port_speed_bps: BytesPerSecond = Field(alias="port_speed", gt=0)
    host_bus_bps: BytesPerSecond = Field(alias="host_bus", gt=0, description="PCIe slot limit (both ports together)")
    source: str = ""

    @property
    def bandwidth_bps(self) -> float:
        """``min(ports x port_speed, host_bus)``."""
        return min(self.ports * self.port_speed_bps, self.host_bus_bps)


class SwitchSpec(BaseModel):
    model_config = _CFG

    name: str
    port_speed_bps: BytesPerSecond = Field(alias="port_speed", gt=0)
    ports: int = Field(gt=0)
    switching_capacity_bps: BytesPerSecond = Field(alias="switching_capacity", gt=0)
    latency_s: Seconds = Field(default=0.0, alias="latency")
    source: str = ""


class TransportSpec(BaseModel):
    """A host-side storage protocol stack (modelling guide §4.4 and §5.1)."""

    model_config = _CFG

    name: str
    remote: bool = True
    latency_s: Seconds = Field(alias="latency", description="added per I/O relative to local NVMe")
    host_cpu_per_io: float = Field(ge=0, description="host cycles per I/O")
    host_cpu_per_byte: float = Field(default=0.0, ge=0, description="host cycles per byte moved")
    nic_kinds: list[str] = Field(default_factory=list, description="adapter kinds this transport runs on")
    source: str = ""


class TargetSpec(BaseModel):
    """A shared storage target: enclosure or array with controllers, ports and back-end devices."""

    model_config = _CFG

    name: str
    kind: Literal["jbof", "array"] = "array"
    controllers: int = Field(default=2, gt=0)
    ports_per_controller: int = Field(default=2, gt=0)
    port_speed_bps: BytesPerSecond = Field(alias="port_speed", gt=0)
    controller_bandwidth_bps: BytesPerSecond = Field(alias="controller_bandwidth", gt=0)
    controller_iops: PerSecond = Field(gt=0)
    latency_s: Seconds = Field(default=0.0, alias="latency", description="target stack latency per I/O")
    cache_bytes: Bytes = Field(default=0.0, alias="cache", description="write-back cache per controller")
    protection: Literal["none", "raid0", "raid1", "raid10", "raid5", "raid6"] = "none"
    device: str = Field(description="name of a device in the catalog 'devices' section")
    device_count: int | None = Field(
        default=None, gt=0, description="drives in the target (or give drives_per_server instead)"
    )
    drives_per_server: int | None = Field(
        default=None, gt=0,
        description="drives populated per server attached to the pool (the target is sized by the servers using it)",
    )
    bays: int | None = Field(default=None, gt=0, description="drive bays of the enclosure; the populated drives must fit")
    switch: str | None = Field(default=None, description="switch in front of the target ports")
    source: str = ""

    @model_validator(mode="after")
    def _sizing(self) -> "TargetSpec":
        if (self.device_count is None) == (self.drives_per_server is None):
            raise ValueError(f"storage target {self.name!r}: give exactly one of device_count and drives_per_server")
        if self.device_count is not None and self.bays is not None and self.device_count > self.bays:
            raise ValueError(f"storage target {self.name!r}: device_count {self.device_count} exceeds its {self.bays} bays")
        return self

    def sized_for(self, servers: int) -> "TargetSpec":
        """This target populated for ``servers`` attached servers (``drives_per_server`` each).

        A target with a fixed ``device_count`` is returned unchanged.
        """
        if self.device_count is not None:
            return self
        n = self.drives_per_server * int(servers)
        if n <= 0:
            raise PartError(f"storage target {self.name!r}: sized per server but no server uses it")
        if self.bays is not None and n > self.bays:
            raise PartError(f"storage target {self.name!r}: {servers} servers x {self.drives_per_server} drives = {n} "
                            f"exceed its {self.bays} bays")
        return self.model_copy(update={"device_count": n})

    @property
    def drives(self) -> int:
        """Populated drives (after :meth:`sized_for` for a per-server target)."""
        if self.device_count is None:
            raise PartError(f"storage target {self.name!r}: drive count unknown until the target is sized for "
                            f"its servers ({self.drives_per_server} per server)")
        return int(self.device_count)

    @property
    def write_penalty(self) -> float:
        return RAID_WRITE_PENALTY[self.protection]

    @property
    def usable_fraction(self) -> float:
        n = self.drives
        return {"raid1": 0.5, "raid10": 0.5, "raid5": (n - 1) / n, "raid6": max(n - 2, 0) / n}.get(self.protection, 1.0)


def drive_s_per_byte(dev: DeviceSpec, io_bytes: float, write: bool) -> float:
    """Seconds one drive is busy per byte of ``io_bytes``-sized I/O (see module docstring).

    Needs the device's sequential rate (``seq_read``/``seq_write``; an HDD's comes from its media
    rate, :class:`DeviceSpec`): an error names the part when it is missing.
    """
    iops = dev.write_iops if write else dev.read_iops
    bw = dev.seq_bps(write, "fabric model")
    if dev.kind == "hdd":
        return (1.0 / iops + io_bytes / bw) / io_bytes
    return max(1.0 / bw, 1.0 / (iops * io_bytes))


def drive_service_s(dev: DeviceSpec, io_bytes: float, write: bool) -> float:
    """Unloaded time of one ``io_bytes`` I/O on one drive: QD1 access latency + transfer."""
    lat = dev.write_latency_s if write else dev.read_latency_s
    return lat + io_bytes / dev.seq_bps(write, "fabric model")


def check_fabric_device(dev: DeviceSpec) -> None:
    """Raise :class:`densim.errors.PartError` if ``dev`` lacks a figure the fabric model reads."""
    for write in (False, True):
        dev.seq_bps(write, "fabric model")


class Components:
    """The shared components of a system: names, kinds and capacities, added by name once."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.kinds: list[str] = []
        self.capacity: list[float] = []
        self.servers: list[float] = []
        self._index: dict[str, int] = {}

    def add(self, name: str, kind: str, capacity: float, servers: float = 1.0) -> int:
        """Index of component ``name``; created with ``capacity`` and ``servers`` parallel servers
        (ports, drives: the M/M/c latency stretch) the first time it is named."""
        if name in self._index:
            return self._index[name]
        self._index[name] = len(self.names)
        self.names.append(name)
        self.kinds.append(kind)
        self.capacity.append(float(capacity))
        self.servers.append(float(servers))
        return self._index[name]

    def servers_array(self) -> np.ndarray:
        return np.asarray(self.servers, dtype=float)

    def __len__(self) -> int:
        return len(self.names)

    def capacity_array(self) -> np.ndarray:
        return np.asarray(self.capacity, dtype=float)


@dataclass
class PathCost:
    """What one byte read or written through a storage path costs, and what one I/O waits for.

    ``*_load``: component -> load per byte (the incidence row). ``*_service``: component ->
    transfer time of one I/O there (stretched by that component's utilisation). ``*_fixed_s``:
    latency adders that do not queue (protocol, switch, target stack, device access).
    ``*_host_cycles``: host CPU cycles per byte.
    """

    read_load: dict[int, float] = field(default_factory=dict)
    write_load: dict[int, float] = field(default_factory=dict)
    read_service: dict[int, float] = field(default_factory=dict)
    write_service: dict[int, float] = field(default_factory=dict)
    read_fixed_s: float = 0.0
    write_fixed_s: float = 0.0
    host_cycles_per_byte: float = 0.0
    storage_components: tuple[int, ...] = ()


def local_path(
    comps: Components,
    host: str,
    device: DeviceSpec,
    count: int,
    transport: TransportSpec,
    io_bytes: float,
) -> PathCost:
    """Host-local drives (JBOD across ``count`` drives) through ``transport`` (normally local-nvme)."""
    drives = comps.add(f"{host}/local-drives", "drives", count, count)
    p = PathCost()
    p.read_load[drives] = drive_s_per_byte(device, io_bytes, write=False)
    p.write_load[drives] = drive_s_per_byte(device, io_bytes, write=True)
    p.read_service[drives] = drive_service_s(device, io_bytes, write=False)
    p.write_service[drives] = drive_service_s(device, io_bytes, write=True)
    p.read_fixed_s = p.write_fixed_s = transport.latency_s
    p.host_cycles_per_byte = transport.host_cpu_per_io / io_bytes + transport.host_cpu_per_byte
    p.storage_components = (drives,)
    return p


def remote_path(
    comps: Components,
    host: str,
    pool: str,
    target: TargetSpec,
    device: DeviceSpec,
    nic: NicSpec,
    switch: SwitchSpec | None,
    transport: TransportSpec,
    io_bytes: float,
) -> PathCost:
    """Host adapter -> switch -> target ports -> controllers -> back-end drives."""
    if transport.nic_kinds and nic.kind not in transport.nic_kinds:
        raise ValueError(
            f"transport {transport.name!r} runs on {', '.join(transport.nic_kinds)} adapters, not on {nic.name!r} ({nic.kind})"
        )
    p = PathCost()
    nic_rx = comps.add(f"{host}/storage-nic-rx", "host-adapter", nic.bandwidth_bps, nic.ports)
    nic_tx = comps.add(f"{host}/storage-nic-tx", "host-adapter", nic.bandwidth_bps, nic.ports)
    n_ports = target.controllers * target.ports_per_controller
    port_out = comps.add(f"{pool}/target-ports-out", "target-ports", n_ports * target.port_speed_bps, n_ports)
    port_in = comps.add(f"{pool}/target-ports-in", "target-ports", n_ports * target.port_speed_bps, n_ports)
    ctl_bw = comps.add(f"{pool}/controller-bandwidth", "controller", target.controllers * target.controller_bandwidth_bps, target.controllers)
    ctl_io = comps.add(f"{pool}/controller-iops", "controller", target.controllers * target.controller_iops, target.controllers)
    drives = comps.add(f"{pool}/drives", "drives", target.drives, target.drives)
    port_one = min(nic.port_speed_bps, target.port_speed_bps)
    for load, service, rx_tx, port, write in (
        (p.read_load, p.read_service, nic_rx, port_out, False),
        (p.write_load, p.write_service, nic_tx, port_in, True),
    ):
        load[rx_tx] = 1.0
        load[port] = 1.0
        load[ctl_bw] = 1.0
        load[ctl_io] = 1.0 / io_bytes
        load[drives] = drive_s_per_byte(device, io_bytes, write) * (target.write_penalty if write else 1.0)
        service[rx_tx] = io_bytes / nic.port_speed_bps
        service[port] = io_bytes / port_one
        service[ctl_bw] = io_bytes / target.controller_bandwidth_bps
        if not (write and target.cache_bytes > 0):
            service[drives] = drive_service_s(device, io_bytes, write)
    fixed = transport.latency_s + target.latency_s
    if switch is not None:
        sw = comps.add(f"switch/{switch.name}", "switch", switch.switching_capacity_bps, switch.ports)
        p.read_load[sw] = p.write_load[sw] = 1.0
        p.read_service[sw] = p.write_service[sw] = io_bytes / switch.port_speed_bps
        fixed += switch.latency_s
    p.read_fixed_s = fixed
    p.write_fixed_s = fixed
    p.host_cycles_per_byte = transport.host_cpu_per_io / io_bytes + transport.host_cpu_per_byte
    p.storage_components = (nic_rx, nic_tx, port_out, port_in, ctl_bw, ctl_io, drives)
    return p


def pool_usable_bytes(target: TargetSpec, device: DeviceSpec) -> float:
    """Capacity a pool offers to volumes after protection (RAID 1/10 halve it)."""
    return target.drives * device.capacity("fabric model") * target.usable_fraction
