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
    # with the active-memory rule required: 1:2 keeps the bound but 1:3 breaks the rule on one host
    rows2 = [_row("1:1", 1, 1.00), _row("1:2", 2, 1.01), _row("1:3", 3, 1.02, rule=1)]
    a = _answer(rows2, 1.10, False, active_rule=True)
    assert (a["ratio"], a["limiting"]) == ("1:2", "active-memory rule")
    assert a["reason"] == "at 1:3 1 host(s) break the active-memory rule (active memory beyond DRAM; worst slowdown 1.020x)"
    assert _answer(rows2, 1.10, False)["ratio"] == "1:3"  # without it, 1:3 is within the bound
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


def test_densim_plan_with_a_tier_names_the_tier_ratio_when_its_slowdown_binds():
    # 16 VMs x 7.5 GiB, 6 GiB in use each, at 25 % of 2 vCPUs, on 64 GiB hosts with a 1:1 NVMe tier and
    # memory over-commit 2.5: one host takes all 16 (120 GiB configured <= DRAM + tier, 4 vCPUs per core).
    # DRAM's guest share ~60.4 GiB (64 - 1.5 hypervisor - 0.8 overheads - 1.26 minFree); spill ~59.6 GiB,
    # idle 24 GiB, so ~35.6 GiB of the 96 GiB active spills: g ~ 0.63, tier access ratio ~ 0.37 at
    # 200 x 0.25 = 50 accesses/s -> ~18.5 tier faults/s x ~0.42 ms: slowdown ~ 1.0077. With the bound at
    # 1.0085 the tier ratio is the tightest bound (share ~0.9; configured memory 120/64/2.5 = 0.75):
    # the headline names it.
    from densim.tools.plan.capacity import PlanSpec, plan
    from densim.tools.plan.report import answer_dict
    from densim.tools.plan.report import headline_lines as plan_headline

    from .test_plan_qos import HOST, inventory

    inv = inventory(n=16, active_gib=6.0, cfg_gib=7.5, util=0.25)
    sp = PlanSpec.model_validate({
        "policy": "first-fit-decreasing", "windows": 12, "candidates": [HOST],
        "qos": {"cpu_ready_pct": 50, "vcpus_per_core": 4, "memory_overcommit": 2.5, "memory_slowdown": 1.0085},
        "memory": {"model": "vsphere-like", "swap_device": "intel-dc-s3710-400gb",
                   "tiering": {"device": "intel-dc-p4600-1.6tb", "ratio": "1:1"}}})
    res = plan(inv, sp)
    r = res.results[0]
    assert r.feasible and r.n_hosts == 1 and r.mem_slowdown_worst == pytest.approx(1.0077, abs=5e-4)
    a = answer_dict(res)
    assert a["limiting"] == "tier_ratio"
    assert any(line.startswith("Limiting resource: tier ratio (memory slowdown of the worst VM at its worst step "
                               "with the 1:1 NVMe memory tier)") for line in plan_headline({"answer": a}))
    # without the tier the same VMs need 2 hosts (at most 64 GiB of usable memory in use per host)
    sp2 = PlanSpec.model_validate({**sp.model_dump(by_alias=True), "memory": {"model": "vsphere-like", "swap_device": "intel-dc-s3710-400gb"}})
    assert plan(inv, sp2).results[0].n_hosts == 2
