"""Invariants of the engine and placement, over random scenarios (hypothesis)."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from densim.engine import simulate
from densim.plant import resolve
from densim.models.cpu import maxmin_share
from densim.placement import POLICIES, place

from .helpers import const_vms, host, scenario

vm_groups = st.lists(
    st.tuples(st.integers(1, 6), st.integers(1, 8), st.sampled_from([1000, 2000, 3000]), st.floats(0.0, 1.0)),
    min_size=1, max_size=4,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups=vm_groups, n_hosts=st.integers(1, 4), cores=st.sampled_from([2, 4, 8]), oc=st.sampled_from([1.0, 2.0, 4.0]),
       policy=st.sampled_from(["first-fit", "first-fit-decreasing", "best-fit", "worst-fit"]))
def test_engine_invariants(groups, n_hosts, cores, oc, policy):
    vms = [const_vms(f"g{i}", n, v, mhz, u, mem="2 GiB") for i, (n, v, mhz, u) in enumerate(groups)]
    sc = scenario([host(count=n_hosts, cores=cores, mem="16 GiB", idle=80, peak=200)], vms, cpu_oc=oc, policy=policy,
                  horizon="30 min")
    r = simulate(resolve(sc))
    vm, h = r.vms, r.hosts
    demand = vm["cpu_demand_mhz_s"].to_numpy()
    delivered = vm["cpu_delivered_mhz_s"].to_numpy()
    unserved = vm["cpu_unserved_mhz_s"].to_numpy()
    tol = 1e-3 * (1 + demand)
    assert np.all(delivered <= demand + tol)  # delivered <= demand
    assert np.allclose(demand, delivered + unserved, rtol=1e-5, atol=1e-3)  # demand = delivered + unserved
    cap_s = h["capacity_mhz"].to_numpy() * r.ctx.grid.horizon_s
    assert np.all(h["cpu_delivered_mhz_s"].to_numpy() <= cap_s * (1 + 1e-5))  # delivered <= capacity per host
    series = r.host_acc.series["utilisation"]
    assert series.min() >= 0.0 and series.max() <= 1.0  # utilisation in [0, 1]
    # energy >= idle power x time for every powered-on host
    on = h["powered_on"].to_numpy()
    assert np.all(h["energy_j"].to_numpy()[on] >= 80 * r.ctx.grid.horizon_s * (1 - 1e-6))
    # placement never exceeds a host's limits
    assert np.all(h["vcpus"].to_numpy() <= h["cores"].to_numpy() * oc + 1e-9)
    assert np.all(h["memory_allocated_bytes"].to_numpy() <= h["memory_bytes"].to_numpy() + 1e-6)


@settings(max_examples=60, deadline=None)
@given(
    vm_cpu=st.lists(st.integers(1, 16), min_size=1, max_size=60),
    n_hosts=st.integers(1, 12),
    policy=st.sampled_from(["first-fit", "first-fit-decreasing", "best-fit", "worst-fit"]),
    seed=st.integers(0, 2**16),
)
def test_placement_respects_both_dimensions(vm_cpu, n_hosts, policy, seed):
    rng = np.random.default_rng(seed)
    vc = np.array(vm_cpu, dtype=float)
    vm_mem = rng.integers(1, 64, vc.size).astype(float)
    cpu_cap = rng.integers(8, 48, n_hosts).astype(float)
    mem_cap = rng.integers(32, 256, n_hosts).astype(float)
    a = place(policy, vc, vm_mem, cpu_cap, mem_cap)
    ok = a >= 0
    used_c = np.bincount(a[ok], weights=vc[ok], minlength=n_hosts)
    used_m = np.bincount(a[ok], weights=vm_mem[ok], minlength=n_hosts)
    assert np.all(used_c <= cpu_cap + 1e-9) and np.all(used_m <= mem_cap + 1e-9)
    # a VM left out really fits nowhere given the final state... for first-fit it fit nowhere at its turn;
    # weaker but exact: an unplaced VM does not fit in an empty host of the largest size
    for v in np.flatnonzero(~ok):
        free_c, free_m = cpu_cap - used_c, mem_cap - used_m
        assert not np.any((free_c >= vc[v]) & (free_m >= vm_mem[v]))


def test_first_fit_matches_a_plain_loop():
    # first-fit by definition: each VM to the lowest-index host with room
    rng = np.random.default_rng(3)
    vc = rng.integers(1, 9, 400).astype(float)
    vm = rng.integers(1, 33, 400).astype(float)
    cc = np.full(60, 32.0)
    mc = np.full(60, 128.0)
    got = place("first-fit", vc, vm, cc, mc)
    free_c, free_m, want = cc.copy(), mc.copy(), []
    for c, m in zip(vc, vm):
        h = next((i for i in range(60) if free_c[i] >= c and free_m[i] >= m), -1)
        if h >= 0:
            free_c[h] -= c
            free_m[h] -= m
        want.append(h)
    assert got.tolist() == want


@settings(max_examples=100, deadline=None)
@given(d=st.lists(st.floats(0, 1000), min_size=1, max_size=12), cap=st.floats(0, 5000))
def test_maxmin_share(d, cap):
    d = np.array([d])
    a = maxmin_share(d, np.array([cap]))[0]
    assert np.all(a <= d[0] + 1e-9)
    assert a.sum() <= cap + 1e-6 * (1 + cap)
    # either everyone is served, or capacity is used up and the capped ones share one level
    if d.sum() > cap:
        assert a.sum() == np.float64(a.sum()) and abs(a.sum() - cap) <= 1e-6 * (1 + cap)
        capped = a < d[0] - 1e-9
        if capped.any():
            level = a[capped].max()
            assert np.all(a[capped] >= level - 1e-6) and np.all(d[0][~capped] <= level + 1e-6)


def test_policy_registry_lists_names_on_error():
    import pytest

    with pytest.raises(KeyError, match="first-fit"):
        POLICIES.get("nonsense")
