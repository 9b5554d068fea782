"""CP-SAT placement: never worse than first-fit decreasing, never below the lower bound, and on a
few hundred VMs it proves optimality or reports its gap."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from densim.placement import place as foundation_place
from densim.placement.optimiser import ffd_vector, optimise, volume_lower_bound


def reference_ffd_hosts(sizes: np.ndarray, cap: np.ndarray) -> int:
    """Textbook FFD written independently of the package (sort by largest share, first bin that fits)."""
    bins: list[np.ndarray] = []
    for j in sorted(range(len(sizes)), key=lambda j: -max(sizes[j] / cap)):
        for b in bins:
            if np.all(b + sizes[j] <= cap):
                b += sizes[j]
                break
        else:
            bins.append(sizes[j].astype(float).copy())
    return len(bins)


def brute_force_hosts(sizes: np.ndarray, cap: np.ndarray) -> int:
    """Exact optimum by trying every assignment of items to k hosts (tiny instances only)."""
    n = len(sizes)
    for k in range(1, n + 1):
        for assign in itertools.product(range(k), repeat=n):
            if assign[0] != 0:
                continue
            load = np.zeros((k, sizes.shape[1]))
            np.add.at(load, list(assign), sizes)
            if np.all(load <= cap):
                return k
    return n


def check_valid(host_of: np.ndarray, sizes: np.ndarray, cap: np.ndarray) -> None:
    assert host_of.min() >= 0
    load = np.zeros((host_of.max() + 1, sizes.shape[1]))
    np.add.at(load, host_of, sizes)
    assert np.all(load <= cap + 1e-9)


instances = st.integers(2, 14).flatmap(
    lambda n: st.tuples(
        st.lists(st.tuples(st.integers(1, 16), st.integers(1, 64)), min_size=n, max_size=n),
        st.sampled_from([(16, 64), (20, 48), (32, 128)]),
    )
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances)
def test_optimiser_never_worse_than_ffd_never_below_bound(inst):
    items, cap = inst
    sizes = np.array(items, dtype=np.int64)
    cap = np.array(cap, dtype=np.int64)
    sizes = np.minimum(sizes, cap[None, :])  # every VM fits an empty host
    r = optimise(sizes, cap, max_deterministic_time=0.5)
    check_valid(r.host_of_vm, sizes, cap)
    assert r.n_hosts == r.host_of_vm.max() + 1
    assert r.n_hosts <= reference_ffd_hosts(sizes, cap)
    assert r.n_hosts <= ffd_vector(sizes, cap).max() + 1
    # the foundation's first-fit decreasing (densim.placement, numba kernel) on the same identical hosts
    n = len(sizes)
    ffd = foundation_place("first-fit-decreasing", sizes[:, 0], sizes[:, 1], np.full(n, float(cap[0])), np.full(n, float(cap[1])))
    assert (ffd >= 0).all()
    assert r.n_hosts <= np.unique(ffd).size
    assert r.n_hosts >= volume_lower_bound(sizes, cap)
    assert r.lower_bound >= volume_lower_bound(sizes, cap)
    assert r.lower_bound <= r.n_hosts
    if len(sizes) <= 7:
        exact = brute_force_hosts(sizes, cap)
        assert r.n_hosts >= exact
        if r.status == "OPTIMAL":
            assert r.n_hosts == exact
        assert r.lower_bound <= exact


def test_ffd_is_beaten_on_the_textbook_instance():
    # capacity 10, items 4,4,3,3,3,3: FFD packs (4,4) (3,3,3) (3) = 3 hosts;
    # the optimum is (4,3,3) (4,3,3) = 2 hosts, equal to the volume bound ceil(20/10) = 2.
    sizes = np.array([[4], [4], [3], [3], [3], [3]])
    cap = np.array([10])
    assert reference_ffd_hosts(sizes, cap) == 3
    r = optimise(sizes, cap)
    assert (r.n_hosts, r.lower_bound, r.status, r.gap) == (2, 2, "OPTIMAL", 0.0)
    assert r.warm_start_hosts == 3


def test_anti_affinity_is_respected():
    # two VMs that would share one host are kept apart
    sizes = np.array([[1, 1], [1, 1], [1, 1]])
    cap = np.array([10, 10])
    anti = np.array(["db", "db", ""], dtype=object)
    r = optimise(sizes, cap, anti_affinity=anti)
    assert r.host_of_vm[0] != r.host_of_vm[1]
    assert r.n_hosts == 2


def test_a_few_hundred_vms_proves_optimality_and_beats_ffd():
    # 300 VMs drawn from ten standard flavours (vCPUs, GiB); host: 96 vCPU slots, 384 GiB
    rng = np.random.default_rng(0)
    flavours = np.array([[1, 2], [2, 4], [2, 8], [4, 8], [4, 16], [8, 32], [8, 64], [16, 64], [16, 128], [32, 256]])
    f = rng.choice(len(flavours), 300, p=[.12, .2, .15, .15, .12, .1, .06, .05, .03, .02])
    sizes, cap = flavours[f], np.array([96, 384])
    r = optimise(sizes, cap, max_deterministic_time=10.0)
    check_valid(r.host_of_vm, sizes, cap)
    lb = volume_lower_bound(sizes, cap)
    assert r.warm_start_hosts == reference_ffd_hosts(sizes, cap)
    assert r.lower_bound >= lb
    if r.status == "OPTIMAL":
        assert r.n_hosts == r.lower_bound and r.gap == 0.0
    else:  # time limit: the gap to the proven bound is reported
        assert r.gap == (r.n_hosts - r.lower_bound) / r.n_hosts
    # on this instance the volume bound is reached, so the answer is provably optimal whatever the status
    assert r.n_hosts == lb < r.warm_start_hosts


def test_a_hard_instance_reports_its_gap_when_the_time_limit_hits():
    # 200 VMs of random, distinct sizes (10-49 % of a host in each of two dimensions): no quick proof
    rng = np.random.default_rng(0)
    sizes = np.stack([rng.integers(10, 50, 200), rng.integers(10, 50, 200)], axis=1)
    cap = np.array([100, 100])
    r = optimise(sizes, cap, max_deterministic_time=1.0, max_time_s=2.0)
    check_valid(r.host_of_vm, sizes, cap)
    assert volume_lower_bound(sizes, cap) <= r.lower_bound <= r.n_hosts <= r.warm_start_hosts
    assert r.gap == (r.n_hosts - r.lower_bound) / r.n_hosts
    assert r.status in ("OPTIMAL", "FEASIBLE", "WARM_START")
