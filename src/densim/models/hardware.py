"""Hardware parts: CPU models, power models and servers."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from densim.units import PosMHz, Watts, PosMemBytes

_CFG = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)


class CpuSpec(BaseModel):
    """A CPU model (per socket) as on its datasheet."""

    model_config = _CFG

    name: str = "custom"
    vendor: str = ""
    microarchitecture: str = ""
    cores: int = Field(gt=0, description="physical cores per socket")
    threads_per_core: int = Field(default=1, ge=1, le=8, description="SMT threads per core")
    base_mhz: PosMHz = Field(alias="base_clock")
    turbo_mhz: PosMHz | None = Field(default=None, alias="turbo_clock")
    tdp_w: Watts | None = Field(default=None, alias="tdp")
    smt_gain: float = Field(
        default=1.0,
        ge=1.0,
        le=2.0,
        description="throughput of a core with all SMT threads busy relative to one thread (1.0 = count cores only)",
    )
    source: str = ""


class HostCpu(BaseModel):
    """The CPU complement of a server: a catalog model (or inline figures) and a socket count."""

    model_config = _CFG

    model: str | None = Field(default=None, description="name of a CPU in the catalog or the scenario's parts")
    sockets: int = Field(default=1, gt=0)
    cores_per_socket: int | None = Field(default=None, gt=0)
    threads_per_core: int | None = Field(default=None, ge=1, le=8)
    base_mhz: PosMHz | None = Field(default=None, alias="base_clock")
    turbo_mhz: PosMHz | None = Field(default=None, alias="turbo_clock")
    smt_gain: float | None = Field(default=None, ge=1.0, le=2.0)

    @model_validator(mode="after")
    def _model_or_figures(self) -> "HostCpu":
        if self.model is None and (self.cores_per_socket is None or self.base_mhz is None):
            raise ValueError("give either a catalog 'model' or both 'cores_per_socket' and 'base_clock'")
        return self


class PowerComponents(BaseModel):
    """Inputs of the ``component`` power model (models/power.py, docs/background/power.md): the CPU's datasheet
    figures and three shape parameters shared by all servers (fitted on the SPECpower catalog: calibration)."""

    model_config = _CFG

    cores_per_socket: int = Field(gt=0, description="cores of one package (the package sleeps only when all are idle)")
    top_mhz: PosMHz = Field(alias="top_clock", description="clock at full load: all-core turbo, else the base clock")
    min_mhz: PosMHz = Field(alias="min_clock", description="lowest P-state clock (datasheet LFM)")
    package_c_states: bool = Field(default=True, description="the package sleeps when all cores are idle (Nehalem and later)")
    dvfs: bool = Field(default=True, description="the OS governor lowers the clock at light load")
    # defaults: least-squares fit on the 15 package-C-state servers of catalog specpower.yaml (calibration; each
    # server's validation row uses a fit without it: study val-specpower-components)
    step_share: float = Field(default=0.134, ge=0.0, lt=1.0,
                              description="share of the idle-to-peak span the package adds on leaving package sleep")
    busy_target: float = Field(default=0.926, gt=0.0, le=1.0, description="busy share the governor keeps a core at")
    v_floor: float = Field(default=0.5, ge=0.0, le=1.0, description="V/V_top extrapolated to f = 0 (E)")

    @model_validator(mode="after")
    def _clocks(self) -> "PowerComponents":
        if self.min_mhz > self.top_mhz:
            raise ValueError(f"min_clock {self.min_mhz:g} MHz is above top_clock {self.top_mhz:g} MHz")
        return self


class PowerSpec(BaseModel):
    """Server power against CPU utilisation; ``model`` names an entry of the power-model registry."""

    model_config = _CFG

    model: Literal["linear", "sqrt", "table", "fan", "constant", "none", "component"] = "linear"
    idle_w: Watts | None = Field(default=None, alias="idle")
    peak_w: Watts | None = Field(default=None, alias="peak")
    points_w: list[Watts] | None = Field(
        default=None, alias="points", description="11 readings at 0, 10, ..., 100 % load (SPECpower style)"
    )
    exponent: float = Field(default=1.4, gt=0, description="r in Fan et al.'s P = Pi + (Pp-Pi)(2u - u^r)")
    component: PowerComponents | None = Field(
        default=None, description="CPU figures of the 'component' model (idle floor, package C-state step, convex rise)")
    source: str = ""

    @model_validator(mode="after")
    def _complete(self) -> "PowerSpec":
        if (self.model == "component") != (self.component is not None):
            raise ValueError("a 'component' block goes with power model 'component' and only with it"
                             f" (model {self.model!r}, component block {'given' if self.component else 'missing'})")
        if self.model in ("linear", "sqrt", "fan", "component"):
            if self.idle_w is None or self.peak_w is None:
                raise ValueError(f"power model {self.model!r} needs 'idle' and 'peak'")
            if self.peak_w < self.idle_w:
                raise ValueError("peak power must be >= idle power")
        if self.model == "constant" and self.idle_w is None:
            raise ValueError("power model 'constant' needs 'idle'")
        if self.model == "table":
            if self.points_w is None or len(self.points_w) != 11:
                raise ValueError("power model 'table' needs 'points': 11 readings at 0, 10, ..., 100 % load")
        return self


class ServerSpec(BaseModel):
    """A server (host) built from parts."""

    model_config = _CFG

    name: str = "custom"
    cpu: HostCpu
    memory_bytes: PosMemBytes = Field(alias="memory")
    rack_units: float = Field(default=1.0, gt=0)
    power: PowerSpec
    price_usd: float | None = Field(default=None, ge=0)
    price_date: str | None = None
    source: str = ""
