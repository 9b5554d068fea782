"""Carbon arithmetic by hand: operational = integral of P dt x PUE x grid intensity; embodied amortised."""

from __future__ import annotations

import numpy as np
import pytest

from densim.catalog.core import builtin_catalog
from densim.errors import InputError
from densim.models.carbon import (
    CarbonInputs,
    EmbodiedCarbon,
    GridSeries,
    embodied_kg,
    embodied_kg_per_server,
    intensity_at,
    mean_intensity,
    operational_kg,
    read_grid_series,
)


def test_operational_constant_intensity_by_hand():
    # 2 hosts at 300 W and 100 W for 4 steps of 15 min = 1 h: (300 + 100) W x 3600 s = 1.44e6 J = 0.4 kWh;
    # x PUE 1.5 = 0.6 kWh; x 400 g/kWh = 240 g = 0.24 kg
    p = np.array([[300.0, 100.0]] * 4)
    assert operational_kg(p, 900.0, 400.0, pue=1.5) == pytest.approx(0.24)


def test_operational_time_series_weights_each_step():
    # fleet power 1 kW then 3 kW, one hour each: 1 kWh at 100 g + 3 kWh at 500 g = 100 + 1500 g = 1.6 kg.
    # With the mean intensity (300 g) the same 4 kWh would give 1.2 kg: the time series matters when
    # power and intensity move together.
    assert operational_kg([1000.0, 3000.0], 3600.0, [100.0, 500.0]) == pytest.approx(1.6)
    assert operational_kg([1000.0, 3000.0], 3600.0, 300.0) == pytest.approx(1.2)


def test_step_hold_lookup_and_time_weighted_mean():
    t = np.array([0.0, 3600.0, 10800.0])
    v = np.array([100.0, 400.0, 50.0])
    assert intensity_at(t, v, [0, 1800, 3600, 7200, 20000]).tolist() == [100, 100, 400, 400, 50]
    # mean over [0, 10800]: (100 x 3600 + 400 x 7200) / 10800 = (360,000 + 2,880,000) / 10,800 = 300
    assert mean_intensity(t, v) == pytest.approx(300.0)
    with pytest.raises(ValueError, match="starts at"):
        intensity_at(t, v, [-1.0])


def test_embodied_amortised_over_lifetime():
    # 10 servers x 1,314.1 kg (Dell R640 PCF) over 4 years: 3,285.25 kg per year; half a year -> 1,642.6 kg
    assert embodied_kg(10, 1314.1, 4, 1.0) == pytest.approx(3285.25)
    assert embodied_kg(10, 1314.1, 4, 0.5) == pytest.approx(1642.625)
    kg, src = embodied_kg_per_server("dell-poweredge-r640", builtin_catalog(), "carbon.embodied.a")
    assert kg == pytest.approx(1314.10) and "R640" in src
    with pytest.raises(InputError, match="carbon.embodied.a"):
        embodied_kg_per_server("no-such-server", builtin_catalog(), "carbon.embodied.a")


def test_every_embodied_entry_is_cited():
    for e in builtin_catalog().all("server_embodied_carbon", EmbodiedCarbon):
        assert e.source and e.date and e.kgco2e > 0
        assert e.total_with_use_kgco2e is None or e.total_with_use_kgco2e > e.kgco2e


def test_inputs_need_exactly_one_intensity():
    with pytest.raises(ValueError, match="exactly one"):
        CarbonInputs()
    with pytest.raises(ValueError, match="exactly one"):
        CarbonInputs(grid_gco2_per_kwh=100, grid_series=GridSeries(file="x.csv"))
    assert CarbonInputs(grid_gco2_per_kwh=0).pue is None  # plan: the cost inputs' PUE; run: 1.0


def test_grid_series_reader_names_file_and_row(tmp_path):
    ok = tmp_path / "grid.csv"
    ok.write_text("time_s,gco2_per_kwh\n0,100\n3600,400\n")
    t, v = read_grid_series(GridSeries(file=str(ok)), "carbon.grid_series")
    assert t.tolist() == [0, 3600] and v.tolist() == [100, 400]
    bad = tmp_path / "bad.csv"
    bad.write_text("time_s,gco2_per_kwh\n0,100\n3600,abc\n")
    with pytest.raises(InputError, match=r"row 3, column 'gco2_per_kwh'"):
        read_grid_series(GridSeries(file=str(bad)), "carbon.grid_series")
    back = tmp_path / "back.csv"
    back.write_text("time_s,gco2_per_kwh\n0,100\n0,400\n")
    with pytest.raises(InputError, match="row 3.*increase"):
        read_grid_series(GridSeries(file=str(back)), "carbon.grid_series")
    with pytest.raises(InputError, match="column 'intensity'"):
        read_grid_series(GridSeries(file=str(ok), value_column="intensity"), "carbon.grid_series")


