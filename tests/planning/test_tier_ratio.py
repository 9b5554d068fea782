"""The tier-ratio planner (densim.tools.plan.tiering): the highest DRAM:NVMe ratio within a slowdown bound."""

from __future__ import annotations

import pytest

from densim.errors import InputError
from densim.spec.loader import load_scenario
from densim.tools.plan.tiering import _answer, headline_lines, tier_ratio_plan


def _row(ratio, k, slow, placed=10, hosts=4, rule=0):
    return {"ratio": ratio, "k": k, "memory_overcommit": 1 + k, "hosts_used": hosts, "vms_placed": placed, "vms": 10,
            "worst_slowdown_by_group": {"db": slow, "app": 1.0}, "worst_slowdown": slow,
            "hosts_breaking_active_rule": rule, "tier_device_util_peak": 0.0}


def test_the_answer_is_the_last_ratio_before_the_first_one_beyond_the_bound():
    rows = [_row("1:1", 1, 1.00, hosts=4), _row("1:2", 2, 1.04, hosts=3), _row("1:3", 3, 1.12, hosts=2, rule=1),
            _row("1:4", 4, 1.30, hosts=2, rule=2)]
    a = _answer(rows, 1.10, False)
    assert (a["ratio"], a["hosts_used"], a["limiting"]) == ("1:2", 3, "tier ratio")
    assert a["reason"] == "at 1:3 VM group 'db' slows 1.120x > 1.1x; 1 host(s) break the active-memory rule"
    # every ratio within the bound: vSphere's 1:4 is the limit, and 1:3 already packed the VMs on 2 hosts
    a = _answer(rows, 1.5, False)
    assert (a["ratio"], a["limiting"], a["fewest_hosts_from"]) == ("1:4", "vSphere maximum", "1:3")
    assert any("buys no fewer hosts" in line for line in headline_lines(a))
    # a ratio that leaves VMs unplaced stops the search: placement is the limit
    a = _answer([_row("1:1", 1, 1.0), _row("1:2", 2, 1.0, placed=9)], 1.1, False)
    assert (a["ratio"], a["limiting"]) == ("1:1", "placement")
    # not even 1:1 within the bound
    a = _answer([_row("1:1", 1, 1.2)], 1.1, False)
    assert a["ratio"] is None and headline_lines(a)[0].startswith("No tier ratio keeps every workload within 1.1x")


def test_the_example_scenario_answers_1_to_1_5_at_a_5_percent_bound():
    # examples/memory/nvme-tiering.yaml: at 1:2 (over-commit 3) first-fit puts all 8 db VMs (64 GiB, 50 %
    # active = 256 GiB) on one 256 GiB host: active memory beyond DRAM's guest share spills and the db
    # group slows ~1.08x; 1:1.5 still spreads them
    sc = load_scenario("examples/memory/nvme-tiering.yaml")
    a = tier_ratio_plan(sc, bound=1.05, ratios=["1:1", "1:1.5", "1:2"])
    assert (a["ratio"], a["limiting"]) == ("1:1.5", "tier ratio")
    assert a["ratios"][2]["hosts_breaking_active_rule"] == 1 and a["ratios"][2]["worst_slowdown"] > 1.05


def test_a_scenario_without_a_tier_is_refused():
    with pytest.raises(InputError, match=r"memory.tiering: the tier-ratio plan needs memory.model: vsphere-like"):
        tier_ratio_plan(load_scenario("examples/planetlab.yaml"))
