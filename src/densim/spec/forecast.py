"""Time remaining: the ``forecast`` settings of ``densim forecast`` (and of a plan's candidates file).

A forecast fits each resource's history (summed CPU demand, vCPUs, memory in use), adds what-if growth
(VMs per month, projects on a date), simulates forward with replications and reports when the hosts'
CPU Ready crosses its bound and when memory in use runs out (:mod:`densim.tools.plan.forecast`).
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from densim.rng import DEFAULT_SEED
from pydantic import BaseModel, ConfigDict, Field, model_validator

from densim.models.hardware import HostCpu
from densim.units import Bytes, PosMemBytes, MemBytes

_CFG = ConfigDict(defer_build=True, allow_inf_nan=False, frozen=True, extra="forbid", populate_by_name=True)


class VmSize(BaseModel):
    """One added VM: its size and what it demands at the history's statistic (e.g. the daily peak)."""

    model_config = _CFG

    vcpus: int = Field(ge=1)
    cpu_demand_mhz: float = Field(alias="cpu_demand", ge=0, description="CPU demand in MHz (same statistic as the history)")
    memory_used_bytes: Bytes = Field(alias="memory_used", description="memory in use")


class Project(BaseModel):
    """A block of VMs that arrives on one date."""

    model_config = _CFG

    name: str
    date: dt.date
    vms: int = Field(ge=1)
    vm: VmSize | None = Field(default=None, description="size of each VM; default: growth.vm, else the history's mean VM")


class GrowthSpec(BaseModel):
    """What-if growth on top of the trend fitted to the history."""

    model_config = _CFG

    vms_per_month: float = Field(default=0.0, ge=0, description="VMs added per month (30.4375 days), counted whole: "
                                 "floor(rate x months since start)")
    start: dt.date | None = Field(default=None, description="first day of the monthly additions (default: the first forecast day)")
    vm: VmSize | None = Field(default=None, description="size of each added VM; default: the history's mean VM over its last 7 periods "
                              "(needs the history's VM count)")
    projects: list[Project] = Field(default_factory=list)


class CurrentHosts(BaseModel):
    """The hosts the VMs run on (the cluster whose time remaining is forecast)."""

    model_config = _CFG

    name: str = "current"
    hosts: int = Field(ge=1)
    cpu: HostCpu
    memory_bytes: PosMemBytes = Field(alias="memory")
    hypervisor_memory_bytes: MemBytes = Field(default=0.0, alias="hypervisor_memory", description="memory the hypervisor keeps")


class ForecastSpec(BaseModel):
    """How to fit, simulate and judge the forecast."""

    model_config = _CFG

    horizon_days: int = Field(default=365, ge=1, le=3650)
    period: Literal["day", "week"] = Field(default="day", description="the history is reduced to one value per period")
    statistic: Literal["max", "p95", "mean"] = Field(default="max", description="per period and resource, of the cluster's summed "
                                                     "demand per step (max: the busiest step, where CPU Ready peaks)")
    seasonality: Literal["auto", "none", "weekly"] = Field(
        default="auto", description="weekly season (daily periods only); auto: the lower AICc of with and without")
    damped_trend: bool = Field(default=False, description="damp the fitted trend (growth slows down)")
    replications: int = Field(default=200, ge=10, le=20000)
    seed: int = Field(default=DEFAULT_SEED, ge=0, description="seed of the simulated paths (recorded in the result)")
    interval: float = Field(default=0.8, gt=0, lt=1, description="central interval of crossing dates (0.8: 10th to 90th percentile)")
    min_periods: int = Field(default=10, ge=4, description="shortest history fitted")
    cpu_ready_pct: float | None = Field(default=None, gt=0, description="CPU Ready bound; default: the plan's qos.cpu_ready_pct, else 5")
    memory_limit: float = Field(default=1.0, gt=0, le=1.5, description="memory runs out when memory in use exceeds this x usable memory")
    ha_spare_hosts: int = Field(default=0, ge=0, description="hosts kept free for HA: capacity counts the others")
    growth: GrowthSpec = Field(default_factory=GrowthSpec)
    current: CurrentHosts | None = Field(default=None, description="today's hosts (else RVTools vHost; in a plan, also the best candidate)")

    @model_validator(mode="after")
    def _hosts(self) -> "ForecastSpec":
        if self.current is not None and self.ha_spare_hosts >= self.current.hosts:
            raise ValueError(f"ha_spare_hosts ({self.ha_spare_hosts}) must be below current.hosts ({self.current.hosts})")
        if self.period == "week" and self.seasonality == "weekly":
            raise ValueError("a weekly season needs daily periods (period: day)")
        return self


class ForecastFile(BaseModel):
    """The file given to ``densim forecast --spec``: a ``forecast`` section (the same as in a candidates file)."""

    model_config = _CFG

    forecast: ForecastSpec = Field(default_factory=ForecastSpec)
