"""The candidates file of ``densim plan``: host candidates, QoS bounds, right-sizing and optimisation settings."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from densim.models.carbon import CarbonInputs
from densim.models.cost import BomLine, CostInputs
from densim.models.hardware import HostCpu, PowerSpec
from densim.spec.forecast import ForecastSpec
from densim.spec.gpu import HostGpus, VmGpu
from densim.spec.memory import MemorySettings
from densim.spec.migration import ZERO_SCAN_BPS, check_zero_share
from densim.spec.storage import HciPlanSpec
from densim.units import BytesPerSecond, PosBytes, PosMemBytes, MemBytes, PosMHz, PosSeconds, Seconds, Watts

_LOCAL_CFG = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)


class LocalStorage(BaseModel):
    """A candidate host's local datastore that all its VMs share."""

    model_config = _LOCAL_CFG

    device: str = Field(description="catalog device (section devices)")
    drives: int = Field(default=1, ge=1)
    raid: str = Field(default="jbod", description="jbod, raid0, raid1, raid10, raid5, raid6")
    controller: str | None = Field(default=None, description="catalog controller (section controllers)")
    controllers: int = Field(default=1, ge=0)
    block_size_bytes: PosBytes = Field(default=4096.0, alias="block_size", description="bytes per I/O")
    read_fraction: float = Field(default=0.7, ge=0, le=1, description="used in steps without traffic")
    burstiness: float = Field(default=1.0, ge=0, description="(ca^2 + cs^2) / 2 of the Allen-Cunneen wait")

    @model_validator(mode="after")
    def _raid(self) -> "LocalStorage":
        from densim.models.storage import raid_check

        problem = raid_check(self.raid, self.drives)
        if problem:
            raise ValueError(problem)
        return self


_CFG = ConfigDict(defer_build=True, allow_inf_nan=False, frozen=True, extra="forbid", populate_by_name=True)


class Candidate(BaseModel):
    """One host configuration: CPU, memory, power model, and a parts list or a price."""

    model_config = _CFG

    name: str
    cpu: HostCpu
    memory_bytes: PosMemBytes = Field(alias="memory")
    hypervisor_memory_bytes: MemBytes = Field(default=0.0, alias="hypervisor_memory", description="memory the hypervisor keeps")
    power: PowerSpec
    bom: list[BomLine] | None = Field(default=None, description="parts from catalog/bom.yaml (capex = their sum)")
    price_usd: float | None = Field(default=None, ge=0, description="capex per host when there is no bom")
    price_date: str | None = None
    rack_units: float = Field(default=1.0, gt=0)
    storage: LocalStorage | None = Field(default=None, description="local datastore shared by the host's VMs")
    power_cap_w: Watts | None = Field(default=None, gt=0, alias="power_cap",
                                      description="each host's power limit: the plan places on the capacity of the highest "
                                                  "P-state at which a fully busy host stays within it, and racks it at this power")
    min_mhz: PosMHz = Field(default=800.0, alias="min_clock", description="lowest P-state clock (with power_cap)")
    pstate_step_mhz: PosMHz = Field(default=100.0, alias="pstate_step", description="clock step between P-states (with power_cap)")
    gpus: HostGpus | None = Field(default=None, description="GPUs in each host: {model, count} (with the plan's gpu section)")


class PlanGuestImage(BaseModel):
    """The guest image the VMs whose names match ``vms`` (or whose guest OS matches ``os``) boot from, for the memory
    check's page sharing."""

    model_config = _CFG
    vms: str | None = Field(default=None, description="VM names (glob) of the inventory")
    os: str | None = Field(default=None, description="guest OS (glob, case-insensitive) as the inventory gives it: RVTools "
                                                     "vInfo 'OS according to the configuration file', else 'OS according "
                                                     "to the VMware Tools'; instead of vms")
    image: str = Field(description="catalog guest image (section guest_images; densim models lists them as guest-image)")

    @model_validator(mode="after")
    def _one_selector(self):
        if (self.vms is None) == (self.os is None):
            raise ValueError("give the VMs by name (vms) or by guest OS (os), one of the two")
        return self


class PlanGpuRequest(BaseModel):
    """The GPU every VM whose name matches ``vms`` asks for (a vGPU, a MIG instance or whole GPUs)."""

    model_config = _CFG
    vms: str = Field(description="VM names (glob) of the inventory")
    gpu: VmGpu

    @model_validator(mode="after")
    def _counted(self) -> "PlanGpuRequest":
        if self.gpu.mode == "passthrough" and self.gpu.count is None:
            raise ValueError("gpu mode 'passthrough' needs 'count' (only an OpenDC trace group of a scenario takes it per task)")
        return self


