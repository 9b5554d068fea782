"""GPUs under a host power cap, a GPU power limit the operator sets, and the gpu stage in a split run
(issues 28 and 33; docs/background/gpus.md "Power limits and power caps").

One host: dual-platinum-8180-768g (56 cores at 2,500 MHz = 140,000 MHz; linear power 220 W idle, 760 W
busy; P-states 800, 900, ..., 2,500 MHz) with 2 x NVIDIA L40S (35 W idle, 350 W max, power_limit_min
100 W). One VM of 56 vCPUs at 2,000 MHz and 50 % CPU: D = 56 x 2,000 x 0.5 = 56,000 MHz, u0 = 0.4, and
both GPUs in passthrough at GPU utilisation 1.0: each GPU draws 35 + 315 x 1 = 350 W uncapped.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from densim.engine import simulate
from densim.engine.partition import simulate_in_parts
from densim.errors import InputError
from densim.models.gpu_power import limited_clock_scale, shared_limit_w
from densim.plant import resolve
from densim.spec.loader import scenario_from_dict

ONE = {
    "name": "gpucap",
    "cluster": {"hosts": [{"name": "g", "count": 1, "server": "dual-platinum-8180-768g",
                           "gpus": {"model": "nvidia-l40s", "count": 2}}]},
    "vms": [{"name": "train", "count": 1, "vcpus": 56, "vcpu_speed": "2000 MHz", "memory": "64 GiB",
             "profile": {"kind": "constant", "mean": 0.5}, "gpu": {"mode": "passthrough", "count": 2, "utilisation": 1.0}}],
    "placement": {"policy": "first-fit"},
    "simulation": {"step": "1 min", "horizon": "1 h", "seed": 1},
}


def one(cap: str | None = None, limit: str | None = None) -> dict:
    d = copy.deepcopy(ONE)
    if cap is not None:
        d["cluster"]["hosts"][0]["power_cap"] = cap
    if limit is not None:
        d["cluster"]["hosts"][0]["gpus"]["power_limit"] = limit
    return d


def run(d):
    return simulate(resolve(scenario_from_dict(d)))


def test_a_cap_the_cpu_clock_alone_cannot_meet_lowers_both_gpu_limits():
    # cap 900 W. The GPUs draw 2 x 350 = 700 W, leaving 200 W for the CPU: below its idle 220 W, so no P-state
    # fits and the CPU goes to the lowest, 800 MHz (s = 0.32): the VM needs u0 / s = 0.4 / 0.32 = 1.25 > 1 of it,
    # so it is fully busy: P_cpu = 220 + 540 x 0.32^3 = 220 + 540 x 0.032768 = 237.69472 W.
    # The GPUs get 900 - 237.69472 = 662.30528 W: one limit L with 2 min(350, L) = 662.30528 -> L = 331.15264 W
    # (above the L40S's 100 W minimum). A fully busy GPU at L runs at sigma = ((L - 35) / 315)^(1/3)
    # = (296.15264 / 315)^(1/3) = 0.940167^(1/3) = 0.979644, so its tenant's GPU work takes 1 / sigma = 1.020779 x.
    r = run(one(cap="900 W"))
    pc, g = r.summary["power_cap"], r.summary["gpu"]
    assert pc["host_steps_capped"] == pc["host_steps"] == 60
    assert pc["mean_clock_mhz_when_capped"] == pytest.approx(800.0)
    assert pc["gpu_host_steps_limited"] == 60
    assert pc["mean_gpu_limit_w_when_limited"] == pytest.approx(331.15264)
    sigma = (296.15264 / 315) ** (1 / 3)
    assert sigma == pytest.approx(0.979644, abs=1e-6)
    assert g["power_limited_gpu_steps"] == 120  # 2 GPUs x 60 steps
    assert g["power_limit_clock_mean_when_limited"] == pytest.approx(sigma)
    assert g["power_limit_vm_slowdown_worst"] == pytest.approx(1 / sigma) == pytest.approx(1.020779, abs=1e-6)
    assert g["power_limit_vm_slowdown_mean"] == pytest.approx(1 / sigma)
    # the cap's GPU cost: 1 - sigma of the GPUs' full-clock busy time = 2.0356 %
    assert pc["gpu_slowdown_pct"] == pytest.approx(100 * (1 - sigma))
    # energy: GPUs 2 x 331.15264 W x 3,600 s = 0.662305 kWh; saved (350 - 331.15264) x 2 W x 1 h = 0.037695 kWh
    assert g["energy_kwh"] == pytest.approx(0.66230528)
    assert pc["gpu_energy_saved_kwh"] == pytest.approx(0.03769472)
    assert g["power_limit_energy_saved_kwh"] == pytest.approx(0.03769472)
    # the host is at its cap in every step (float32 series); the vm metric carries the slowdown
    power = np.asarray(r.host_acc.series["power_w"], dtype=np.float64)
    assert power == pytest.approx(900.0, rel=1e-6)
    assert np.asarray(r.vm_acc.series["gpu_power_slowdown"]) == pytest.approx(1 / sigma, rel=1e-6)
    # a fully busy host: CPU at 800 MHz (237.69472 W), each GPU at (900 - 237.69472) / 2 = 331.15264 W
    assert pc["full_load_clock_mhz"]["g"] == pytest.approx(800.0)
    assert pc["full_load_gpu_limit_w"]["g"] == pytest.approx(331.15264)


def test_a_cap_the_cpu_clock_meets_leaves_the_gpus_at_full_power():
    # cap 1,000 W: the CPU gets 1,000 - 700 = 300 W. At clock scale s >= u0 the host draws
    # 220 + 540 x u0 s^2 = 220 + 216 s^2 <= 300 -> s <= 0.6086: the 1,500 MHz P-state (s = 0.6: 297.76 W;
    # 1,600 MHz would draw 220 + 216 x 0.4096 = 308.47 W). The GPUs keep 350 W each: 0.7 kWh over the hour.
    r = run(one(cap="1000 W"))
    pc, g = r.summary["power_cap"], r.summary["gpu"]
    assert pc["mean_clock_mhz_when_capped"] == pytest.approx(1500.0)
    assert pc["gpu_host_steps_limited"] == 0 and pc["mean_gpu_limit_w_when_limited"] is None
    assert pc["gpu_slowdown_pct"] == 0.0 and pc["gpu_energy_saved_kwh"] == 0.0
    assert g["power_limited_gpu_steps"] == 0 and g["power_limit_vm_slowdown_worst"] == 1.0
    assert g["energy_kwh"] == pytest.approx(0.7)
    power = np.asarray(r.host_acc.series["power_w"], dtype=np.float64)
    assert power == pytest.approx(220 + 216 * 0.36 + 700, rel=1e-6)  # 997.76 W


def test_a_cap_below_the_cpu_floor_and_the_gpus_lowest_limits_is_refused():
    # a fully busy host at 800 MHz with both GPUs at their 100 W minimum: 237.69472 + 2 x 100 = 437.7 W > 430 W
    with pytest.raises(InputError, match=r"^gpucap:cluster.hosts\[0\].power_cap: 430 W is below what a fully busy g host "
                                         r"draws at its lowest P-state with its GPUs at their lowest power limit: 220 W idle "
                                         r"\+ \(760 - 220\) W x \(800 / 2500 MHz\)\^3 \+ 2 x 100 W \(nvidia-l40s at its "
                                         r"power_limit_min\) = 437.7 W; no clock or GPU limit keeps it within the cap"):
        resolve(scenario_from_dict(one(cap="430 W")))
    resolve(scenario_from_dict(one(cap="440 W")))  # just above the floor: accepted


def test_an_operator_gpu_power_limit_slows_a_busy_gpu_without_a_cap():
    # power_limit 250 W on each L40S: a fully busy GPU runs at sigma = ((250 - 35) / 315)^(1/3) = 0.68254^(1/3)
    # = 0.880459 and draws 250 W: GPU energy 2 x 250 W x 1 h = 0.5 kWh, slowdown 1 / 0.880459 = 1.135771
    r = run(one(limit="250 W"))
    g = r.summary["gpu"]
    assert "power_cap" not in r.summary
    assert g["energy_kwh"] == pytest.approx(0.5)
    assert g["power_limit_vm_slowdown_worst"] == pytest.approx(1.135771, abs=1e-6)
    assert g["power_limit_unserved_share"] == pytest.approx(1 - 0.880459, abs=1e-6)


def test_a_gpu_power_limit_outside_the_card_range_is_refused():
    with pytest.raises(InputError, match=r"^gpucap:cluster.hosts\[0\].gpus.power_limit: 80 W is outside what nvidia-l40s "
                                         r"accepts: 100 \.\. 350 W \(catalog power_limit_min \.\. max_power\)$"):
        resolve(scenario_from_dict(one(limit="80 W")))


def test_the_limited_clock_in_both_regimes():
    # busy 1.0, limit 250 W: busy the whole time at the lower clock, sigma = ((250 - 35) / 315)^(1/3) = 0.880459
    assert limited_clock_scale(1.0, 35.0, 315.0, 250.0) == pytest.approx(0.880459, abs=1e-6)
    # busy 0.5 draws 35 + 157.5 = 192.5 W; limit 150 W: ((150 - 35) / 315)^(1/3) = 0.7147 > 0.5, so the GPU is still
    # idle part of the time: 35 + 315 x 0.5 x sigma^2 = 150 -> sigma = (115 / 157.5)^(1/2) = 0.854493 (>= 0.5: it
    # keeps up, no work lost)
    assert limited_clock_scale(0.5, 35.0, 315.0, 150.0) == pytest.approx(0.854493, abs=1e-6)
    assert limited_clock_scale(0.5, 35.0, 315.0, 200.0) == 1.0  # 192.5 W <= 200 W: the limit does not bind


def test_one_shared_limit_lowers_the_busiest_gpus_first():
    # draws 350 and 35 W, budget 262.30528 W: 35 + L = 262.30528 -> L = 227.30528 (the idle GPU keeps its 35 W)
    assert shared_limit_w(np.array([[350.0, 35.0]]), np.array([262.30528]))[0] == pytest.approx(227.30528)
    # budget 600 W for 350 + 350: L = 300 each; a budget at or above the draw needs no limit
    assert shared_limit_w(np.array([[350.0, 350.0], [350.0, 35.0]]), np.array([600.0, 400.0])).tolist() == [300.0, np.inf]


# ---- the gpu stage in a run split by host partitions -------------------------------------------------------------

SPLIT = {
    "name": "gpusplit",
    "cluster": {"hosts": [{"name": "a", "count": 4, "server": "dual-platinum-8180-768g", "power_cap": "800 W",
                           "gpus": {"model": "nvidia-a100-80gb-sxm", "count": 2}}]},
    "vms": [
        # whole GPUs: host 0 and host 1 (each VM takes both GPUs of a host); GPU busy = the VM's CPU utilisation
        {"name": "train", "count": 2, "vcpus": 16, "memory": "64 GiB", "profile": {"kind": "constant", "mean": 0.8},
         "gpu": {"mode": "passthrough", "count": 2}},
        # MIG 3g.40gb at 60 % and time-sliced 8 GiB vGPUs at 50 % (best-effort): on hosts 2 and 3
        {"name": "notebooks", "count": 4, "vcpus": 8, "memory": "32 GiB", "profile": {"kind": "constant", "mean": 0.3},
         "gpu": {"mode": "mig", "profile": "3g.40gb", "utilisation": 0.6}},
        {"name": "vdi", "count": 12, "vcpus": 4, "memory": "16 GiB", "profile": {"kind": "constant", "mean": 0.2},
         "gpu": {"mode": "vgpu", "memory": "8 GiB", "utilisation": 0.5}},
    ],
    "placement": {"policy": "first-fit"},
    "simulation": {"step": "1 min", "horizon": "30 min", "seed": 3},
}


def test_a_split_run_gives_the_gpu_figures_of_one_process():
    # A100 SXM: 55 W idle, 400 W max, power_limit_min 100 W; 4 hosts with an 800 W cap each, split in 2 parts. A
    # part holds its hosts' GPUs and their tenants, and the gpu and power_cap stages keep every float sum (energy,
    # busy, slowdowns, limits, demand, shortfall) per host, added over all hosts only at the end, the parts' per-host
    # arrays side by side: every figure is the one process's to the bit. (Added part by part, as before issue 34,
    # they were not: gpu.energy_kwh 1.0885255771428568 in one process against 1.0885255771428572 split, and so
    # mean_busy, power_limit_mean_w_when_limited, power_limit_unserved_share, power_limit_vm_slowdown_mean,
    # power_limit_energy_saved_kwh, power_cap.energy_saved_kwh, gpu_slowdown_pct and gpu_energy_saved_kwh.)
    plant = resolve(scenario_from_dict(copy.deepcopy(SPLIT)))
    whole, split = simulate(plant), simulate_in_parts(plant, 2)
    assert len({p for p in np.asarray(whole.ctx.vms.host)}) > 1
    w, s = whole.summary["gpu"], split.summary["gpu"]
    assert list(w) == list(s)
    for k in w:
        assert s[k] == w[k], (k, w[k], s[k])
    assert w["gpus_with_tenants"] >= 4 and w["vgpus"] == 12
    assert w["power_limited_gpu_steps"] > 0  # the cap lowers the passthrough hosts' GPUs (see below)
    wc, sc = whole.summary["power_cap"], split.summary["power_cap"]
    assert list(wc) == list(sc)
    for k in wc:
        assert sc[k] == wc[k], (k, wc[k], sc[k])
    assert wc["gpu_host_steps_limited"] > 0 and wc["host_steps_capped"] > 0
    assert split.summary["totals"]["energy_j"] == whole.summary["totals"]["energy_j"]
    assert split.summary["totals"]["energy_kwh"] == whole.summary["totals"]["energy_kwh"]
    for name in ("gpu_power_w", "gpu_busy", "power_w"):
        assert np.array_equal(np.asarray(split.host_acc.series[name]), np.asarray(whole.host_acc.series[name])), name
    for name in ("gpu_slowdown", "gpu_power_slowdown"):
        assert np.array_equal(np.asarray(split.vm_acc.series[name]), np.asarray(whole.vm_acc.series[name])), name


def test_parts_holding_one_host_give_the_one_process_energy_and_carbon_to_the_bit():
    # the split run above over 6 h with carbon, in 3 parts: hosts [0, 2), [2, 3) and [3, 4), two parts of one host.
    # numpy adds the columns of a (steps, hosts) array step by step, but a single column pairwise, so a one-host part
    # summed its host's steps in another order than the whole run: the GPUs' and the cap's power added to host power
    # (engine/run.py) and carbon's per-host joules came out in other bits (totals.energy_j 68232548.53199844 in one
    # process against 68232548.53199846 split; carbon it_energy_kwh 18.953486084921792 against 18.953486084921757,
    # with the gpu and power_cap stages already to the bit).
    # Both now add each host's steps in time order (densim.engine.stages.step_sums), whatever the part holds.
    from densim.engine.partition import host_ranges, plan_run

    d = copy.deepcopy(SPLIT)
    d["carbon"] = {"grid_gco2_per_kwh": 250}
    d["simulation"]["horizon"] = "6 h"
    plant = resolve(scenario_from_dict(d))
    whole, split = simulate(plant), simulate_in_parts(plant, 3)
    plan, _, _ = plan_run(plant, None)
    assert host_ranges(plan.host_of_vm, plan.n_hosts, 3) == [(0, 2), (2, 3), (3, 4)]
    for sec in ("gpu", "power_cap", "carbon"):
        w, s = whole.summary[sec], split.summary[sec]
        for k in w:
            assert s[k] == w[k], (sec, k, w[k], s[k])
    assert split.summary["totals"]["energy_j"] == whole.summary["totals"]["energy_j"]
    assert np.array_equal(split.host_acc.sum["power_w"], whole.host_acc.sum["power_w"])
