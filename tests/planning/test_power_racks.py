"""Power caps and rack limits in ``densim plan`` by hand (issue 32, item 4): the capped clock the plan
places on, the rack's usable power under continuous-load derating, A/B feeds, hosts per rack, VMs per kW."""

from __future__ import annotations

import math

import numpy as np
import pytest

from densim.models.racks import feed_power_w, hosts_per_rack, rack_power_w
from densim.spec.plan import PlanSpec
from densim.tools.plan.capacity import host_type_of, plan, plan_spec_issues
from densim.tools.plan.report import answer_dict, headline_lines
from densim.workloads.inventory import build_inventory

# 1 socket x 4 cores, no SMT, 2,000 MHz base: 8,000 MHz; linear power 100 W idle, 300 W at full load
CPU = {"sockets": 1, "cores_per_socket": 4, "base_clock": "2000 MHz"}
POWER = {"model": "linear", "idle": "100 W", "peak": "300 W"}


def test_a_feed_carries_80_percent_of_its_breaker_and_a_b_feeds_one_rack_each():
    # single phase 30 A at 208 V: 6,240 VA; continuous load at 80 % (NEC 210.20(A): breaker >= 125 % of it) = 4,992 W
    assert feed_power_w(30, 208, 1, 0.8) == pytest.approx(4992.0)
    # three phase 30 A at 208 V line to line: 30 x 208 x sqrt(3) = 10,808 VA; x 0.8 = 8,646.4 W
    assert feed_power_w(30, 208, 3, 0.8) == pytest.approx(30 * 208 * math.sqrt(3) * 0.8)
    assert feed_power_w(30, 208, 3, 0.8) == pytest.approx(8646.4, abs=0.1)
    # an 8 kW rack on two three-phase 30 A feeds: the budget binds (8,000 < 8,646.4), so either feed alone carries
    # the whole rack when the other fails, and each carries 4,000 W = half the budget in normal operation
    assert rack_power_w(8000.0, feed_power_w(30, 208, 3, 0.8)) == (8000.0, "budget")
    # the same rack on single-phase 30 A feeds: 4,992 W per feed binds -- the rack may draw no more than one feed
    assert rack_power_w(8000.0, feed_power_w(30, 208, 1, 0.8)) == (pytest.approx(4992.0), "circuit")
    # 400 W hosts of 2 U in 42 U: 8,000 / 400 = 20 by power, 42 / 2 = 21 by space -> 20, power-bound
    assert hosts_per_rack(8000.0, 400.0, 42.0, 2.0) == (20, "power")
    # 250 W hosts: 32 by power, 21 by space -> 21, space-bound
    assert hosts_per_rack(8000.0, 250.0, 42.0, 2.0) == (21, "space")


def _spec(cap: str | None = "200 W", racks: dict | None = None) -> PlanSpec:
    cand = {"name": "c", "cpu": CPU, "memory": "64 GiB", "power": POWER, "price_usd": 1000}
    if cap is not None:
        cand["power_cap"] = cap
    doc = {"policy": "first-fit-decreasing", "qos": {"cpu_ready_pct": 100.0}, "candidates": [cand]}
    if racks is not None:
        doc["racks"] = racks
    return PlanSpec.model_validate(doc)


def _inventory(n: int = 10):
    # n 1-vCPU VMs at a constant 1,500 MHz (4 samples), 1 GiB each: CPU decides how many fit a host
    return build_inventory([f"v{i}" for i in range(n)], [1] * n, [2000.0] * n, [2**30] * n, cpu_mhz=np.full((4, n), 1500.0))