class PlanInference(BaseModel):
    """An LLM served at a target token rate (densim.models.inference.size on the candidate's GPUs)."""

    model_config = _CFG
    name: str
    model: str = Field(description="LLM in the catalog (section llm_models)")
    precision: Literal["fp16", "fp8"] = "fp16"
    tokens_in: int = Field(gt=0)
    tokens_out: int = Field(gt=0)
    tokens_per_s: float = Field(gt=0, description="target output tokens per second")
    ttft_s: PosSeconds = Field(default=2.0, alias="ttft", description="bound on the p95 time to first token, e.g. '2 s'")
    tpot_s: PosSeconds = Field(default=0.2, alias="tpot", description="bound on the time per output token, e.g. '200 ms'")
    kv_read: Literal["per-kv-head", "per-query-head"] = Field(
        default="per-kv-head", description="how the serving engine's decode kernel reads a grouped-query-attention "
        "model's KV cache: per-kv-head (GQA-aware kernels, e.g. TensorRT-LLM's XQA from v0.8) or per-query-head (one "
        "thread block per query head: older engines read it query heads / KV heads times)")


class PlanGpu(BaseModel):
    """GPU demand of the plan: the inventory VMs' GPU requests and LLM services; candidates give ``gpus``."""

    model_config = _CFG
    requests: list[PlanGpuRequest] = Field(default_factory=list)
    inference: list[PlanInference] = Field(default_factory=list)


class RackSpec(BaseModel):
    """The racks the hosts go in: a power budget, the circuits that feed it, and rack units (:mod:`densim.models.racks`)."""

    model_config = _CFG

    budget_w: Watts = Field(alias="budget", gt=0, description="power contracted per rack (e.g. '8 kW')")
    breaker_a: float = Field(alias="breaker", gt=0, description="each feed's breaker rating, A")
    voltage_v: float = Field(default=208.0, alias="voltage", gt=0, description="feed voltage (line to line for three phase), V")
    phases: Literal[1, 3] = Field(default=1, description="1 or 3")
    feeds: Literal["a/b", "single"] = Field(default="a/b", description="a/b: two feeds, either carries the whole rack alone")
    continuous_derating: float = Field(default=0.8, gt=0, le=1.0, description="share of the breaker rating a continuous "
                                       "load may draw (NEC 210.19(A)/210.20(A): 80 %; 1.0 for a 100 %-rated assembly)")
    power_factor: float = Field(default=1.0, gt=0, le=1.0, description="W per VA of the hosts' supplies (about 0.95-0.99 for "
                                "80 PLUS supplies at load; 1.0 treats VA as W)")
    rack_units: float = Field(default=42.0, gt=0, description="rack units for hosts")


class CurrentHosts(BaseModel):
    """One group of the hosts that run the VMs today, for the report's today-vs-proposed comparison."""

    model_config = _CFG

    name: str
    count: int = Field(ge=1, description="hosts of this configuration today")
    cpu: HostCpu
    memory_bytes: PosMemBytes = Field(alias="memory")
    power: PowerSpec | None = Field(default=None, description="power model: today's mean power is estimated from it")
    rack_units: float | None = Field(default=None, gt=0)


