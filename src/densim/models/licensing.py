"""Software licences that decide host choices: how many units a host or VM needs, and what they cost.

A product (catalog section ``licensing_products``, ``densim/catalog/licensing.yaml``) has one rule:

``per_core`` (physical cores of every licensed host; VMware Cloud Foundation / vSphere Foundation,
Windows Server Datacenter, SQL Server licensed per host)::

    cores_host = max( sum_CPUs max(cores_CPU, min_cores_per_cpu), min_cores_per_host )
    licensed   = ceil(cores_host / pack_cores) x pack_cores

``per_vm_core`` (vCPUs of every licensed VM; SQL Server licensed per VM)::

    licensed_vm = ceil( max(vCPUs_vm, min_cores_per_vm) / pack_cores ) x pack_cores

``per_socket`` (subscriptions by CPU sockets, e.g. RHEL sold per socket pair)::

    units_host = ceil(sockets / sockets_per_unit)

``per_gpu`` (every physical GPU of every licensed host; NVIDIA AI Enterprise: "licensed per GPU", a card
with two GPUs needs two)::

    units_host = GPUs per host

``per_vgpu_vm`` (every VM that runs a vGPU, NVIDIA's concurrent-user (CCU) licence: vPC, RTX vWS)::

    units = VMs with a vGPU

Prices are stored as published: ``price_usd`` buys ``price_covers`` units (16 cores of Windows
Server, a 2-core pack of SQL Server, one core-year of VMware). Yearly cost::

    subscription (term: year):   units x price_usd / price_covers
    perpetual:                   units x price_usd / price_covers x (1 / L + support_fraction)

with L the amortisation years of the plan. Worked example (the issue's): 2 x 12-core CPUs under a
16-core-per-CPU minimum -> max(12, 16) + max(12, 16) = 32 cores licensed.

An order minimum (``min_cores_per_order``, VCF/VVF: 72 cores since 2025-04-10) lifts a small fleet to it: two
such hosts license max(2 x 32, 72) = 72 cores. A product with ``vsan_tib_per_core`` (VCF 9: 1 TiB of raw
vSAN capacity per licensed core) includes ``cores x tib_per_core`` TiB; an HCI datastore claiming more raw
needs add-on TiB (:func:`densim.models.storage.hci.vsan_entitlement`).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

_CFG = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)


class LicenceProduct(BaseModel):
    """One licensed product and the rule that counts its units; every price has a date and a source."""

    model_config = _CFG

    name: str
    title: str = ""
    rule: Literal["per_core", "per_vm_core", "per_socket", "per_gpu", "per_vgpu_vm"]
    unit: str = Field(description="what one priced unit is, in words: core-year, 16 cores, 2-core pack, socket pair-year")
    min_cores_per_cpu: int = Field(default=0, ge=0, description="per_core: every CPU counts at least this many cores")
    min_cores_per_host: int = Field(default=0, ge=0, description="per_core: every host counts at least this many cores")
    min_cores_per_vm: int = Field(default=0, ge=0, description="per_vm_core: every VM counts at least this many cores")
    min_cores_per_order: int = Field(default=0, ge=0, description="per_core: an order (the whole fleet here) is at least "
                                     "this many cores (VCF/VVF since 2025-04-10: 72)")
    vsan_tib_per_core: float | None = Field(default=None, ge=0, description="vSAN raw capacity (TiB) each licensed core "
                                            "includes (VCF 9: 1 TiB); raw claimed beyond it is bought as add-on TiB")
    pack_cores: int = Field(default=1, ge=1, description="cores are bought in packs of this many (rounded up)")
    sockets_per_unit: int = Field(default=1, ge=1, description="per_socket: sockets one subscription covers")
    term: Literal["year", "perpetual"]
    price_usd: float = Field(ge=0, description="list price of price_covers units")
    price_covers: int = Field(default=1, ge=1, description="how many cores (or socket units) price_usd buys")
    support_fraction: float = Field(default=0.0, ge=0, description="perpetual: yearly support / assurance as a fraction of the price")
    price_status: Literal["list", "estimate"] = Field(description="list: a published price; estimate: not published, an estimate")
    price_date: str = Field(description="when the price was observed, YYYY or YYYY-MM")
    source: str
    note: str = ""

    @model_validator(mode="after")
    def _rule_fields(self) -> "LicenceProduct":
        if self.rule != "per_core" and (self.min_cores_per_cpu or self.min_cores_per_host):
            raise ValueError(f"min_cores_per_cpu / min_cores_per_host apply to rule per_core, not {self.rule}")
        if self.rule != "per_core" and (self.min_cores_per_order or self.vsan_tib_per_core is not None):
            raise ValueError(f"min_cores_per_order / vsan_tib_per_core apply to rule per_core, not {self.rule}")
        if self.rule != "per_vm_core" and self.min_cores_per_vm:
            raise ValueError(f"min_cores_per_vm applies to rule per_vm_core, not {self.rule}")
        if self.rule in ("per_socket", "per_gpu", "per_vgpu_vm") and self.pack_cores != 1:
            raise ValueError(f"pack_cores does not apply to rule {self.rule}")
        return self

    @property
    def unit_price_usd(self) -> float:
        """Price of one core (per_core, per_vm_core) or one subscription (per_socket)."""
        return self.price_usd / self.price_covers


def _packs(cores, pack: int):
    return np.ceil(np.asarray(cores, dtype=np.float64) / pack) * pack


def cores_licensed_per_host(p: LicenceProduct, cores_per_cpu: list[int] | tuple[int, ...]) -> int:
    """Cores a ``per_core`` product licenses on one host with CPUs of ``cores_per_cpu`` cores each."""
    if p.rule != "per_core":
        raise ValueError(f"{p.name}: cores per host apply to rule per_core, not {p.rule}")
    counted = sum(max(int(c), p.min_cores_per_cpu) for c in cores_per_cpu)
    return int(_packs(max(counted, p.min_cores_per_host), p.pack_cores))


def cores_licensed_per_vm(p: LicenceProduct, vcpus) -> np.ndarray:
    """Cores a ``per_vm_core`` product licenses for each VM (array over VMs)."""
    if p.rule != "per_vm_core":
        raise ValueError(f"{p.name}: cores per VM apply to rule per_vm_core, not {p.rule}")
    v = np.asarray(vcpus, dtype=np.float64)
    return _packs(np.maximum(v, p.min_cores_per_vm), p.pack_cores)


def units_per_host(p: LicenceProduct, sockets: int) -> int:
    """Subscriptions a ``per_socket`` product needs on a host with ``sockets`` CPUs."""
    if p.rule != "per_socket":
        raise ValueError(f"{p.name}: sockets apply to rule per_socket, not {p.rule}")
    return math.ceil(sockets / p.sockets_per_unit)


def yearly_usd(p: LicenceProduct, units: float, years: float, unit_price_usd: float | None = None) -> float:
    """Yearly cost of ``units`` units (cores or subscriptions): subscriptions per year, perpetual amortised."""
    price = p.unit_price_usd if unit_price_usd is None else unit_price_usd
    if p.term == "year":
        return float(units) * price
    return float(units) * price * (1.0 / years + p.support_fraction)


def fleet_licences(p: LicenceProduct, *, n_hosts: int, sockets: int, cores_per_socket: int, vm_vcpus,
                   years: float, unit_price_usd: float | None = None, gpus_per_host: int = 0, vgpu_vms: int = 0) -> dict:
    """Units and yearly cost of product ``p`` for ``n_hosts`` identical hosts, or for the VMs ``vm_vcpus``
    (per_vm_core: the VMs that run the product). ``unit_price_usd`` overrides the catalog price per unit.
    per_gpu counts ``gpus_per_host`` per host, per_vgpu_vm the ``vgpu_vms`` VMs with a vGPU."""
    if p.rule == "per_gpu":
        units = gpus_per_host * n_hosts
        per = {"units_per_host": gpus_per_host}
    elif p.rule == "per_vgpu_vm":
        units = vgpu_vms
        per = {"vms": vgpu_vms}
    elif p.rule == "per_core":
        per_host = cores_licensed_per_host(p, [cores_per_socket] * sockets)
        units = max(per_host * n_hosts, p.min_cores_per_order)  # the per-order minimum (additive: 0 by default)
        per = {"cores_per_host": per_host}
        if p.min_cores_per_order:
            per["order_minimum_cores"] = p.min_cores_per_order
        if p.vsan_tib_per_core is not None:
            per["vsan_tib_included"] = units * p.vsan_tib_per_core
    elif p.rule == "per_socket":
        per_host = units_per_host(p, sockets)
        units = per_host * n_hosts
        per = {"units_per_host": per_host}
    else:
        per_vm = cores_licensed_per_vm(p, vm_vcpus)
        units = int(per_vm.sum())
        per = {"vms": int(per_vm.size)}
    price = p.unit_price_usd if unit_price_usd is None else float(unit_price_usd)
    return {"name": p.name, "rule": p.rule, "units": int(units), "unit_price_usd": price, "term": p.term,
            "usd_per_year": yearly_usd(p, units, years, price), "price_status": p.price_status,
            "price_date": p.price_date} | per


def licence_products(catalog) -> dict[str, LicenceProduct]:
    """Every product of ``catalog`` section ``licensing_products`` by name."""
    return {p.name: p for p in catalog.all("licensing_products", LicenceProduct)}
