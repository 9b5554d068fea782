"""Steady windows (densim.engine.run.steady_segments): with a constant demand and no timeline event inside a
window, the engine computes one step and counts it for every step of the window. The results must be those of
stepping every step (to float64 rounding: n x term against a sum of n equal terms)."""

import numpy as np
import pytest

import densim.engine.run as engine_run
from densim.engine import simulate
from densim.plant import resolve
from densim.spec.loader import scenario_from_dict

POWER = {"model": "linear", "idle": "100 W", "peak": "250 W"}


def _scenario(lifetimes: bool, *, noise: float = 0.0, idle_hosts: str = "on") -> dict:
    # 3 hosts of 4 cores at 1,000 MHz; 5 VMs of 2 vCPUs at 0.9: the first host takes 2 VMs x 2 vCPUs = 4 vCPUs
    # with vCPUs per core 2 -> up to 4 VMs: 3.6 cores' demand on 4 cores fits; over-commit makes one host busy
    vm = {"name": "vm", "count": 5, "vcpus": 2, "vcpu_speed": "1000 MHz", "memory": "1 GiB",
          "profile": {"kind": "constant", "mean": 0.9, "noise": noise}}
    if lifetimes:  # arrivals over the first 500 s (inside step 0), lifetimes of 3,000 s: ends inside steps 5-6
        vm["arrivals"] = {"over": "500 s", "lifetime": "3000 s", "lifetime_sigma": 0.0}
    return {
        "name": "steady",
        "cluster": {"hosts": [{"name": "h", "count": 3, "memory": "16 GiB", "power": POWER,
                               "cpu": {"sockets": 1, "cores_per_socket": 4, "base_clock": "1000 MHz"}}]},
        "vms": [vm],
        "placement": {"policy": "first-fit", "cpu_overcommit": 2.0},
        "simulation": {"step": "500 s", "horizon": "5000 s", "seed": 7},
        "scheduling": {"lifetimes": "on" if lifetimes else "off", "idle_hosts": idle_hosts},
        "output": {"vm_timeseries": "off", "host_timeseries": "on"},
    }


def _run(d: dict, steady: bool, monkeypatch):
    calls = []
    real = engine_run.steady_segments

    def spy(*a, **k):
        out = real(*a, **k) if steady else None
        calls.append(out)
        return out

    monkeypatch.setattr(engine_run, "steady_segments", spy)
    res = simulate(resolve(scenario_from_dict(d, source="test")), seed=7)
    return res, calls


@pytest.mark.parametrize("lifetimes", [False, True])
def test_steady_windows_give_the_step_by_step_results(lifetimes, monkeypatch):
    d = _scenario(lifetimes)
    a, calls = _run(d, True, monkeypatch)
    assert calls and calls[0] is not None and any(st for *_, st in calls[0])  # the steady path was taken
    b, _ = _run(d, False, monkeypatch)
    ta, tb = a.summary["totals"], b.summary["totals"]
    for key in ("energy_kwh", "cpu_delivered_mhz_s", "cpu_ready_s"):
        assert ta[key] == pytest.approx(tb[key], rel=1e-12, abs=1e-9), key
    assert ta["cpu_ready_s"] > 0  # the over-committed host contends: the repeated step carries CPU Ready
    for name in ("power_w", "utilisation", "cpu_ready_pct"):
        np.testing.assert_allclose(a.host_acc.series[name], b.host_acc.series[name], rtol=1e-6)
        np.testing.assert_allclose(a.host_acc.sum[name], b.host_acc.sum[name], rtol=1e-12)
        if name in b.host_acc.max:
            np.testing.assert_array_equal(a.host_acc.max[name], b.host_acc.max[name])
    np.testing.assert_allclose(a.vm_acc.sum["cpu_delivered_mhz"], b.vm_acc.sum["cpu_delivered_mhz"], rtol=1e-12)


def test_the_timeline_cuts_the_windows_by_hand(monkeypatch):
    # 10 steps of 500 s. Arrivals over [0, 500) lie inside step 0: (0, 1) alone. Lifetimes of 3,000 s end in
    # [3000, 3500) -- inside step 6 (the first VM arrives at 0 and ends at 3000 exactly, on edge 6): cuts 6 and 7.
    # Steps 1..5 change nothing: one steady window (1, 6); step 6 alone; steps 7..9 hold no VM: steady (7, 10).
    _, calls = _run(_scenario(True), True, monkeypatch)
    assert calls[0] == [(0, 1, False), (1, 6, True), (6, 7, False), (7, 10, True)]


@pytest.mark.parametrize("change", ["noise", "idle_hosts_off"])
def test_no_steady_window_when_something_changes_by_step(change, monkeypatch):
    # noise: the demand differs at every step; idle hosts off: a host switches off some time after it empties
    d = _scenario(True, noise=0.05) if change == "noise" else _scenario(True, idle_hosts="off")
    _, calls = _run(d, True, monkeypatch)
    assert calls == [None]