class QosSpec(BaseModel):
    """Bounds every VM (and host) must meet at every step of the demand series."""

    model_config = _CFG

    cpu_ready_pct: float = Field(default=5.0, gt=0, description="worst VM's CPU Ready % per vCPU, every step")
    vcpus_per_core: float = Field(default=16.0, gt=0, description="max vCPUs per physical core, threads not counted "
                                  "(the vCPU:pCore ratio; the rule of a scenario's placement.cpu_overcommit). 16 = the "
                                  "old qos.cpu_overcommit default of 8 per logical CPU on SMT-2 hosts")
    memory_overcommit: float = Field(default=1.0, gt=0, description="max configured memory / host memory")
    max_cpu_utilisation: float = Field(default=1.0, gt=0, le=1.0, description="cap on summed demand / host MHz")
    ha_spare_hosts: int = Field(default=0, ge=0, description="N+k: k spare hosts")
    ha_reserve_percent: float = Field(default=0.0, ge=0, lt=100, description="keep this share of the hosts spare "
                                      "(spare = ceil(N p / (100 - p)) for N hosts packed); the larger of this and ha_spare_hosts")
    ha_domain_hosts: int = Field(default=0, ge=0, description="hosts per failure domain (rack, chassis): keep one whole "
                                 "domain spare; the largest of the three")
    memory_slowdown: float = Field(default=1.10, ge=1.0, description="worst VM's memory slowdown X0/X, every step "
                                   "(checked when the plan has a memory section)")
    io_latency_ms: float = Field(default=20.0, gt=0, description="worst host's mean I/O latency, every step "
                                 "(checked when a candidate has storage and the inventory disk series)")

    @model_validator(mode="before")
    @classmethod
    def _old_cpu_overcommit(cls, data: object) -> object:
        # qos.cpu_overcommit counted vCPUs per LOGICAL CPU: read as per core it would halve every SMT-2 host's
        # vCPU capacity without a word, so an old file is refused with the translation, never re-interpreted
        if isinstance(data, dict) and "cpu_overcommit" in data:
            from pydantic_core import InitErrorDetails, PydanticCustomError, ValidationError

            old = data["cpu_overcommit"]
            raise ValidationError.from_exception_data(cls.__name__, [InitErrorDetails(
                type=PydanticCustomError("field_renamed", "{why}", {"why": old_cpu_overcommit_message(old)}), loc=("cpu_overcommit",),
                input=old)])
        return data


def old_cpu_overcommit_message(old: object) -> str:
    """Why ``qos.cpu_overcommit`` is refused and what to write instead, with the file's value ``old`` translated."""
    try:
        v = float(old)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        v = math.nan
    ex = (f"here {v:g} per logical CPU on SMT-2 hosts = qos.vcpus_per_core: {2 * v:g}; without SMT {v:g}"
          if math.isfinite(v) and v > 0 else "e.g. 8 per logical CPU on SMT-2 hosts = qos.vcpus_per_core: 16")
    return ("no longer read: it counted vCPUs per logical CPU; write qos.vcpus_per_core instead (vCPUs per physical "
            f"core, as a scenario's placement.cpu_overcommit counts them) = the old value x threads per core ({ex})")


class RightsizeSpec(BaseModel):
    model_config = _CFG

    enabled: bool = False
    percentile: float = Field(default=95.0, ge=0, le=100)
    headroom: float = Field(default=0.2, ge=0)
    from_snapshot: bool = Field(default=False, description="right-size even an inventory with one sample per VM (an RVTools "
                                "export); off: such an inventory is not right-sized, since one sample says nothing about peaks")


class OptimiseSpec(BaseModel):
    """CP-SAT after the heuristic: exact or time-limited vector packing on vCPU slots, memory and the
    summed CPU demand (and memory in use) per window; adopted when it saves hosts and every host still
    meets the CPU Ready bound at full resolution."""

    model_config = _CFG

    enabled: bool = False
    windows: int = Field(default=48, ge=1, description="demand windows CP-SAT starts from (highest total demand)")
    rounds: int = Field(default=3, ge=1, description="solve rounds adding the windows the answer overloads")
    max_vms: int = Field(default=3000, ge=1, description="larger inventories keep the heuristic")
    max_time_s: float = Field(default=5.0, gt=0)
    max_deterministic_time: float = Field(default=3.0, gt=0)


class LicenceUse(BaseModel):
    """A licensed product (catalog section licensing_products) applied to every candidate."""

    model_config = _CFG

    product: str = Field(description="name in catalog/licensing.yaml (section licensing_products)")
    price_usd: float | None = Field(default=None, ge=0, description="your price for the product's price_covers units "
                                    "(replaces the catalog's list price)")
    vms: str = Field(default="*", description="per-VM products: VM names (glob) that run the product")


class LicensingSpec(BaseModel):
    """Licences that decide host choices, and a what-if over their prices."""

    model_config = _CFG

    products: list[LicenceUse | str] = Field(default_factory=list, description="products to license on every candidate "
                                             "(a catalog name, or product with price_usd / vms)")
    what_if: list[float] = Field(default=[0.5, 1.0, 1.5, 2.0], min_length=1,
                                 description="licence price multipliers for the what-if table (every licence)")

    @field_validator("products")
    @classmethod
    def _names(cls, v: list) -> list[LicenceUse]:
        return [LicenceUse(product=p) if isinstance(p, str) else p for p in v]

    @field_validator("what_if")
    @classmethod
    def _non_negative(cls, v: list[float]) -> list[float]:
        if any(m < 0 for m in v):
            raise ValueError("price multipliers must be >= 0")
        return v


