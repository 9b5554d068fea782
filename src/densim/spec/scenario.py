"""The scenario: hardware, cluster, VMs, placement, simulation settings.

Units are strings (``"256 GiB"``, ``"2.3 GHz"``, ``"95 W"``, ``"5 min"``) or numbers in the
canonical unit named by the attribute suffix. YAML keys are the aliases (``memory``, ``step``).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from densim.models.carbon import CarbonInputs
from densim.spec.fabric import FabricSettings
from densim.spec.gpu import HostGpus, VmGpu
from densim.spec.failures import FailureSettings
from densim.models.hardware import CpuSpec, HostCpu, PowerSpec, ServerSpec
from densim.spec.memory import MemorySettings
from densim.spec.migration import MigrationSettings
from densim.spec.power import PowerSettings
from densim.spec.storage import StorageSettings
from densim.spec.virtualization import VirtualizationSettings
from densim.rng import DEFAULT_SEED
from densim.units import Joules, PosMHz, PosSeconds, Seconds, PosMemBytes, Watts

_CFG = ConfigDict(defer_build=True, allow_inf_nan=False, frozen=True, extra="forbid", populate_by_name=True)

# sanity limits: far beyond what a run can do on any machine, small enough to refuse a typo
# (1e12 hosts, a million-year horizon at 1 ms) before anything is allocated
MAX_HOSTS = 10_000_000
MAX_VMS = 100_000_000
MAX_STEPS = 100_000_000
MAX_SEED = 2**64 - 1
MAX_VCPUS = 4096  # vCPUs of one VM (the largest hypervisors allow 768)
MAX_SOCKETS = 64  # sockets of one host
MAX_CORES = 4096  # cores of one socket
# a step must stay above float64's spacing at the run's times by this factor, so every step edge is distinct
STEP_RESOLUTION = 1000.0

TRACE_FORMATS = ("planetlab", "bitbrains", "opendc", "azure", "generic")


def _yaml_switch(v: Any) -> Any:
    """YAML 1.1 reads an unquoted ``on``/``off`` as true/false: take them back as the words."""
    return ("on" if v else "off") if isinstance(v, bool) else v


OnOff = Annotated[Literal["on", "off"], BeforeValidator(_yaml_switch)]
AutoOnOff = Annotated[Literal["auto", "on", "off"], BeforeValidator(_yaml_switch)]


class TraceRef(BaseModel):
    """A reference to trace files; never embedded data."""

    model_config = _CFG

    format: Literal["planetlab", "bitbrains", "opendc", "azure", "generic"]
    path: str = Field(description="file or folder, relative to the scenario file that names it")
    assign: Literal["cycle", "in-order"] = Field(
        default="cycle", description="VM i gets trace i mod n (cycle) or the first count traces (in-order)"
    )
    limit: int | None = Field(default=None, gt=0, description="use only the first N traces (file-name order)")
    offset: Seconds = Field(default=0.0, description="skip this much of the start of every trace")
    unknown_vms: Literal["skip", "error"] = Field(
        default="skip", description="azure: readings of VMs that are not in vmtable are skipped and counted (skip) or refused (error)"
    )


class ProfileSpec(BaseModel):
    """A synthetic CPU demand profile as a fraction of the VM's CPU capacity.

    ``u(t) = clip(mean + amplitude * cos(2 pi (t - peak_at) / period) + noise * n(t), 0, 1)`` where
    ``n`` is uniform noise in [-1, 1] drawn from a counter-based hash of (seed, VM, step), so
    results do not depend on how time is chunked.
    """

    model_config = _CFG

    kind: Literal["constant", "diurnal", "random"] = "constant"
    mean: float = Field(default=0.3, ge=0.0, le=1.0, description="mean utilisation of the VM's vCPUs")
    amplitude: float = Field(default=0.0, ge=0.0, le=1.0)
    period_s: PosSeconds = Field(default=86400.0, alias="period")
    peak_at_s: Seconds = Field(default=14 * 3600.0, alias="peak_at")
    noise: float = Field(default=0.0, ge=0.0, le=1.0)
    active_memory_fraction: float = Field(default=0.5, ge=0.0, le=1.0)

    @property
    def analytic_mean(self) -> float:
        """Expected utilisation before clipping."""
        return self.mean

    @property
    def analytic_peak(self) -> float:
        return min(1.0, self.mean + (self.amplitude if self.kind != "constant" else 0.0) + self.noise)


class ArrivalSpec(BaseModel):
    """Synthetic VMs that arrive and leave: ``count`` arrivals of a Poisson process over ``over``
    (sorted uniform times from the run's start), each living a log-normal time with median
    ``lifetime`` and log-space standard deviation ``lifetime_sigma`` (0: every VM lives exactly
    ``lifetime``). Drawn from the group's seed, so the same scenario and seed give the same VMs."""

    model_config = _CFG

    over_s: PosSeconds = Field(alias="over", description="arrivals spread over this span from the run's start")
    lifetime_s: PosSeconds = Field(alias="lifetime", description="median lifetime")
    lifetime_sigma: float = Field(default=1.0, ge=0.0, le=5.0, description="log-space standard deviation of the lifetime")


class VmGroup(BaseModel):
    """A group of VMs: sizes plus a demand source (a trace or a synthetic profile).

    For ``bitbrains`` and ``opendc`` traces the VM count and sizes come from the trace unless
    given here; for ``planetlab`` (utilisation only) ``count``, ``vcpus``, ``vcpu_speed`` and
    ``memory`` are required.
    """

    model_config = _CFG

    name: str
    count: int | None = Field(default=None, gt=0, le=MAX_VMS, strict=True)
    vcpus: int | None = Field(default=None, gt=0, le=MAX_VCPUS)
    vcpu_mhz: PosMHz | None = Field(default=None, alias="vcpu_speed")
    memory_bytes: PosMemBytes | None = Field(default=None, alias="memory")
    trace: TraceRef | None = None
    profile: ProfileSpec | None = None
    arrivals: ArrivalSpec | None = Field(default=None, description="synthetic VMs arrive and leave (profile groups only)")
    workload: dict[str, Any] | None = Field(
        default=None, description="parameters for the workload models: memory (memory_profile, memory_<field> "
                                  "overrides, guest_image: a catalog guest image for page sharing), storage (iops, "
                                  "read_fraction), virtualization (per-1,000-instruction rates such as "
                                  "pt_updates_per_kinstr)"
    )
    datastore: str | None = Field(default=None, description="storage the VM's disks live on (storage model)")
    gpu: VmGpu | None = Field(default=None, description="each VM's GPU: a vGPU profile, a MIG instance or whole GPUs")
    sizes: str | None = Field(
        default=None, description="trace groups: a CSV or Parquet file (relative to the scenario) of columns vm, vcpus, "
                                  "memory giving listed VMs their own sizes instead of the trace's (densim plan's "
                                  "right-sized VMs)")
    tags: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _source(self) -> "VmGroup":
        if (self.trace is None) == (self.profile is None):
            raise ValueError("give exactly one of 'trace' or 'profile'")
        if self.arrivals is not None and self.profile is None:
            raise ValueError("'arrivals' makes synthetic (profile) VMs arrive and leave; a trace's VMs follow the trace")
        if self.profile is not None or (self.trace is not None and self.trace.format == "planetlab"):
            missing = [k for k, v in (("count", self.count), ("vcpus", self.vcpus), ("memory", self.memory_bytes)) if v is None]
            if missing:
                raise ValueError(f"missing {', '.join(missing)} (needed for a profile or a utilisation-only trace)")
        if self.sizes is not None and self.trace is None:
            raise ValueError("'sizes' gives a trace's VMs their own sizes; a profile group's VMs share vcpus and memory")
        if self.sizes is not None and (self.vcpus is not None or self.memory_bytes is not None):
            raise ValueError("give either 'sizes' (per VM) or 'vcpus' / 'memory' (the whole group), not both")
        return self


class HostGroup(BaseModel):
    """``count`` hosts of one server type: a catalog server, inline parts, or a server with overrides."""

    model_config = _CFG

    name: str | None = None
    count: int = Field(default=1, gt=0, le=MAX_HOSTS, strict=True)
    server: str | None = Field(default=None, description="name of a server in the catalog or in parts.servers")
    cpu: HostCpu | None = None
    memory_bytes: PosMemBytes | None = Field(default=None, alias="memory")
    power: PowerSpec | None = None
    rack_units: float | None = Field(default=None, gt=0)
    power_cap_w: Watts | None = Field(
        default=None, alias="power_cap", gt=0,
        description="each host's power limit (W): the host runs at the highest P-state (power.min_clock .. base clock) "
                    "whose power at the step's demand is within it (engine stage power_cap)")
    gpus: HostGpus | None = Field(default=None, description="GPUs in each host of the group: {model, count}")

    @model_validator(mode="after")
    def _complete(self) -> "HostGroup":
        if self.server is None:
            missing = [k for k, v in (("cpu", self.cpu), ("memory", self.memory_bytes), ("power", self.power)) if v is None]
            if missing:
                raise ValueError(f"without 'server', give {', '.join(missing)}")
        return self


class ClusterSpec(BaseModel):
    model_config = _CFG

    hosts: list[HostGroup] = Field(min_length=1)
    unused_hosts: Literal["idle", "off"] = Field(
        default="idle", description="hosts that receive no VM draw idle power (idle) or nothing (off)"
    )


class PlacementSpec(BaseModel):
    """Initial placement: a policy from the placement registry and capacity limits."""

    model_config = _CFG

    policy: str = Field(default="first-fit", description="first-fit, first-fit-decreasing, best-fit, worst-fit, ...")
    cpu_overcommit: float = Field(default=1.0, gt=0, description="allowed vCPUs per physical core")
    memory_overcommit: float = Field(default=1.0, gt=0, description="allowed configured memory per byte of host memory")
    params: dict[str, Any] = Field(default_factory=dict)
    assignment: str | None = Field(
        default=None, description="policy given: a CSV or Parquet file (relative to the scenario) of columns vm, host "
                                  "naming each VM's host (a host name or 0-based index); densim plan writes one")
    gpu_policy: Literal["pack", "spread"] = Field(
        default="pack", description="which GPU of a host takes a vGPU or MIG request: the fullest that fits (pack, "
                                    "keeps whole GPUs free) or the emptiest (spread)")

    @model_validator(mode="after")
    def _given(self) -> "PlacementSpec":
        if self.policy == "given" and self.assignment is None:
            raise ValueError("policy 'given' places each VM on the host a file names: set placement.assignment")
        if self.policy != "given" and self.assignment is not None:
            raise ValueError(f"placement.assignment is the 'given' policy's file; policy {self.policy!r} does not read "
                             "it (set policy: given, or remove assignment)")
        return self


class SchedulingSpec(BaseModel):
    """VMs (tasks) that arrive and leave: online placement, the wait queue, idle hosts' power.

    With lifetimes on, each VM exists from the moment it is placed until it leaves; demand, CPU
    and power count only then. Traces that describe arrivals (OpenDC tasks) switch it on by
    default (``lifetimes: auto``); a synthetic profile or a utilisation trace has none, and its VMs
    live the whole run.
    """

    model_config = _CFG

    lifetimes: AutoOnOff = Field(
        default="auto", description="auto: on when a VM group's trace has arrivals (OpenDC tasks); off: every VM "
                                    "lives the whole run and is placed once at the start")
    queue: Literal["fifo", "backfill", "reject"] = Field(
        default="fifo", description="what does not fit at its arrival: fifo waits, and the head of the queue blocks "
                                    "the rest (OpenDC); backfill starts any waiting VM that fits; reject fails it")
    idle_hosts: OnOff = Field(
        default="on", description="a host with nothing running: stays on at idle power (on, OpenDC's behaviour) "
                                  "or switches off after off_after (off), paying boot_energy when it comes back")
    off_after_s: Seconds = Field(default=0.0, ge=0.0, alias="off_after", description="idle time before a host switches off")
    boot_energy_j: Joules | None = Field(
        default=None, alias="boot_energy",
        description="energy of one power-on (default: the host's peak power for 120 s, an estimate: typical "
                    "server POST + hypervisor boot times are 1-3 minutes)")


class SimulationSpec(BaseModel):
    model_config = _CFG

    step_s: PosSeconds = Field(default=300.0, alias="step")
    horizon_s: PosSeconds | None = Field(default=None, alias="horizon", description="default: the traces' span")
    start_s: float | None = Field(default=None, alias="start", description="Unix seconds; default: the traces' start")
    seed: int = Field(default=DEFAULT_SEED, ge=0, le=MAX_SEED, strict=True, description="0 to 2**64 - 1 (numpy's seed range)")
    cpu_model: str = Field(default="binomial", description="CPU contention model (registry 'cpu-contention')")
    burstiness: float = Field(
        default=1.0, ge=0.0, description="variance multiplier of runnable vCPUs, (ca^2+cs^2)/2 in Kingman's terms"
    )
    chunk_steps: int | None = Field(default=None, gt=0, description="time steps per engine chunk (default: by memory)")

    @field_validator("start_s")
    @classmethod
    def _start(cls, v: float | None, info: ValidationInfo) -> float | None:
        """A finite start at which float64 still resolves the step (located at ``simulation.start``)."""
        if v is None:
            return v
        if not math.isfinite(v):
            raise ValueError("start must be a finite time (Unix seconds)")
        step, horizon = info.data.get("step_s"), info.data.get("horizon_s")
        if step is None:
            return v  # the step is invalid: reported there
        spacing = math.ulp(abs(v) + (horizon or 0.0))
        if spacing * STEP_RESOLUTION > step:
            raise ValueError(f"start {v:g} s is so large that float64 times near it are {spacing:g} s apart, more than a "
                             f"thousandth of the {step:g} s step: step times would be inexact or not distinct; use Unix "
                             f"seconds (about 1.7e9 today) or a start closer to 0")
        return v

    @model_validator(mode="after")
    def _steps(self) -> "SimulationSpec":
        if self.horizon_s is not None:
            if self.step_s > self.horizon_s:
                raise ValueError(f"step ({self.step_s:g} s) is longer than the horizon ({self.horizon_s:g} s)")
            n = self.horizon_s / self.step_s
            if n > MAX_STEPS:
                raise ValueError(f"horizon / step = {n:.3g} time steps, more than {MAX_STEPS:,}: use a longer step "
                                 "or a shorter horizon")
        return self


class OutputSpec(BaseModel):
    model_config = _CFG

    vm_timeseries: AutoOnOff = Field(
        default="auto", description="write vm_steps.parquet (auto: when VMs x steps <= 5 million)"
    )
    host_timeseries: OnOff = "on"


class Parts(BaseModel):
    """A scenario's own catalog entries; same layout as the built-in catalog files."""

    model_config = ConfigDict(defer_build=True, allow_inf_nan=False, frozen=True, extra="allow")

    cpus: list[CpuSpec] = Field(default_factory=list)
    servers: list[ServerSpec] = Field(default_factory=list)


class Scenario(BaseModel):
    """A complete what-if scenario."""

    model_config = _CFG

    name: str = "scenario"
    description: str = ""
    imports: list[str] = Field(default_factory=list, description="files merged under this one, relative to it")
    parts: Parts = Field(default_factory=Parts)
    cluster: ClusterSpec
    vms: list[VmGroup] = Field(min_length=1)
    placement: PlacementSpec = Field(default_factory=PlacementSpec)
    simulation: SimulationSpec = Field(default_factory=SimulationSpec)
    scheduling: SchedulingSpec = Field(default_factory=SchedulingSpec)
    output: OutputSpec = Field(default_factory=OutputSpec)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    fabric: FabricSettings = Field(default_factory=FabricSettings)
    virtualization: VirtualizationSettings = Field(default_factory=VirtualizationSettings)
    carbon: CarbonInputs | None = Field(default=None, description="operational and embodied carbon per VM-year (summary.carbon)")
    failures: FailureSettings | None = Field(default=None, description="host and domain failures, HA admission and restarts")
    migration: MigrationSettings = Field(default_factory=MigrationSettings)
    power: PowerSettings = Field(default_factory=PowerSettings, description="P-states of power-capped hosts (cluster.hosts[].power_cap)")
    base_dir: str = Field(default=".", description="set by the loader: folder of the scenario file", exclude=True)
