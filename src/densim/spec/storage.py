"""Storage in scenarios: datastores VMs use (engine), and storage-only files for ``densim io``/``size``.

Three schemas:

* :class:`StorageSettings`: the ``storage:`` section of a cluster scenario. ``model: queueing``
  switches per-VM I/O on; ``datastores`` name the arrays VMs' disks live on (``vms[].datastore``).
* :class:`IoScenario`: a storage-only file for ``densim io FILE``: a system (host, controllers,
  arrays, enclosures) and a workload (open: an arrival rate; closed: workers x queue depth).
* :class:`SizingScenario`: a file for ``densim size FILE``: a target and a candidate set.

Catalog references (devices, controllers, enclosures, servers, io_stacks) are checked after
validation, and every problem is reported as ``FILE:field.path: problem``.

Counts have sanity bounds (:data:`MAX_DRIVES`, :data:`MAX_CONTROLLERS`, ...): not product limits,
but far beyond any real system, so that a damaged value (a controller count of 2^64, a
``drives_max`` of 10^9) is refused with its field path before ``densim io`` builds one queueing
station per drive and controller, or ``densim size`` scans a drive range that never ends. Numbers
must be finite.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from densim.units import Bytes, PerSecond, PosBytes, PosMHz, PosSeconds, Seconds

_CFG = ConfigDict(defer_build=True, allow_inf_nan=False, frozen=True, extra="forbid", populate_by_name=True)

# sanity bounds on counts (see the module docstring): a value above one is a typo or a damaged file
MAX_DRIVES = 10_000  # drives in one array (and the sizing search's drives_max, a server's bays)
MAX_CONTROLLERS = 1_024  # controllers in one group (and the sizing search's extra_controllers)
MAX_ENCLOSURES = 10_000  # drive enclosures of one kind
MAX_CORES = 65_536  # host cores (the inventory readers' vCPU bound, densim.workloads.readers._checks.MAX_VCPUS)
MAX_OUTSTANDING = 1_000_000  # closed workload: workers x queue_depth (the MVA solve is O(outstanding): ~0.5 s at the bound)
MAX_USERS = 10**10  # sizing target users (more than the world's population)

Cores = Annotated[int, Field(gt=0, le=MAX_CORES, strict=True)]

RaidName = Literal["jbod", "raid0", "raid1", "raid10", "raid5", "raid6"]


def _check_drives(v: int, info: ValidationInfo) -> int:
    from densim.models.storage import raid_check

    raid = info.data.get("raid")
    if raid is not None:
        problem = raid_check(raid, v)
        if problem:
            raise ValueError(problem)
    return v


# --------------------------------------------------------------------------------------------
# engine: datastores


class DatastoreSpec(BaseModel):
    """An array VMs' disks live on."""

    model_config = _CFG

    name: str
    device: str = Field(description="catalog device name")
    raid: RaidName = "jbod"
    drives: int = Field(default=1, gt=0, le=MAX_DRIVES, strict=True)
    controller: str | None = Field(default=None, description="catalog controller model (none: direct attach)")
    controllers: int = Field(default=1, gt=0, le=MAX_CONTROLLERS, strict=True)
    scope: Literal["shared", "per-host"] = Field(
        default="shared", description="one array for all VMs naming it (SAN/NAS) or one per host (local disks)"
    )

    @field_validator("drives")
    @classmethod
    def _raid_drives(cls, v: int, info: ValidationInfo) -> int:
        return _check_drives(v, info)