class ConfidenceSpec(BaseModel):
    """How the plan's data-quality rating puts an interval on the host count (docs/howto/capacity-plan.md)."""

    model_config = _CFG

    resamples: int = Field(default=20, ge=0, le=1000, description="bootstrap resamples of whole days of the demand series, "
                           "each re-planned on the chosen candidate (0: no interval)")
    level: float = Field(default=0.9, gt=0, lt=1, description="central share of the resampled host counts the interval covers")


class GroupsSpec(BaseModel):
    """How VMs are grouped to move together (densim.tools.plan.groups; docs/howto/migration-waves.md)."""

    model_config = _CFG

    by: list[str] = Field(default_factory=lambda: ["vapp", "cluster_rule", "network"],
                          description="evidence that ties VMs: vapp, folder, resource_pool, annotation, cluster_rule, "
                          "network, attr:<vInfo column>, name:<regular expression>")
    max_shared: int = Field(default=50, ge=2, description="a value shared by more VMs than this ties nothing (shared "
                            "infrastructure, such as a common port group); listed in the summary")
    file: str | None = Field(default=None, description="CSV vm,group: these VMs take the file's group (--groups overrides)")


class LandingHosts(BaseModel):
    """Hosts of the landing cluster from a time on (the count in service from then)."""

    model_config = _CFG

    at_s: Seconds = Field(alias="at", description="from the programme's start")
    hosts: int = Field(ge=0, description="hosts in service from then on")


class WavesSpec(BaseModel):
    """A migration programme onto the chosen candidate: move groups in waves (densim.tools.plan.waves)."""

    model_config = _CFG

    start: float | None = Field(default=None, description="first maintenance window's start (Unix seconds, or an ISO date-time "
                         "string); default: the inventory's start")
    window_s: PosSeconds = Field(default=4 * 3600.0, alias="window", description="maintenance window of each wave")
    every_s: PosSeconds = Field(default=86400.0, alias="every", description="one window per this period (a wave per night)")
    link_bps: BytesPerSecond = Field(default=1.25e9, alias="link", gt=0,
                                     description="migration bandwidth of the programme, shared equally by the concurrent moves "
                                     "(estimate: one 10 GbE link)")
    max_concurrent: int = Field(default=8, ge=1, description="moves at once (vCenter: 8 vMotions per host on 10 GbE)")
    dirty_rate_bps: BytesPerSecond = Field(default=100e6, alias="dirty_rate",
                                           description="page dirtying of a VM at 100 % CPU, scaled by its CPU use (estimate; "
                                           "the engine's migration.dirty_rate)")
    wws_fraction: float = Field(default=0.1, gt=0, le=1, description="writable working set as a share of the VM's memory (estimate)")
    zero_fraction: float | Literal["consumed"] = Field(
        default=0.0, description="share of each VM's memory never touched (zero pages), sent as flags in the first pre-copy "
        "round (the engine's migration.zero_fraction); 'consumed': per VM 1 - Consumed / configured memory from an RVTools "
        "export's vMemory tab (host memory the VM has touched), at most 1 - wws_fraction, 0 for a VM without the figure")
    zero_scan_bps: BytesPerSecond = Field(default=ZERO_SCAN_BPS, alias="zero_scan_rate", gt=0,
                                          description="read rate of the migration thread checking pages for zero")
    downtime_target_s: PosSeconds = Field(default=0.3, alias="downtime_target", description="stop-and-copy when the remainder "
                                          "fits this (QEMU default 300 ms)")
    max_rounds: int = Field(default=30, ge=1, description="live pre-copy rounds at most")
    resume_s: Seconds = Field(default=0.02, alias="resume", description="VM start-up on the destination (estimate)")
    landing: list[LandingHosts] | None = Field(default=None, description="landing hosts in service over time (default: the "
                                               "chosen candidate's count from the start)")
    blocked: Literal["hold", "move"] = Field(default="hold", description="hold: a group with a VM the readiness checks "
                                             "BLOCK waits (reported); move: plan it anyway")
    groups: GroupsSpec = Field(default_factory=GroupsSpec)
    step_s: PosSeconds = Field(default=3600.0, alias="step", description="step of the landing cluster's engine run")
    failures: dict | None = Field(default=None, description="the landing run's failures section (scenario syntax)")
    max_waves: int = Field(default=366, ge=1, description="windows tried at most")

    @field_validator("start", mode="before")
    @classmethod
    def _date(cls, v):
        if isinstance(v, str):
            import datetime as dt

            try:
                t = dt.datetime.fromisoformat(v.strip())
            except ValueError:
                raise ValueError(f"not an ISO date-time: {v!r} (e.g. 2026-12-01T22:00)") from None
            return (t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)).timestamp()
        if hasattr(v, "timestamp"):
            return v.timestamp()
        return v

    @model_validator(mode="after")
    def _window_in_period(self):
        if self.window_s > self.every_s:
            raise ValueError(f"window ({self.window_s:g} s) is longer than every ({self.every_s:g} s): windows would overlap")
        if self.zero_fraction != "consumed":
            if not 0.0 <= self.zero_fraction < 1.0:
                raise ValueError(f"zero_fraction {self.zero_fraction:g} must be in [0, 1) or 'consumed'")
            check_zero_share(self.zero_fraction, self.wws_fraction)
        if self.landing is not None:
            ats = [x.at_s for x in self.landing]
            if not ats or ats[0] != 0 or any(b <= a for a, b in zip(ats, ats[1:])):
                raise ValueError("landing: the first entry must be at 0 and the times must increase")
        return self


