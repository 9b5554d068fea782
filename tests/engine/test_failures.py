"""Host and domain failures, HA restarts and admission control (issue 16)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from densim.cli.main import app
from densim.engine import simulate
from densim.errors import InputError
from densim.placement.failover import failover, reserve
from densim.plant import resolve
from densim.spec.loader import scenario_from_dict
from densim.workloads.failures import YEAR_S, availability, draw, mtbf_s

H = 3600.0


def scenario(failures, hosts=4, vms=16, vcpus=2, horizon="1 d", **extra):
    """``hosts`` hosts of 8 cores, 32 GiB; ``vms`` VMs of ``vcpus`` vCPUs, 1 GiB, 50 % busy (profile)."""
    d = {
        "name": "ha",
        "cluster": {"hosts": [{"name": "h", "count": hosts, "cpu": {"sockets": 1, "cores_per_socket": 8, "base_clock": "2 GHz"},
                               "memory": "32 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]},
        "vms": [{"name": "web", "count": vms, "vcpus": vcpus, "memory": "1 GiB", "vcpu_speed": "2 GHz",
                 "profile": {"kind": "constant", "mean": 0.5}}],
        "placement": {"policy": "first-fit"},
        "simulation": {"step": "5 min", "horizon": horizon},
        "failures": failures,
    }
    d.update(extra)
    return scenario_from_dict(d)


# ---- closed forms ---------------------------------------------------------------------------------
def test_n_plus_1_reservation_on_identical_hosts():
    # 4 identical hosts of 8 vCPUs (8 cores, over-commit 1); VMs of 2 vCPUs. N+1 keeps one host's
    # capacity free: 4 x 8 - 8 = 24 vCPUs may be allocated = 12 VMs of the 16 asked for. First-fit fills
    # hosts 0-2 (4 VMs each), host 3 stays empty. Host 0 fails at 2 h for 3 h: its 4 VMs (8 vCPUs) are
    # released after the 30 s detection, all fit on host 3, and are up 120 s later: each is down
    # 30 + 120 = 150 s, 4 x 150 s = 10 VM-minutes; the reservation held.
    fs = {"events": [{"time": "2 h", "target": "h-0", "duration": "3 h"}],
          "ha": {"admission": "n_plus_k", "host_failures": 1, "detection": "30 s", "boot_delay": "2 min"}}
    r = simulate(resolve(scenario(fs)))
    f = r.summary["failures"]
    assert f["reserve_vcpus"] == 8.0
    assert f["power_ons_refused"] == 4
    # VMs, not runs (rows): 12 placed (their 12 first runs + 4 restarted runs are 16 rows), 4 refused
    assert (r.summary["vms_total"], r.summary["vms_placed"], r.summary["vms_unplaced"]) == (16, 12, 4)
    assert f["vms_interrupted"] == 4 and f["restarts"] == 4
    assert f["vm_minutes_down"] == pytest.approx(10.0)
    assert f["restart_delay_s_max"] == pytest.approx(150.0)
    assert f["reservation_held"] is True and f["waited_for_capacity"] == 0


def test_without_admission_the_restarts_wait_for_the_repair():
    # Same cluster, no admission control: all 16 VMs start (4 per host, every host full). Host 0 fails
    # at 2 h for 3 h; its 4 VMs fit nowhere until it is repaired at 5 h, then start there and are up
    # 120 s later: each is down 3 h + 120 s = 10,920 s; 4 x 10,920 / 60 = 728 VM-minutes.
    fs = {"events": [{"time": "2 h", "target": "h-0", "duration": "3 h"}],
          "ha": {"admission": "off", "detection": "30 s", "boot_delay": "2 min"}}
    r = simulate(resolve(scenario(fs)))
    f = r.summary["failures"]
    assert f["power_ons_refused"] == 0 and f["vms_interrupted"] == 4
    assert f["vm_minutes_down"] == pytest.approx(4 * (3 * H + 120) / 60)
    assert f["waited_for_capacity"] == 4 and f["reservation_held"] is False
    out = r.ctx.failures.tables(r.ctx.hosts.names)["outages"]
    assert out["restart_host"].to_list() == ["h-0"] * 4
    assert out["restarted_s"].min() == pytest.approx(r.ctx.grid.start_s + 5 * H)


def test_percent_admission_and_power_of_a_failed_host():
    # percent: 25 % of 32 vCPUs = 8 vCPUs kept free: again 12 VMs of 2 vCPUs admitted, and host 3 takes
    # host 0's 4 VMs. The failed host draws no power in the 3 h / 5 min = 36 steps it is down.
    fs = {"events": [{"time": "2 h", "target": "h-0", "duration": "3 h"}], "ha": {"admission": "percent", "percent": 25}}
    r = simulate(resolve(scenario(fs)))
    f = r.summary["failures"]
    assert f["power_ons_refused"] == 4 and f["reservation_held"] is True
    hs = r.host_steps()
    down = hs.filter((pl.col("host") == "h-0") & (pl.col("time_s") >= 2 * H) & (pl.col("time_s") < 5 * H))
    assert down.height == 36 and (down["power_w"] == 0).all()


def test_availability_of_a_vm_matches_mtbf_over_mtbf_plus_mttr():
    # One host, one VM that cannot restart elsewhere (no other host), detection and boot 0: the VM is
    # down exactly while its host is. Host MTBF 10 h, MTTR 1 h: A = 10 / (10 + 1) = 0.90909. Over
    # 20,000 h (about 1,818 cycles) the share of time down has a standard error of about 0.002
    # (alternating renewal process, exponential up and down times): the tolerance is 3 sigma.
    assert availability(10 * H, 1 * H) == pytest.approx(10 / 11)
    rng = np.random.default_rng(7)
    horizon = 20_000 * H
    _, start, dur = draw(rng, 1, 10 * H, 1 * H, horizon)
    end = np.minimum(start + dur, horizon)
    fo = failover([0.0], [np.inf], [1.0], [1.0], [1.0], [1.0], down_host=np.zeros(start.size, np.int64),
                  down_start_s=start, down_end_s=end, initial=[0], until=horizon)
    down = np.nansum(np.fmin(fo.out_up_s, horizon) - fo.out_fail_s)
    assert 1 - down / horizon == pytest.approx(10 / 11, abs=0.006)


def test_afr_to_mtbf():
    # AFR 2 % -> MTBF = -1 y / ln(0.98) = 8,766 h / 0.0202027 = 433,901 h (49.5 years)
    class R:
        mtbf_s, afr = None, 0.02

    assert mtbf_s(R) / H == pytest.approx(-YEAR_S / math.log(0.98) / H)
    assert mtbf_s(R) / H == pytest.approx(433_901, rel=1e-4)


def test_reserve_of_the_k_largest_hosts_and_of_a_domain():
    cap = np.array([32.0, 8, 8, 16])
    assert reserve(cap, cap * 2, 1) == (32.0, 64.0)  # the largest host
    assert reserve(cap, cap * 2, 2) == (48.0, 96.0)  # the two largest
    assert reserve(cap, cap, 0, [np.array([1, 2]), np.array([0])]) == (32.0, 32.0)  # rack {1,2} = 16 < {0} = 32


# ---- the event loop ---------------------------------------------------------------------------------
def test_restart_priority_order_when_only_one_fits():
    # 2 hosts of 2 vCPUs. VMs 0 (low) and 1 (high) of 1 vCPU on host 0, VM 2 (1 vCPU) on host 1:
    # host 1 has 1 vCPU free. Host 0 fails at 10 s: the high-priority VM 1 restarts on host 1 at 10 s,
    # VM 0 waits for the repair at 100 s.
    fo = failover([0, 0, 0], [np.inf] * 3, [1, 1, 1], [1, 1, 1], [2, 2], [9, 9], down_host=[0], down_start_s=[10.0],
                  down_end_s=[100.0], priority=[0, 2, 0], initial=[0, 0, 1], until=1000.0)
    placed = dict(zip(fo.out_vm.tolist(), fo.out_placed_s.tolist()))
    assert placed == {1: 10.0, 0: 100.0}


def test_domain_failure_takes_down_its_hosts_and_overlaps_with_a_host_failure():
    # rack r = {h-0, h-1} fails 1-2 h; h-1 alone also fails 1.5-3 h: h-1 is down 1-3 h (either), h-0 1-2 h.
    fs = {"domains": [{"name": "r", "kind": "rack", "hosts": ["h-0", "h-1"]}],
          "events": [{"time": "1 h", "target": "r", "duration": "1 h"}, {"time": "1.5 h", "target": "h-1", "duration": "1.5 h"}]}
    r = simulate(resolve(scenario(fs, vms=8)))
    f = r.summary["failures"]
    assert f["events"] == 2 and f["hosts_failed"] == 2
    assert f["host_down_h"] == pytest.approx(1 + 1 + 1.5)
    ev = r.ctx.failures.tables(r.ctx.hosts.names)["failures"]
    assert ev["hosts"].to_list() == [2, 1]
    assert ev["vms_interrupted"].to_list() == [8, 0]  # first-fit put all 8 VMs on h-0 and h-1


def test_random_failures_are_seeded():
    fs = {"random": {"host": {"mtbf": "2 d", "mttr": "4 h"}}}
    a = simulate(resolve(scenario(fs, horizon="10 d")))
    b = simulate(resolve(scenario(fs, horizon="10 d")))
    c = simulate(resolve(scenario(fs, horizon="10 d")), seed=43)
    ta = a.ctx.failures.events
    assert ta.n > 0 and np.array_equal(ta.time_s, b.ctx.failures.events.time_s)
    assert a.summary["failures"] == b.summary["failures"]
    assert not np.array_equal(ta.time_s, c.ctx.failures.events.time_s)


def test_no_failure_changes_nothing():
    # an empty failures: section: same CPU, energy and CPU Ready as the run without it
    plain = simulate(resolve(scenario(None)))
    with_ = simulate(resolve(scenario({})))
    for k in ("energy_j", "cpu_delivered_mhz_s", "cpu_ready_s"):
        assert with_.summary["totals"][k] == pytest.approx(plain.summary["totals"][k], rel=1e-6)


# ---- bad input --------------------------------------------------------------------------------------
def test_trace_naming_an_unknown_host_is_one_line(tmp_path, write_yaml):
    tr = tmp_path / "f.csv"
    tr.write_text("time,target,duration\n1 h,h-0,1 h\n2 h,h-9,1 h\n")
    with pytest.raises(InputError, match=r"row 3: target.*unknown host or failure domain 'h-9'"):
        simulate(resolve(scenario({"trace": str(tr)})))
    doc = scenario({"trace": str(tr)}).model_dump(by_alias=True, exclude_none=True)
    p = write_yaml(doc)
    r = CliRunner().invoke(app, ["run", str(p), "--out", str(tmp_path / "o"), "--no-progress", "--no-report"])
    assert r.exit_code == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "f.csv" in lines[0] and "row 3" in lines[0] and "'h-9'" in lines[0]


def test_overlapping_failures_of_one_target_are_one_line(tmp_path):
    tr = tmp_path / "f.csv"
    tr.write_text("time,target,duration\n3600,h-1,7200\n7200,h-1,60\n")
    with pytest.raises(InputError) as e:
        simulate(resolve(scenario({"trace": str(tr)})))
    msg = str(e.value)
    assert "\n" not in msg and "row 3" in msg and "row 2" in msg and "may not overlap" in msg


def test_unknown_domain_member_and_priority_group():
    with pytest.raises(InputError, match=r"failures.domains\[0\].hosts\[1\]"):
        simulate(resolve(scenario({"domains": [{"name": "r", "hosts": ["h-0", "nope"]}]})))
    with pytest.raises(InputError, match=r"restart_priority.db"):
        simulate(resolve(scenario({"ha": {"restart_priority": {"db": "high"}}})))


def test_plan_spare_hosts_for_n_plus_k_percent_and_domain():
    from densim.spec.plan import QosSpec
    from densim.tools.plan.capacity import ha_spare

    assert ha_spare(QosSpec(ha_spare_hosts=1), 12) == 1  # N+1
    # 25 % kept free over 12 packed hosts: s / (12 + s) >= 0.25 -> s >= 12 x 25 / 75 = 4 (16 hosts, 4/16 = 25 %)
    assert ha_spare(QosSpec(ha_reserve_percent=25), 12) == 4
    # over 10 packed hosts: s >= 10 / 3 = 3.33 -> 4 (4/14 = 28.6 %; 3/13 = 23.1 % would not do)
    assert ha_spare(QosSpec(ha_reserve_percent=25), 10) == 4
    # a rack of 5 hosts kept spare beats N+2
    assert ha_spare(QosSpec(ha_spare_hosts=2, ha_domain_hosts=5), 10) == 5
