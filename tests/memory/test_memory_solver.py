"""The per-segment numba solvers of the memory model against the vectorised numpy versions they replaced.

``tests/memory/reference_solver.py`` keeps the numpy versions. The fault-cost fixed point (the
numpy one iterated every segment's Illinois method in lock step, waits from scipy's ``gammaincc``)
must give the same throughput, fault rates, loads, utilisations and fault costs to 1e-9 on random
segments, light and heavy loads, with and without a swap cache device, per-segment devices and
background loads. The reclamation pipeline does the same arithmetic in the same order: equal to the
bit.
"""

import math

import numpy as np
import pytest
from scipy import special

from densim._jit import Prefaulted
from densim.models import memory as M
from densim.models.queueing import mmc_wait_s
from tests.memory.reference_solver import reclaim_numpy, solve_throughput_numpy

FIELDS = ("throughput", "fault_rate_per_s", "cost_cache_s", "cost_store_s", "load_cache_iops", "load_store_iops",
          "util_cache", "util_store")


def _dev(rl, wl, ri, wi, par):
    return M.DeviceArrays(*(np.asarray(v, dtype=float) for v in (rl, wl, ri, wi, par)))


FC_SAN = _dev(6e-3, 1e-3, 2000.0, 4000.0, np.nan)  # catalog fc-san-lun: c = 11.53 servers
S3710 = _dev(90e-6, 30e-6, 70000.0, 30000.0, np.nan)  # an SSD as host swap cache
DISK = _dev(5e-3, 5e-3, 200.0, 200.0, 4.0)  # four integer servers


def _case(rng, n_seg, per_seg, scale, cache, bg, per_segment_devices, idle_share):
    n = n_seg * per_seg
    seg = rng.integers(0, n_seg, n)

    def tier():
        return rng.exponential(scale, n) * (rng.random(n) > idle_share)

    faults = M.FaultRates(tier(), tier() if cache else np.zeros(n), tier(), tier(), rng.random(n))
    if per_segment_devices:
        store = M.DeviceArrays(*(np.where(rng.integers(0, 2, n_seg) == 0, getattr(FC_SAN, f), getattr(DISK, f))
                                 for f in ("read_latency_s", "write_latency_s", "read_iops", "write_iops", "parallelism")))
    else:
        store = FC_SAN
    kw = dict(store=store, cache=S3710 if cache else None, costs=M.FaultCosts(software_s=0.333e-3, writes_per_fault=0.125),
              overlap=rng.uniform(0.5, 2.0, n), background_store_iops=bg, background_cache_iops=bg / 2)
    return faults, seg, n_seg, kw


@pytest.mark.parametrize("seed", range(6))
def test_solver_matches_the_vectorised_reference(seed):
    rng = np.random.default_rng(seed)
    for _ in range(12):
        faults, seg, n_seg, kw = _case(rng, int(rng.integers(1, 300)), int(rng.integers(1, 20)),
                                       float(rng.choice([0.1, 10.0, 300.0, 3000.0, 1e5])), bool(rng.random() < 0.5),
                                       float(rng.choice([0.0, 50.0, 1500.0])), bool(rng.random() < 0.3),
                                       float(rng.choice([0.0, 0.3, 0.9])))
        new = M.solve_throughput(faults, seg, n_seg, **kw)
        old = solve_throughput_numpy(faults, seg, n_seg, **kw)
        for name in FIELDS:
            np.testing.assert_allclose(getattr(new, name), getattr(old, name), rtol=1e-9, atol=0.0, err_msg=name)


