"""The fused CPU kernel (densim.engine.cpu_kernel) against the numpy formulation it replaced.

The engine used to compute each chunk with numpy: claims, ``np.add.reduceat`` per host, max-min
water-filling of overloaded host-steps, the contention model on (steps, hosts) arrays, utilisation,
``host_power_w``, then ``sum(axis=0)`` per VM and host. ``numpy_reference`` below is that code; the
kernel must give the same numbers bit for bit (fan power and binomial CPU Ready to 1e-12: there numpy
uses its own SIMD ``pow``/``exp`` and scipy's ``erfc``, the kernel the C library's).
"""

from __future__ import annotations

import numpy as np
import pytest

from densim.engine import cpu_kernel as K
from densim.engine import simulate
from densim.models.cpu import CPU_CONTENTION, maxmin_share
from densim.models.power import host_power_w
from densim.plant import resolve
from tests.core.helpers import const_vms, host, scenario


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_segment_sums_follow_reduceat(dtype):
    rng = np.random.default_rng(5)
    for n in list(range(1, 40)) + [127, 128, 129, 130, 255, 256, 257, 300, 1000, 4099]:
        a = (rng.random(n) * 1e4).astype(dtype)
        want = np.add.reduceat(a[None, :], np.array([0]), axis=1)[0, 0]
        got = K.segment_sum(a, 0, n, dtype(0))
        assert got == want, n
        # at an offset inside a longer array, as the kernel calls it
        b = np.concatenate([np.ones(3, dtype), a])
        assert K.segment_sum(b, 3, n, dtype(0)) == want


def test_interp_is_numpys():
    xp = np.linspace(0.0, 1.0, 11)
    fp = np.array([90.0, 100, 110, 120, 130, 140, 150, 170, 190, 210, 240])
    slopes = K.interp_slopes(xp, fp)
    u = np.concatenate([np.random.default_rng(1).random(20000), xp, [0.0, 1.0, 0.3, 0.7, np.nextafter(0.3, 1)]])
    u = np.concatenate([u, u.astype(np.float32).astype(np.float64)])
    want = np.interp(u, xp, fp)
    got = np.array([K.interp(x, xp, fp, slopes) for x in u])
    assert np.array_equal(got, want)


def test_ready_cores_matches_the_registered_models():
    rng = np.random.default_rng(2)
    mu = rng.uniform(0, 80, 5000)
    n = rng.integers(1, 96, 5000).astype(float)
    c = rng.choice([8.0, 16.0, 32.0, 40.0], 5000)
    var = mu * rng.uniform(0.0, 1.0, 5000)  # a host's sum_j v_j u_j (1 - u_j) lies between 0 and mu
    for name, code in K.MODEL_CODES.items():
        want = CPU_CONTENTION.get(name)(mu, n, c, burstiness=1.3)  # pooled N p (1 - p)
        got = np.array([K.ready_cores(code, mu[i], n[i], c[i], 1.3, -1.0) for i in range(mu.size)])
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
        want = CPU_CONTENTION.get(name)(mu, n, c, burstiness=1.3, variance=var)  # the VMs' variance
        got = np.array([K.ready_cores(code, mu[i], n[i], c[i], 1.3, var[i]) for i in range(mu.size)])
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_ready_variance_is_the_sum_over_the_vms_by_hand():
    # one host of C = 2 cores; VM a: 2 vCPUs at u = 0.9, VM b: 2 vCPUs at u = 0.1: mean K = 2 x 0.9 + 2 x 0.1 = 2.
    # Sum of Bernoulli variables: var = 2 x 0.9 x 0.1 + 2 x 0.1 x 0.9 = 0.36; pooled binomial of p = 0.5: 4 x 0.25 = 1.
    # At mean = C the normal approximation gives E[(K - C)+] = sd / sqrt(2 pi): 0.6 / 2.5066 = 0.2394 against 0.3989
    want_vms = 0.6 / np.sqrt(2 * np.pi)
    assert K.ready_cores(2, 2.0, 4.0, 2.0, 1.0, 0.36) == pytest.approx(want_vms, rel=1e-12)
    assert K.ready_cores(2, 2.0, 4.0, 2.0, 1.0, -1.0) == pytest.approx(1.0 / np.sqrt(2 * np.pi), rel=1e-12)


def test_water_filling_matches_maxmin_share():
    # 3 VMs claim 1000, 3000 and 6000 MHz of a 6000-MHz host: 1000 is served, the other two split 5000
    # equally (2500 each, both below their claims)
    out = np.empty(3, np.float32)
    K.maxmin_fill(np.array([1000, 3000, 6000], np.float32), 3, 6000.0, out)
    assert out.tolist() == [1000.0, 2500.0, 2500.0]
    rng = np.random.default_rng(4)
    for _ in range(200):
        k = int(rng.integers(1, 40))
        claims = (rng.random(k) * 3000).astype(np.float32)
        cap = float(claims.sum()) * rng.uniform(0.2, 1.0)
        got = np.empty(k, np.float32)
        K.maxmin_fill(claims, k, cap, got)
        assert np.array_equal(got, maxmin_share(claims[None, :], cap)[0].astype(np.float32))


