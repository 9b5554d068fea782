"""NVMe memory tiering (densim.models.tiering and the memory stage's tier pass): hand-checked cases."""

from __future__ import annotations

import numpy as np
import pytest

from densim.engine import simulate
from densim.errors import InputError
from densim.models import tiering as TI
from densim.models.devices import DeviceSpec
from densim.models.memory_defaults import FaultCosts
from densim.plant import resolve
from densim.spec.loader import scenario_from_dict

GIB = float(1 << 30)


def test_cold_pages_go_to_the_tier_first_and_active_pages_only_when_idle_memory_cannot_hold_the_spill():
    # DRAM holds 100 GiB of guest memory; two VMs of 80 GiB resident: 160 GiB, spill 60 GiB.
    # (a) 40 GiB active each: idle 80 GiB >= 60 -> every active page stays in DRAM (g = 1), each VM
    #     has 60/80 x 40 = 30 GiB of idle memory on the tier
    pl = TI.place_pages([80 * GIB, 80 * GIB], [40 * GIB, 40 * GIB], [1.0, 1.0], [0, 0], 1, 100 * GIB)
    assert pl.tier_bytes / GIB == pytest.approx([30, 30])
    assert pl.dram_active_fraction == pytest.approx([1, 1])
    assert pl.spill_bytes[0] / GIB == pytest.approx(60)
    # (b) 60 GiB active each: idle 40 GiB < 60 -> 20 GiB of active pages spill, g = 1 - 20/120 = 5/6;
    #     random access over the active set: m(f) = 1 - f, tier access ratio m(5/6) - m(1) = 1/6
    pl = TI.place_pages([80 * GIB, 80 * GIB], [60 * GIB, 60 * GIB], [1.0, 1.0], [0, 0], 1, 100 * GIB)
    assert pl.dram_share[0] == pytest.approx(5 / 6)
    assert pl.tier_bytes / GIB == pytest.approx([30, 30])  # 20 idle + 10 active each
    assert pl.tier_active_bytes / GIB == pytest.approx([10, 10])
    f = pl.dram_active_fraction
    assert TI.tier_access_ratio(1 - f, 1 - np.ones(2)) == pytest.approx([1 / 6, 1 / 6])
    # a VM whose active set is already half swapped (f_res = 0.5): of the accesses leaving DRAM,
    # m(g f_res) = 1 - 5/12 = 7/12, swap takes m(0.5) = 1/2, the tier 7/12 - 1/2 = 1/12
    assert TI.tier_access_ratio(1 - 5 / 6 * 0.5, 0.5) == pytest.approx(1 / 12)
    assert TI.active_rule(120 * GIB, 100 * GIB) == pytest.approx(1.2)


def _device(**kw):
    base = dict(name="slow-nvme", kind="nvme_ssd", read_latency="100 us", write_latency="100 us", read_iops=10000,
                write_iops=10000, capacity="1 TB")
    return DeviceSpec.model_validate({**base, **kw})


@pytest.mark.parametrize(("n_vms", "slowdown"), [(1, 1 / 0.80742), (4, 1 / 0.69098)])
def test_the_tier_device_queues_every_vms_tier_faults(n_vms, slowdown):
    # One device of 10,000 IOPS at 100 us (c = 10,000 x 100 us = 1 server: M/M/1, response s/(1 - rho)),
    # no software time, no demotion writes, theta = 1; each VM faults F = 2,000/s of unconstrained work.
    # X = 1/(1 + F s/(1 - rho)) = (1 - rho)/(1.2 - rho) and rho = n F X s = 0.2 n X:
    #   n = 1: rho^2 - 1.4 rho + 0.2 = 0 -> rho = 0.16148, X = 0.80742 (alone, no queue: X = 1/1.2 = 0.8333)
    #   n = 4: rho^2 - 2 rho + 0.8 = 0   -> rho = 1 - sqrt(0.2) = 0.55279, X = 0.69098
    dev = TI.tier_device_arrays(_device())
    f = TI.tier_faults(np.full(n_vms, 2000.0), np.ones(n_vms))
    tp = TI.solve_tier(f, np.zeros(n_vms, np.int64), 1, device=dev, costs=FaultCosts(software_s=0.0, writes_per_fault=0.0))
    assert tp.slowdown == pytest.approx(np.full(n_vms, slowdown), rel=1e-4)
    assert tp.util_store[0] == pytest.approx(0.2 * n_vms / slowdown, rel=1e-4)