def test_static_steps_match_the_per_step_solver():
    # solve_steps (one numba pass per chunk) against, step by step, fault rates r x (faults per
    # access), the numpy solver and fault_cpu_cycles_per_s: the same figures up to float32 rounding
    rng = np.random.default_rng(11)
    T, V, H = 7, 60, 9
    host = rng.integers(0, H, V)
    vm_ids = np.flatnonzero(rng.random(V) < 0.8)  # some VMs do not fault at all
    k = vm_ids.size
    unit = M.FaultRates(*(rng.exponential(0.2, k) * (rng.random(k) < 0.7) for _ in range(4)), rng.random(k))
    rate = rng.uniform(50.0, 4000.0, k)
    cap = rng.uniform(1000.0, 4000.0, k)
    theta = rng.uniform(0.5, 2.0, k)
    core = rng.uniform(2000.0, 3000.0, k)
    demand = (rng.uniform(0.0, 4500.0, (T, V)) * (rng.random((T, V)) > 0.1)).astype(np.float32)
    costs = M.FaultCosts(software_s=0.333e-3, writes_per_fault=0.125)
    for cache, bg in ((None, 0.0), (None, 1800.0), (S3710, 0.0), (S3710, 500.0)):
        res = M.solve_steps(demand, vm_ids, host[vm_ids], H, unit, rate, cap, theta, core, store=FC_SAN, cache=cache,
                            costs=costs, background_store_iops=bg, store_ios_per_fault=1.0)
        for t in range(T):
            r = rate * np.clip(demand[t, vm_ids] / cap, 0.0, 1.0)
            f = M.FaultRates(r * unit.compressed, r * unit.cache, r * unit.store, r * unit.guest, unit.miss_ratio)
            ref = solve_throughput_numpy(f, host[vm_ids], H, store=FC_SAN, cache=cache, costs=costs, overlap=theta,
                                         background_store_iops=bg)
            cpu = M.fault_cpu_cycles_per_s(f, ref.throughput, costs, core_mhz=core) / 1e6
            f32 = dict(rtol=2.5e-7, atol=0.0)  # float32 outputs: one rounding
            np.testing.assert_allclose(res.fault_rate_per_s[t, vm_ids], ref.fault_rate_per_s, **f32)
            np.testing.assert_allclose(res.slowdown[t, vm_ids], ref.slowdown, **f32)
            np.testing.assert_allclose(res.fault_cpu_mhz[t, vm_ids], cpu, **f32)
            np.testing.assert_allclose(res.demand_mhz[t, vm_ids], demand[t, vm_ids] + cpu.astype(np.float32), **f32)
            np.testing.assert_allclose(res.host_fault_cpu_mhz[t], np.bincount(host[vm_ids], cpu, H), **f32)
            np.testing.assert_allclose(res.swap_iops[t], ref.load_store_iops + ref.load_cache_iops, **f32)
            np.testing.assert_allclose(res.util[t], np.maximum(ref.util_store, ref.util_cache), **f32)
            np.testing.assert_allclose(res.util_store[t], ref.util_store, **f32)
        others = np.setdiff1d(np.arange(V), vm_ids)
        assert not res.fault_rate_per_s[:, others].any() and (res.slowdown[:, others] == 1.0).all()
        np.testing.assert_array_equal(res.demand_mhz[:, others], demand[:, others])
        np.testing.assert_array_equal(res.max_slowdown, res.slowdown.max(axis=0))


def test_mm1_wait_and_its_elasticity_by_hand():
    # one server (c = 1): Erlang C is rho, so W = rho S / (1 - rho); with S = 5 ms and 100/s,
    # rho = 0.5 and W = 5 ms. d ln W / d ln lambda = 1 + rho / (1 - rho) = 2.
    w, d = M._mmc_wait(100.0, 5e-3, 1.0, math.lgamma(2.0))
    assert w == pytest.approx(5e-3, rel=1e-14)
    assert d == pytest.approx(2.0, rel=1e-12)
    assert M._mmc_wait(0.0, 5e-3, 1.0, 0.0) == (0.0, 1.0)
    assert M._mmc_wait(200.0, 5e-3, 1.0, 0.0)[0] == np.inf  # saturated