class PlanSpec(BaseModel):
    """The candidates file of ``densim plan``: QoS bounds, cost inputs and candidate host types."""

    model_config = _CFG

    qos: QosSpec = Field(default_factory=QosSpec, description="quality-of-service bounds every VM must meet at every step")
    cost: CostInputs = Field(default_factory=CostInputs, description="TCO inputs: years, energy, space, licences")
    rightsizing: RightsizeSpec = Field(default_factory=RightsizeSpec, description="resize VMs to a demand percentile first")
    policy: str = Field(default="timeseries", description="placement prefab (registry placement-prefab)")
    windows: int = Field(default=720, ge=1, description="time windows used while placing")
    optimise: OptimiseSpec = Field(default_factory=OptimiseSpec)
    memory: MemorySettings | None = Field(default=None, description="memory over-commit model for the memory QoS check")
    current: list[CurrentHosts] | None = Field(default=None, description="today's hosts, compared with the answer in the "
                                               "report (replaces an RVTools export's vHost tab)")
    licensing: LicensingSpec | None = Field(default=None, description="catalog licences per candidate and a price what-if")
    carbon: CarbonInputs | None = Field(default=None, description="operational and embodied carbon per VM-year")
    forecast: ForecastSpec | None = Field(default=None, description="time remaining from the inventory's history (summary key time_remaining)")
    racks: RackSpec | None = Field(default=None, description="rack power and circuits: hosts per rack, racks, VMs per kW")
    confidence: ConfidenceSpec = Field(default_factory=ConfidenceSpec, description="data-quality rating and host-count interval")
    waves: WavesSpec | None = Field(default=None, description="migration waves onto the chosen candidate (off when absent)")
    hci: HciPlanSpec | None = Field(default=None, description="every VM's data on a hyper-converged datastore of the "
                                    "candidate's hosts: storage may need more hosts than compute (tools/plan/hci.py)")

    @field_validator("memory")
    @classmethod
    def _no_swap_datastore(cls, v: MemorySettings | None) -> MemorySettings | None:
        if v is not None and v.swap_datastore is not None:
            raise ValueError("swap_datastore needs the engine's storage stage, which the plan does not model; "
                             "give a swap_device for the plan's memory check")
        return v
    guest_images: list[PlanGuestImage] | None = Field(
        default=None, description="page sharing by guest image in the memory check (needs memory.model: vsphere-like): "
                                  "which VMs boot which catalog image; VMs matched by none keep memory.zero_page_fraction")

    @model_validator(mode="after")
    def _images_need_the_memory_model(self) -> "PlanSpec":
        if self.guest_images and (self.memory is None or self.memory.model == "none"):
            raise ValueError("guest_images: page sharing by guest image is part of the memory check; give memory: "
                             "{model: vsphere-like}")
        return self
    candidates: list[Candidate] = Field(min_length=1, description="host configurations to compare")
    gpu: PlanGpu | None = Field(default=None, description="GPU demand: VMs' GPU requests and LLM inference services "
                                "(hosts for them: candidates[].gpus)")