# ----------------------------------------------------------------------------- the whole engine
def numpy_reference(res):
    """The engine's CPU step as it was written with numpy (before the fused kernel), over all chunks."""
    ctx = res.ctx
    vms, hosts, grid, sc = ctx.vms, ctx.hosts, ctx.grid, ctx.scenario
    V, H, T, step = vms.n, hosts.n, grid.n_steps, grid.step_s
    placed = vms.host >= 0
    pl_idx = np.flatnonzero(placed)
    perm = pl_idx[np.argsort(vms.host[pl_idx], kind="stable")]
    sh = vms.host[perm]
    starts = np.flatnonzero(np.r_[True, sh[1:] != sh[:-1]])
    hosts_with = sh[starts]
    host_idx = np.where(placed, vms.host, 0)
    vcpus_h = np.bincount(vms.host[placed], weights=vms.vcpus[placed], minlength=H).astype(np.float64)
    vm_cap = (vms.vcpus * hosts.core_mhz[host_idx]).astype(np.float32)
    contention = CPU_CONTENTION.get(sc.simulation.cpu_model)
    ready_cap = np.maximum(vms.vcpus.astype(np.float32), 1) * np.float32(step)
    sums = {k: 0.0 for k in ("vm_dem", "vm_del", "vm_rdy", "h_claim", "h_del", "h_util", "h_rpct", "h_power")}
    maxes = {"vm_rdy": np.zeros(V), "h_util": np.zeros(H), "h_rpct": np.zeros(H)}
    series = {k: np.zeros((T, H), np.float32) for k in ("claim", "del", "util", "rpct", "power")}
    cs = sc.simulation.chunk_steps or T
    overloaded = 0

    def segsum(a):
        out = np.zeros((a.shape[0], H), np.float32)
        out[:, hosts_with] = np.add.reduceat(a[:, perm], starts, axis=1)
        return out

    for t0 in range(0, T, cs):
        t1 = min(T, t0 + cs)
        demand = ctx.source.window(grid, t0, t1, ("cpu_mhz",))["cpu_mhz"]
        cap_h = np.broadcast_to(hosts.capacity_mhz.astype(np.float32), (t1 - t0, H)).copy()
        claim = np.minimum(demand, vm_cap[None, :])
        claim[:, ~placed] = 0.0
        hc = segsum(claim)
        delivered = claim.copy()
        for t, h in zip(*np.nonzero(hc > cap_h * (1 + 1e-6))):
            overloaded += 1
            idx = perm[sh == h]
            delivered[t, idx] = maxmin_share(claim[t, idx][None, :], cap_h[t, h])[0]
        hd = segsum(delivered)
        # the variance of a host's runnable vCPUs: sum over its VMs of v_j u_j (1 - u_j), u_j = claim / (vCPUs x core)
        u_vm = np.divide(claim.astype(np.float64), vm_cap[None, :], out=np.zeros(claim.shape), where=vm_cap[None, :] > 0)
        var_vm = claim.astype(np.float64) / hosts.core_mhz[host_idx][None, :] * (1.0 - u_vm)
        var_vm[:, ~placed] = 0.0
        var_h = np.zeros((t1 - t0, H))
        np.add.at(var_h.T, vms.host[placed], var_vm[:, placed].T)
        ready = contention(hc / hosts.core_mhz[None, :], vcpus_h[None, :], cap_h / hosts.core_mhz[None, :],
                           burstiness=sc.simulation.burstiness,
                           **({"variance": var_h} if sc.simulation.cpu_model in K.MODEL_CODES else {}))
        hr = (ready * step).astype(np.float32)
        ratio = np.divide(hr, hc, out=np.zeros_like(hr), where=hc > 0)
        vr = claim * ratio[:, host_idx]
        vr[:, ~placed] = 0.0
        util = np.divide(hd, cap_h, out=np.zeros_like(hd), where=cap_h > 0)
        np.clip(util, 0.0, 1.0, out=util)
        power = host_power_w(util, hosts.power_kind, hosts.power_idle_w, hosts.power_peak_w, hosts.power_table_w, hosts.power_exponent)
        power[:, ~res.host_on] = 0.0
        rpct = hr / (np.maximum(vcpus_h, 1)[None, :] * step) * 100.0
        vpct = vr * (np.float32(100.0) / ready_cap)[None, :]
        for k, a in (("vm_dem", demand), ("vm_del", delivered), ("vm_rdy", vpct), ("h_claim", hc), ("h_del", hd),
                     ("h_util", util), ("h_rpct", rpct), ("h_power", power)):
            sums[k] = sums[k] + a.sum(axis=0, dtype=np.float64)
        for k, a in (("vm_rdy", vpct), ("h_util", util), ("h_rpct", rpct)):
            maxes[k] = np.maximum(maxes[k], a.max(axis=0))
        for k, a in (("claim", hc), ("del", hd), ("util", util), ("rpct", rpct), ("power", power)):
            series[k][t0:t1] = a
    return sums, maxes, series, overloaded