@pytest.mark.parametrize("c", [1.0, 1.5, 4.0, 11.529411764705884, 57.3, 1000.0])
def test_poisson_cdf_and_wait_match_scipy(c):
    rng = np.random.default_rng(int(c * 10))
    lgc = math.lgamma(c + 1.0)
    a = np.r_[rng.uniform(0.0, c, 400), c * (1.0 - np.logspace(-12, -1, 20)), c * np.logspace(-8, 0, 20)]
    a = a[(a > 0) & (a < c)]
    q = np.array([M._poisson_cdf(c, x, math.exp(c * math.log(x) - x - lgc)) for x in a])
    np.testing.assert_allclose(q, special.gammaincc(c + 1.0, a), rtol=2e-12 if c > 100 else 1e-13)
    svc = 0.01
    waits = np.array([M._mmc_wait(x / svc, svc, c, lgc) for x in a])
    np.testing.assert_allclose(waits[:, 0], mmc_wait_s(a / svc, svc, c), rtol=5e-12 if c > 100 else 1e-13)
    # the elasticity against a central difference of ln W
    h = 1e-6
    up = np.array([M._mmc_wait(x * (1 + h) / svc, svc, c, lgc)[0] for x in a])
    dn = np.array([M._mmc_wait(x * (1 - h) / svc, svc, c, lgc)[0] for x in a])
    ok = (waits[:, 0] > 1e-250) & (a < c * (1 - 1e-3))  # a central difference needs h D small
    np.testing.assert_allclose(waits[ok, 1], (np.log(up[ok]) - np.log(dn[ok])) / (2 * h), rtol=1e-5)


RECLAIM_FIELDS = ("configured_bytes", "active_bytes", "resident_bytes", "shared_bytes", "ballooned_idle_bytes",
                  "ballooned_active_bytes", "compressed_bytes", "swapped_cache_bytes", "swapped_store_bytes",
                  "resident_active_fraction", "deficit_bytes", "unmet_bytes", "compression_cache_bytes")


@pytest.mark.parametrize("seed", range(4))
def test_reclaim_equals_the_vectorised_reference_to_the_bit(seed):
    # random hosts (segments) from fitting to short of even what full reclamation frees (negative
    # capacity too); parameters one value or one per element; VMs with more active than configured
    # memory, or none active
    rng = np.random.default_rng(seed)
    gib = M.GIB
    for _ in range(40):
        n_seg, n = int(rng.integers(1, 60)), int(rng.integers(0, 400))
        seg = rng.integers(0, n_seg, n)
        cfg = rng.choice([4.0, 8.0, 12.0, 16.0, 32.0], n) * gib * rng.uniform(0.9, 1.1, n)
        act = cfg * rng.uniform(0.0, 1.2, n) * (rng.random(n) > 0.05)
        cap = np.bincount(seg, cfg, n_seg) * rng.uniform(-0.1, 1.3, n_seg)

        def p(lo, hi):
            return float(rng.uniform(lo, hi)) if rng.random() < 0.5 else rng.uniform(lo, hi, n)

        kw = dict(zero_page_fraction=p(0.0, 0.2), inter_vm_sharing_fraction=p(0.0, 0.3) if rng.random() < 0.5 else 0.0,
                  balloon_limit=p(0.0, 0.8), balloon_active_share=p(0.0, 1.0), compression_cache_fraction=p(0.0, 0.2),
                  compression_ratio=p(1.0, 4.0), compressible_fraction=p(0.0, 1.0),
                  swap_cache_bytes=float(rng.uniform(0, 40)) * gib if rng.random() < 0.5 else rng.uniform(0, 40, n_seg) * gib)
        new = M.reclaim(cfg, act, seg, n_seg, cap, **kw)
        old = reclaim_numpy(cfg, act, seg, n_seg, cap, **kw)
        for name in RECLAIM_FIELDS:
            np.testing.assert_array_equal(getattr(new, name), getattr(old, name), err_msg=name)


def test_sums_over_the_steps_equal_the_series_sums():
    # series=False hands back, per VM, the sum over the steps of the float32 values the series
    # would hold (sums of float32 values taken in float64 over 8 equal parts of the steps, parts added
    # in order). With T = 100 steps the parts are 12 or 13 steps long. Everything else (demand with
    # the fault CPU, per-host rows, the largest slowdown) is the series mode's to the bit.
    rng = np.random.default_rng(5)
    T, V, H = 100, 50, 7
    host = rng.integers(0, H, V)
    vm_ids = np.flatnonzero(rng.random(V) < 0.7)  # the others: rate 0, slowdown 1 in every step
    k = vm_ids.size
    unit = M.FaultRates(*(rng.exponential(0.2, k) for _ in range(4)), rng.random(k))
    args = (host[vm_ids], H, unit, rng.uniform(50.0, 4000.0, k), rng.uniform(1000.0, 4000.0, k), rng.uniform(0.5, 2.0, k),
            rng.uniform(2000.0, 3000.0, k))
    demand = rng.uniform(0.0, 4500.0, (T, V)).astype(np.float32)
    kw = dict(store=FC_SAN, cache=S3710, costs=M.FaultCosts(software_s=0.333e-3), background_store_iops=300.0)
    ser = M.solve_steps(demand, vm_ids, *args, **kw)
    red = M.solve_steps(demand, vm_ids, *args, **kw, series=False)
    for name in ("fault_rate_per_s", "slowdown", "fault_cpu_mhz"):
        want = getattr(ser, name).sum(axis=0, dtype=np.float64)
        assert getattr(red, name).shape == (V,)
        np.testing.assert_allclose(getattr(red, name), want, rtol=1e-14, atol=0.0, err_msg=name)
    assert (red.slowdown[np.setdiff1d(np.arange(V), vm_ids)] == T).all()
    for name in ("demand_mhz", "max_slowdown", "host_fault_cpu_mhz", "swap_iops", "util", "util_store", "util_cache"):
        np.testing.assert_array_equal(getattr(red, name), getattr(ser, name), err_msg=name)


