"""Bill of materials and total cost of ownership (TCO).

Equations (../shared/reference/modelling-guide.md §6.4):

    capex_host      = sum_parts price x count                      (catalog section ``bom_parts``)
    TCO_year        = n_hosts x (capex_host / L + capex_host x maint)         hardware + maintenance
                    + n_hosts x P(u_avg) x 8760 h / 1000 x PUE x $/kWh         energy
                    + n_hosts x U x $/U-month x 12                             space
                    + licences                                                 per socket/core/host/VM
    PUE             = given, or 1 + cooling W per IT W + distribution loss W per IT W
    cost per VM     = TCO_year / n_VMs;   cost per user = TCO_year / (n_VMs x users per VM)

Licences: ``per`` socket, core, host or VM; per-core licences count ``max(cores per socket,
min_cores_per_socket)`` per socket and at least ``min_cores_per_host`` per host, rounded up to whole
packs of ``pack_cores`` (Windows Server 2016: 8 per processor, 16 per server, 2-core packs; vSphere
subscription: 16 per CPU). Perpetual licences are amortised over L years plus ``support_fraction``
of the price per year; subscriptions are charged per year.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from densim.models.hardware import PowerSpec

_CFG = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)


class BomPart(BaseModel):
    """A priced part: every price carries the date it was observed and its source."""

    model_config = _CFG

    name: str
    kind: Literal["chassis", "blade", "server", "cpu", "dimm", "nic", "drive", "controller", "psu", "other"]
    description: str = ""
    price_usd: float = Field(ge=0)
    price_date: str = Field(description="when the price was observed, YYYY or YYYY-MM")
    source: str
    power_w: float = Field(default=0.0, ge=0, description="typical active power, for power budgets")
    rack_units: float = Field(default=0.0, ge=0)
    note: str = ""


class BomLine(BaseModel):
    model_config = _CFG

    part: str
    count: int = Field(default=1, ge=0)


def bom_parts(catalog) -> dict[str, BomPart]:
    """Every priced part of ``catalog`` (a :class:`densim.catalog.core.Catalog`) by name."""
    return {p.name: p for p in catalog.all("bom_parts", BomPart)}


def bom_cost_usd(lines: list[BomLine] | list[dict], catalog) -> tuple[float, list[dict]]:
    """Total price of a bill of materials and its priced lines (parts from ``catalog`` section ``bom_parts``)."""
    cat = catalog
    rows = []
    total = 0.0
    for line in lines:
        ln = line if isinstance(line, BomLine) else BomLine.model_validate(line)
        part = cat.get("bom_parts", ln.part, BomPart)
        cost = part.price_usd * ln.count
        total += cost
        rows.append({"part": part.name, "kind": part.kind, "count": ln.count, "unit_usd": part.price_usd,
                     "cost_usd": cost, "price_date": part.price_date, "source": part.source})
    return total, rows


class Licence(BaseModel):
    model_config = _CFG

    name: str
    per: Literal["socket", "core", "host", "vm"]
    price_usd: float = Field(ge=0, description="price per unit (per pack of pack_cores for per-core licences)")
    term: Literal["perpetual", "year"] = "perpetual"
    min_cores_per_socket: int = Field(default=0, ge=0)
    min_cores_per_host: int = Field(default=0, ge=0)
    pack_cores: int = Field(default=1, ge=1)
    support_fraction: float = Field(default=0.0, ge=0, description="yearly support as a fraction of a perpetual price")
    source: str = ""


class CostInputs(BaseModel):
    model_config = _CFG

    years: float = Field(default=4.0, gt=0, description="amortisation period L")
    maintenance_fraction: float = Field(default=0.0, ge=0, description="yearly hardware maintenance / capex")
    pue: float | None = Field(default=1.58, ge=1.0, description="Uptime Institute 2018-2023 average")
    cooling_w_per_w: float | None = Field(default=None, ge=0)
    distribution_w_per_w: float = Field(default=0.0, ge=0)
    price_per_kwh_usd: float = Field(default=0.10, ge=0)
    space_usd_per_u_month: float = Field(default=0.0, ge=0)
    licences: list[Licence] = Field(default_factory=list)
    users_per_vm: float = Field(default=1.0, gt=0)

    @property
    def facility_factor(self) -> float:
        if self.cooling_w_per_w is not None:
            return 1.0 + self.cooling_w_per_w + self.distribution_w_per_w
        return float(self.pue or 1.0)


def power_w(spec: PowerSpec, util) -> np.ndarray:
    """Server power at CPU utilisation ``util`` in [0, 1]: the foundation's power models by name."""
    from densim.models.power import POWER_MODELS

    return np.asarray(POWER_MODELS.get(spec.model)(util, idle_w=spec.idle_w, peak_w=spec.peak_w,
                                                   points_w=spec.points_w, exponent=spec.exponent,
                                                   component=spec.component), dtype=np.float64)


