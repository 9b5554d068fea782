"""Request-class queueing, QoS and NUMA placement policies."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from densim.models.numa import NumaSpec
from densim.models.requests import (
    PathCosts,
    RequestClass,
    Visit,
    qos_margin,
    ready_stretch,
    response_quantile_s,
    solve_class,
    users_in_interval,
    visit_cycles,
)
from densim.models.virtualization import ExitCosts, IoPath, TlbSpec
from densim.placement.numa import UNBOUND, pin_balanced, place_auto_start, place_manual, place_none, rebalance

GiB = 1024**3


def _costs(network: IoPath) -> PathCosts:
    return PathCosts(
        exits=ExitCosts(light_cycles=1500, heavy_cycles=10000),
        network=network,
        storage=IoPath(name="native"),
        tlb=TlbSpec(entries_4k=576, entries_2m=32, leaf_ref_cycles=40, upper_ref_cycles=5),
        numa=NumaSpec(local_cycles=190, remote_cycles=310, stall_fraction=0.5),
        paging="ept",
        host_hugepages=False,
        guest_large_pages=True,
    )


def test_visit_cycles_by_hand():
    v = Visit(vm="web", instructions_m=1.0, cpi_core=1.0, llc_mpki=10.0, tlb_mpki_4k=0.0, packets=2)
    virtio = IoPath(name="v", heavy_exits=0.25, host_cycles=22000, interrupts=0.5, light_exits_per_interrupt=2)
    # 1e6 instr * (1 + 10/1000*190*0.5) = 1.95e6, + 2 packets * 4000 on the vCPU; host 2 * 22000
    vcpu, host = visit_cycles(v, _costs(virtio), remote_frac=0.0)
    assert vcpu == pytest.approx(1.95e6 + 8000)
    assert host == pytest.approx(44000)
    # remote half: CPI 1 + 0.01*250*0.5 = 2.25
    assert visit_cycles(v, _costs(virtio), 0.5)[0] == pytest.approx(2.25e6 + 8000)
    # with 1 TLB miss/kinstr under EPT 4K/4K: +330 cycles per kinstr = +0.33e6
    v2 = v.model_copy(update={"tlb_mpki_4k": 1.0, "packets": 0})
    assert visit_cycles(v2, _costs(virtio), 0.0)[0] == pytest.approx(1.95e6 + 0.33e6)


def test_ready_stretch_reduces_to_mm1():
    # one core at 50 %: M/M/1 residence / service = 1/(1-0.5) = 2
    assert ready_stretch(0.5, 1.0) == pytest.approx(2.0)
    assert ready_stretch(0.0, 8.0) == pytest.approx(1.0)
    assert math.isinf(ready_stretch(1.0, 8.0))
    # more cores at the same utilisation wait less (statistical multiplexing)
    assert ready_stretch(0.9, 16.0) < ready_stretch(0.9, 4.0)


def test_class_response_and_qos():
    # one queueing station of demand 1 s, one user, no think time: X = 1/s, R = 1 s
    res = solve_class([1.0], [1], [False], 1, 0.0)
    assert res.throughput_per_s == pytest.approx(1.0) and res.response_s == pytest.approx(1.0)
    # interactive response time law: N = X (R + Z)
    res = solve_class([0.01, 0.02], [2, 1], [False, True], 20, 0.5)
    assert res.little_population(0.5) == pytest.approx(20)
    # exponential 95th percentile = mean * ln 20
    assert response_quantile_s(1.0, 0.95) == pytest.approx(math.log(20))
    assert qos_margin(0.05, 0.15, 0.95) == pytest.approx(1 - 0.05 * math.log(20) / 0.15)


def test_load_wave():
    rc = RequestClass(name="j", users=20, think=1.0, qos_bound=1.0, load={"shape": "wave", "amplitude": 0.5, "period_intervals": 4}, visits=[Visit(vm="a", instructions_m=1)])
    # 20 * (1 + 0.5 sin(2 pi t/4)) at t = 0, 1, 2, 3 -> 20, 30, 20, 10
    assert list(users_in_interval(rc, np.arange(4))) == [20, 30, 20, 10]


def test_manual_and_none_placement():
    assert list(place_none(3)) == [UNBOUND] * 3
    names = ["tile1-web", "tile1-db", "tile2-web"]
    assert list(place_manual(names, {"tile1": 1, "tile2-web": 0}, 2)) == [1, 1, 0]
    with pytest.raises(ValueError, match="nodes 0..1"):
        place_manual(names, {"tile1": 2}, 2)


def test_auto_start_binds_by_committed_vcpus_and_memory():
    vcpus = np.array([2, 1, 2, 2])
    mem = np.array([2, 2, 2, 2]) * GiB
    # 2 -> node0 (tie), 1 -> node1 (0 < 2/12), 2 -> node1 (1/12 < 2/12), 2 -> node0 (2/12 < 3/12)
    assert list(place_auto_start(vcpus, mem, 2, 12, 72 * GiB)) == [0, 1, 1, 0]
    # memory: node 0 full -> everything goes to node 1; nothing fits -> unbound
    assert list(place_auto_start(np.array([1, 1]), np.array([5, 5]) * GiB, 2, 12, 6 * GiB)) == [0, 1]
    assert list(place_auto_start(np.array([1]), np.array([7]) * GiB, 2, 12, 6 * GiB)) == [UNBOUND]


def test_rebalance_moves_the_vm_closest_to_half_the_gap():
    node = np.array([0, 0, 0, 1])
    load = np.array([3.0, 2.0, 1.0, 0.0])  # node loads 6 vs 0 of capacity 10: gap 0.6
    new, moved = rebalance(node, load, np.ones(4), 2, 10.0, 100.0, threshold=0.1, max_moves=1)
    # half the gap is 0.3 of capacity = load 3 -> move VM 0
    assert list(new) == [1, 0, 0, 1] and list(moved) == [True, False, False, False]
    # balanced nodes: no move
    new, moved = rebalance(np.array([0, 1]), np.array([1.0, 1.0]), np.ones(2), 2, 10.0, 100.0, threshold=0.1)
    assert not moved.any()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.0, 5.0), min_size=2, max_size=20))
def test_rebalance_never_widens_the_gap(loads):
    load = np.array(loads)
    node = np.zeros(len(load), dtype=int)
    new, _ = rebalance(node, load, np.ones(len(load)), 2, 10.0, 1e9, threshold=0.05)
    gap = lambda n: abs(load[n == 0].sum() - load[n == 1].sum())  # noqa: E731
    assert gap(new) <= gap(node) + 1e-9


def test_pin_balanced_is_greedy_on_known_load():
    # loads 5, 3, 3, 1: 5 -> n0, 3 -> n1, 3 -> n1 (3 < 5), 1 -> n0 (5 < 6)
    assert list(pin_balanced(np.array([5.0, 3, 3, 1]), np.ones(4), 2, 10.0)) == [0, 1, 1, 0]