def test_sums_do_not_depend_on_the_number_of_threads():
    # a thread takes whole parts of the steps (SUM_PARTS equal parts), and the partial sums are added
    # in part order: 1 or 2 threads give the same floats
    import numba

    rng = np.random.default_rng(8)
    T, V, H = 70, 40, 5
    host = rng.integers(0, H, V)
    unit = M.FaultRates(*(rng.exponential(0.3, V) for _ in range(4)), rng.random(V))
    args = (np.arange(V), host, H, unit, rng.uniform(50.0, 4000.0, V), rng.uniform(1000.0, 4000.0, V),
            rng.uniform(0.5, 2.0, V), rng.uniform(2000.0, 3000.0, V))
    demand = rng.uniform(0.0, 4500.0, (T, V)).astype(np.float32)
    got = []
    before = numba.get_num_threads()
    try:
        for n in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(n)
            got.append(M.solve_steps(demand, *args, store=FC_SAN, series=False))
    finally:
        numba.set_num_threads(before)
    for r in got[1:]:
        for name in ("fault_rate_per_s", "slowdown", "fault_cpu_mhz"):
            np.testing.assert_array_equal(getattr(r, name), getattr(got[0], name))


def test_in_place_writes_the_same_demand_over_its_input():
    rng = np.random.default_rng(3)
    T, V, H = 40, 30, 4
    host = rng.integers(0, H, V)
    vm_ids = np.flatnonzero(rng.random(V) < 0.6)
    k = vm_ids.size
    unit = M.FaultRates(*(rng.exponential(0.2, k) for _ in range(4)), rng.random(k))
    args = (vm_ids, host[vm_ids], H, unit, rng.uniform(50.0, 4000.0, k), rng.uniform(1000.0, 4000.0, k),
            rng.uniform(0.5, 2.0, k), rng.uniform(2000.0, 3000.0, k))
    demand = rng.uniform(0.0, 4500.0, (T, V)).astype(np.float32)
    want = M.solve_steps(demand, *args, store=FC_SAN, series=False)
    mine = demand.copy()
    got = M.solve_steps(mine, *args, store=FC_SAN, series=False, in_place=True)
    assert got.demand_mhz is mine  # no second (steps x VMs) array
    np.testing.assert_array_equal(mine, want.demand_mhz)
    with pytest.raises(ValueError, match="in_place"):
        M.solve_steps(np.asfortranarray(demand), *args, store=FC_SAN, in_place=True)  # needs a C-ordered copy


