"""Reclamation pipeline, miss ratio and fault cost: hand-calculable micro-scenarios."""

import numpy as np
import pytest

from densim.models import memory as M

GIB = M.GIB


def one_host(cfg_gib, act_gib, cap_gib, **kw):
    cfg = np.asarray(cfg_gib, float) * GIB
    act = np.asarray(act_gib, float) * GIB
    seg = np.zeros(cfg.size, dtype=np.int64)
    return M.reclaim(cfg, act, seg, 1, cap_gib * GIB, **kw)


def test_nothing_reclaimed_while_configured_memory_fits():
    # 8 + 8 GiB configured on 20 GiB of capacity: deficit 0, everything resident
    r = one_host([8, 8], [6, 2], 20, zero_page_fraction=0.05)
    assert r.deficit_bytes[0] == 0
    np.testing.assert_allclose(r.resident_bytes, [8 * GIB, 8 * GIB])
    for arr in (r.shared_bytes, r.ballooned_bytes, r.compressed_bytes, r.swapped_bytes):
        assert not arr.any()
    np.testing.assert_allclose(r.resident_active_fraction, 1.0)


def test_idle_memory_is_taken_first_and_costs_nothing():
    # 3 VMs x 10 GiB configured, 4 GiB active each, capacity 20 GiB: deficit 10 GiB.
    # idle = 6 GiB each (18 GiB); zero pages 5 % of idle = 0.3 GiB each -> shared 0.9 GiB;
    # the balloon takes the other 9.1 GiB from idle memory: 9.1 / 3 = 3.0333 GiB each.
    r = one_host([10, 10, 10], [4, 4, 4], 20, zero_page_fraction=0.05)
    np.testing.assert_allclose(r.shared_bytes / GIB, [0.3, 0.3, 0.3])
    np.testing.assert_allclose(r.ballooned_idle_bytes / GIB, [9.1 / 3] * 3)
    assert not (r.ballooned_active_bytes.any() or r.compressed_bytes.any() or r.swapped_bytes.any())
    np.testing.assert_allclose(r.resident_active_fraction, 1.0)
    # and so no faults and no slowdown
    f = M.fault_rates(r, 1000.0)
    assert not f.total.any()
    tp = M.solve_throughput(f, np.zeros(3, np.int64), 1, store=M.DeviceArrays(
        np.asarray(6e-3), np.asarray(1e-3), np.asarray(2000.0), np.asarray(4000.0), np.asarray(np.nan)))
    np.testing.assert_allclose(tp.throughput, 1.0)
    np.testing.assert_allclose(tp.slowdown, 1.0)


def test_reclamation_order_sharing_then_balloon_then_compression_and_swap():
    cfg = [16, 16]
    act = [12, 8]
    kw = dict(zero_page_fraction=0.1, balloon_limit=0.65, balloon_active_share=0.0, compressible_fraction=0.5)
    share_cap = 0.1 * np.array([4.0, 8.0]) * GIB  # zero pages of idle memory
    seen = set()
    for cap in np.linspace(32, 12, 81):
        r = one_host(cfg, act, cap, **kw)
        if r.ballooned_idle_bytes.sum() > 0:
            np.testing.assert_allclose(r.shared_bytes, share_cap, rtol=1e-9)  # sharing exhausted first
            seen.add("balloon")
        if (r.compressed_bytes + r.swapped_bytes).sum() > 0:
            idle_left = np.array([4.0, 8.0]) * GIB - share_cap
            np.testing.assert_allclose(r.ballooned_idle_bytes, np.minimum(idle_left, 0.65 * 16 * GIB), rtol=1e-9)
            seen.add("swap")
        if r.swapped_bytes.sum() > 0 and r.compressed_bytes.sum() > 0:
            seen.add("both")
    assert seen == {"balloon", "swap", "both"}


def test_conservation_micro():
    # resident + shared + ballooned + compressed + swapped = configured, VM by VM
    r = one_host([16, 8, 4], [14, 6, 1], 10, zero_page_fraction=0.05, balloon_active_share=0.3, compressible_fraction=0.5,
                 swap_cache_bytes=2 * GIB)
    np.testing.assert_allclose(r.total_bytes(), r.configured_bytes, rtol=1e-12)
    # the host fits: resident + compression cache = capacity
    assert r.unmet_bytes[0] == 0
    np.testing.assert_allclose(r.resident_bytes.sum() + r.compression_cache_bytes[0], 10 * GIB, rtol=1e-9)