def test_a_capped_candidate_is_placed_on_the_clock_a_busy_host_keeps_within_the_cap():
    # 200 W cap: 100 + 200 s^3 <= 200 -> s <= 0.794 -> the 1,500 MHz P-state (1,600 MHz: 202.4 W): 4 x 1,500 = 6,000 MHz
    assert host_type_of(_spec().candidates[0]).core_mhz == pytest.approx(1500.0)
    assert host_type_of(_spec(cap=None).candidates[0]).core_mhz == pytest.approx(2000.0)
    # uncapped 8,000 MHz holds 5 VMs of 1,500 MHz (7,500): 10 VMs on 2 hosts; capped 6,000 MHz holds 4: 3 hosts
    free = plan(_inventory(), _spec(cap=None)).results[0]
    capped = plan(_inventory(), _spec()).results[0]
    assert free.feasible and capped.feasible
    assert (free.n_hosts, capped.n_hosts) == (2, 3)
    assert capped.power["capped"]["clock_mhz"] == pytest.approx(1500.0)
    assert capped.power["capped"]["clock_power_w"] == pytest.approx(184.375)  # 100 + 200 x 0.75^3
    assert capped.power["capped"]["capacity_loss_pct"] == pytest.approx(25.0)  # 1 - 1,500 / 2,000


def test_the_answer_is_power_bound_when_the_cap_sets_the_binding_cpu_capacity():
    racks = {"budget": "1 kW", "breaker": 10, "voltage": 120}
    res = plan(_inventory(), _spec(racks=racks))
    from densim.tools.plan.capacity import PlanResult  # noqa: F401  (the type plan returns)

    a = answer_dict(res)
    assert a["limiting"] == "power" and a["limiting_through"] in ("cpu_demand", "cpu_ready")
    pw = a["power"]
    # one 10 A 120 V feed: 1,200 VA x 0.8 = 960 W < the 1 kW budget: the circuit binds; 960 / 200 W = 4 hosts by power,
    # 42 by space: 4 per rack, power-bound; 3 hosts -> 1 rack; each A/B feed carries 4 x 200 / 2 = 400 W, 800 W alone
    assert pw["rack_usable_w"] == pytest.approx(960.0) and pw["rack_usable_bound"] == "circuit"
    assert (pw["hosts_per_rack"], pw["rack_bound"], pw["racks"]) == (4, "power", 1)
    assert pw["feed_load_w"] == pytest.approx(400.0) and pw["feed_load_failover_w"] == pytest.approx(800.0)
    # VMs per budgeted kW: 10 VMs / (3 hosts x 0.2 kW) = 16.7
    assert pw["vms_per_kw"] == pytest.approx(10 / 0.6)
    text = "\n".join(headline_lines({"answer": a}))
    assert "Limiting resource: power" in text and "1,500 MHz of its 2,000 MHz base clock (184 W; 25 % of its CPU capacity)" in text
    assert "Racks: 1 of 4 hosts (power-bound" in text


def test_without_a_cap_the_cpu_binds_and_racks_use_full_load_power():
    res = plan(_inventory(), _spec(cap=None, racks={"budget": "1 kW", "breaker": 10, "voltage": 120}))
    a = answer_dict(res)
    assert a["limiting"] != "power" and a["limiting_through"] is None
    # 960 W / 300 W at full load = 3 hosts per rack: 2 hosts -> 1 rack
    assert (a["power"]["hosts_per_rack"], a["power"]["host_budget_w"]) == (3, 300.0)


def test_a_cap_below_the_lowest_p_state_is_refused():
    # 800 MHz fully busy: 100 + 200 x (800 / 2000)^3 = 112.8 W > 110 W
    issues = plan_spec_issues(_spec(cap="110 W"))
    assert issues and issues[0][0] == "candidates[0].power_cap" and "= 112.8 W" in issues[0][1]



def test_the_report_renders_a_power_bound_answer(tmp_path):
    # the limiting key "power" is no bound of its own: the report marks the CPU bound it acts through
    from densim.tools.plan.report import write_outputs

    summary = write_outputs(plan(_inventory(), _spec(racks={"budget": "1 kW", "breaker": 10, "voltage": 120})), tmp_path / "out")
    assert summary["answer"]["limiting"] == "power"
    html = (tmp_path / "out" / "report.html").read_text()
    assert "(limiting: power, on the capped clock)" in html and "1 x 4" in html
