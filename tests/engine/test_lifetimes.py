"""VMs (tasks) that arrive and leave: online placement, the wait queue, idle hosts' power."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from densim.engine import simulate
from densim.placement.online import DONE, FAILED, RUNNING, WAITING, running_and_waiting, schedule
from densim.plant import resolve
from densim.spec.loader import scenario_from_dict

T0_MS = 1_700_000_000_000  # any epoch: the run starts at the first submission


def write_opendc(folder, tasks, fragments):
    """tasks: (id, submit_s, cpu_count, cpu_capacity_mhz, mem_kb); fragments: (id, duration_s, cpu_mhz)."""
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({
        "id": pa.array([t[0] for t in tasks], pa.int32()),
        "submission_time": pa.array([T0_MS + int(t[1] * 1000) for t in tasks], pa.int64()),
        "duration": pa.array([int(sum(f[1] for f in fragments if f[0] == t[0]) * 1000) for t in tasks], pa.int64()),
        "cpu_count": pa.array([t[2] for t in tasks], pa.int32()),
        "cpu_capacity": pa.array([float(t[3]) for t in tasks], pa.float64()),
        "mem_capacity": pa.array([t[4] for t in tasks], pa.int64()),
    }), folder / "tasks.parquet")
    pq.write_table(pa.table({
        "id": pa.array([f[0] for f in fragments], pa.int32()),
        "duration": pa.array([int(f[1] * 1000) for f in fragments], pa.int64()),
        "cpu_usage": pa.array([float(f[2]) for f in fragments], pa.float64()),
    }), folder / "fragments.parquet")
    return folder


def one_core_host(idle=100.0, peak=200.0, count=1):
    return {"name": "h", "count": count, "cpu": {"sockets": 1, "cores_per_socket": 1, "base_clock": "2 GHz"},
            "memory": "4 GiB", "power": {"model": "linear", "idle": f"{idle} W", "peak": f"{peak} W"}}


def run(folder, hosts, step="5 min", **scheduling):
    sc = scenario_from_dict({
        "name": "tasks", "cluster": {"hosts": hosts},
        "vms": [{"name": "t", "trace": {"format": "opendc", "path": str(folder)}}],
        "simulation": {"step": step}, "scheduling": scheduling,
    })
    return simulate(resolve(sc))


def test_fifo_two_one_hour_tasks_on_one_core(tmp_path):
    # One 1-core 2 GHz host (linear 100-200 W). Two 1-hour tasks of 2 GHz (the whole core), the
    # first at 0, the second at 0.5 h. The second fits only when the first leaves at 1 h: it waits
    # 30 min and runs 1 -> 2 h. The run starts at the first submission and ends at 2 h, the core busy
    # all along: energy = peak x 2 h = 400 Wh.
    d = write_opendc(tmp_path / "w", [(1, 0, 1, 2000, 1024), (2, 1800, 1, 2000, 1024)],
                     [(1, 3600, 2000), (2, 3600, 2000)])
    r = run(d, [one_core_host()])
    s = r.summary["scheduling"]
    assert s["completed"] == 2 and s["failed"] == 0 and s["waiting_at_end"] == 0
    assert s["scheduling_delay_max_s"] == pytest.approx(1800.0)
    assert s["scheduling_delay_total_s"] == pytest.approx(1800.0)
    assert s["simulated_end_s"] == pytest.approx(7200.0)
    assert s["peak_concurrent"] == 1
    assert r.summary["totals"]["energy_j"] == pytest.approx(400 * 3600.0, rel=1e-6)
    # demand = 2 tasks x 2000 MHz x 3600 s, all delivered
    assert r.summary["totals"]["cpu_demand_mhz_s"] == pytest.approx(2 * 2000 * 3600.0, rel=1e-6)
    assert r.summary["totals"]["cpu_unserved_mhz_s"] == pytest.approx(0.0, abs=1e-3)
    vms = r.vms.sort("vm")
    assert vms["wait_s"].to_list() == pytest.approx([0.0, 1800.0])
    assert vms["status"].to_list() == ["completed", "completed"]


def test_issue_example_second_task_waits_30_min_and_the_run_ends_at_2_5_h(tmp_path):
    # The issue's example: one 1-core 2 GHz host (idle 100 W, peak 200 W); two 1-hour tasks of
    # 2 GHz arriving 30 minutes apart, at 0.5 h and 1.0 h after the run's start (simulation.start).
    #   task 1: 0.5 -> 1.5 h; task 2 arrives at 1.0 h, waits 30 min (FIFO), runs 1.5 -> 2.5 h.
    #   The run ends at 2.5 h; energy = idle x 2.5 h + (peak - idle) x 2 h = 250 + 200 = 450 Wh.
    d = write_opendc(tmp_path / "w", [(1, 1800, 1, 2000, 1), (2, 3600, 1, 2000, 1)],
                     [(1, 3600, 2000), (2, 3600, 2000)])
    sc = scenario_from_dict({
        "name": "tasks", "cluster": {"hosts": [one_core_host()]},
        "vms": [{"name": "t", "trace": {"format": "opendc", "path": str(d)}}],
        "simulation": {"step": "5 min", "start": T0_MS / 1000},
    })
    r = simulate(resolve(sc))
    s = r.summary["scheduling"]
    assert s["scheduling_delay_max_s"] == pytest.approx(1800.0)
    assert s["simulated_end_s"] == pytest.approx(2.5 * 3600)
    assert r.summary["grid"]["horizon_s"] == pytest.approx(2.5 * 3600)
    assert r.summary["totals"]["energy_j"] == pytest.approx(450 * 3600.0, rel=1e-6)


def test_idle_host_stays_on_or_switches_off_with_boot_energy(tmp_path):
    # One task of 1 h at t = 0 and one at t = 3 h on one host; idle 100 W, peak 200 W.
    # on:  the host is on 0..4 h: 2 h busy at 200 W + 2 h idle at 100 W = 600 Wh.
    # off (off_after 0, boot 36 kJ = 10 Wh): busy 2 h at 200 W = 400 Wh + 2 power-ons x 10 Wh = 420 Wh.
    d = write_opendc(tmp_path / "w", [(1, 0, 1, 2000, 1), (2, 3 * 3600, 1, 2000, 1)],
                     [(1, 3600, 2000), (2, 3600, 2000)])
    on = run(d, [one_core_host()])
    assert on.summary["totals"]["energy_j"] == pytest.approx(600 * 3600.0, rel=1e-6)
    off = run(d, [one_core_host()], idle_hosts="off", boot_energy="36 kJ")
    assert off.summary["scheduling"]["host_power_ons"] == 2
    assert off.summary["totals"]["energy_j"] == pytest.approx(420 * 3600.0, rel=1e-6)
    # off_after 1 h keeps it on through the first idle hour: + 100 Wh idle, same two boots
    late = run(d, [one_core_host()], idle_hosts="off", boot_energy="36 kJ", off_after="1 h")
    assert late.summary["totals"]["energy_j"] == pytest.approx(520 * 3600.0, rel=1e-6)


def test_a_task_larger_than_every_host_fails_and_reject_fails_what_does_not_fit(tmp_path):
    d = write_opendc(tmp_path / "w", [(1, 0, 2, 4000, 1), (2, 0, 1, 2000, 1), (3, 60, 1, 2000, 1)],
                     [(1, 600, 4000), (2, 600, 2000), (3, 600, 2000)])
    r = run(d, [one_core_host()])
    s = r.summary["scheduling"]
    assert s["failed"] == 1 and s["completed"] == 2  # the 2-core task; task 3 waits 540 s
    rej = run(d, [one_core_host()], queue="reject")
    assert rej.summary["scheduling"]["failed"] == 2 and rej.summary["scheduling"]["completed"] == 1


def test_fifo_head_blocks_but_backfill_starts_what_fits():
    # two 2-core hosts; A (2 cores, 0..10) on h0, B (1 core, 0..10) on h1; C (2 cores) arrives at 1,
    # D (1 core) at 2. FIFO: C waits for h0 at 10, D waits behind C although h1 has room; backfill: D
    # starts at 2 on h1.
    arrival = np.array([0.0, 0.0, 1.0, 2.0])
    run_s = np.full(4, 10.0)
    cpu = np.array([2.0, 1.0, 2.0, 1.0])
    mem = np.ones(4)
    caps = dict(cpu_cap=np.array([2.0, 2.0]), mem_cap=np.array([10.0, 10.0]))
    fifo = schedule(arrival, run_s, cpu, mem, **caps, discipline="fifo")
    assert fifo.start_s.tolist() == [0.0, 0.0, 10.0, 10.0]
    back = schedule(arrival, run_s, cpu, mem, **caps, discipline="backfill")
    assert back.start_s.tolist() == [0.0, 0.0, 10.0, 2.0]
    assert back.host.tolist() == [0, 1, 0, 1]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 100), st.floats(0.5, 50), st.integers(1, 4), st.integers(1, 8)), min_size=1, max_size=40),
       st.sampled_from(["fifo", "backfill", "reject"]), st.sampled_from(["first-fit", "best-fit", "worst-fit"]))
def test_schedule_properties(tasks, discipline, policy):
    arr = np.array([t[0] for t in tasks])
    run_s = np.array([t[1] for t in tasks])
    cpu = np.array([float(t[2]) for t in tasks])
    mem = np.array([float(t[3]) for t in tasks])
    cap_c, cap_m = np.array([4.0, 2.0, 3.0]), np.array([8.0, 4.0, 6.0])
    sch = schedule(arr, run_s, cpu, mem, cap_c, cap_m, policy=policy, discipline=discipline)
    started = np.isfinite(sch.start_s)
    # nothing runs before it arrives; it runs exactly its run length
    assert (sch.start_s[started] >= arr[started]).all()
    assert np.allclose(sch.end_s[started] - sch.start_s[started], run_s[started])
    # a VM that fits some empty host is never failed except by reject
    fits = ((cpu[:, None] <= cap_c[None, :]) & (mem[:, None] <= cap_m[None, :])).any(axis=1)
    if discipline != "reject":
        assert (started == fits).all() and (sch.status[~fits] == FAILED).all()
        assert set(sch.status[started].tolist()) <= {DONE, RUNNING}
    # capacity holds at every start (where load can rise)
    for t in np.unique(sch.start_s[started]):
        on = started & (sch.start_s <= t) & (sch.end_s > t)
        for h in range(3):
            sel = on & (sch.host == h)
            assert cpu[sel].sum() <= cap_c[h] + 1e-9 and mem[sel].sum() <= cap_m[h] + 1e-9
    if discipline == "backfill":
        # the queue never holds a VM that fits a host at that moment: at each event time, no waiting
        # VM fits the free capacity left after the events of that time
        events = np.unique(np.r_[arr, sch.end_s[started]])
        for t in events:
            waiting = (arr <= t) & ~(started & (sch.start_s <= t)) & (sch.status != FAILED)
            if not waiting.any():
                continue
            on = started & (sch.start_s <= t) & (sch.end_s > t)
            free_c = cap_c - np.bincount(sch.host[on], weights=cpu[on], minlength=3)
            free_m = cap_m - np.bincount(sch.host[on], weights=mem[on], minlength=3)
            for v in np.flatnonzero(waiting):
                assert not ((cpu[v] <= free_c + 1e-9) & (mem[v] <= free_m + 1e-9)).any()
    run_n, wait_n = running_and_waiting(sch, np.array([1e9]))
    assert run_n[0] == 0 and wait_n[0] == int(np.count_nonzero(sch.status == WAITING))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(1, 12), st.floats(100, 2000)), min_size=1, max_size=8))
def test_demand_only_while_alive_and_delivered_plus_unserved_is_demand(tmp_path_factory, tasks):
    # tasks: (submit in 5-min steps, run in 5-min steps, MHz); two 1-core 2 GHz hosts
    d = tmp_path_factory.mktemp("w")
    write_opendc(d, [(i + 1, s * 300, 1, 2000, 1) for i, (s, _, _) in enumerate(tasks)],
                 [(i + 1, n * 300, mhz) for i, (_, n, mhz) in enumerate(tasks)])
    r = run(d, [one_core_host(count=2)])
    v = r.vms
    # every task's demand is its MHz x run length: counted once, while it lives
    want = sum(n * 300 * mhz for (_, n, mhz) in tasks)
    assert r.summary["totals"]["cpu_demand_mhz_s"] == pytest.approx(want, rel=1e-5)
    got = (v["cpu_delivered_mhz_s"] + v["cpu_unserved_mhz_s"]).sum()
    assert got == pytest.approx(v["cpu_demand_mhz_s"].sum(), rel=1e-6)
    if r.vm_steps() is not None:
        steps = r.vm_steps().join(v.select("vm", "start_s", "end_s"), on="vm")
        t = r.ctx.grid.start_s + steps["step"].to_numpy() * 300.0
        dem = steps["cpu_demand_mhz"].to_numpy()
        outside = (t + 300.0 <= steps["start_s"].to_numpy()) | (t >= steps["end_s"].to_numpy())
        # zero up to the rounding of the cumulative-integral resampling (~1e-14 MHz)
        assert np.abs(dem[outside]).max(initial=0.0) <= 1e-9 * max(float(np.abs(dem).max()), 1.0)


def test_surf_week_total_demand_is_the_traces(tmp_path):
    # OpenDC's surf_week as OpenDC reads it: every task completes (one per host, 277 hosts), and the
    # demand the engine counts equals the trace's sum of cpu_usage x duration (the README's figure)
    from tests.conftest import TRACES

    folder = TRACES / "opendc-surf-week"
    if not folder.exists():
        pytest.skip("../shared/traces is not beside the repository")
    f = pq.read_table(folder / "fragments.parquet", columns=["duration", "cpu_usage"])
    want = float(np.sum(f.column("cpu_usage").to_numpy() * f.column("duration").to_numpy() / 1000.0))
    from densim.plant import load_plant

    r = simulate(load_plant("examples/opendc/surf-week.yaml"))
    assert r.summary["scheduling"]["completed"] == 6295
    assert r.summary["totals"]["cpu_demand_mhz_s"] == pytest.approx(want, rel=1e-6)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 30), st.floats(100, 4000), st.integers(1, 2)),
                min_size=1, max_size=25),
       st.sampled_from(["on", "off"]), st.integers(1, 7))
def test_stepping_only_the_live_vms_gives_the_dense_runs_results(tmp_path_factory, tasks, idle_hosts, chunk):
    # A lean run (no stages, no VM time series) steps only the VMs alive in each chunk; with the VM
    # time series on, every VM is stepped every chunk. Same schedule, so the same totals and per-VM sums.
    d = tmp_path_factory.mktemp("w")
    write_opendc(d, [(i + 1, s * 300, c, 2000 * c, 1) for i, (s, _, _, c) in enumerate(tasks)],
                 [(i + 1, n * 300, mhz) for i, (_, n, mhz, _) in enumerate(tasks)])

    def go(series):
        sc = scenario_from_dict({
            "name": "tasks", "cluster": {"hosts": [one_core_host(count=2), {**one_core_host(count=1), "name": "g",
                                                                           "cpu": {"sockets": 1, "cores_per_socket": 2,
                                                                                   "base_clock": "2 GHz"}}]},
            "vms": [{"name": "t", "trace": {"format": "opendc", "path": str(d)}}],
            "simulation": {"step": "5 min", "chunk_steps": chunk}, "scheduling": {"idle_hosts": idle_hosts},
            "output": {"vm_timeseries": series},
        })
        return simulate(resolve(sc))

    lean, dense = go("off"), go("on")
    for k, v in dense.summary["totals"].items():
        assert lean.summary["totals"][k] == pytest.approx(v, rel=1e-9, abs=1e-6), k
    for col in ("cpu_demand_mhz_s", "cpu_delivered_mhz_s", "cpu_ready_pct_max"):
        assert np.allclose(lean.vms[col].to_numpy(), dense.vms[col].to_numpy(), rtol=1e-9, atol=1e-9), col
    assert np.allclose(lean.hosts["energy_j"].to_numpy(), dense.hosts["energy_j"].to_numpy(), rtol=1e-9)


def test_synthetic_arrivals_live_exactly_their_lifetime():
    # 3 constant VMs (1 vCPU at 2 GHz, 50 %) arrive over 1 h and each lives exactly 2 h (sigma 0):
    # demand = 3 x 1,000 MHz x 7,200 s, whatever the arrival times; they are reproducible by seed
    def go(seed):
        sc = scenario_from_dict({
            "name": "arrivals", "cluster": {"hosts": [one_core_host(count=3)]},
            "vms": [{"name": "v", "count": 3, "vcpus": 1, "vcpu_speed": "2 GHz", "memory": "1 GiB",
                     "profile": {"kind": "constant", "mean": 0.5},
                     "arrivals": {"over": "1 h", "lifetime": "2 h", "lifetime_sigma": 0}}],
            "simulation": {"step": "5 min", "seed": seed},
        })
        return simulate(resolve(sc))

    r = go(7)
    assert r.summary["scheduling"]["completed"] == 3
    assert r.summary["totals"]["cpu_demand_mhz_s"] == pytest.approx(3 * 1000.0 * 7200.0, rel=1e-5)
    v = r.vms
    assert np.allclose(v["end_s"].to_numpy() - v["start_s"].to_numpy(), 7200.0)
    assert (v["arrival_s"].to_numpy() < 3600.0).all()
    assert v["arrival_s"].to_list() == go(7).vms["arrival_s"].to_list()
    assert v["arrival_s"].to_list() != go(8).vms["arrival_s"].to_list()


def test_arrivals_belong_to_profile_groups():
    from densim.errors import InputError

    with pytest.raises(InputError, match="arrivals"):
        scenario_from_dict({"name": "x", "cluster": {"hosts": [one_core_host()]},
                            "vms": [{"name": "t", "trace": {"format": "opendc", "path": "/nonexistent"},
                                     "arrivals": {"over": "1 h", "lifetime": "1 h"}}]})


def test_memory_is_held_only_while_a_vm_lives(tmp_path):
    # One host of 16 GiB with memory over-commit 2 (placement admits both 12 GiB VMs). Task A lives
    # 0..1 h, task B 2..3 h (apart) or 0.5..1.5 h (overlapping). Apart, each is alone on the host and
    # fits: nothing is reclaimed. Overlapping, 24 GiB of guests on a 16 GiB host must swap, and only in
    # the overlap (0.5..1 h): no swapping in the steps where one VM is alone.
    def go(b_at):
        d = write_opendc(tmp_path / f"w{b_at}", [(1, 0, 1, 1000, 12 * 1024 * 1024), (2, b_at, 1, 1000, 12 * 1024 * 1024)],
                         [(1, 3600, 1000), (2, 3600, 1000)])
        host = {"name": "h", "count": 1, "cpu": {"sockets": 1, "cores_per_socket": 4, "base_clock": "2 GHz"},
                "memory": "16 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}
        sc = scenario_from_dict({
            "name": "mem", "cluster": {"hosts": [host]},
            "vms": [{"name": "t", "trace": {"format": "opendc", "path": str(d)},
                     "workload": {"memory_profile": "enterprise-server-load"}}],
            "placement": {"memory_overcommit": 2.0},
            "memory": {"model": "vsphere-like", "workload": "enterprise-server-load"},
            "simulation": {"step": "5 min"}, "output": {"vm_timeseries": "on"},
        })
        return simulate(resolve(sc))

    apart = go(2 * 3600)
    assert apart.summary["memory"]["hosts_swapping"] == []
    steps = apart.vm_steps().sort(["step", "vm"])
    res = steps["mem_resident_gib"].to_numpy().reshape(-1, 2)
    assert np.allclose(res[:12, 0], 12.0) and np.allclose(res[12:, 0], 0.0)  # A holds 12 GiB for its hour only
    over = go(1800)
    swapped = over.host_steps()["host_mem_swapped_gib"].to_numpy()
    t = over.host_steps()["time_s"].to_numpy() - over.ctx.grid.start_s
    both = (t >= 1800) & (t < 3600)
    assert (swapped[both] > 0).all() and not swapped[~both].any()


def test_run_report_shows_the_tasks(tmp_path):
    from densim.tools.run import write_run

    d = write_opendc(tmp_path / "w", [(1, 0, 1, 2000, 1), (2, 1800, 1, 2000, 1)], [(1, 3600, 2000), (2, 3600, 2000)])
    out = write_run(run(d, [one_core_host()]), tmp_path / "out", report=True)
    html = (out / "report.html").read_text()
    assert "Tasks that arrive and leave" in html and 'id="fig-tasks"' in html
    assert "2 / 2" in html  # tasks completed
    assert (out / "schedule_steps.parquet").exists()


def test_plan_says_it_places_tasks_all_at_once():
    # three VMs living [0, 10), [5, 15), [20, 30): at most 2 at once (at t = 5)
    from densim.tools.plan.capacity import tasks_note
    from densim.workloads.inventory import build_inventory

    inv = build_inventory(np.array(["a", "b", "c"], dtype=object), np.ones(3), np.full(3, 2000.0), np.full(3, 2**30),
                          fmt="azure", vm_start_s=np.array([0.0, 5.0, 20.0]), vm_end_s=np.array([10.0, 15.0, 30.0]))
    note = tasks_note(inv)
    assert "3 of them, at most 2 at once" in note and "upper bound" in note
