"""Time-sliced vGPUs sharing a GPU (densim.models.gpu_contention and the gpu engine stage): hand-calculated shares."""

from __future__ import annotations

import numpy as np
import pytest

from densim.errors import InputError, ScenarioInvalid
from densim.models.gpu_contention import shares, slowdown


def test_time_slice_shares_by_hand():
    # one GPU, three vGPUs of an L4-8Q (cap = 24 // 8 = 3), quantum 2 ms
    starts, cap, q = [0, 3], [3], [0.002]
    # best-effort, demand 0.6 + 0.3 + 0.1 = 1.0 <= 1: each gets what it asks; wait = 2 others x 2 ms = 4 ms
    got, wait = shares([[0.6, 0.3, 0.1]], starts, [0], cap, q)
    assert got[0] == pytest.approx([0.6, 0.3, 0.1])
    assert wait[0] == pytest.approx([0.004] * 3)
    # best-effort over-subscribed, 0.9 + 0.5 + 0.1 = 1.5: 0.1 first (under 1/3), then (1 - 0.1) / 2 = 0.45 each
    got, _ = shares([[0.9, 0.5, 0.1]], starts, [0], cap, q)
    assert got[0] == pytest.approx([0.45, 0.45, 0.1])
    assert slowdown([[0.9, 0.5, 0.1]], got)[0] == pytest.approx([2.0, 0.5 / 0.45, 1.0])
    # equal-share, N = 3 on the GPU: at most 1/3 each, used or not: 0.6 -> 1/3 (slowdown 1.8) although the GPU
    # has 1 - (1/3 + 0.3 + 0.1) = 0.27 idle
    got, wait = shares([[0.6, 0.3, 0.1]], starts, [1], cap, q)
    assert got[0] == pytest.approx([1 / 3, 0.3, 0.1])
    assert slowdown([[0.6, 0.3, 0.1]], got)[0][0] == pytest.approx(1.8)
    assert wait[0] == pytest.approx([0.004] * 3)


def test_fixed_share_keeps_the_slots_of_absent_vgpus():
    # two vGPUs of an L4-8Q alone on a GPU that could hold 3: fixed-share gives each 1/3 (not 1/2), and the
    # round is 3 slots long: wait (3 - 1) x 5 ms = 10 ms; equal-share gives 1/2 each, wait 1 x 5 ms
    u = [[0.5, 0.2]]
    got, wait = shares(u, [0, 2], [2], [3], [0.005])
    assert got[0] == pytest.approx([1 / 3, 0.2]) and wait[0] == pytest.approx([0.010, 0.010])
    got, wait = shares(u, [0, 2], [1], [3], [0.005])
    assert got[0] == pytest.approx([0.5, 0.2]) and wait[0] == pytest.approx([0.005, 0.005])
    # best-effort: an idle vGPU is skipped in the round (no wait for it)
    got, wait = shares([[0.5, 0.0]], [0, 2], [0], [3], [0.005])
    assert got[0] == pytest.approx([0.5, 0.0]) and wait[0] == pytest.approx([0.0, 0.005])


def test_groups_are_separate_gpus():
    # two GPUs: [0.8, 0.8] best-effort (0.5 each) and [0.8] alone (all of it)
    got, _ = shares([[0.8, 0.8, 0.8]], [0, 2, 3], [0, 0], [2, 2], [0.002, 0.002])
    assert got[0] == pytest.approx([0.5, 0.5, 0.8])