def test_plan_carbon_per_vm_year_by_hand(tmp_path):
    from tests.planning.test_licensing import _flip_plan

    from densim.tools.plan.report import summary_dict

    # no CPU series: every host at peak, 300 W (energy upper bound). hi: 6 hosts x 300 W x 8,760 h = 15,768 kWh
    # (PUE 1.0) x 400 g/kWh = 6,307.2 kg a year / 48 VMs = 131.4 kg per VM-year.
    # embodied: hi = Dell R640 PCF 1,314.1 kg x 6 hosts / 4 years = 1,971.15 kg a year / 48 = 41.07 kg per VM-year;
    # lo = 1,000 kg given x 16 / 4 years (lifetime_years defaults to cost.years) = 4,000 kg a year / 48 = 83.3 kg
    carbon = {"grid_gco2_per_kwh": 400, "embodied": {"hi 2x16": "dell-poweredge-r640", "lo 2x6": 1000}}
    _, res = _flip_plan(carbon=carbon)
    rows = {r["candidate"]: r for r in summary_dict(res)["carbon"]["candidates"]}
    hi, lo = rows["hi 2x16"], rows["lo 2x6"]
    assert hi["operational_kg_per_vm_year"] == pytest.approx(6 * 300 * 8760 / 1000 * 0.4 / 48)
    assert hi["embodied_kg_per_vm_year"] == pytest.approx(1314.1 * 6 / 4 / 48)
    assert lo["embodied_kg_per_vm_year"] == pytest.approx(1000 * 16 / 4 / 48)
    assert lo["operational_kg_per_vm_year"] == pytest.approx(16 * 300 * 8760 / 1000 * 0.4 / 48)
    assert summary_dict(res)["carbon"]["lowest_carbon"] == "hi 2x16"
    # a series enters the plan as its time-weighted mean: 100 g for 1 h, 700 g for 1 h -> 400 g: same figures
    grid = tmp_path / "grid.csv"
    grid.write_text("time_s,gco2_per_kwh\n0,100\n3600,700\n7200,0\n")
    _, res2 = _flip_plan(carbon={"grid_series": {"file": str(grid)}})
    hi2 = {r["candidate"]: r for r in summary_dict(res2)["carbon"]["candidates"]}["hi 2x16"]
    assert hi2["operational_kg_per_vm_year"] == pytest.approx(hi["operational_kg_per_vm_year"])
    assert hi2["embodied_kg_per_vm_year"] is None  # not given: not guessed
    with pytest.raises(InputError, match="carbon.embodied.nope"):
        _flip_plan(carbon={"grid_gco2_per_kwh": 1, "embodied": {"nope": 1}})
    with pytest.raises(InputError, match="no embodied carbon for candidate 'lo 2x6'"):
        _flip_plan(carbon={"grid_gco2_per_kwh": 1, "embodied": {"hi 2x16": 1}})


def test_plan_carbon_splits_scope_2_location_and_market_based_by_hand():
    from densim.spec.plan import PlanSpec
    from densim.tools.plan.licensing_carbon import candidate_carbon

    cand = {"name": "c", "cpu": {"cores_per_socket": 4, "base_clock": "2 GHz"}, "memory": "64 GiB",
            "power": {"model": "linear", "idle": "100 W", "peak": "300 W"}, "price_usd": 1}
    spec = PlanSpec.model_validate({"candidates": [cand], "carbon": {"grid_gco2_per_kwh": 400, "market_gco2_per_kwh": 50, "pue": 1.0,
                                                                 "embodied": {"c": 1000}, "lifetime_years": 5}})
    row = candidate_carbon(spec, "c", np.array([200.0, 200.0]), 2, 10)
    # 400 W x 8,760 h = 3,504 kWh a year; location-based 3,504 x 400 g = 1,401.6 kg; market-based 3,504 x 50 g = 175.2 kg
    assert row["scope2_location_kg_per_year"] == pytest.approx(1401.6)
    assert row["scope2_market_kg_per_year"] == pytest.approx(175.2)
    # per VM-year (10 VMs): 140.16 and 17.52 kg; Scope 3 embodied 2 x 1,000 kg / 5 years / 10 VMs = 40 kg
    assert row["scope2_location_kg_per_vm_year"] == pytest.approx(140.16)
    assert row["scope2_market_kg_per_vm_year"] == pytest.approx(17.52)
    assert row["scope3_embodied_kg_per_vm_year"] == pytest.approx(40.0)
