"""Features combined with VMs that arrive and leave: every figure counts only the VMs alive at once.

The engine keeps one record of which VM is alive when (:class:`densim.engine.lifetimes.Liveness`,
``ctx.liveness``); each test below is a case where a figure once summed every VM that ever ran on a
host (issue 28), checked by hand.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from densim.engine import simulate
from densim.engine.lifetimes import Liveness
from densim.placement.online import Schedule
from densim.plant import resolve
from densim.spec.loader import scenario_from_dict
from tests.engine.test_lifetimes import write_opendc

GIB_KB = 1024 * 1024  # OpenDC mem_capacity is in KiB


def _host(mem="16 GiB", cores=4):
    return {"name": "h", "count": 1, "cpu": {"sockets": 1, "cores_per_socket": cores, "base_clock": "2 GHz"},
            "memory": mem, "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}


def _sequential_tasks(folder, n, mem_gib, hours=1.0, mhz=1000):
    """n tasks of 1 vCPU and ``mem_gib`` GiB, one after another (task k runs k h .. k+1 h)."""
    return write_opendc(folder, [(k + 1, k * 3600 * hours, 1, mhz, int(mem_gib * GIB_KB)) for k in range(n)],
                        [(k + 1, 3600 * hours, mhz) for k in range(n)])


def test_peak_per_host_counts_vms_alive_at_once():
    # host 0: A [0, 10), B [10, 20) (back to back: never together), C [5, 15) -> at most 2 at once
    # host 1: D [0, 30) alone; E never started (NaN) on no host
    sch = Schedule(host=np.array([0, 0, 0, 1, -1]), start_s=np.array([0.0, 10, 5, 0, np.nan]),
                   end_s=np.array([10.0, 20, 15, 30, np.nan]), arrival_s=np.zeros(5), status=np.zeros(5, np.int8),
                   until=np.inf)
    live = Liveness.__new__(Liveness)
    live.sch = sch
    w = np.array([[1.0, 1, 1, 1, 1], [4.0, 2, 8, 16, 32]])
    got = live.peak_per_host(sch.host, w, 3)
    # row 0 peaks at 2 on host 0 first at t = 5 (A + C, second row 4 + 8 = 12); host 1: D; host 2 empty
    assert got.tolist() == [[2.0, 1.0, 0.0], [12.0, 16.0, 0.0]]


def test_peak_per_host_keeps_its_event_order_only_for_the_same_placement():
    # the sorts are kept between calls (the engine asks for vCPUs, then memory, with one placement); a placement
    # changed in place must not be served the old order. A, B, C as above, then C moved to host 1 in place:
    # host 0 holds A and B (never together, 1), host 1 holds C and D (together from 5 to 15, 2)
    host = np.array([0, 0, 0, 1, -1])
    sch = Schedule(host=host, start_s=np.array([0.0, 10, 5, 0, np.nan]), end_s=np.array([10.0, 20, 15, 30, np.nan]),
                   arrival_s=np.zeros(5), status=np.zeros(5, np.int8), until=np.inf)
    live = Liveness.__new__(Liveness)
    live.sch = sch
    ones = np.ones(5)
    assert live.peak_per_host(host, ones, 3).tolist() == [[2.0, 1.0, 0.0]]
    assert live.peak_per_host(host, 2 * ones, 3).tolist() == [[4.0, 2.0, 0.0]]  # the kept order, other weights
    host[2] = 1
    assert live.peak_per_host(host, ones, 3).tolist() == [[1.0, 2.0, 0.0]]


def test_stable_order_is_numpys_stable_argsort():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from densim.engine.stages import stable_order

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.integers(-2**40, 2**40) | st.integers(-3, 3), max_size=60))
    def check(keys):
        k = np.array(keys, dtype=np.int64)
        assert np.array_equal(stable_order(k), np.argsort(k, kind="stable"))

    check()


def test_memory_summary_and_hosts_table_count_only_vms_alive_at_once(tmp_path):
    # One 16 GiB host, memory over-commit 1.0, three 12 GiB tasks one after another (0-1 h, 1-2 h,
    # 2-3 h). At most one is alive: 12 GiB allocated (0.75 of the host), nothing short of memory.
    # Summing every VM that ever ran there said 36 GiB (2.25 x 16 GiB) and listed the host short.
    d = _sequential_tasks(tmp_path / "w", 3, 12)
    sc = scenario_from_dict({
        "name": "mem", "cluster": {"hosts": [_host()]},
        "vms": [{"name": "t", "trace": {"format": "opendc", "path": str(d)},
                 "workload": {"memory_profile": "enterprise-server-load"}}],
        "placement": {"memory_overcommit": 1.0},
        "memory": {"model": "vsphere-like", "workload": "enterprise-server-load"},
        "simulation": {"step": "5 min"},
    })
    r = simulate(resolve(sc))
    assert r.summary["scheduling"]["completed"] == 3
    m = r.summary["memory"]
    assert m["hosts_short_of_memory"] == [] and m["hosts_swapping"] == []
    assert r.hosts["memory_allocated_bytes"].to_list() == [12 * 2**30]
    assert r.hosts["vcpus"].to_list() == [1.0]  # one 1-vCPU task at a time
    # oversubscription = 12 GiB / (16 GiB - hypervisor - one VM's overhead) < 1
    assert 0.75 < m["oversubscription_by_host"][r.hosts["host"][0]] < 1.0


def test_shadow_paging_counts_vms_alive_on_the_host_not_every_vm_it_ran():
    # Six 1-vCPU VMs arrive one after another on one host and live 10 min each (sigma 0, arrivals
    # spread over 1 h and 10-min lives: sorted uniform arrivals can overlap, so the count alive at once
    # is what the engine's liveness says, checked against the factor below). With one VM on the host:
    # 0.02 x 10,000 + 0.005 x 1,500 = 207.5 cycles per 1,000 instructions (tests/virt/test_shadow_sync.py);
    # six at once would be 245.
    base = {
        "name": "shadow-lifetimes",
        "cluster": {"hosts": [{"count": 1, "server": "ibm-x3650-m3-x5680"}]},
        "vms": [{"name": "small", "count": 6, "vcpus": 1, "vcpu_speed": "3330 MHz", "memory": "2 GiB",
                 "profile": {"kind": "constant", "mean": 0.3}, "workload": {"tlb_mpki_4k": 0, "llc_mpki": 0},
                 "arrivals": {"over": "6 h", "lifetime": "1 s", "lifetime_sigma": 0}}],
        "virtualization": {"model": "kvm", "hypervisor": {"paging": "shadow",
                                                          "shadow": {"refresh_share_per_vm": 0.1, "refresh_faults": 10}}},
        "simulation": {"step": "5 min", "horizon": "7 h", "seed": 3},
    }
    r = simulate(resolve(scenario_from_dict(copy.deepcopy(base))))
    start = np.sort(r.vms["start_s"].to_numpy())
    assert (np.diff(start) > 1.0).all()  # 1-second lives 6 h apart on average: never two at once (seed 3)
    sh = r.summary["virtualization"]["shadow_sync_cycles_per_kinstr"]
    assert sh["max"] == pytest.approx(207.5) and sh["mean"] == pytest.approx(207.5)


def test_trace_offset_moves_the_start_of_a_run_with_lifetimes(tmp_path):
    # Two 1-hour tasks submitted at 0 and 2 h. trace.offset 1 h skips the trace's first hour: the run
    # starts 1 h after the first submission (task 1, submitted before the start, arrives at the start,
    # as with simulation.start); it ended 1 h earlier's worth of grid: 3 h -> 2 h.
    d = write_opendc(tmp_path / "w", [(1, 0, 1, 1000, GIB_KB), (2, 7200, 1, 1000, GIB_KB)],
                     [(1, 3600, 1000), (2, 3600, 1000)])

    def go(offset):
        sc = scenario_from_dict({"name": "off", "cluster": {"hosts": [_host()]},
                                 "vms": [{"name": "t", "trace": {"format": "opendc", "path": str(d), "offset": offset}}],
                                 "simulation": {"step": "5 min"}})
        return simulate(resolve(sc))

    plain, off = go("0 s"), go("1 h")
    assert off.ctx.grid.start_s == pytest.approx(plain.ctx.grid.start_s + 3600.0)
    assert plain.ctx.grid.horizon_s == pytest.approx(3 * 3600.0)
    assert off.ctx.grid.horizon_s == pytest.approx(2 * 3600.0)