def _scenario(scheduler="best-effort", utilisation=(0.6, 0.3, 0.1)):
    # one host, one L4 (24 GiB, 16 W idle / 72 W max), three 8 GiB vGPUs (cap 3) with fixed GPU demand
    return {
        "name": "vgpu-share",
        "cluster": {"hosts": [{"name": "l4", "count": 1,
                               "gpus": {"model": "nvidia-l4", "count": 1, "scheduler": scheduler, "time_slice": "2 ms"},
                               "cpu": {"sockets": 1, "cores_per_socket": 16, "threads_per_core": 1, "base_clock": "2 GHz"},
                               "memory": "256 GiB", "power": {"model": "linear", "idle": "200 W", "peak": "200 W"}}]},
        "vms": [{"name": f"v{i}", "count": 1, "vcpus": 2, "vcpu_speed": "2 GHz", "memory": "8 GiB",
                 "profile": {"kind": "constant", "mean": 0.5}, "gpu": {"mode": "vgpu", "memory": "8 GiB", "utilisation": u}}
                for i, u in enumerate(utilisation)],
        "simulation": {"horizon": "1 h", "step": "1 h"},
    }


def test_engine_reports_each_vms_gpu_slowdown_and_the_gpu_power_of_what_was_served():
    from densim.engine import simulate
    from densim.spec.loader import scenario_from_dict
    from densim.plant import resolve

    r = simulate(resolve(scenario_from_dict(_scenario("equal-share"))), seed=1)
    g = r.summary["gpu"]
    # equal-share: g = 1/3, 0.3, 0.1 (see test_time_slice_shares_by_hand): slowdown 1.8, 1, 1
    assert g["vgpus"] == 3
    assert g["vgpu_slowdown_worst"] == pytest.approx(1.8, rel=1e-6)
    assert g["vgpu_slowdown_mean"] == pytest.approx((1.8 + 1 + 1) / 3, rel=1e-6)
    # unserved: (1.0 - (1/3 + 0.4)) / 1.0 = 0.2667
    assert g["vgpu_demand_unserved_share"] == pytest.approx(1 - (1 / 3 + 0.4))
    assert g["vgpu_wait_ms_worst"] == pytest.approx(4.0)
    # the GPU is busy only 0.7333 of the time: 16 + 56 x 0.7333 = 57.07 W for 1 h
    assert g["energy_kwh"] == pytest.approx((16 + 56 * (1 / 3 + 0.4)) / 1000)
    assert r.vms["gpu_slowdown_mean"].to_list() == pytest.approx([1.8, 1.0, 1.0], rel=1e-6)
    assert r.vms["gpu_wait_ms_max"].to_list() == pytest.approx([4.0, 4.0, 4.0])
    # best-effort: the 0.27 the others leave goes to v0: no slowdown, GPU fully busy (72 W)
    r = simulate(resolve(scenario_from_dict(_scenario("best-effort"))), seed=1)
    assert r.summary["gpu"]["vgpu_slowdown_worst"] == pytest.approx(1.0)
    assert r.summary["gpu"]["energy_kwh"] == pytest.approx(0.072)


def test_a_bad_scheduler_is_refused_in_one_line():
    from densim.plant import resolve
    from densim.spec.loader import scenario_from_dict

    with pytest.raises((ScenarioInvalid, InputError)) as e:
        resolve(scenario_from_dict(_scenario("round-robin")))
    assert "scheduler" in str(e.value) and "best-effort" in str(e.value)


def test_equal_share_divides_among_the_vgpus_alive_in_the_step():
    # three vGPUs of one GPU under equal-share, each asking 0.6; in step 1 the third VM has left (not present): the
    # GPU's time is split among the two left, 1/2 each (not 1/3): g = 0.5, 0.5, 0 -> slowdown 1.2; in step 0 all three:
    # g = 1/3 each, slowdown 1.8. The absent vGPU waits for nothing (0), the others for one slice of 2 ms (one other)
    from densim.models.gpu_contention import shares

    u = np.array([[0.6, 0.6, 0.6], [0.6, 0.6, 0.0]])
    present = np.array([[True, True, True], [True, True, False]])
    got, wait = shares(u, [0, 3], [1], [6], [0.002], present=present)
    assert got[0] == pytest.approx([1 / 3] * 3) and got[1] == pytest.approx([0.5, 0.5, 0.0])
    assert wait[0] == pytest.approx([0.004] * 3) and wait[1] == pytest.approx([0.002, 0.002, 0.0])
