"""The densim side of CloudSim Plus's own benchmarks (benchmarks/peers/densim_own.py) builds and runs at a tiny size.

No timing here: the figures checked are the ones the benchmark compares with CloudSim Plus (placement, tasks
completed, work delivered, energy), small enough to check by hand.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from densim.engine import simulate
from densim.plant import resolve
from densim.spec.loader import scenario_from_dict

ROOT = Path(__file__).resolve().parents[2]


def _densim_own():
    spec = importlib.util.spec_from_file_location("densim_own", ROOT / "benchmarks" / "peers" / "densim_own.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(name: str, scale: float):
    mod = _densim_own()
    sc = scenario_from_dict(mod.scenario_mapping(name, scale), source="peer-test")
    return mod.counts(name, scale), simulate(resolve(sc), seed=42).summary


def test_pr341_at_a_thousandth_matches_the_hand_arithmetic():
    (hosts, vms, cloudlets), s = _run("pr341", 0.001)
    assert (hosts, vms, cloudlets) == (50, 100, 100)
    # 2,048 MiB hosts take 4 VMs of 512 MiB (16 of 64 cores): first-fit fills 100 / 4 = 25 hosts, as CloudSim Plus does
    assert s["vms_placed"] == 100 and s["hosts_used"] == 25
    sched = s["scheduling"]
    assert sched["completed"] == 100
    # each VM lives 1e7 s from an arrival in the first 0.1 s
    assert 1e7 <= sched["simulated_end_s"] <= 1e7 + 0.1
    tot = s["totals"]
    # 2 of 4 vCPUs x 1,000 MHz x 1e7 s = 2e10 MHz s per VM = the cloudlet's 1e10 MI x 2 PEs; nothing contends
    assert tot["cpu_delivered_mhz_s"] == pytest.approx(100 * 2e10, rel=1e-9)
    assert tot["cpu_ready_s"] == 0.0
    # energy: 2,778 one-hour steps (ceil(1e7 / 3,600)) = 10,000,800 s at 100 W idle on all 50 hosts
    # = 5.0004e10 J, plus 150 W x u = 16 x 0.5 / 64 = 0.125 on 25 hosts for 1e7 s = 4.6875e9 J
    assert tot["energy_j"] == pytest.approx(50 * 100 * 10_000_800 + 25 * 150 * 0.125 * 1e7, rel=1e-6)


def test_perfpage_at_a_thousandth_places_a_hundred_vms_per_host_and_delivers_the_cloudlets_work():
    (hosts, vms, cloudlets), s = _run("perfpage", 0.001)
    assert (hosts, vms, cloudlets) == (20, 40, 50)
    # 8 cores x 50,000 MHz admit 400,000 / (4 x 1,000) = 100 VMs: all 40 on the first host
    assert s["vms_placed"] == 40 and s["hosts_used"] == 1
    assert s["scheduling"]["completed"] == 40
    # 50 cloudlets x 10,000 MI x 2 PEs = 1e6 MI expected over 20 s of uniform utilisation (a seeded draw: within 5 %)
    assert s["totals"]["cpu_delivered_mhz_s"] == pytest.approx(1e6, rel=0.05)


def test_counts_refuse_an_unknown_scenario_or_scale():
    mod = _densim_own()
    with pytest.raises(SystemExit):
        mod.counts("nope", 1.0)
    with pytest.raises(SystemExit):
        mod.counts("pr341", 2.0)


def test_pr341_static_mode_delivers_exactly_the_cloudlets_work_by_the_horizon():
    mod = _densim_own()
    sc = scenario_from_dict(mod.scenario_mapping("pr341", 0.001, "static"), source="peer-test")
    res = simulate(resolve(sc), seed=42)
    grid = res.ctx.grid
    # 2,778 steps of 1e7 / 2,778 s end at 1e7 s; each VM delivers 2 x 1,000 MHz x 1e7 s = 2e10 MHz s = its cloudlet
    assert grid.n_steps == 2778 and grid.n_steps * grid.step_s == pytest.approx(1e7, rel=1e-12)
    delivered = res.vm_acc.sum["cpu_delivered_mhz"] * grid.step_s
    assert delivered == pytest.approx(2e10, rel=1e-9)
    # energy: 50 hosts x 100 W x 1e7 s + 25 hosts x 150 W x 0.125 x 1e7 s
    assert res.summary["totals"]["energy_j"] == pytest.approx(50 * 100 * 1e7 + 25 * 150 * 0.125 * 1e7, rel=1e-9)
    with pytest.raises(SystemExit):
        mod.scenario_mapping("perfpage", 0.001, "static")
