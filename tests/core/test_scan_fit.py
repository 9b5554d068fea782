"""Best-fit (open hosts plus one empty host per type) and worst-fit (a max-tree per host type) give the
same answer as a full scan of every host."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from densim.placement import place
from densim.placement.capacity import fits_mask


def full_scan(vm_cpu, vm_mem, cpu_cap, mem_cap, best):
    """The textbook definition, O(VMs x hosts): every host is scored for every VM; ties -> lowest index.

    Score = (cpu_free/cpu_cap + mem_free/mem_cap) - (c/cpu_cap + m/mem_cap). For worst-fit the
    best host of each host type is taken on the free-space sum alone (the subtracted term is the
    same for the whole type; comparing the sums avoids rounding ties that the subtraction creates),
    then the types' winners are compared by score.
    """
    cpu_free, mem_free = cpu_cap.astype(float).copy(), mem_cap.astype(float).copy()
    out = np.full(len(vm_cpu), -1)
    types = np.unique(np.stack([cpu_cap, mem_cap], axis=1), axis=0, return_inverse=True)[1].reshape(-1)
    for v, (c, m) in enumerate(zip(vm_cpu, vm_mem)):
        ok = fits_mask(cpu_free, mem_free, c, m)  # the one fit rule (densim.placement.capacity)
        if not ok.any():
            continue
        free_sum = cpu_free / cpu_cap + mem_free / mem_cap
        score = free_sum - (c / cpu_cap + m / mem_cap)
        if best:
            h = int(np.argmin(np.where(ok, score, np.inf)))  # first minimum = lowest index among ties
        else:
            winners = [int(np.argmax(np.where(ok & (types == t), free_sum, -np.inf))) for t in np.unique(types[ok])]
            h = min(winners, key=lambda x: (-score[x], x))
        out[v] = h
        cpu_free[h] -= c
        mem_free[h] -= m
    return out


def test_hand_example():
    # hosts of 8 cores / 32 GiB (two types: the third host has 16 cores). VMs of 4, 4, 6, 2 cores, 8 GiB each.
    # best-fit: VM0 -> empty host, score of host 0 (type 8c) = 4/8 + 24/32 = 1.25, host 2 (16c) = 12/16 + 24/32 = 1.5
    #   -> host 0. VM1: host 0 -> 0/8 + 16/32 = 0.5 (best) -> host 0 (now full in CPU).
    #   VM2 (6 cores): host 1 (empty 8c) 2/8 + 24/32 = 1.0 < host 2 10/16 + 0.75 = 1.375 -> host 1.
    #   VM3 (2 cores): host 1 -> 0/8 + 16/32 = 0.5 -> host 1. Worst-fit spreads: VM0 -> host 2 (1.5),
    #   VM1 -> host 2 (8/16 + 16/32 = 1.0 vs empty 8c host 1.25 -> host 0), ...
    cpu_cap = np.array([8.0, 8.0, 16.0])
    mem_cap = np.array([32.0, 32.0, 32.0])
    vc = np.array([4.0, 4.0, 6.0, 2.0])
    vm = np.array([8.0, 8.0, 8.0, 8.0])
    assert place("best-fit", vc, vm, cpu_cap, mem_cap).tolist() == [0, 0, 1, 1]
    assert place("worst-fit", vc, vm, cpu_cap, mem_cap).tolist() == full_scan(vc, vm, cpu_cap, mem_cap, False).tolist()
    assert place("worst-fit", vc, vm, cpu_cap, mem_cap).tolist()[:2] == [2, 0]


@settings(max_examples=120, deadline=None)
@given(
    vms=st.lists(st.tuples(st.integers(1, 12), st.integers(1, 64)), min_size=1, max_size=80),
    hosts=st.lists(st.tuples(st.sampled_from([8, 16, 24]), st.sampled_from([32, 64, 128])), min_size=1, max_size=15),
    best=st.booleans(),
)
def test_same_as_full_scan(vms, hosts, best):
    vc = np.array([c for c, _ in vms], float)
    vm = np.array([m for _, m in vms], float)
    cc = np.array([c for c, _ in hosts], float)
    mc = np.array([m for _, m in hosts], float)
    got = place("best-fit" if best else "worst-fit", vc, vm, cc, mc)
    np.testing.assert_array_equal(got, full_scan(vc, vm, cc, mc, best))


def test_ties_go_to_the_lowest_index_after_a_host_leaves_the_scan():
    # worst-fit over 4 hosts of 8 cores: VMs of 4 cores go to hosts 0, 1, 2, 3 (an empty host
    # scores 0.5 + mem, a half-full one 0 + mem), then a fifth fills host 0, which leaves the scan
    # (0 cores < the smallest VM's 2) and host 3 takes its slot in the list of open hosts. The last
    # VM (2 cores) ties on hosts 1, 2, 3 (4 cores free each) and must go to host 1, not 3.
    cpu_cap = np.full(4, 8.0)
    mem_cap = np.full(4, 64.0)
    vc = np.array([4.0, 4.0, 4.0, 4.0, 4.0, 2.0])
    vm = np.full(6, 1.0)
    assert place("worst-fit", vc, vm, cpu_cap, mem_cap).tolist() == [0, 1, 2, 3, 0, 1]


def test_medium_random_instance_matches_full_scan():
    rng = np.random.default_rng(7)
    vc = rng.integers(1, 9, 3000).astype(float)
    vm = rng.integers(1, 33, 3000).astype(float)
    cc = rng.choice([32.0, 48.0, 64.0], 300)
    mc = rng.choice([256.0, 384.0, 512.0], 300)
    for best in (True, False):
        got = place("best-fit" if best else "worst-fit", vc, vm, cc, mc)
        np.testing.assert_array_equal(got, full_scan(vc, vm, cc, mc, best))


def first_fit_scan(vm_cpu, vm_mem, cpu_cap, mem_cap):
    """First-fit by definition: the lowest-index host with room, O(VMs x hosts)."""
    cpu_free, mem_free = cpu_cap.astype(float).copy(), mem_cap.astype(float).copy()
    out = np.full(len(vm_cpu), -1)
    for v, (c, m) in enumerate(zip(vm_cpu, vm_mem)):
        ok = np.flatnonzero((cpu_free + 1e-9 >= c) & (mem_free + 1e-9 * max(1.0, m) >= m))
        if ok.size:
            out[v] = ok[0]
            cpu_free[ok[0]] -= c
            mem_free[ok[0]] -= m
    return out


@settings(max_examples=120, deadline=None)
@given(
    vms=st.lists(st.tuples(st.integers(1, 12), st.integers(1, 64)), min_size=1, max_size=80),
    hosts=st.lists(st.tuples(st.sampled_from([8, 16, 24]), st.sampled_from([32, 64, 128])), min_size=1, max_size=15),
)
def test_first_fit_tree_same_as_scan(vms, hosts):
    # the segment tree drops hosts that cannot take the smallest VM and skips VMs at least as large
    # as one that already fit nowhere; neither may change the answer
    vc = np.array([c for c, _ in vms], float)
    vm = np.array([m for _, m in vms], float)
    cc = np.array([c for c, _ in hosts], float)
    mc = np.array([m for _, m in hosts], float)
    np.testing.assert_array_equal(place("first-fit", vc, vm, cc, mc), first_fit_scan(vc, vm, cc, mc))
