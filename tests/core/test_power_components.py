"""Server power from components (issue 30): each mechanism by hand, the scenario option and its refusals."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from densim.models.hardware import PowerComponents, PowerSpec
from densim.models.power import as_table_w, component_w, governor_clock_busy, package_share


def test_governor_holds_the_lowest_clock_then_climbs_with_load():
    # top 3,000 MHz, lowest 1,500 MHz, the governor keeps a core busy 75 % of the time:
    # u = 0.25: wanted clock 0.25 x 3000 / 0.75 = 1,000 MHz < 1,500, so f = 1,500 MHz and the core is busy
    #           0.25 x 3000 / 1500 = 0.5 of the time;
    # u = 0.6:  f = 0.6 x 3000 / 0.75 = 2,400 MHz, busy 0.6 x 3000 / 2400 = 0.75;
    # u = 0.9:  wanted 3,600 > 3,000, so f = 3,000 and busy 0.9.
    f, b = governor_clock_busy([0.25, 0.6, 0.9], 3000.0, 1500.0, 0.75)
    assert f == pytest.approx([1500.0, 2400.0, 3000.0])
    assert b == pytest.approx([0.5, 0.75, 0.9])
    # without DVFS the clock stays at the top and the busy share is the load
    f, b = governor_clock_busy([0.25, 0.6], 3000.0, 1500.0, 0.75, dvfs=False)
    assert f == pytest.approx([3000.0, 3000.0]) and b == pytest.approx([0.25, 0.6])


def test_package_c_state_step_is_paid_once_any_core_is_busy():
    # 2 cores, no DVFS (f = top, so phi = 1 for any v_floor), step_share 0.2; at u = 0.5 each core is busy
    # half the time, both idle at once 0.5^2 = 0.25 of it, so the package is awake 0.75:
    #   p = 0.2 x 0.75 + 0.8 x 0.5 x 1 = 0.15 + 0.40 = 0.55
    kw = dict(cores=2, top_mhz=2000.0, min_mhz=1000.0, step_share=0.2, busy_target=1.0, v_floor=0.5, dvfs=False)
    assert package_share(0.5, **kw) == pytest.approx(0.55)
    # with 20 cores the package is awake 1 - 0.5^20 ~ 1: p = 0.2 + 0.4 = 0.6
    assert package_share(0.5, **{**kw, "cores": 20}) == pytest.approx(0.6, abs=1e-6)
    # a CPU without package C-states has no step: p = 0.8 x 0.5 = 0.4
    assert package_share(0.5, **kw, package_c_states=False) == pytest.approx(0.4)
    # the idle floor is 0 and full load is 1 by construction
    assert package_share(0.0, **kw) == pytest.approx(0.0) and package_share(1.0, **kw) == pytest.approx(1.0)


def test_cores_rise_convexly_as_the_clock_and_voltage_climb():
    # no step (step_share 0), top 2,000, lowest 1,000 MHz, governor target 1.0, v_floor 0.5.
    # u = 0.5: f = max(0.5 x 2000, 1000) = 1,000 MHz, busy 0.5 x 2000 / 1000 = 1; x = f/top = 0.5,
    #   V/V_top = 0.5 + 0.5 x 0.5 = 0.75, phi = x (V/V_top)^2 = 0.5 x 0.5625 = 0.28125; p = 0.28125.
    # Server idle 100 W, peak 300 W: P(0.5) = 100 + 200 x 0.28125 = 156.25 W (a straight line gives 200 W).
    comp = PowerComponents(cores_per_socket=8, top_clock="2000 MHz", min_clock="1000 MHz", step_share=0.0,
                           busy_target=1.0, v_floor=0.5, package_c_states=False)
    p = component_w(np.array([0.0, 0.5, 1.0]), 100.0, 300.0, comp)
    assert p == pytest.approx([100.0, 156.25, 300.0])
    # u = 0.25: f = 1,000 MHz (floor), busy 0.5, phi 0.28125: 100 + 200 x 0.5 x 0.28125 = 128.125 W.
    # Below the clock floor power is linear in load; above it, convex.
    assert component_w(0.25, 100.0, 300.0, comp) == pytest.approx(128.125)


def test_the_scenario_option_and_its_refusals():
    spec = PowerSpec.model_validate({"model": "component", "idle": "52 W", "peak": "457 W",
                                     "component": {"cores_per_socket": 20, "top_clock": "2.7 GHz", "min_clock": "1.0 GHz"}})
    # the engine's 11-point table is the model at the SPECpower levels
    u = np.linspace(0.0, 1.0, 11)
    assert as_table_w(spec) == pytest.approx(component_w(u, 52.0, 457.0, spec.component))
    assert as_table_w(spec)[0] == pytest.approx(52.0) and as_table_w(spec)[-1] == pytest.approx(457.0)
    # the default stays linear: no 'component' block means nothing changes for existing scenarios
    assert PowerSpec.model_validate({"idle": 52, "peak": 457}).model == "linear"
    with pytest.raises(ValidationError, match="'component' block goes with power model 'component'.*missing"):
        PowerSpec.model_validate({"model": "component", "idle": 52, "peak": 457})
    with pytest.raises(ValidationError, match="'component' block goes with power model 'component'.*given"):
        PowerSpec.model_validate({"model": "linear", "idle": 52, "peak": 457,
                                  "component": {"cores_per_socket": 20, "top_clock": "2.7 GHz", "min_clock": "1 GHz"}})
    with pytest.raises(ValidationError, match="min_clock 3000 MHz is above top_clock 2700 MHz"):
        PowerComponents(cores_per_socket=20, top_clock="2.7 GHz", min_clock="3 GHz")


def test_cost_model_power_uses_the_component_block():
    from densim.models.cost import power_w

    spec = PowerSpec.model_validate({"model": "component", "idle": 100, "peak": 300, "component": {
        "cores_per_socket": 8, "top_clock": "2000 MHz", "min_clock": "1000 MHz", "step_share": 0.0, "busy_target": 1.0,
        "package_c_states": False}})
    assert power_w(spec, 0.5) == pytest.approx(156.25)  # as in the convex-rise test above


def test_a_scenario_names_the_field_of_a_bad_component_block():
    from densim.errors import InputError
    from densim.spec.loader import scenario_from_dict

    d = {"name": "t", "cluster": {"hosts": [{"name": "a", "count": 1, "server": "dual-platinum-8180-768g", "power": {
        "model": "component", "idle": "220 W", "peak": "760 W",
        "component": {"cores_per_socket": 28, "top_clock": "2.5 GHz", "min_clock": "3 GHz"}}}]},
         "vms": [{"name": "v", "count": 1, "vcpus": 2, "memory": "4 GiB", "profile": {"kind": "constant", "mean": 0.3}}],
         "simulation": {"step": "1 min", "horizon": "1 h"}}
    with pytest.raises(InputError, match=r"^<scenario>:cluster.hosts\[0\].power.component: min_clock 3000 MHz is above "
                                         r"top_clock 2500 MHz$"):
        scenario_from_dict(d)
    d["cluster"]["hosts"][0]["power"]["component"]["min_clock"] = "1 GHz"
    sc = scenario_from_dict(d)  # valid: the option is a field of the host group's power block
    assert sc.cluster.hosts[0].power.model == "component"


def test_voltage_floor_zero_is_the_cpu_models_cube_law():
    from densim.models.cpu_power import core_power_w, dynamic_power_share

    # v_floor 0: V proportional to f, so f V^2 = f^3: at half clock 0.5^3 = 0.125 of full dynamic power, as
    # core_power_w (leakage 0, 10 W at the base clock) gives at 1,000 of 2,000 MHz: 10 x 0.125 = 1.25 W
    assert dynamic_power_share(0.5, 0.0) == pytest.approx(0.125)
    assert core_power_w(1000.0, 2000.0, 10.0, 0.0) == pytest.approx(10.0 * dynamic_power_share(0.5, 0.0))
    # v_floor 0.5: 0.5 x (0.5 + 0.25)^2 = 0.28125 (the convex-rise test above)
    assert dynamic_power_share(0.5, 0.5) == pytest.approx(0.28125)
