"""Hand-calculable micro-scenarios: the arithmetic is in each test's comment."""

import numpy as np
import pytest

from densim.engine import simulate
from densim.plant import resolve

from .helpers import const_vms, host, scenario


def test_two_vms_on_a_two_core_host_share_fairly():
    # One host: 2 cores x 2,000 MHz = 4,000 MHz; linear power 100 W idle -> 200 W peak.
    # Two VMs of 2 vCPUs at 2,000 MHz, each at 75 % -> 3,000 MHz demand each, 6,000 MHz in all.
    # vCPU over-commit 2 lets both in (4 vCPUs on 2 cores).
    # Max-min fair: each gets 2,000 MHz; unserved 1,000 MHz each.
    # Over 10 minutes (600 s): demand = 6,000 x 600 = 3.6e6 MHz s; delivered = 4,000 x 600 = 2.4e6;
    # unserved = 1.2e6. Utilisation 1 -> 200 W x 600 s = 120,000 J.
    sc = scenario([host(cores=2)], [const_vms("v", 2, 2, 2000, 0.75)], cpu_oc=2.0)
    r = simulate(resolve(sc))
    t = r.summary["totals"]
    assert t["cpu_demand_mhz_s"] == pytest.approx(3.6e6)
    assert t["cpu_delivered_mhz_s"] == pytest.approx(2.4e6)
    assert t["cpu_unserved_mhz_s"] == pytest.approx(1.2e6)
    assert t["energy_j"] == pytest.approx(120_000)
    assert r.vms["cpu_delivered_mhz_s"].to_list() == pytest.approx([1.2e6, 1.2e6])


def test_four_core_host_two_vms_fit():
    # The example: one 4-core 2 GHz host (8,000 MHz), two VMs demanding 3 GHz each
    # (2 vCPUs at 2 GHz, 75 %) for 10 minutes. 6,000 <= 8,000: all delivered, nothing unserved.
    # Utilisation 0.75 -> P = 100 + 100 x 0.75 = 175 W; energy = 175 x 600 = 105,000 J.
    # Ready: 4 vCPUs on 4 cores can never wait (N <= C) -> 0.
    sc = scenario([host(cores=4)], [const_vms("v", 2, 2, 2000, 0.75)])
    r = simulate(resolve(sc))
    t = r.summary["totals"]
    assert t["cpu_delivered_mhz_s"] == pytest.approx(3.6e6)
    assert t["cpu_unserved_mhz_s"] == pytest.approx(0.0, abs=1e-6)
    assert t["energy_j"] == pytest.approx(105_000)
    assert t["cpu_ready_s"] == 0.0


def test_maxmin_gives_small_vm_all_it_asks():
    # 2 cores x 2,000 = 4,000 MHz. VM a asks 500 MHz (1 vCPU at 50 %), VM b 4,000 (2 vCPUs, 100 %).
    # Max-min: a gets 500; b gets the remaining 3,500.
    sc = scenario([host(cores=2)], [const_vms("a", 1, 1, 1000, 0.5), const_vms("b", 1, 2, 2000, 1.0)], cpu_oc=2.0)
    r = simulate(resolve(sc))
    d = dict(zip(r.vms["vm"].to_list(), r.vms["cpu_delivered_mhz_s"].to_list()))
    assert d["a-0"] == pytest.approx(500 * 600)
    assert d["b-0"] == pytest.approx(3500 * 600)


def test_unused_hosts_idle_or_off():
    # Two hosts, one VM: the empty host draws idle power (100 W x 600 s = 60 kJ) unless off.
    # VM: 1 vCPU at 2,000 MHz, 50 % -> util of host 0 = 1,000 / 8,000 = 0.125 -> 112.5 W -> 67.5 kJ.
    vms = [const_vms("v", 1, 1, 2000, 0.5)]
    on = simulate(resolve(scenario([host(count=2)], vms, unused="idle"))).summary["totals"]["energy_j"]
    off = simulate(resolve(scenario([host(count=2)], vms, unused="off"))).summary["totals"]["energy_j"]
    assert on == pytest.approx(67_500 + 60_000)
    assert off == pytest.approx(67_500)


def test_energy_independent_of_step_for_constant_load():
    # A constant load gives the same energy whatever the step: 112.5 W x 3,600 s = 405 kJ.
    vms = [const_vms("v", 1, 1, 2000, 0.5)]
    e = [simulate(resolve(scenario([host()], vms, step=s, horizon="1 h"))).summary["totals"]["energy_j"] for s in ("1 min", "5 min", "20 min")]
    assert e == pytest.approx([405_000] * 3)


def test_vm_that_fits_nowhere_is_listed():
    # A 64 GiB host cannot take a 100 GiB VM: it is listed as unplaced, its demand unserved.
    sc = scenario([host()], [const_vms("big", 1, 1, 2000, 0.5, mem="100 GiB"), const_vms("ok", 1, 1, 2000, 0.5)])
    r = simulate(resolve(sc))
    s = r.summary
    assert s["vms_unplaced"] == 1 and s["unplaced_vms"] == ["big-0"]
    assert s["totals"]["cpu_unserved_mhz_s"] == pytest.approx(1000 * 600)


def test_cpu_ready_matches_binomial_model_of_the_guide():
    # Modelling guide §3.2: 352 vCPUs at 10 % on C = 32 cores -> ready 1.18 % per vCPU (binomial).
    # 352 one-vCPU VMs at 10 % of 1,000 MHz on one 32-core 1,000 MHz host (over-commit 11):
    # mu = 35.2 runnable vCPUs > 32 -> some demand is also unserved (fluid part).
    sc = scenario([host(cores=32, mhz=1000, mem="1 TiB")], [const_vms("v", 352, 1, 1000, 0.10, mem="1 GiB")], cpu_oc=11.0)
    r = simulate(resolve(sc))
    ready_pct = r.summary["totals"]["cpu_ready_s"] / (352 * 600) * 100
    assert ready_pct == pytest.approx(1.18, abs=0.03)
    assert np.allclose(r.vms["cpu_ready_pct_mean"].to_numpy(), ready_pct, rtol=1e-4)