def test_balloon_never_exceeds_its_limit():
    # one VM mostly idle, far too little memory: balloon <= 65 % of 32 GiB
    r = one_host([32], [2], 4, balloon_active_share=1.0)
    assert r.ballooned_bytes[0] <= 0.65 * 32 * GIB * (1 + 1e-12)
    assert r.swapped_bytes[0] > 0


def test_host_swap_cache_holds_the_first_n_gib():
    # 20 GiB configured, all active, 10 GiB capacity, no compression -> 10 GiB swapped; cache holds 4
    r = one_host([10, 10], [10, 10], 10, compressible_fraction=0.0, swap_cache_bytes=4 * GIB, balloon_limit=0.0)
    assert r.swapped_bytes.sum() == pytest.approx(10 * GIB, rel=1e-9)
    assert r.swapped_cache_bytes.sum() == pytest.approx(4 * GIB, rel=1e-9)
    assert r.swapped_store_bytes.sum() == pytest.approx(6 * GIB, rel=1e-9)


def test_unmet_when_even_everything_cannot_fit():
    r = one_host([4], [4], -1.0, balloon_limit=0.0, compressible_fraction=0.0)
    assert r.unmet_bytes[0] == pytest.approx(1 * GIB)


def test_min_free_rule():
    # 899 MB + 1 % of the memory above 28 GB: 48 GB -> ~1,099 MB (VMware's example, decimal 1 %)
    assert M.min_free_bytes(48 * GIB) / M.MIB == pytest.approx(1099, rel=0.01)
    assert M.min_free_bytes(16 * GIB) / M.MIB == pytest.approx(899)


def test_miss_ratio_models():
    f = np.array([0.0, 0.25, 1.0])
    np.testing.assert_allclose(M.miss_ratio("random", f), [1.0, 0.75, 0.0])
    np.testing.assert_allclose(M.miss_ratio("none", f), 0.0)
    # a measured curve: at f = 0.5 miss 0.1; linear in between, ends at (1, 0)
    tab = [(0.0, 0.6), (0.5, 0.1)]
    np.testing.assert_allclose(M.miss_ratio("table", [0.25, 0.5, 0.75], table=tab), [0.35, 0.1, 0.05])
    with pytest.raises(KeyError, match="valid names"):
        M.miss_ratio("lru-magic", f)


def _dev(read_s, iops, par=np.nan):
    return M.DeviceArrays(np.asarray(read_s), np.asarray(read_s), np.asarray(iops), np.asarray(iops), np.asarray(par))


def test_fault_cost_closed_form_without_queueing():
    # F = 100 faults/s of work, t = t_sw 10 us + read 90 us = 100 us -> X = 1 / (1 + 0.01) = 0.990099
    # (a huge device: no queueing)
    faults = M.FaultRates(*(np.zeros(1) for _ in range(2)), np.array([100.0]), np.zeros(1), np.zeros(1))
    tp = M.solve_throughput(faults, np.zeros(1, np.int64), 1, store=_dev(90e-6, 1e9, 1e6),
                            costs=M.FaultCosts(software_s=10e-6, writes_per_fault=0.0))
    assert tp.throughput[0] == pytest.approx(1 / 1.01, rel=1e-6)


def test_queueing_fixed_point_is_self_consistent_and_bounded_by_iops():
    # a single-server disk (read = write = 5 ms, 200 IOPS) and a VM that would fault 1000 times
    # per second of work: the load must equal F X (1 + w), stay below 200 IOPS, and X obey the
    # open formula with the queueing delay at that load.
    F = 1000.0
    faults = M.FaultRates(np.zeros(1), np.zeros(1), np.array([F]), np.zeros(1), np.zeros(1))
    dev = _dev(5e-3, 200.0, 1.0)
    costs = M.FaultCosts(software_s=0.0, writes_per_fault=1.0)
    tp = M.solve_throughput(faults, np.zeros(1, np.int64), 1, store=dev, costs=costs)
    x = tp.throughput[0]
    lam = tp.load_store_iops[0]
    assert lam == pytest.approx(F * x * 2, rel=1e-6)
    assert tp.util_store[0] < 1.0
    assert x <= 200.0 / (2 * F) + 1e-12  # device bound: 100 faults/s at most
    wait = float(dev.wait_s(lam, 0.5))
    assert x == pytest.approx(1 / (1 + F * (5e-3 + wait)), rel=1e-6)
