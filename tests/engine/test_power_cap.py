"""A power cap per host: the highest P-state within the cap, its capacity and its power (issue 32, item 4).

One host: 10 cores at 2,000 MHz, no SMT (capacity 20,000 MHz), linear power 100 W idle, 300 W peak,
P-states 800, 900, ..., 2,000 MHz. One 10-vCPU VM (vCPU speed 2,000 MHz), constant demand.
At clock scale s = f / 2,000 MHz and load u0 = D / 20,000 MHz the host draws
P(s) = 100 + 200 min(u0 / s, 1) s^3 (models/cpu_power.py).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from densim.engine import simulate
from densim.errors import InputError
from densim.models.cpu_power import capped_scale, pstate_scales, scaled_power_w
from densim.models.power import linear_w
from densim.plant import resolve
from densim.spec.loader import scenario_from_dict

HOST = {"name": "h", "count": 1, "cpu": {"cores_per_socket": 10, "base_clock": "2000 MHz"}, "memory": "64 GiB",
        "power": {"model": "linear", "idle": "100 W", "peak": "300 W"}}
BASE = {
    "name": "cap",
    "cluster": {"hosts": [HOST]},
    "vms": [{"name": "vm", "count": 1, "vcpus": 10, "vcpu_speed": "2000 MHz", "memory": "8 GiB",
             "profile": {"kind": "constant", "mean": 1.0}}],
    "simulation": {"step": "1 min", "horizon": "10 min", "seed": 1},
}


def _run(cap: str | None, mean: float = 1.0, **extra):
    d = copy.deepcopy(BASE)
    if cap is not None:
        d["cluster"]["hosts"][0]["power_cap"] = cap
    d["vms"][0]["profile"]["mean"] = mean
    d.update(extra)
    return simulate(resolve(scenario_from_dict(d)))


def test_pstate_grid_runs_from_min_clock_to_base():
    s = pstate_scales(2000.0, 800.0, 100.0)
    assert s.size == 13 and s[0] == pytest.approx(0.4) and s[-1] == 1.0  # 800/2000 .. 2000/2000
    # a base clock off the 100 MHz grid still ends at itself: 800 .. 2400, then 2450
    assert pstate_scales(2450.0, 800.0, 100.0)[-2:] * 2450.0 == pytest.approx([2400.0, 2450.0])


def test_capped_scale_of_a_busy_and_a_half_busy_host_by_hand():
    scales = pstate_scales(2000.0, 800.0, 100.0)[None, :]

    def p(u):
        return linear_w(u, 100.0, 300.0)

    # fully busy (u0 = 1), cap 200 W: 100 + 200 s^3 <= 200 -> s^3 <= 0.5 -> s <= 0.794: 1,500 MHz (s = 0.75;
    # 1,600 MHz gives 100 + 200 x 0.512 = 202.4 W > 200)
    s = capped_scale(np.array([[1.0]]), np.array([200.0]), scales, p, np.array([100.0]))
    assert s[0, 0] * 2000 == pytest.approx(1500.0)
    assert scaled_power_w(0.75, 1.0, p, 100.0) == pytest.approx(100 + 200 * 0.421875)  # 184.375 W
    # half busy (u0 = 0.5), cap 180 W: 100 + 200 x 0.5 s^2 <= 180 -> s^2 <= 0.8 -> s <= 0.894: 1,700 MHz
    # (0.85^2 x 100 = 72.25 -> 172.25 W; 1,800 MHz: 0.81 x 100 = 81 -> 181 W > 180)
    s = capped_scale(np.array([[0.5]]), np.array([180.0]), scales, p, np.array([100.0]))
    assert s[0, 0] * 2000 == pytest.approx(1700.0)
    # within the cap at the base clock: 100 + 200 x 0.5 = 200 W <= 250 W -> s = 1
    assert capped_scale(np.array([[0.5]]), np.array([250.0]), scales, p, np.array([100.0]))[0, 0] == 1.0


def test_a_capped_busy_host_runs_at_1500_mhz_draws_184_w_and_loses_a_quarter_of_its_work():
    r = _run("200 W")
    pc = r.summary["power_cap"]
    # the VM wants 20,000 MHz; the host gives 10 cores x 1,500 MHz = 15,000: 5,000 / 20,000 = 25 % held back
    assert pc["full_load_clock_mhz"]["h"] == pytest.approx(1500.0)
    assert pc["full_load_power_w"]["h"] == pytest.approx(184.375)
    assert pc["host_steps"] == 10 and pc["host_steps_capped"] == 10
    assert pc["mean_clock_mhz_when_capped"] == pytest.approx(1500.0)
    assert pc["demand_mhz_s"] == pytest.approx(20_000 * 600)
    assert pc["shortfall_mhz_s"] == pytest.approx(5_000 * 600)
    assert pc["slowdown_pct"] == pytest.approx(25.0)
    assert pc["delivered_mhz_s"] == pytest.approx(15_000 * 600, rel=1e-6)
    tot = r.summary["totals"]
    assert tot["cpu_delivered_mhz_s"] == pytest.approx(15_000 * 600, rel=1e-6)
    # power 184.375 W for 600 s (uncapped: 300 W; saved (300 - 184.375) x 600 J)
    assert tot["energy_j"] == pytest.approx(184.375 * 600, rel=1e-6)
    assert pc["energy_saved_kwh"] == pytest.approx((300 - 184.375) * 600 / 3.6e6, rel=1e-6)
    power = np.asarray(r.host_acc.series["power_w"])
    assert power.max() <= 200.0 and power == pytest.approx(184.375, rel=1e-6)
    clock = np.asarray(r.host_acc.series["cap_clock_mhz"])
    assert clock == pytest.approx(1500.0)


def test_a_half_busy_host_under_its_cap_slows_its_clock_but_not_its_work():
    # u0 = 10,000 / 20,000 = 0.5, cap 180 W: 1,700 MHz (capacity 17,000 MHz > 10,000 demand), 172.25 W
    r = _run("180 W", mean=0.5)
    pc = r.summary["power_cap"]
    assert pc["mean_clock_mhz_when_capped"] == pytest.approx(1700.0)
    assert pc["slowdown_pct"] == 0.0
    # the CPU model's utilisation at the capped capacity is 10,000 / 17,000; power 100 + 200 x (10/17) x 0.85^3
    assert r.summary["totals"]["energy_j"] == pytest.approx((100 + 200 * (10 / 17) * 0.85**3) * 600, rel=1e-6)
    assert 100 + 200 * (10 / 17) * 0.85**3 == pytest.approx(172.25)


def test_without_a_cap_nothing_changes():
    r = _run(None)
    assert "power_cap" not in r.summary and r.summary["totals"]["energy_j"] == pytest.approx(300 * 600, rel=1e-6)


def test_a_cap_no_p_state_can_meet_is_refused_with_the_floor():
    # lowest P-state 800 MHz fully busy: 100 + 200 x 0.4^3 = 112.8 W > 110 W
    with pytest.raises(InputError, match=r"cluster.hosts\[0\].power_cap: 110 W is below .* = 112.8 W"):
        _run("110 W")


def test_a_power_section_without_any_cap_is_refused():
    with pytest.raises(InputError, match=r"cap:power: sets the P-states of power-capped hosts, but no"):
        _run(None, power={"min_clock": "1 GHz"})


def test_min_clock_above_the_base_clock_is_refused():
    with pytest.raises(InputError, match=r"power.min_clock: 2500 MHz is above host group 'h'"):
        _run("200 W", power={"min_clock": "2.5 GHz"})


def test_the_howto_example_gives_the_howto_figures(repo):
    # docs/howto/power-and-rack-limits.md, section 1: 4 x Xeon 8180 hosts (220 W idle, 760 W full) capped at 380 W
    from densim.spec.loader import load_scenario

    r = simulate(resolve(load_scenario(repo / "examples/power/capped-hosts.yaml")))
    pc = r.summary["power_cap"]
    # fully busy: 220 + 540 s^3 <= 380 -> s^3 <= 0.296 -> 1,600 MHz (s = 0.64: 361.6 W; 1,700 MHz: 389.8 W)
    assert pc["full_load_clock_mhz"]["capped"] == pytest.approx(1600.0)
    assert pc["full_load_power_w"]["capped"] == pytest.approx(220 + 540 * 0.64**3)
    assert (pc["host_steps_capped"], pc["host_steps"]) == (672, 1152)
    assert pc["slowdown_pct"] == pytest.approx(3.55, abs=0.01)
    assert r.summary["totals"]["energy_kwh"] == pytest.approx(32.27, abs=0.01)
    assert pc["energy_saved_kwh"] == pytest.approx(41.12 - 32.27, abs=0.02)
    c = r.summary["carbon"]  # 32.27 kWh x 328 g and x 50 g
    assert (c["scope2_location_kg"], c["scope2_market_kg"]) == (pytest.approx(10.58, abs=0.01), pytest.approx(1.61, abs=0.01))


def test_densim_validate_refuses_a_cap_no_p_state_meets_in_one_line(tmp_path):
    import yaml
    from typer.testing import CliRunner

    from densim.cli.main import app

    d = copy.deepcopy(BASE)
    d["cluster"]["hosts"][0]["power_cap"] = "110 W"
    f = tmp_path / "cap.yaml"
    f.write_text(yaml.safe_dump(d))
    r = CliRunner().invoke(app, ["validate", str(f)])
    assert r.exit_code == 1
    assert "cluster.hosts[0].power_cap: 110 W is below what a fully busy h host draws at its lowest P-state" in r.output
    assert "Traceback" not in r.output


def test_a_split_run_gives_the_power_cap_figures_of_one_process_to_the_bit():
    # 800 two-vCPU VMs (diurnal, mean 50 %) first-fit on 40 hosts of 32 cores at 2,000 MHz, 100-250 W, capped at 200 W:
    # the cap holds a fully busy host at (200 - 100) / 150 = 0.667 = s^3, s = 0.874 -> the 1,700 MHz P-state, and a
    # host runs capped in the steps its load passes that. The stage keeps its float sums (demand, shortfall,
    # delivered, clock, energy saved) per capped host over the steps and adds the hosts at the end; a run split in 3
    # host ranges puts the parts' per-host arrays side by side, so every figure is the one process's to the bit. (Added
    # part by part, as before issue 34, demand_mhz_s was 110470984248.45628 in one process against
    # 110470984248.4563 split, and slowdown_pct 0.005910936231823243 against 0.005910936231823242.)
    from densim.engine.partition import simulate_in_parts

    d = {"name": "cap-split",
         "cluster": {"hosts": [{"name": "pm", "count": 40, "cpu": {"cores_per_socket": 32, "base_clock": "2000 MHz"},
                                "memory": "256 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "250 W"},
                                "power_cap": "200 W"}]},
         "vms": [{"name": "web", "count": 800, "vcpus": 2, "vcpu_speed": "2000 MHz", "memory": "8 GiB",
                  "profile": {"kind": "diurnal", "mean": 0.5, "amplitude": 0.3, "noise": 0.2}}],
         "placement": {"policy": "first-fit", "cpu_overcommit": 1.0},
         "simulation": {"step": "5 min", "horizon": "24 h", "seed": 7},
         "output": {"vm_timeseries": "off", "host_timeseries": "off"}}
    plant = resolve(scenario_from_dict(d))
    whole, split = simulate(plant), simulate_in_parts(plant, 3)
    w, s = whole.summary["power_cap"], split.summary["power_cap"]
    assert w["full_load_clock_mhz"] == {"pm": 1700.0}
    assert w["host_steps"] == 40 * 288 and w["host_steps_capped"] > 0 and w["shortfall_mhz_s"] > 0
    assert list(w) == list(s)
    for k in w:
        assert s[k] == w[k], (k, w[k], s[k])
    assert split.summary["totals"]["energy_kwh"] == whole.summary["totals"]["energy_kwh"]
