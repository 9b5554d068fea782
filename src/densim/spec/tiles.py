"""The HOST.yaml of ``densim bench tiles``: the server, its platform and virtualization set-up, the run settings."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from densim.models.hardware import ServerSpec
from densim.rng import DEFAULT_SEED
from densim.models.virtualization import PlatformSpec, StorageRef
from densim.spec.scenario import MAX_SEED
from densim.spec.virtualization import VirtualizationSettings
from densim.units import PosSeconds

_CFG = ConfigDict(defer_build=True, allow_inf_nan=False, frozen=True, extra="forbid", populate_by_name=True)
GiB = 1024**3
MAX_INTERVALS = 1_000  # measured (or warm-up) intervals: a sanity bound, every tile count evaluated runs them all


class RunSpec(BaseModel):
    model_config = _CFG
    intervals: int = Field(default=6, ge=1, le=MAX_INTERVALS, strict=True, description="measured intervals")
    warmup_intervals: int = Field(default=2, ge=0, le=MAX_INTERVALS, strict=True)
    interval_s: PosSeconds = Field(default=300.0, alias="interval")
    seed: int = Field(default=DEFAULT_SEED, ge=0, le=MAX_SEED, strict=True, description="0 to 2**64 - 1 (numpy's seed range)")
    max_tiles: int = Field(default=400, gt=0)
    fraction_step: float = Field(default=0.1, gt=0, le=1, description="resolution of the partial last tile")
    solver_steps: int = Field(default=12, ge=2, le=60, description="root-finding steps of the per-interval fixed point")
    solver_tolerance: float = Field(default=1e-3, gt=0, description="|demand/capacity - utilisation| accepted per node")
    burstiness: float = Field(default=1.0, gt=0, description="(ca^2+cs^2)/2 of CPU demand (Allen-Cunneen)")
    hypervisor_memory_bytes: float = Field(default=4 * GiB, ge=0, alias="hypervisor_memory")


class BenchHost(BaseModel):
    """The HOST.yaml of ``densim bench tiles``."""

    model_config = _CFG
    name: str = "host"
    server: str | ServerSpec
    platform: str | PlatformSpec | None = None
    virtualization: VirtualizationSettings = Field(default_factory=lambda: VirtualizationSettings(model="kvm"))
    storage: StorageRef | None = None
    nic_gbps: float | None = Field(default=None, gt=0)
    run: RunSpec = Field(default_factory=RunSpec)