class HciPolicyGroup(BaseModel):
    """The storage policy of one VM group on the HCI datastore and the data each of its VMs stores."""

    model_config = _CFG

    vms: str = Field(description="VM group name (vms[].name)")
    policy: str = Field(description="storage policy (densim.models.storage.hci.POLICIES), e.g. vsan-raid5, nutanix-rf2")
    disk_bytes: PosBytes = Field(alias="disk", description="data each VM of the group stores (logical, before dedupe/compression)")
    cold_fraction: float | None = Field(default=None, ge=0.0, le=1.0,
                                        description="EC-X policies: the write-cold share of the data EC-X codes (required for them)")

    @model_validator(mode="after")
    def _policy(self) -> "HciPolicyGroup":
        from densim.models.storage.hci import POLICIES

        if self.policy not in POLICIES:
            raise ValueError(f"unknown storage policy {self.policy!r}; known: {', '.join(POLICIES)}")
        ecx = POLICIES[self.policy].kind == "rf-ecx"
        if ecx and self.cold_fraction is None:
            raise ValueError(f"{self.policy} codes only write-cold data: give cold_fraction (the share of the data that is "
                             "write-cold, 0..1)")
        if not ecx and self.cold_fraction is not None:
            raise ValueError(f"cold_fraction applies to EC-X policies (nutanix-rf2-ecx, nutanix-rf3-ecx), not {self.policy}")
        return self


class HciSpec(BaseModel):
    """A hyper-converged datastore (vSAN-, Nutanix-style) built from every host's disks (``storage.hci``).

    VMs name it as their datastore (``vms[].datastore`` or ``storage.default_datastore``). Every VM group on
    it needs a ``policies`` entry. See docs/background/hci.md.
    """

    model_config = _CFG

    name: str = Field(default="hci", description="the datastore's name, as VMs name it")
    device: str = Field(description="catalog device of every capacity disk")
    disks_per_host: int = Field(gt=0, le=MAX_DRIVES, strict=True)
    nic: str = Field(description="catalog NIC (nics) carrying the storage traffic of each host")
    network_latency_s: Seconds = Field(default=20e-6, alias="network_latency",
                                       description="per remote I/O: switch, wire and storage stack of both hosts (E: 20 us)")
    policies: list[HciPolicyGroup] = Field(min_length=1)
    dedupe_compression: float = Field(default=1.0, ge=1.0, description="data reduction factor (an input, >= 1)")
    slack: float = Field(default=0.25, ge=0.0, lt=1.0, description="slack / operations reserve: share of raw kept free")
    rebuild_reserve_hosts: int = Field(default=1, ge=0, le=16, strict=True,
                                       description="hosts' raw kept free to re-protect a failed host's data")
    rebuild_share: float = Field(gt=0.0, le=1.0, description="share of each host's disks and adapter a resync may take "
                                 "(vSAN adaptive resync: 0.2; Nutanix admission control: 0.25)")
    repair_delay_s: Seconds = Field(alias="repair_delay", description="how long a host is absent before its data is "
                                    "rebuilt elsewhere (vSAN object repair timer: 60 min; Nutanix node: 60 s)")
    resync_cycles_per_byte: float = Field(
        default=1.0, ge=0.0, description="host CPU cycles per byte a resync moves through a host's storage stack (each "
        "byte read, sent, received or written counts; 3k + 1 per rebuilt byte, k the pieces read): taken from the hosts' "
        "CPU while the resync runs (E: 1; the 1 GHz per Gbit/s rule of thumb, 8 cycles per byte without offloads, less "
        "an order of magnitude for segmentation/receive offloads and zero-copy; docs/background/hci.md)")
    maintenance_mode: Literal["ensure-accessibility", "full-data-migration"] = Field(
        default="ensure-accessibility", description="a host entering maintenance: leave its data (absent, rebuilt after "
        "repair_delay) or copy it away first")

    @model_validator(mode="after")
    def _groups(self) -> "HciSpec":
        names = [g.vms for g in self.policies]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"one policy per VM group: {', '.join(dup)} listed twice")
        from densim.models.storage.hci import POLICIES

        flav = {POLICIES[g.policy].flavour for g in self.policies}
        if len(flav) > 1:
            raise ValueError("policies mix vsan and nutanix: one datastore runs one product's policies")
        return self