@pytest.mark.parametrize("share", [1.0, 0.6])
@pytest.mark.parametrize("series", [True, False])
@pytest.mark.parametrize("cols", ["random", "in turn", "in short turns"])
def test_factored_demand_gives_the_dense_figures_to_the_bit(share, series, cols):
    # a trace replayed by many VMs: demand[t, v] = base[t, col[v]] * scale[v] (float32), as a
    # PlanetLab window is; read in that form the kernel must give exactly what it gives on the
    # expanded (steps x VMs) array, for every VM faulting (share 1) and for some (0.6). Columns at
    # random are gathered; columns in turn (v mod 7, VMs on hosts in order) are runs of consecutive
    # columns read by slices (6 runs), or gathered when they are more than RUNS (v mod 3: 14 runs)
    rng = np.random.default_rng(21)
    T, V, H = 30, 40, 5
    F = 3 if cols == "in short turns" else 7
    base = rng.uniform(0.0, 1.0, (T, F)).astype(np.float32)
    col = rng.integers(0, F, V) if cols == "random" else np.arange(V) % F
    scale = np.full(V, 2300.0, np.float32)
    dense = np.take(base, col, axis=1)
    dense *= np.float32(2300.0)
    host = rng.integers(0, H, V)
    if cols != "random":
        host = np.sort(host)  # VMs in host order: the kernel reads their columns tile by tile
    vm_ids = np.arange(V) if share == 1.0 else np.flatnonzero(rng.random(V) < share)
    k = vm_ids.size
    unit = M.FaultRates(*(rng.exponential(0.2, k) for _ in range(4)), rng.random(k))
    args = (vm_ids, host[vm_ids], H, unit, rng.uniform(50.0, 4000.0, k), rng.uniform(1000.0, 4000.0, k),
            rng.uniform(0.5, 2.0, k), rng.uniform(2000.0, 3000.0, k))
    kw = dict(store=FC_SAN, cache=S3710, background_store_iops=200.0, series=series)
    want = M.solve_steps(dense.copy(), *args, **kw)
    got = M.solve_steps(None, *args, **kw, factors=(base, col, scale))
    # the demand with the fault CPU written into an array the caller gives (out=: garbage in it,
    # or pages mapped in the background), dense and factored: the same floats
    garbage = np.full((T, V), np.nan, np.float32)
    given = M.solve_steps(dense.copy(), *args, **kw, out=garbage)
    assert given.demand_mhz is garbage
    prefaulted = M.solve_steps(None, *args, **kw, factors=(base, col, scale), out=Prefaulted((T, V), np.float32))
    for name in ("fault_rate_per_s", "slowdown", "fault_cpu_mhz", "demand_mhz", "max_slowdown", "host_fault_cpu_mhz",
                 "swap_iops", "util", "util_store", "util_cache"):
        for res in (got, given, prefaulted):
            np.testing.assert_array_equal(getattr(res, name), getattr(want, name), err_msg=name)
    with pytest.raises(ValueError, match="out="):
        M.solve_steps(dense.copy(), *args, **kw, out=np.zeros((T, V + 1), np.float32))


@pytest.mark.parametrize("cache", [None, S3710])
@pytest.mark.parametrize("series", [True, False])
@pytest.mark.parametrize("factored", [False, True])
def test_tiles_of_hosts_do_not_change_a_float(monkeypatch, cache, series, factored):
    # solve_steps' kernel takes the VMs in tiles of whole hosts (STEP_TILE VMs); a host's VMs are
    # summed in their order and the steps in theirs whatever the tiles, so tiles of 1, 3 or 7 VMs
    # (hosts larger than a tile are tiles of their own; 23 hosts of 0 to 9 VMs) give the floats of one
    # tile holding every VM. VMs out of order (not contiguous columns) and hosts without VMs included.
    rng = np.random.default_rng(31)
    T, V, H, F = 20, 90, 23, 6
    host = rng.integers(0, H, V)
    vm_ids = np.flatnonzero(rng.random(V) < 0.8)
    k = vm_ids.size
    unit = M.FaultRates(*(rng.exponential(0.3, k) * (rng.random(k) < 0.8) for _ in range(4)), rng.random(k))
    args = (vm_ids, host[vm_ids], H, unit, rng.uniform(50.0, 4000.0, k), rng.uniform(1000.0, 4000.0, k),
            rng.uniform(0.5, 2.0, k), rng.uniform(2000.0, 3000.0, k))
    base = rng.uniform(0.0, 1.0, (T, F)).astype(np.float32)
    col = rng.integers(0, F, V)
    scale = rng.uniform(1000.0, 4500.0, V).astype(np.float32)
    dense = (base[:, col] * scale[None, :]).astype(np.float32)
    kw = dict(store=FC_SAN, cache=cache, background_store_iops=150.0, series=series)
    if factored:
        kw["factors"] = (base, col, scale)

    def run(tile):
        monkeypatch.setattr(M, "STEP_TILE", tile)
        return M.solve_steps(None if factored else dense.copy(), *args, **kw)

    want = run(10**9)
    for tile in (1, 3, 7):
        got = run(tile)
        for name in ("fault_rate_per_s", "slowdown", "fault_cpu_mhz", "demand_mhz", "max_slowdown", "host_fault_cpu_mhz",
                     "swap_iops", "util", "util_store", "util_cache"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=f"{name}, tile {tile}")