def test_two_devices_per_host_halve_the_queue():
    # 2 striped devices: 20,000 IOPS and 2 servers of 100 us. Four VMs at 2,000 faults/s: M/M/2 at
    # rho = 0.4 X; slower than no queue (X = 0.8333) and faster than one device (0.69098)
    dev = TI.tier_device_arrays(_device(), 2)
    f = TI.tier_faults(np.full(4, 2000.0), np.ones(4))
    tp = TI.solve_tier(f, np.zeros(4, np.int64), 1, device=dev, costs=FaultCosts(software_s=0.0, writes_per_fault=0.0))
    x = 1 / tp.slowdown[0]
    # M/M/2 response s/(1 - rho^2); X = 1/(1 + 0.2/(1 - rho^2)), rho = 0.4 X: solved by hand iteration
    rho = 0.4 * x
    assert x == pytest.approx(1 / (1 + 0.2 / (1 - rho**2)), rel=1e-6)
    assert 0.69098 < x < 0.83334


BASE = {
    "name": "tier",
    "cluster": {"hosts": [{"name": "h", "count": 1, "cpu": {"cores_per_socket": 32, "base_clock": "2000 MHz"},
                           "memory": "64 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "300 W"}}]},
    "vms": [{"name": "app", "count": 2, "vcpus": 4, "vcpu_speed": "2000 MHz", "memory": "48 GiB",
             "profile": {"kind": "constant", "mean": 1.0, "active_memory_fraction": 0.75},
             "workload": {"memory_access_rate_per_s": 900}}],
    "placement": {"policy": "first-fit", "cpu_overcommit": 1.0, "memory_overcommit": 2.0},
    "simulation": {"step": "5 min", "horizon": "1 h", "seed": 1},
    "memory": {"model": "vsphere-like", "hypervisor_memory": "0 GiB", "overhead_per_vm": "0 GiB", "min_free": False,
               "tiering": {"device": "intel-dc-p4600-1.6tb", "ratio": "1:1", "fault_software_time": "10 us"}},
}


def _run(**memory):
    import copy

    d = copy.deepcopy(BASE)
    d["memory"].update(memory)
    return simulate(resolve(scenario_from_dict(d)))


def test_a_working_set_that_spills_slows_by_its_tier_faults_at_the_device_latency():
    # 64 GiB DRAM (no hypervisor memory, overheads or minFree: 64 GiB for guests) + a 1:1 tier of 64 GiB.
    # Two 48 GiB VMs: 96 GiB resident (no reclamation: 96 <= 128), spill 32 GiB. Active 0.75 x 48 = 36 GiB
    # each (72 GiB > 64: the active-memory rule is broken, 72/64 = 1.125); idle 24 GiB all go to the tier,
    # then 8 GiB of active pages: g = 1 - 8/72 = 8/9. Each VM: 12 + 4 = 16 GiB on the tier.
    # Tier access ratio (random) m(8/9) - m(1) = 1/9; at 100 % CPU r = 900/s -> F = 100 tier faults/s.
    # Fault cost t = 10 us software (given) + 85 us P4600 read + queueing (w = 0.125 demotions per promotion:
    # ~ 2 x 100 x 1.125 = 225 IOPS on a device of ~500,000 mixed IOPS: wait ~ 0) -> slowdown 1 + 100 x 95 us = 1.0095
    r = _run()
    t = r.summary["memory"]["tiering"]
    assert t["ratio"] == "1:1" and t["tier_gib_per_host"] == pytest.approx(64.0)
    assert t["active_over_dram_by_host"]["h-0"] == pytest.approx(1.125)
    assert t["hosts_breaking_active_rule"] == ["h-0"]
    assert t["tier_peak_gib_by_host"]["h-0"] == pytest.approx(32.0, rel=1e-5)
    assert t["worst_vm_tier_slowdown"] == pytest.approx(1.0095, rel=2e-5)
    assert r.summary["memory"]["worst_vm_slowdown"] == pytest.approx(1.0095, rel=2e-5)
    assert r.summary["memory"]["hosts_swapping"] == []
    gib = np.asarray(r.vm_acc.series["mem_tier_gib"])
    assert gib == pytest.approx(16.0, rel=1e-5)
    # the default software time is the memory model's fault_software_time (0.333 ms, fitted to ESX host
    # swap): 1 + 100 x (333 + 85) us = 1.0418
    r = _run(tiering={"device": "intel-dc-p4600-1.6tb", "ratio": "1:1"})
    assert r.summary["memory"]["tiering"]["worst_vm_tier_slowdown"] == pytest.approx(1.0418, rel=1e-4)


def test_active_memory_that_fits_dram_gives_no_tier_faults():
    # active 0.5 x 48 = 24 GiB each, 48 GiB < 64: the 32 GiB spill is idle memory alone -> slowdown 1
    import copy

    d = copy.deepcopy(BASE)
    d["vms"][0]["profile"]["active_memory_fraction"] = 0.5
    r = simulate(resolve(scenario_from_dict(d)))
    t = r.summary["memory"]["tiering"]
    assert t["hosts_breaking_active_rule"] == [] and t["active_over_dram_by_host"]["h-0"] == pytest.approx(0.75)
    assert t["worst_vm_tier_slowdown"] == 1.0 and t["tier_peak_gib_by_host"]["h-0"] == pytest.approx(32.0, rel=1e-5)


@pytest.mark.parametrize(("tiering", "message"), [
    ({"device": "intel-dc-s3700-400gb", "ratio": "1:1"}, r"memory.tiering.device: device 'intel-dc-s3700-400gb' is a sata_ssd"),
    ({"device": "intel-dc-p4600-1.6tb", "ratio": "1:5"}, r"at most 4 x DRAM"),
    ({"device": "intel-dc-p4600-1.6tb", "ratio": "2:1"}, r"is not DRAM:NVMe as '1:k'"),
    ({"device": "intel-dc-p4600-1.6tb", "ratio": "1:1", "hosts": ["nope"]}, r"memory.tiering.hosts\[0\]: no host group 'nope'"),
])
def test_bad_tiering_is_refused_with_its_field(tiering, message):
    import copy

    d = copy.deepcopy(BASE)
    d["memory"]["tiering"] = tiering
    with pytest.raises(InputError, match=message):
        resolve(scenario_from_dict(d))


def test_a_tier_larger_than_its_devices_is_refused():
    # 1 TiB DRAM at 1:2 needs 2 TiB of NVMe; one P4600 holds 1.6 TB = 1,490 GiB
    import copy

    d = copy.deepcopy(BASE)
    d["cluster"]["hosts"][0]["memory"] = "1 TiB"
    d["memory"]["tiering"]["ratio"] = "1:2"
    with pytest.raises(InputError, match=r"needs 2048 GiB of NVMe but 1 x intel-dc-p4600-1.6tb hold 1490 GiB"):
        resolve(scenario_from_dict(d))


def test_four_vms_queue_at_one_slow_tier_device_in_a_run():
    # The model case above, in a run: 64 GiB DRAM (no hypervisor memory, overheads or minFree) + 1:1 tier on
    # a device of 10,000 IOPS at 100 us (one M/M/1 server), no software time, no demotion writes.
    # Four 32 GiB VMs at 75 % active: resident 128 GiB, spill 64, idle 32 -> 32 GiB of the 96 GiB active
    # spill, g = 2/3, tier access ratio 1/3; at 6,000 accesses/s (100 % CPU) F = 2,000 tier faults/s each.
    # rho = 4 F X s = 0.8 X and X = (1 - rho)/(1.2 - rho): rho = 1 - sqrt(0.2) = 0.55279, X = 0.69098,
    # slowdown 1.44721 (one VM alone on the device: 1.2385; no queue at all: 1.2)
    import copy

    d = copy.deepcopy(BASE)
    d["parts"] = {"devices": [{"name": "slow-nvme", "kind": "nvme_ssd", "read_latency": "100 us", "write_latency": "100 us",
                               "read_iops": 10000, "write_iops": 10000, "capacity": "1 TB"}]}
    d["vms"][0].update(count=4, memory="32 GiB")
    d["vms"][0]["workload"]["memory_access_rate_per_s"] = 6000
    d["memory"]["tiering"] = {"device": "slow-nvme", "ratio": "1:1", "fault_software_time": "0 us", "writes_per_fault": 0}
    r = simulate(resolve(scenario_from_dict(d)))
    t = r.summary["memory"]["tiering"]
    assert t["worst_vm_tier_slowdown"] == pytest.approx(1 / 0.69098, rel=1e-4)
    assert t["tier_device_util_peak"] == pytest.approx(0.55279, rel=1e-4)
    assert np.asarray(r.host_acc.series["mem_tier_iops"]) == pytest.approx(5527.9, rel=1e-4)


@pytest.mark.parametrize("count", [2, 3])
def test_the_tier_figures_are_the_same_without_vm_time_series(count):
    # 3 VMs of 48 GiB at 95 % active: 144 GiB > DRAM + tier (128 GiB): the host also swaps active pages,
    # and the two stretches add.
    # Without per-VM series the memory stage hands sums (and maxima) over the chunk; the summary must not
    # change (the worst step is exact here: the stretches are constant in time)
    import copy

    out = []
    for vm_series in ("on", "off"):
        d = copy.deepcopy(BASE)
        d["vms"][0]["count"] = count
        d["placement"]["memory_overcommit"] = 2.5
        d["vms"][0]["profile"]["active_memory_fraction"] = 0.95  # idle 7.2 GiB < the 16 GiB deficit: active pages swap
        d["output"] = {"vm_timeseries": vm_series}
        r = simulate(resolve(scenario_from_dict(d)))
        assert int((r.ctx.vms.host >= 0).sum()) == count
        out.append((r.summary["memory"]["worst_vm_slowdown"], r.summary["memory"]["tiering"]["worst_vm_tier_slowdown"],
                    r.summary["totals"]["cpu_demand_mhz_s"]))
    assert out[0] == pytest.approx(out[1], rel=1e-6)
    if count == 3:  # swap and tier both stretch: worst > tier alone
        assert out[0][0] > out[0][1] > 1.0


def test_only_the_named_host_groups_have_a_tier():
    # two groups of one host each; the tier only on 'h': the other host has none (tier_h = 0) and its VMs,
    # configured beyond its DRAM, go through reclamation instead
    import copy

    d = copy.deepcopy(BASE)
    d["cluster"]["hosts"].append({**d["cluster"]["hosts"][0], "name": "plain"})
    d["vms"][0]["count"] = 4
    d["memory"]["tiering"]["hosts"] = ["h"]
    r = simulate(resolve(scenario_from_dict(d)))
    t = r.summary["memory"]["tiering"]
    assert t["hosts_tiered"] == 1 and t["hosts_using_tier"] == ["h-0"]
    assert r.summary["memory"]["hosts_short_of_memory"] == ["plain-1"]  # host names count across groups


def test_a_skewed_miss_curve_keeps_most_accesses_in_dram():
    # The spill case above (g = 8/9 of the active set in DRAM), with a measured curve instead of uniform
    # access: (resident fraction 0.5, miss ratio 0.1) and (1, 0), linear between. m(8/9) = 0.1 x (1 - 8/9)/0.5
    # = 0.02222, so F = 900 x 0.02222 = 20 tier faults/s (uniform: 100) -> slowdown 1 + 20 x 95 us = 1.0019
    import copy

    d = copy.deepcopy(BASE)
    d["vms"][0]["workload"].update(memory_miss_model="table", memory_miss_table=[[0.5, 0.1]])
    r = simulate(resolve(scenario_from_dict(d)))
    assert r.summary["memory"]["tiering"]["worst_vm_tier_slowdown"] == pytest.approx(1.0019, rel=2e-5)
    assert np.asarray(r.vm_acc.series["mem_tier_fault_rate_per_s"]) == pytest.approx(20 / 1.0019, rel=1e-4)


def test_the_tier_ratio_plan_refuses_an_empty_list_of_ratios_in_one_line():
    from densim.errors import InputError
    from densim.spec.loader import load_scenario
    from densim.tools.plan.tiering import tier_ratio_plan

    sc = load_scenario("examples/memory/nvme-tiering.yaml")
    with pytest.raises(InputError, match="--ratios: no ratio to try"):
        tier_ratio_plan(sc, ratios=[])