class HciPlanSpec(BaseModel):
    """``densim plan``'s ``hci`` section: every VM's data on a hyper-converged datastore of the candidate's hosts."""

    model_config = _CFG

    device: str = Field(description="catalog device of every capacity disk")
    disks_per_host: int = Field(gt=0, le=MAX_DRIVES, strict=True)
    nic: str = Field(description="catalog NIC carrying each host's storage traffic")
    policy: str = Field(description="storage policy of every VM (densim.models.storage.hci.POLICIES)")
    disk_bytes: PosBytes = Field(alias="disk", description="data each VM stores (logical)")
    cold_fraction: float | None = Field(default=None, ge=0.0, le=1.0, description="EC-X policies: the write-cold share")
    dedupe_compression: float = Field(default=1.0, ge=1.0)
    slack: float = Field(default=0.25, ge=0.0, lt=1.0)
    rebuild_reserve_hosts: int = Field(default=1, ge=0, le=16, strict=True)
    rebuild_share: float = Field(gt=0.0, le=1.0, description="share of each host a resync may take (vSAN 0.2, Nutanix 0.25)")

    @model_validator(mode="after")
    def _policy(self) -> "HciPlanSpec":
        HciPolicyGroup.model_validate({"vms": "all", "policy": self.policy, "disk": self.disk_bytes,
                                       "cold_fraction": self.cold_fraction})
        return self


class StorageSettings(BaseModel):
    """Per-VM storage: devices, arrays and datastores VMs use. Owned by the storage model.

    model: none (the default) switches the mechanism off; ``queueing`` turns per-VM disk traffic
    (trace channels ``disk_read_Bps``/``disk_write_Bps`` or ``vms[].workload`` ``iops``) into load
    on each VM's datastore and a per-VM I/O latency per step.
    """

    model_config = _CFG

    model: Literal["none", "queueing"] = "none"
    datastores: list[DatastoreSpec] = Field(default_factory=list)
    default_datastore: str | None = Field(default=None, description="datastore of VMs that name none")
    block_size_bytes: PosBytes = Field(default=16384.0, alias="block_size", description="mean I/O size, to turn bytes/s into IOPS")
    read_fraction: float = Field(default=0.7, ge=0.0, le=1.0, description="for VMs whose source gives no read/write split")
    burstiness: float = Field(default=1.0, ge=0.0, description="(ca^2 + cs^2)/2 multiplier on queueing delay (Kingman)")
    cycles_per_io: float = Field(default=0.0, ge=0.0, description="host CPU cycles per I/O added to the VM's host")
    hci: HciSpec | None = Field(default=None, description="a hyper-converged datastore from every host's disks")

    @model_validator(mode="after")
    def _names(self) -> "StorageSettings":
        names = [d.name for d in self.datastores] + ([self.hci.name] if self.hci is not None else [])
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"datastore names must be unique: {', '.join(sorted(dup))}")
        if self.default_datastore is not None and self.default_datastore not in names:
            raise ValueError(f"default_datastore {self.default_datastore!r} is not a datastore")
        if self.model == "queueing" and not self.datastores and self.hci is None:
            raise ValueError("model 'queueing' needs at least one datastore (or storage.hci)")
        return self


# --------------------------------------------------------------------------------------------
# storage-only scenario for `densim io`


class HostIoSpec(BaseModel):
    """The host: a catalog server (cores, clock, power, price) or cores + clock; the I/O stack cost."""

    model_config = _CFG

    server: str | None = Field(default=None, description="catalog server (cores, clock, power, price)")
    cores: Cores | None = None
    clock_mhz: PosMHz | None = Field(default=None, alias="clock")
    stack: str | None = Field(default=None, description="catalog io_stack (cycles per I/O)")
    cycles_per_io: float | None = Field(default=None, ge=0)


