"""Filters, weighers and prefab policies: hand-calculable micro-scenarios and invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from densim.models.queueing import binomial_expected_excess
from densim.placement.filters import FILTERS, ready_pct_worst
from densim.placement import POLICIES, planner_policies
from densim.placement.prefabs import HostType, PackingProblem, lower_bound_hosts, place
from densim.placement.tspack import build_problem, host_metrics, window_max
from densim.placement.weighers import WEIGHERS

GIB = 2**30
HOST = HostType("h", sockets=2, cores_per_socket=8, threads_per_core=2, core_mhz=2000.0, mem_bytes=128 * GIB)


def problem(vcpus, mem_gib, **kw) -> PackingProblem:
    return PackingProblem(host=HOST, vcpus=np.asarray(vcpus, float), mem_bytes=np.asarray(mem_gib, float) * GIB, **kw)


def test_registries_have_a_do_nothing_entry_and_the_documented_names():
    assert {"none", "capacity", "demand", "ready", "anti_affinity", "numa_fit"} <= set(FILTERS.names())
    assert {"first", "pack", "spread", "complement"} <= set(WEIGHERS.names())
    assert {"stack", "first-fit", "first-fit-decreasing", "best-fit-decreasing", "spread", "consolidate", "timeseries"} == set(planner_policies())
    assert {"first-fit", "first-fit-decreasing", "best-fit", "worst-fit", "none"} <= set(POLICIES.names())


def test_capacity_with_overcommit_ratios():
    # 32 logical CPUs x 2:1 = 64 vCPU slots per host; 128 GiB. Five 16-vCPU VMs -> 80 vCPUs -> 2 hosts,
    # the first holding four (64 slots) and the second one.
    p = problem([16] * 5, [8] * 5, cpu_overcommit=2.0)
    pl = place(p, "first-fit-decreasing")
    assert pl.n_hosts == 2
    assert np.bincount(pl.host_of_vm).tolist() == [4, 1]
    # memory bound: 5 x 40 GiB at 1.0 over-commit -> 3 per host (120 GiB) -> 2 hosts; at 1.5 (192 GiB) -> 4 + 1
    assert place(problem([1] * 5, [40] * 5), "first-fit-decreasing").host_of_vm.tolist() == [0, 0, 0, 1, 1]
    assert np.bincount(place(problem([1] * 5, [40] * 5, memory_overcommit=1.5), "first-fit-decreasing").host_of_vm).tolist() == [4, 1]


def test_anti_affinity_spreads_a_group():
    p = problem([1] * 4, [1] * 4, anti_affinity=np.array(["web", "web", "web", ""], dtype=object))
    pl = place(p, "consolidate")
    assert len(set(pl.host_of_vm[:3])) == 3
    assert pl.n_hosts == 3


def test_affinity_keeps_a_group_together():
    p = problem([20, 20, 20, 20], [1] * 4, cpu_overcommit=2.0, affinity=np.array(["", "db", "", "db"], dtype=object))
    pl = place(p, "first-fit-decreasing")
    assert pl.host_of_vm[1] == pl.host_of_vm[3]
    assert pl.n_hosts == 2  # 40 + 40 vCPUs of 64 slots each


def test_numa_fit_rejects_a_vm_wider_than_a_socket():
    # a socket has 8 cores x 2 threads = 16 logical CPUs and 64 GiB
    p = problem([17, 4], [4, 4])
    pl = place(p, "consolidate")
    assert pl.unplaceable == [(0, "numa_fit")]
    assert pl.host_of_vm[0] == -1 and pl.host_of_vm[1] == 0


def test_ready_model_matches_the_binomial_table_of_the_modelling_guide():
    # guide §3.2: C = 32, N = 352 vCPUs at u = 10 % -> ready 1.18 % per vCPU (binomial);
    # our per-VM figure u x E[(K-C)+]/E[K] summed over vCPUs equals E[(K-C)+], so per vCPU
    # it is E[(K-C)+]/N. The normal approximation stays within 0.1 percentage points.
    n, u, c = 352, 0.10, 32
    exact = binomial_expected_excess(n, u, c) / n * 100
    approx = ready_pct_worst(np.array(n * u), np.array(n * u * (1 - u)), np.array(u), c)
    assert exact == pytest.approx(1.18, abs=0.01)
    assert float(approx) == pytest.approx(exact, abs=0.1)


def test_ready_filter_opens_a_host_when_the_bound_would_break():
    # 32-core host (no SMT gain), 2.0 GHz cores. VMs of 8 vCPUs each busy 50 % (8,000 MHz of 16,000).
    # Eight VMs: E[K] = 32 = C, sd = sqrt(64 x .25) = 4 -> E[(K-C)+] = 4 x phi(0) = 1.596,
    # ready = 100 x 0.5 x 1.596 / 32 = 2.49 % <= 5 %. Ten VMs: E[K] = 40, sd 4.47 -> ~8.02 excess,
    # ready = 100 x .5 x 8.02/40 = 10 % > 5 %.
    host = HostType("h", 2, 16, 1, 2000.0, 512 * GIB)
    cpu = np.full((4, 10), 8000.0)
    p = build_problem(np.full(10, 8.0), np.full(10, GIB), cpu, None, host, cpu_overcommit=10.0, ready_bound_pct=5.0)
    pl = place(p, "consolidate")
    counts = np.bincount(pl.host_of_vm)
    assert pl.n_hosts == 2 and counts.max() <= 9
    m = host_metrics(pl.host_of_vm, pl.n_hosts, host, np.full(10, 8.0), cpu, None)
    assert m.ready_pct_worst.max() <= 5.0
    one = host_metrics(np.zeros(8, int), 1, host, np.full(8, 8.0), cpu[:, :8], None)
    assert one.ready_pct_worst[0] == pytest.approx(100 * 0.5 * 4 * 0.398942 / 32, rel=1e-3)


def test_timeseries_recipe_pairs_complementary_peaks():
    # Four VMs of 8 vCPUs on a 16-core 2 GHz host (32,000 MHz). A and B peak by day (16,000 MHz) and
    # idle by night (1,000); C and D the opposite.
    host = HostType("h", 1, 16, 1, 2000.0, 256 * GIB)
    day = np.array([16000.0, 16000.0, 1000.0, 1000.0])
    night = day[::-1]
    cpu = np.stack([day, day, night, night], axis=1)  # (4 steps, 4 VMs)
    p = build_problem(np.full(4, 8.0), np.full(4, GIB), cpu, None, host, cpu_overcommit=4.0,
                      max_cpu_utilisation=0.6, ready_bound_pct=100.0)
    # 60 % of 32,000 = 19,200 MHz per host: two day VMs (32,000) never fit together; a day VM and a night VM
    # (17,000) do. Peak-only packing would need 4 hosts (16,000 + 16,000 > 19,200).
    pl = place(p, "timeseries")
    assert pl.n_hosts == 2
    assert pl.host_of_vm[0] != pl.host_of_vm[1]
    peaks_only = build_problem(np.full(4, 8.0), np.full(4, GIB), cpu.max(axis=0, keepdims=True), None, host,
                               cpu_overcommit=4.0, max_cpu_utilisation=0.6, ready_bound_pct=100.0)
    assert place(peaks_only, "first-fit-decreasing").n_hosts == 4
    assert lower_bound_hosts(p) == 2  # ceil(34,000 / 19,200): the time-series packing is optimal


def test_window_max_never_understates():
    s = np.arange(10.0)[:, None] * np.array([[1.0, -1.0]]) + 10
    w = window_max(s, 3)
    assert w.shape == (3, 2)
    assert w[:, 0].tolist() == [13.0, 17.0, 19.0]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 16), st.integers(1, 64)), min_size=1, max_size=30),
       st.sampled_from(["first-fit", "first-fit-decreasing", "best-fit-decreasing", "spread", "consolidate", "timeseries"]))
def test_every_policy_places_every_vm_once_within_capacity(vms, policy):
    v = np.array([a for a, _ in vms], float)
    m = np.array([b for _, b in vms], float)
    p = problem(v, m, cpu_overcommit=1.0)
    pl = place(p, policy)
    assert (pl.host_of_vm >= 0).all() and not pl.unplaceable
    load_v = np.bincount(pl.host_of_vm, weights=v)
    load_m = np.bincount(pl.host_of_vm, weights=m * GIB)
    assert (load_v <= 32).all() and (load_m <= 128 * GIB).all()
    assert pl.n_hosts >= lower_bound_hosts(p)


def test_full_resolution_ready_agrees_with_the_engines_binomial_model():
    # When every vCPU on a host has the same busy fraction, sum_j v_j x ready_j / 100 = E[(K - C)+],
    # which must equal the engine's CPU contention model "binomial" for that host and step.
    from densim.models.cpu import CPU_CONTENTION

    host = HostType("h", 2, 8, 1, 2000.0, 512 * GIB)  # C = 16
    rng = np.random.default_rng(3)
    u = rng.uniform(0.2, 0.9, size=(50, 1))  # one busy fraction per step, shared by all VMs
    vcpus = np.array([4.0, 4.0, 8.0, 2.0, 6.0])  # N = 24 > C
    cpu = u * vcpus[None, :] * 2000.0
    host_of = np.zeros(5, dtype=np.int64)
    from densim.placement.filters import ready_pct_worst

    mean = (u * vcpus.sum())[:, 0]
    var = (vcpus.sum() * u * (1 - u))[:, 0]
    share = ready_pct_worst(mean, var, np.ones_like(mean), host.logical_capacity, vcpus.sum())
    ours = (vcpus.sum() * u[:, 0] * share / 100.0)  # sum_j v_j (100 u E/E[K]) / 100
    engine = CPU_CONTENTION.get("binomial")(mean, vcpus.sum(), host.logical_capacity)
    np.testing.assert_allclose(ours, engine, rtol=1e-9, atol=1e-12)
    m = host_metrics(host_of, 1, host, vcpus, cpu, None)
    assert m.ready_pct_worst[0] == pytest.approx(float((u[:, 0] * share).max()), rel=1e-9)
    # a host with no more vCPUs than cores never waits
    small = host_metrics(np.zeros(2, dtype=np.int64), 1, host, np.array([8.0, 8.0]), np.full((3, 2), 16000.0), None)
    assert small.ready_pct_worst[0] == 0.0


@settings(max_examples=60)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 40), n_hosts=st.integers(1, 8), steps=st.integers(1, 30))
def test_host_metrics_per_host_equals_each_host_alone(seed, n, n_hosts, steps):
    # a host's figures depend only on its own VMs: the metrics of the whole placement, host by host,
    # equal those of each host's VMs measured alone (the worst VM per host and step, its 99th
    # percentile over steps, each VM's worst ready %, peak memory); hosts without VMs read 0
    rng = np.random.default_rng(seed)
    host = HostType("h", 1, 8, 2, 2000.0, 64 * GIB)
    host_of = rng.integers(0, n_hosts, n)
    vcpus = rng.integers(1, 9, n).astype(float)
    cpu = rng.uniform(0, 1.2, (steps, n)) * vcpus * 2000.0
    mem = rng.uniform(0, 8, (steps, n)) * GIB
    m = host_metrics(host_of, n_hosts, host, vcpus, cpu, mem, chunk=7)
    for h in range(n_hosts):
        mine = host_of == h
        if not mine.any():
            assert m.ready_pct_worst[h] == 0 and m.ready_pct_p99[h] == 0 and m.mem_used_peak_frac[h] == 0
            continue
        one = host_metrics(np.zeros(mine.sum(), int), 1, host, vcpus[mine], cpu[:, mine], mem[:, mine], chunk=7)
        assert m.ready_pct_worst[h] == pytest.approx(one.ready_pct_worst[0], rel=1e-12, abs=1e-12)
        assert m.ready_pct_p99[h] == pytest.approx(one.ready_pct_p99[0], rel=1e-12, abs=1e-12)
        assert m.mem_used_peak_frac[h] == pytest.approx(one.mem_used_peak_frac[0], rel=1e-12)
        assert m.vm_ready_pct_max[mine] == pytest.approx(one.vm_ready_pct_max, rel=1e-12, abs=1e-12)


def test_host_metrics_refuses_an_unplaced_vm():
    with pytest.raises(ValueError, match="every VM placed"):
        host_metrics(np.array([0, -1]), 2, HOST, np.ones(2), np.ones((3, 2)), None)


@settings(max_examples=80)
@given(seed=st.integers(0, 2**31), hosts_on_rows=st.booleans())
def test_ready_pct_worst_evaluates_only_hosts_that_can_wait_with_the_same_values(seed, hosts_on_rows):
    # where a host's vCPUs n <= C nothing ever waits (0); elsewhere the normal approximation, unchanged
    # by evaluating it only there: equal, bit for bit, to evaluating everywhere and masking
    from densim.models.queueing import expected_excess

    rng = np.random.default_rng(seed)
    h, w = rng.integers(1, 12), rng.integers(1, 12)
    mean, var, umax = rng.uniform(0, 80, (h, w)), rng.uniform(0, 30, (h, w)), rng.uniform(0, 1, (h, w))
    if hosts_on_rows:  # placement's filter: capacity a scalar, vCPUs per host a column
        cap, n = 48.0, rng.integers(10, 100, (h, 1)).astype(float)
    else:  # the ready check: capacity and vCPUs per host along the columns
        cap, n = rng.uniform(20, 80, (1, w)), rng.integers(10, 100, (1, w)).astype(float)
    ee = np.where(n > cap, expected_excess(mean, var, cap), 0.0)
    expected = 100.0 * umax * np.where(mean > 0, ee / np.maximum(mean, 1e-12), 0.0)
    assert np.array_equal(ready_pct_worst(mean, var, umax, cap, n), expected)