def licence_units(lic: Licence, sockets: int, cores_per_socket: int, n_hosts: int, n_vms: int) -> int:
    """How many priced units of ``lic`` the fleet needs."""
    if lic.per == "socket":
        return sockets * n_hosts
    if lic.per == "host":
        return n_hosts
    if lic.per == "vm":
        return n_vms
    per_host = max(cores_per_socket, lic.min_cores_per_socket) * sockets
    per_host = max(per_host, lic.min_cores_per_host)
    packs = math.ceil(per_host / lic.pack_cores)
    return packs * n_hosts


def licence_cost_per_year_usd(lic: Licence, units: int, years: float) -> float:
    if lic.term == "year":
        return units * lic.price_usd
    return units * lic.price_usd * (1.0 / years + lic.support_fraction)


def tco_per_year(
    *,
    n_hosts: int,
    n_vms: int,
    host_capex_usd: float,
    host_rack_units: float,
    mean_power_w: float | np.ndarray,
    sockets: int,
    cores_per_socket: int,
    inputs: CostInputs,
    extra_licences: list[dict] | tuple = (),
) -> dict:
    """Yearly TCO of ``n_hosts`` hosts and its breakdown; ``mean_power_w`` per host (scalar or per host).
    ``extra_licences``: rows already priced elsewhere (catalog products, :mod:`densim.models.licensing`),
    each with ``name`` and ``usd_per_year``, added to the licences."""
    hw = n_hosts * host_capex_usd / inputs.years
    maint = n_hosts * host_capex_usd * inputs.maintenance_fraction
    it_w = float(np.sum(mean_power_w)) if np.ndim(mean_power_w) else float(mean_power_w) * n_hosts
    energy_kwh = it_w * 8760.0 / 1000.0 * inputs.facility_factor
    energy = energy_kwh * inputs.price_per_kwh_usd
    space = n_hosts * host_rack_units * inputs.space_usd_per_u_month * 12.0
    lic_rows = []
    lic_total = 0.0
    for lic in inputs.licences:
        units = licence_units(lic, sockets, cores_per_socket, n_hosts, n_vms)
        cost = licence_cost_per_year_usd(lic, units, inputs.years)
        lic_total += cost
        lic_rows.append({"name": lic.name, "per": lic.per, "units": units, "usd_per_year": cost})
    for row in extra_licences:
        lic_total += float(row["usd_per_year"])
        lic_rows.append(dict(row))
    total = hw + maint + energy + space + lic_total
    return {
        "hardware_usd": hw,
        "maintenance_usd": maint,
        "energy_usd": energy,
        "energy_kwh": energy_kwh,
        "space_usd": space,
        "licences_usd": lic_total,
        "licences": lic_rows,
        "total_usd": total,
        "per_vm_usd": total / n_vms if n_vms else float("nan"),
        "per_user_usd": total / (n_vms * inputs.users_per_vm) if n_vms else float("nan"),
        "facility_factor": inputs.facility_factor,
    }