class ControllerGroupSpec(BaseModel):
    model_config = _CFG

    name: str
    model: str = Field(description="catalog controller")
    count: int = Field(default=1, gt=0, le=MAX_CONTROLLERS, strict=True)


class ArraySpec(BaseModel):
    model_config = _CFG

    name: str
    device: str = Field(description="catalog device")
    raid: RaidName = "jbod"
    drives: int = Field(gt=0, le=MAX_DRIVES, strict=True)
    controllers: str | None = Field(default=None, description="name of a controller group (none: direct attach)")
    share: float = Field(default=1.0, ge=0.0, description="relative share of the workload's I/Os")

    @field_validator("drives")
    @classmethod
    def _raid_drives(cls, v: int, info: ValidationInfo) -> int:
        return _check_drives(v, info)


class EnclosureGroupSpec(BaseModel):
    model_config = _CFG

    model: str = Field(description="catalog enclosure")
    count: int = Field(default=1, gt=0, le=MAX_ENCLOSURES, strict=True)


class SystemSpec(BaseModel):
    model_config = _CFG

    host: HostIoSpec = Field(default_factory=HostIoSpec)
    controllers: list[ControllerGroupSpec] = Field(default_factory=list)
    arrays: list[ArraySpec] = Field(min_length=1)
    enclosures: list[EnclosureGroupSpec] = Field(default_factory=list)


class IoPatternSpec(BaseModel):
    model_config = _CFG

    read_fraction: float = Field(default=0.7, ge=0.0, le=1.0)
    block_size_bytes: PosBytes = Field(default=4096.0, alias="block_size")
    access: Literal["random", "sequential"] = "random"
    arrival_cv2: float = Field(default=1.0, ge=0.0, description="squared CV of inter-arrival times (open; Kingman)")
    service_cv2: float = Field(default=1.0, ge=0.0, description="squared CV of service times")


class IoWorkloadSpec(IoPatternSpec):
    """Open (``iops``) or closed (``workers`` x ``queue_depth`` outstanding, optional think time)."""

    mode: Literal["open", "closed"] = "closed"
    iops: PerSecond | None = Field(default=None, gt=0, description="open: arrival rate")
    workers: int = Field(default=1, gt=0, le=MAX_OUTSTANDING, strict=True)
    queue_depth: int = Field(default=1, gt=0, le=MAX_OUTSTANDING, strict=True, description="closed: outstanding I/Os per worker")
    think_time_s: Seconds = Field(default=0.0, alias="think_time")

    @model_validator(mode="after")
    def _mode(self) -> "IoWorkloadSpec":
        if self.mode == "open" and self.iops is None:
            raise ValueError("an open workload needs 'iops' (the arrival rate)")
        if self.mode == "closed" and self.outstanding > MAX_OUTSTANDING:
            raise ValueError(f"workers x queue_depth = {self.outstanding:,} outstanding I/Os, more than "
                             f"{MAX_OUTSTANDING:,} (a sanity bound; the closed solve takes time in proportion)")
        return self

    @property
    def outstanding(self) -> int:
        return self.workers * self.queue_depth


class IoScenario(BaseModel):
    """A storage-only scenario for ``densim io``."""

    model_config = _CFG

    name: str = "io"
    description: str = ""
    parts: dict[str, list[dict[str, Any]]] = Field(default_factory=dict, description="own catalog entries by section")
    system: SystemSpec
    workload: IoWorkloadSpec


# --------------------------------------------------------------------------------------------
# sizing


