"""Bill of materials and TCO: the modelling guide's worked example, licence rules, power models."""

from __future__ import annotations

import numpy as np
import pytest

from densim.catalog.core import builtin_catalog
from densim.models.cost import BomPart, CostInputs, Licence, bom_cost_usd, bom_parts, licence_units, power_w, tco_per_year
from densim.models.hardware import PowerSpec


def test_every_bom_part_has_a_price_date_and_source():
    parts = bom_parts(builtin_catalog())
    assert {"blade", "cpu", "dimm", "nic", "drive", "controller"} <= {p.kind for p in parts.values()}
    for p in parts.values():
        assert isinstance(p, BomPart) and p.price_date and p.source


def test_bom_cost_sums_lines():
    total, rows = bom_cost_usd([{"part": "xeon-e5-2698-v3", "count": 2}, {"part": "ddr4-16g-rdimm", "count": 16}], builtin_catalog())
    assert total == 2 * 3226 + 16 * 180
    assert [r["count"] for r in rows] == [2, 16]


def test_worked_example_of_the_modelling_guide():
    # guide §6.5: 2 x 16-core host, capex $15,000 over 4 years = $3,750; 140 W x 8,760 h x 1.58 x $0.10 = $194;
    # Windows Server Datacenter $6,155 per 16 cores -> 32 cores = 2 x 6,155 over 4 years = $3,078;
    # vSphere subscription 32 cores x $135 = $4,320; total $11,342; at 40 VMs/host $284 per VM-year.
    win = Licence(name="Windows Server 2016 DC", per="core", price_usd=6155 / 8, pack_cores=2,
                  min_cores_per_socket=8, min_cores_per_host=16)
    vs = Licence(name="vSphere", per="core", price_usd=135, term="year", min_cores_per_socket=16)
    inputs = CostInputs(years=4, pue=1.58, price_per_kwh_usd=0.10, licences=[win, vs])
    t = tco_per_year(n_hosts=1, n_vms=40, host_capex_usd=15000, host_rack_units=1, mean_power_w=140,
                     sockets=2, cores_per_socket=16, inputs=inputs)
    assert t["hardware_usd"] == 3750
    assert t["energy_usd"] == pytest.approx(140 * 8760 / 1000 * 1.58 * 0.10)  # 193.8
    assert t["licences"][0]["usd_per_year"] == pytest.approx(3077.5)
    assert t["licences"][1]["usd_per_year"] == 4320
    assert t["total_usd"] == pytest.approx(11341.3, abs=1)
    assert t["per_vm_usd"] == pytest.approx(283.5, abs=0.1)


def test_licence_minimums():
    # Windows 2016: 8 cores per processor and 16 per server minimum, 2-core packs
    win = Licence(name="w", per="core", price_usd=1, pack_cores=2, min_cores_per_socket=8, min_cores_per_host=16)
    assert licence_units(win, sockets=1, cores_per_socket=4, n_hosts=1, n_vms=0) == 8  # 16 cores = 8 packs
    assert licence_units(win, sockets=2, cores_per_socket=6, n_hosts=3, n_vms=0) == 3 * 8
    assert licence_units(win, sockets=2, cores_per_socket=18, n_hosts=1, n_vms=0) == 18
    assert licence_units(Licence(name="s", per="socket", price_usd=1), 2, 8, 5, 100) == 10
    assert licence_units(Licence(name="h", per="host", price_usd=1), 2, 8, 5, 100) == 5
    assert licence_units(Licence(name="v", per="vm", price_usd=1), 2, 8, 5, 100) == 100


def test_cooling_watts_per_watt_instead_of_pue():
    inputs = CostInputs(pue=None, cooling_w_per_w=0.4, distribution_w_per_w=0.15)
    assert inputs.facility_factor == pytest.approx(1.55)


def test_power_models():
    lin = PowerSpec(model="linear", idle=100, peak=300)
    assert power_w(lin, [0, 0.5, 1]).tolist() == [100, 200, 300]
    # IBM x3550 2 x X5675 SPECpower table of the guide: 140 W at 50 %
    tab = PowerSpec(model="table", points=[58.4, 98, 109, 118, 128, 140, 153, 170, 189, 205, 222])
    assert float(power_w(tab, 0.5)) == 140
    assert float(power_w(tab, 0.55)) == pytest.approx(146.5)
    fan = PowerSpec(model="fan", idle=100, peak=200, exponent=1.4)
    assert float(power_w(fan, 0.5)) == pytest.approx(100 + 100 * (1 - 0.5**1.4))
    assert np.all(np.diff(power_w(fan, np.linspace(0, 1, 11))) >= 0)