@pytest.mark.parametrize("c", [1.0, 4.0, 11.529411764705884, 57.3, 1000.0])
def test_poisson_series_in_lock_step_are_the_single_series_to_the_bit(c):
    # _poisson_cdfs takes every host's series of P(N <= c) in lock step (a host whose series has
    # stopped keeps its sums); each host must get exactly _poisson_cdf's float, with series of 1 to
    # hundreds of terms side by side, and 1 where the host is not solved there (ok = 0)
    rng = np.random.default_rng(int(c * 7))
    lgc = math.lgamma(c + 1.0)
    a = np.r_[rng.uniform(0.0, c, 300), c * np.logspace(-8, 0, 40)[:-1], c * (1.0 - np.logspace(-9, -1, 20))]
    a = a[(a > 0) & (a < c)]
    nh = a.size
    pm = np.exp(c * np.log(a) - a - lgc)
    ok = (rng.random(nh) < 0.9).astype(float)
    cd = np.full(nh, -1.0)
    scratch = np.zeros((5, nh))
    M._poisson_cdfs(nh, np.arange(nh), np.full(nh, c), a, pm, ok, cd, *scratch)
    want = np.array([M._poisson_cdf(c, x, p) if k > 0 else 1.0 for x, p, k in zip(a, pm, ok)])
    np.testing.assert_array_equal(cd, want)


def test_light_waits_are_the_device_waits_to_the_bit():
    # without a cache device the kernel solves the hosts' light loads in passes over a tile's hosts
    # (_light_waits: g(0), one M/M/c wait, a Newton step); every host it solves must get exactly the
    # wait _waits gives (the same expressions), and the others (-1: heavy loads, a device at its
    # capacity) are left to _waits. Loads from idle to past the fc-san-lun's 2,118 IOPS.
    rng = np.random.default_rng(41)
    w, p_read, _, _ = M._fault_constants(M.FaultCosts(software_s=0.333e-3, writes_per_fault=0.125))
    svc, c, lgc, cap = (float(x[0]) for x in M._station(FC_SAN, p_read, 1))
    nh = 400
    sizes = rng.integers(1, 12, nh)
    start = np.r_[0, np.cumsum(sizes)]
    n = int(start[-1])
    scale = np.repeat(10.0 ** rng.uniform(-2.0, 3.5, nh), sizes)  # fault rates per VM, by host
    fd = rng.exponential(1.0, n) * scale * (rng.random(n) < 0.9)
    a0 = rng.uniform(0.0, 0.5, n)
    b0 = fd * rng.uniform(0.5, 2.0, n)
    zeros = np.zeros(n)
    inv = 1.0 / (1.0 + a0)
    s0 = np.zeros(nh)
    s1 = np.zeros(nh)
    b0max = np.zeros(nh)
    for q in range(nh):  # the kernel's sums: each host's VMs in order
        for i in range(start[q], start[q + 1]):
            p = fd[i] * inv[i]
            s0[q] += p
            s1[q] += p * b0[i] * inv[i]
            b0max[q] = max(b0max[q], b0[i])
    one = np.ones(nh)
    bg = rng.choice([0.0, 200.0], nh)
    ws = np.zeros(nh)
    M._light_waits(nh, np.arange(nh), s0, s1, b0max, svc * one, c * one, lgc * one, cap * one, bg, w, np.zeros((13, nh)), ws)
    light = ws >= 0
    assert 0 < light.sum() < nh  # both kinds occur
    for q in np.flatnonzero(light):
        want = M._waits(fd, zeros, a0, b0, zeros, int(start[q]), int(start[q + 1]), False, b0max[q], 0.0, s0[q] > 0, False,
                        (s0[q], s1[q], 0.0, 0.0, 0.0, 0.0), (svc, c, lgc, cap), (svc, c, lgc, cap), bg[q], 0.0, w, 3, 40)
        assert ws[q] == want[0], q