def _check(res, exact_power=True, exact_ready=True):
    sums, maxes, series, overloaded = numpy_reference(res)
    assert overloaded > 0  # the water-filling path is exercised
    v, h = res.vm_acc, res.host_acc

    def same(got, want, exact):
        if exact:
            assert np.array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)

    same(v.sum["cpu_demand_mhz"], sums["vm_dem"], True)
    same(v.sum["cpu_delivered_mhz"], sums["vm_del"], True)
    same(v.sum["cpu_ready_pct"], sums["vm_rdy"], exact_ready)
    same(v.max["cpu_ready_pct"], maxes["vm_rdy"], exact_ready)
    same(h.sum["cpu_demand_mhz"], sums["h_claim"], True)
    same(h.sum["cpu_delivered_mhz"], sums["h_del"], True)
    same(h.sum["utilisation"], sums["h_util"], True)
    same(h.max["utilisation"], maxes["h_util"], True)
    same(h.sum["cpu_ready_pct"], sums["h_rpct"], exact_ready)
    same(h.max["cpu_ready_pct"], maxes["h_rpct"], exact_ready)
    same(h.sum["power_w"], sums["h_power"], exact_power)
    for name, key in (("cpu_demand_mhz", "claim"), ("cpu_delivered_mhz", "del"), ("utilisation", "util")):
        same(h.series[name], series[key], True)
    same(h.series["cpu_ready_pct"], series["rpct"], exact_ready)
    same(h.series["power_w"], series["power"], exact_power)


def _mixed(cpu_model="binomial", unused="idle", chunk=3):
    # noisy demand on three host types (linear, an 11-point table on an SMT CPU, fan); 2 vCPUs per core
    # overcommit, so hosts are overloaded in some steps and VMs wait; too few hosts: some VMs unplaced
    vms = [const_vms("a", 40, 2, 2400, 0.6), const_vms("b", 25, 4, 2000, 0.8), const_vms("c", 30, 1, 3000, 0.9)]
    for g in vms:
        g["profile"] = {"kind": "diurnal", "mean": g["profile"]["mean"], "amplitude": 0.3, "noise": 0.3}
    table = {"model": "table", "points": [f"{w} W" for w in (90, 100, 110, 120, 130, 140, 150, 170, 190, 210, 240)]}
    smt = {"name": "smt", "count": 3, "cpu": {"sockets": 1, "cores_per_socket": 8, "threads_per_core": 2, "base_clock": "2000 MHz"},
           "memory": "64 GiB", "power": table}
    fan = host(count=3, cores=8, name="fan")
    fan["power"] = {"model": "fan", "idle": "80 W", "peak": "200 W"}
    return scenario([host(count=4, cores=8), smt, fan], vms, horizon="2 h", cpu_oc=2.0, cpu_model=cpu_model,
                    unused=unused, simulation={"step": "5 min", "horizon": "2 h", "seed": 1, "cpu_model": cpu_model,
                                               "chunk_steps": chunk, "burstiness": 1.2},
                    output={"vm_timeseries": "off", "host_timeseries": "on"})


@pytest.mark.parametrize("cpu_model", ["binomial", "fluid", "none"])
def test_engine_matches_the_numpy_formulation(cpu_model):
    res = simulate(resolve(_mixed(cpu_model)))
    s = res.summary
    assert s["vms_unplaced"] > 0 and s["totals"]["cpu_unserved_mhz_s"] > 0  # the scenario covers those paths
    if cpu_model != "none":
        assert s["totals"]["cpu_ready_s"] > 0
    _check(res, exact_power=False, exact_ready=cpu_model != "binomial")


def test_unused_hosts_off_and_one_chunk():
    res = simulate(resolve(_mixed(unused="off", chunk=24)))
    _check(res, exact_power=False, exact_ready=False)


def test_a_registered_model_without_a_kernel_runs_through_numpy():
    name = "test-half-fluid"
    CPU_CONTENTION.register(name, description="test: half the fluid ready time")(
        lambda mu, n, c, burstiness=1.0: 0.5 * np.maximum(np.asarray(mu, dtype=np.float64) - c, 0.0))
    try:
        res = simulate(resolve(_mixed(name)))
        _check(res, exact_power=False, exact_ready=True)
        fluid = simulate(resolve(_mixed("fluid")))
        np.testing.assert_allclose(res.summary["totals"]["cpu_ready_s"], 0.5 * fluid.summary["totals"]["cpu_ready_s"], rtol=1e-6)
    finally:
        CPU_CONTENTION._entries.pop(name, None)


def test_one_core_and_two_give_the_same_numbers():
    import numba

    sc = resolve(_mixed(chunk=24))
    n0 = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = simulate(sc)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = simulate(sc)
    finally:
        numba.set_num_threads(n0)
    for acc in ("vm_acc", "host_acc"):
        a, b = getattr(one, acc), getattr(two, acc)
        for k in a.sum:
            assert np.array_equal(a.sum[k], b.sum[k]), k
