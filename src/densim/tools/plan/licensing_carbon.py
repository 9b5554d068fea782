"""Licences and carbon in ``densim plan``: catalog licences per candidate, how they move the best
host choice (with a what-if over licence prices), and operational and embodied carbon per VM-year.

Per candidate (:func:`licence_rows`, :func:`candidate_carbon`, called by
:func:`densim.tools.plan.capacity.plan_candidate`):

* every product of ``licensing.products`` is counted with its catalog rule
  (:mod:`densim.models.licensing`) on the candidate's hosts (spares included: they are licensed too)
  or on the VMs whose names match ``vms``, and priced per year; the rows join the TCO's licences;
* carbon: operational = sum of the hosts' mean power x 8,760 h x PUE x grid intensity (the mean of
  a grid series), embodied = hosts x kgCO2e per server / lifetime; both per VM-year.

Over candidates (:func:`licensing_summary`): the best feasible candidate with licences (the
plan's ranking) and without (TCO minus every licence), and for each price multiplier m of
``licensing.what_if`` the best candidate when every licence costs m times as much. Host counts do
not depend on licence prices, so the what-if is exact arithmetic on the TCO:
``per VM-year(m) = (TCO - licences + m x licences) / VMs``.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from densim.errors import InputError
from densim.tools.plan.patterns import vm_mask
from densim.models.carbon import (
    HOURS_PER_YEAR,
    embodied_kg_per_server,
    mean_intensity,
    read_grid_series,
)
from densim.models.licensing import LicenceProduct, fleet_licences


def resolve_products(spec) -> list[tuple]:
    """(use, catalog product) for every product of ``spec.licensing``; unknown names are an InputError."""
    from densim.catalog.core import CatalogError, builtin_catalog

    if spec.licensing is None:
        return []
    cat = builtin_catalog()
    out = []
    for i, use in enumerate(spec.licensing.products):
        try:
            p = cat.get("licensing_products", use.product, LicenceProduct)
        except (CatalogError, KeyError) as exc:
            raise InputError(None, f"licensing.products[{i}].product", str(exc).strip("'\"")) from None
        if p.rule != "per_vm_core" and use.vms != "*":
            raise InputError(None, f"licensing.products[{i}].vms", f"{p.name} is licensed {p.rule.replace('_', ' ')}, "
                             "for whole hosts: it takes no VM selection")
        out.append((use, p))
    return out


def licence_rows(spec, names: np.ndarray, vcpus: np.ndarray, *, n_hosts: int, sockets: int, cores_per_socket: int,
                 gpus_per_host: int = 0, vgpu_vms: int = 0) -> list[dict]:
    """Priced rows of the catalog licences for one candidate (``n_hosts`` hosts, spares included; per-GPU
    products count ``gpus_per_host`` on each, per-vGPU-VM products the ``vgpu_vms`` VMs with a vGPU)."""
    rows = []
    for i, (use, p) in enumerate(resolve_products(spec)):
        vm_vcpus = np.zeros(0)
        if p.rule == "per_vm_core":
            mask = vm_mask(names, use.vms)
            if not mask.any():
                raise InputError(None, f"licensing.products[{i}].vms", f"{use.vms!r} matches no VM of the inventory")
            vm_vcpus = np.asarray(vcpus)[mask]
        unit_price = None if use.price_usd is None else use.price_usd / p.price_covers
        row = fleet_licences(p, n_hosts=n_hosts, sockets=sockets, cores_per_socket=cores_per_socket, vm_vcpus=vm_vcpus,
                             years=spec.cost.years, unit_price_usd=unit_price, gpus_per_host=gpus_per_host,
                             vgpu_vms=vgpu_vms)
        row["price_source"] = "given" if use.price_usd is not None else p.price_status
        rows.append(row)
    return rows


@lru_cache(maxsize=8)
def _series_mean(file: str, time_column: str, value_column: str) -> float:
    from densim.models.carbon import GridSeries

    t, v = read_grid_series(GridSeries(file=file, time_column=time_column, value_column=value_column), "carbon.grid_series")
    return mean_intensity(t, v)


def grid_intensity_mean(carbon) -> tuple[float, str]:
    """(gCO2e/kWh, how) for the plan: the constant, or the time-weighted mean of the series."""
    if carbon.grid_series is None:
        return float(carbon.grid_gco2_per_kwh), "constant"
    s = carbon.grid_series
    return _series_mean(s.file, s.time_column, s.value_column), f"time-weighted mean of {s.file}"


def candidate_carbon(spec, name: str, watts: np.ndarray, n_hosts: int, n_vms: int) -> dict:
    """Operational and embodied kgCO2e per year and per VM-year of one candidate ({} without a carbon section)."""
    from densim.catalog.core import builtin_catalog

    cb = spec.carbon
    if cb is None:
        return {}
    intensity, how = grid_intensity_mean(cb)
    pue = cb.pue if cb.pue is not None else spec.cost.facility_factor
    kwh = float(np.sum(watts)) * HOURS_PER_YEAR / 1000.0 * pue
    op = kwh * intensity / 1000.0
    lifetime = cb.lifetime_years if cb.lifetime_years is not None else spec.cost.years
    emb = emb_src = kg_server = None
    if cb.embodied:
        if name not in cb.embodied:
            raise InputError(None, "carbon.embodied", f"no embodied carbon for candidate {name!r}: give kgCO2e per server "
                             "or a name in catalog section server_embodied_carbon for every candidate")
        kg_server, emb_src = embodied_kg_per_server(cb.embodied[name], builtin_catalog(), f"carbon.embodied.{name}")
        emb = n_hosts * kg_server / lifetime
    per = (lambda x: x / n_vms if (x is not None and n_vms) else None)
    market = kwh * cb.market_gco2_per_kwh / 1000.0 if cb.market_gco2_per_kwh is not None else None  # Scope 2 market-based
    return {"candidate": name, "hosts": n_hosts, "facility_kwh_per_year": kwh, "grid_gco2_per_kwh": intensity,
            "grid": how, "pue": pue, "operational_kg_per_year": op, "embodied_kg_per_server": kg_server,
            "embodied_source": emb_src, "lifetime_years": lifetime, "embodied_kg_per_year": emb,
            "operational_kg_per_vm_year": per(op), "embodied_kg_per_vm_year": per(emb),
            "total_kg_per_vm_year": per(op + emb) if emb is not None else per(op),
            # the GHG Protocol's split: Scope 2 location-based (grid average) and market-based (contract factor), Scope 3
            "market_gco2_per_kwh": cb.market_gco2_per_kwh,
            "scope2_location_kg_per_year": op, "scope2_market_kg_per_year": market,
            "scope2_location_kg_per_vm_year": per(op), "scope2_market_kg_per_vm_year": per(market),
            "scope3_embodied_kg_per_vm_year": per(emb)}


def _best(costs: dict[str, float]) -> str | None:
    return min(costs, key=lambda k: costs[k]) if costs else None


def licensing_summary(res) -> dict | None:
    """``summary["licensing"]``: licences per candidate, best with and without, price what-if (None when no
    licence is priced)."""
    spec = res.spec
    if spec.licensing is None and not spec.cost.licences:
        return None
    n_vms = res.inventory.n_vms
    multipliers = spec.licensing.what_if if spec.licensing is not None else [0.5, 1.0, 1.5, 2.0]
    rows, base, lic = [], {}, {}
    for r in res.results:  # candidate order of the plan file
        t = r.tco
        row = {"candidate": r.name, "feasible": r.feasible, "hosts": r.n_hosts}
        if r.feasible and t:
            base[r.name] = t["total_usd"] - t["licences_usd"]
            lic[r.name] = t["licences_usd"]
            row |= {"licences": [{k: x.get(k) for k in ("name", "units", "cores_per_host", "units_per_host", "vms",
                                                         "usd_per_year") if k in x} for x in t["licences"]],
                    "licences_usd_per_year": t["licences_usd"],
                    "tco_per_vm_year_usd": t["total_usd"] / n_vms,
                    "tco_per_vm_year_without_licences_usd": base[r.name] / n_vms,
                    "licence_share": t["licences_usd"] / t["total_usd"] if t["total_usd"] > 0 else 0.0}
        rows.append(row)
    with_lic = _best({k: base[k] + lic[k] for k in base})
    without = _best(base)
    what_if = []
    for m in multipliers:
        costs = {k: (base[k] + m * lic[k]) / n_vms for k in base}
        what_if.append({"multiplier": m, "best": _best(costs), "per_vm_year_usd": costs})
    out = {
        "products": [{"product": p.name, "title": p.title, "rule": p.rule, "unit": p.unit, "price_usd": use.price_usd
                      if use.price_usd is not None else p.price_usd, "price_covers": p.price_covers, "term": p.term,
                      "price_status": "given" if use.price_usd is not None else p.price_status, "price_date": p.price_date,
                      "source": p.source, "vms": use.vms} for use, p in resolve_products(spec)],
        "cost_licences": [lc.name for lc in spec.cost.licences],
        "candidates": rows,
        "best_with_licences": with_lic,
        "best_without_licences": without,
        "licences_change_best": with_lic != without,
        "what_if": what_if,
        "break_even_multiplier": None,
    }
    if with_lic is not None and without is not None and with_lic != without and lic[without] != lic[with_lic]:
        # the multiplier at which the two bests cost the same: base_a + m lic_a = base_b + m lic_b
        out["break_even_multiplier"] = (base[with_lic] - base[without]) / (lic[without] - lic[with_lic])
    return out


def carbon_summary(res) -> dict | None:
    """``summary["carbon"]``: operational and embodied kgCO2e per VM-year per feasible candidate (None
    without a carbon section)."""
    if res.spec.carbon is None:
        return None
    rows = [r.carbon for r in res.results if r.feasible and r.carbon]
    best = min(rows, key=lambda x: x["total_kg_per_vm_year"])["candidate"] if rows else None
    return {"candidates": rows, "lowest_carbon": best,
            "embodied_given": bool(res.spec.carbon.embodied),
            "note": "plan: each host's mean power x 8,760 h x PUE x grid intensity (a series enters as its time-weighted "
                    "mean); embodied carbon per server spread over lifetime_years"}
