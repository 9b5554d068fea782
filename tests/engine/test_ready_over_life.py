"""CPU Ready of VMs that arrive and leave is judged over each VM's own life, not the whole run (issue 30 item 8)."""

from __future__ import annotations

import numpy as np
import pytest

from densim.engine import simulate
from densim.engine.summary import alive_steps, ready_over_life
from densim.plant import resolve
from densim.spec.loader import scenario_from_dict
from tests.engine.test_lifetimes import one_core_host, write_opendc


def test_a_vm_alive_one_of_four_steps_that_waits_half_its_step_reads_50_not_12_5():
    # per-step CPU Ready (% of the whole step) summed over the run: 50 in the one step it lives
    share, lived = ready_over_life(np.array([50.0]), np.array([1.0]))
    assert share.tolist() == [50.0]  # 150 s ready / 300 s alive; the run average would be 50 / 4 = 12.5
    assert lived.tolist() == [True]


def test_alive_steps_are_fractional_at_the_ends_and_zero_for_a_vm_never_started():
    edges = np.array([0.0, 300.0, 600.0, 900.0])
    # [150, 450): half of step 0 + half of step 1 = 1 step; [0, inf): the 3 steps of the grid;
    # never started (NaN start): 0; [-100, 300): only the part on the grid, 1 step
    got = alive_steps(np.array([150.0, 0.0, np.nan, -100.0]), np.array([450.0, np.inf, np.nan, 300.0]), edges)
    assert got.tolist() == pytest.approx([1.0, 3.0, 0.0, 1.0])


def test_runs_of_one_vm_are_pooled():
    # VM 7 ran twice (an HA restart): 30 %-steps over 1 step, then 10 %-steps over 3 steps, so
    # 40 / 4 = 10 %; VM 3 never started: share 0 and not lived
    share, lived = ready_over_life(np.array([30.0, 10.0, 0.0]), np.array([1.0, 3.0, 0.0]), np.array([7, 7, 3]))
    assert share.tolist() == pytest.approx([0.0, 10.0])  # np.unique order: VM 3, VM 7
    assert lived.tolist() == [False, True]


def _two_tasks(tmp_path, long_s):
    # One host of one 2 GHz core, vCPUs over-committed 2:1. Task 1 (1 vCPU, 2,000 MHz) runs from 0 to
    # long_s; task 2 (1 vCPU, 2,000 MHz) arrives at 300 s and runs one 5-minute step. In that step two
    # runnable vCPUs share one core: 300 s of ready time, 150 s each = 50 % of the step for both.
    d = write_opendc(tmp_path / "w", [(1, 0, 1, 2000, 1024), (2, 300, 1, 2000, 1024)],
                     [(1, long_s, 2000), (2, 300, 2000)])
    sc = scenario_from_dict({"name": "two", "cluster": {"hosts": [one_core_host()]},
                             "vms": [{"name": "t", "trace": {"format": "opendc", "path": str(d)}}],
                             "placement": {"cpu_overcommit": 2}, "simulation": {"step": "5 min"},
                             "scheduling": {"lifetimes": "on"}})
    return simulate(resolve(sc))


def test_short_task_reads_its_own_life_in_summary_and_vms_table(tmp_path):
    # task 1 lives the run's 4 steps (1,200 s): 150 / 1,200 = 12.5 %; task 2 lives 1 step: 150 / 300 = 50 %
    # (over the whole run it was 50 / 4 = 12.5 %)
    r = _two_tasks(tmp_path, 1200)
    assert r.summary["grid"]["n_steps"] == 4
    vms = r.vms.sort("vm")
    assert vms["cpu_ready_s"].to_list() == pytest.approx([150.0, 150.0])
    assert vms["cpu_ready_pct_mean"].to_list() == pytest.approx([12.5, 50.0])
    q = r.summary["qos"]
    assert q["cpu_ready_pct_worst_vm_mean"] == pytest.approx(50.0)
    assert q["cpu_ready_pct_mean"] == pytest.approx((12.5 + 50.0) / 2)


def test_vms_over_5pct_counts_a_short_task_that_waited(tmp_path):
    # task 1 lives 12 steps (1 h): 150 / 3,600 = 4.17 % (not counted); task 2 still 50 % of its one step:
    # one VM > 5 % (the run-wide average, 50 / 12 = 4.17 % for both, counted none)
    r = _two_tasks(tmp_path, 3600)
    q = r.summary["qos"]
    assert q["vms_ready_over_5pct"] == 1
    assert q["vms_ready_over_10pct"] == 1
    assert q["cpu_ready_pct_worst_vm_mean"] == pytest.approx(50.0)


def test_vms_present_all_run_are_unchanged(tmp_path):
    # no lifetimes: every placed VM is alive every step, so the share is the run average as before
    d = write_opendc(tmp_path / "w", [(1, 0, 1, 2000, 1024), (2, 0, 1, 2000, 1024)],
                     [(1, 1200, 2000), (2, 1200, 2000)])
    sc = scenario_from_dict({"name": "static", "cluster": {"hosts": [one_core_host()]},
                             "vms": [{"name": "t", "trace": {"format": "opendc", "path": str(d)}}],
                             "placement": {"cpu_overcommit": 2}, "simulation": {"step": "5 min"},
                             "scheduling": {"lifetimes": "off"}})
    r = simulate(resolve(sc))
    n = r.summary["grid"]["n_steps"]
    want = r.vm_acc.sum["cpu_ready_pct"] / n
    assert r.vms.sort("vm")["cpu_ready_pct_mean"].to_list() == pytest.approx(sorted(want.tolist()))
    assert r.summary["qos"]["cpu_ready_pct_worst_vm_mean"] == pytest.approx(float(want.max()))
