"""The run's ``carbon`` summary section: operational = sum of P dt x PUE x intensity; embodied amortised."""

from __future__ import annotations

import pytest

from densim.engine import simulate
from densim.errors import InputError
from densim.plant import plant_from_dict

YEAR_S = 8760 * 3600.0


def _scenario(carbon, tmp_path=None):
    # 2 hosts drawing a constant 200 W (linear, idle = peak), 2 VMs, 2 steps of 1 h
    return {
        "name": "carbon-micro",
        "cluster": {"hosts": [{"name": "flat", "count": 2, "cpu": {"sockets": 1, "cores_per_socket": 8, "threads_per_core": 1,
                                                                  "base_clock": "2 GHz"},
                               "memory": "64 GiB", "power": {"model": "linear", "idle": "200 W", "peak": "200 W"}}]},
        "vms": [{"name": "v", "count": 2, "vcpus": 2, "vcpu_speed": "2 GHz", "memory": "4 GiB",
                 "profile": {"kind": "constant", "mean": 0.5}}],
        "simulation": {"horizon": "2 h", "step": "1 h"},
        "carbon": carbon,
    }


def test_run_carbon_with_a_grid_series_by_hand(tmp_path):
    grid = tmp_path / "grid.csv"
    grid.write_text("time_s,gco2_per_kwh\n0,100\n3600,500\n")
    sc = _scenario({"grid_series": {"file": str(grid)}, "pue": 1.5, "lifetime_years": 4,
                    "embodied": {"flat": 1000}})
    res = simulate(plant_from_dict(sc), seed=1)
    c = res.summary["carbon"]
    # IT energy: 2 x 200 W x 7,200 s = 2.88e6 J = 0.8 kWh (the same as totals.energy_kwh)
    assert c["it_energy_kwh"] == pytest.approx(0.8) == pytest.approx(res.summary["totals"]["energy_kwh"])
    # step 1: 0.4 kWh x 1.5 x 100 g = 60 g; step 2: 0.4 x 1.5 x 500 = 300 g; 0.36 kg
    assert c["operational_kg"] == pytest.approx(0.36)
    assert c["grid_gco2_per_kwh_mean"] == pytest.approx(300.0)  # energy-weighted: equal energy per step
    # embodied: 2 hosts x 1,000 kg / 4 years x (7,200 s / 1 year) = 500 kg/yr x 2.283e-4 yr = 0.1142 kg
    assert c["embodied_kg"] == pytest.approx(2 * 1000 / 4 * 7200 / YEAR_S)
    # VM-years: 2 VMs x 7,200 s; operational per VM-year = 0.36 / (2 x 7,200 / YEAR_S) = 788.4 kg
    # (= 2 hosts x 200 W x 8,760 h = 3,504 kWh x 1.5 x 300 g / 2 VMs)
    assert c["vm_years"] == pytest.approx(2 * 7200 / YEAR_S)
    assert c["operational_kg_per_vm_year"] == pytest.approx(788.4)
    assert c["embodied_kg_per_vm_year"] == pytest.approx(2 * 1000 / 4 / 2)  # 250 kg per VM-year
    assert c["total_kg_per_vm_year"] == pytest.approx(788.4 + 250)
    assert "carbon" in res.summary["models"]["stages"]


def test_run_carbon_constant_intensity_and_catalog_embodied():
    res = simulate(plant_from_dict(_scenario({"grid_gco2_per_kwh": 250, "lifetime_years": 5,
                                              "embodied": {"flat": "dell-poweredge-r640"}})), seed=1)
    c = res.summary["carbon"]
    assert c["pue"] == 1.0  # not given: IT energy only
    assert c["operational_kg"] == pytest.approx(0.8 * 250 / 1000)  # 0.2 kg
    assert c["embodied_per_server"][0]["kgco2e_per_server"] == pytest.approx(1314.10)
    assert c["embodied_kg"] == pytest.approx(2 * 1314.10 / 5 * 7200 / YEAR_S)


def test_run_carbon_without_embodied_and_bad_inputs(tmp_path):
    c = simulate(plant_from_dict(_scenario({"grid_gco2_per_kwh": 100})), seed=1).summary["carbon"]
    assert c["embodied_kg"] is None and c["embodied_kg_per_vm_year"] is None
    assert c["total_kg_per_vm_year"] == pytest.approx(c["operational_kg_per_vm_year"])
    with pytest.raises(InputError, match="carbon.lifetime_years"):
        simulate(plant_from_dict(_scenario({"grid_gco2_per_kwh": 100, "embodied": {"flat": 1}})), seed=1)
    with pytest.raises(InputError, match="carbon.embodied.nope"):
        simulate(plant_from_dict(_scenario({"grid_gco2_per_kwh": 100, "lifetime_years": 4, "embodied": {"nope": 1}})), seed=1)
    late = tmp_path / "late.csv"
    late.write_text("time_s,gco2_per_kwh\n100,5\n")
    with pytest.raises(InputError, match="starts at t = 100"):
        simulate(plant_from_dict(_scenario({"grid_series": {"file": str(late)}})), seed=1)


def test_no_carbon_section_no_stage():
    res = simulate(plant_from_dict(_scenario(None)), seed=1)
    assert "carbon" not in res.summary and "carbon" not in res.summary["models"]["stages"]


def test_scope_2_market_based_against_location_based_by_hand(tmp_path):
    # the grid series above (100 then 500 g/kWh, location-based) and a contract at 30 g/kWh (market-based)
    grid = tmp_path / "grid.csv"
    grid.write_text("time_s,gco2_per_kwh\n0,100\n3600,500\n")
    sc = _scenario({"grid_series": {"file": str(grid)}, "market_gco2_per_kwh": 30, "pue": 1.5, "lifetime_years": 4,
                    "embodied": {"flat": 1000}})
    c = simulate(plant_from_dict(sc), seed=1).summary["carbon"]
    # location-based: 0.4 kWh x 1.5 x (100 + 500) g = 360 g = 0.36 kg, the operational figure
    assert c["scope2_location_kg"] == pytest.approx(0.36) == pytest.approx(c["operational_kg"])
    # market-based: 0.8 kWh x 1.5 x 30 g = 36 g = 0.036 kg, a tenth of the location-based figure
    assert c["scope2_market_kg"] == pytest.approx(0.036)
    # per VM-year (2 x 7,200 s): location 788.4 kg; market 0.036 / (14,400 / YEAR_S) = 78.84 kg;
    # Scope 3 embodied 250 kg; market-based total 78.84 + 250 = 328.84 kg
    assert c["scope2_location_kg_per_vm_year"] == pytest.approx(788.4)
    assert c["scope2_market_kg_per_vm_year"] == pytest.approx(78.84)
    assert c["scope3_embodied_kg_per_vm_year"] == pytest.approx(250.0)
    assert c["total_market_kg_per_vm_year"] == pytest.approx(328.84)


def test_without_a_contract_factor_market_based_is_null():
    c = simulate(plant_from_dict(_scenario({"grid_gco2_per_kwh": 250})), seed=1).summary["carbon"]
    assert c["scope2_market_kg"] is None and c["total_market_kg_per_vm_year"] is None
    assert c["scope2_location_kg"] == pytest.approx(0.2)  # 0.8 kWh x 250 g