class SizingTarget(BaseModel):
    """IOPS at <= a latency, or users at <= a response time."""

    model_config = _CFG

    iops: PerSecond | None = Field(default=None, gt=0)
    max_latency_s: PosSeconds | None = Field(default=None, alias="max_latency")
    latency_metric: Literal["mean", "p99"] = "mean"
    capacity_bytes: Bytes = Field(default=0.0, alias="capacity", description="usable capacity needed")
    users: int | None = Field(default=None, gt=0, le=MAX_USERS, strict=True)
    iops_per_user: float | None = Field(default=None, ge=0)
    requests_per_user_s: float | None = Field(default=None, ge=0, alias="requests_per_user_per_s")
    ios_per_request: float = Field(default=1.0, ge=0)
    cpu_per_request_s: Seconds = Field(default=0.0, alias="cpu_per_request", description="CPU time per request on one core")
    max_response_s: PosSeconds | None = Field(default=None, alias="max_response")
    max_cpu_utilisation: float = Field(default=1.0, gt=0, le=1.0)

    @model_validator(mode="after")
    def _kind(self) -> "SizingTarget":
        if (self.iops is None) == (self.users is None):
            raise ValueError("give exactly one of 'iops' (with max_latency) or 'users' (with max_response)")
        if self.iops is not None and self.max_latency_s is None:
            raise ValueError("an IOPS target needs 'max_latency'")
        if self.users is not None:
            missing = [k for k, v in (("iops_per_user", self.iops_per_user), ("requests_per_user_per_s", self.requests_per_user_s),
                                      ("max_response", self.max_response_s)) if v is None]
            if missing:
                raise ValueError(f"a users target needs {', '.join(missing)}")
        return self


class SizingCandidates(BaseModel):
    model_config = _CFG

    devices: list[str] = Field(min_length=1)
    raid: list[RaidName] = Field(default_factory=lambda: ["raid10"], min_length=1)
    drives_min: int = Field(default=1, gt=0, le=MAX_DRIVES, strict=True)
    drives_max: int = Field(default=96, gt=0, le=MAX_DRIVES, strict=True)
    controllers: list[str] = Field(default_factory=list, description="catalog controllers (NVMe drives attach directly)")
    extra_controllers: int = Field(default=1, ge=0, le=MAX_CONTROLLERS, strict=True,
                                   description="also try up to this many controllers beyond the minimum")
    cores: list[Cores] = Field(default_factory=lambda: [8, 16, 24, 32, 48, 64], min_length=1)
    clock_mhz: PosMHz = Field(default=2600.0, alias="clock")
    stack: str | None = Field(default="linux-kernel-irq", description="catalog io_stack")
    cycles_per_io: float | None = Field(default=None, ge=0)
    enclosure: str | None = Field(default=None, description="catalog enclosure for drives beyond the server's bays")

    @model_validator(mode="after")
    def _drive_range(self) -> "SizingCandidates":
        if self.drives_min > self.drives_max:
            raise ValueError(f"drives_min ({self.drives_min}) is above drives_max ({self.drives_max})")
        return self


class SizingCosts(BaseModel):
    """Prices not in the catalog: the server chassis and CPU cores (per core)."""

    model_config = _CFG

    server_base_usd: float = Field(default=4000.0, ge=0)
    per_core_usd: float = Field(default=100.0, ge=0)
    server_rack_units: float = Field(default=2.0, gt=0)
    server_bays: int = Field(default=24, ge=0, le=MAX_DRIVES, strict=True)
    server_power_w: float = Field(default=150.0, ge=0, description="server power without drives and controllers")
    per_core_power_w: float = Field(default=5.0, ge=0)


class SizingScenario(BaseModel):
    model_config = _CFG

    name: str = "sizing"
    description: str = ""
    parts: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    target: SizingTarget
    workload: IoPatternSpec = Field(default_factory=IoPatternSpec)
    candidates: SizingCandidates
    costs: SizingCosts = Field(default_factory=SizingCosts)
    top: int = Field(default=5, gt=0)


__all__ = [
    "DatastoreSpec",
    "HciPlanSpec",
    "HciPolicyGroup",
    "HciSpec",
    "StorageSettings",
    "IoScenario",
    "IoWorkloadSpec",
    "IoPatternSpec",
    "SizingScenario",
    "SystemSpec",
]
