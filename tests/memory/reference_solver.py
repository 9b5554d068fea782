"""The memory model's per-segment solvers as they were before numba (issue 19), kept as references.

:func:`solve_throughput_numpy` is the vectorised numpy version of
:func:`densim.models.memory.solve_throughput`: every segment's Illinois iteration advances in lock
step over flat element arrays, with M/M/c waits from :func:`densim.models.queueing.mmc_wait_s`
(scipy's ``gammaincc``). :func:`reclaim_numpy` is :func:`densim.models.memory.reclaim` over flat
arrays (the safeguarded Newton iteration of every segment in lock step). The tests compare the
numba versions with them.
"""

from __future__ import annotations

import numpy as np

from densim._jit import njit
from densim.models.memory import (DeviceArrays, FaultCosts, FaultRates, Reclamation, Throughput, _fault_constants,
                                  _illinois, compact_segments, seg_sum)


@njit
def _fault_load(f, a0, b0, c0, ws, wc, seg, m, with_cache):
    """Per segment ``sum_i f_i X_i`` with ``X_i = 1 / (1 + a0_i + b0_i ws[seg_i] (+ c0_i wc[seg_i]))``.

    One pass over the elements instead of numpy's five temporaries; the same floating-point
    operations in the same order as ``np.bincount(seg, weights=f / (1 + a0 + b0 ws[seg] ...))``.
    """
    out = np.zeros(m)
    for i in range(f.size):
        s = seg[i]
        d = 1.0 + a0[i] + b0[i] * ws[s]
        if with_cache:
            d = d + c0[i] * wc[s]
        out[s] += f[i] * (1.0 / d)
    return out



def solve_throughput_numpy(
    faults: FaultRates,
    seg,
    n_seg: int,
    *,
    store: DeviceArrays,
    cache: DeviceArrays | None = None,
    costs: FaultCosts = FaultCosts(),
    overlap=1.0,
    background_store_iops=0.0,
    background_cache_iops=0.0,
    rounds: int = 3,
    iterations: int = 40,
) -> Throughput:
    """Per-element throughput ``X/X0 = 1/(1 + sum F t / theta)`` with device queueing as a fixed point.

    For each device the load ``lambda`` solves ``lambda = sum_i F_i,dev X_i (1 + w) + background``
    where ``X_i`` uses the fault cost at the waiting time produced by ``lambda``; the map is
    decreasing in ``lambda``, so bisection on ``[0, min(lambda(0), capacity))`` finds it. The two
    devices (cache and datastore) are alternated ``rounds`` times (Gauss-Seidel). Only faulting
    elements and their segments take part; the others keep ``X = 1``.
    """
    seg_all = np.asarray(seg, dtype=np.int64)
    total = faults.total
    idx = np.flatnonzero(total > 0)
    useg, seg = compact_segments(seg_all[idx], n_seg)
    m = useg.size
    every = idx.size == total.size  # all elements fault: no gathers needed

    def sub(a):
        return a if every else a[idx]

    theta = sub(np.broadcast_to(np.asarray(overlap, dtype=float), total.shape))
    w, p_read, t_sw, t_gsw = _fault_constants(costs)
    fc, fs, fg, fz = sub(faults.cache), sub(faults.store), sub(faults.guest), sub(faults.compressed)

    def per_seg(x):
        return np.broadcast_to(np.asarray(x, float), (n_seg,))

    bg_s_all, bg_c_all = per_seg(background_store_iops), per_seg(background_cache_iops)
    st = store.take(useg, n_seg)
    ca = cache.take(useg, n_seg) if cache is not None else None
    bg_s, bg_c = bg_s_all[useg], bg_c_all[useg]
    rl_s = np.broadcast_to(st.read_latency_s, (m,))
    rl_c = np.broadcast_to(ca.read_latency_s, (m,)) if ca is not None else np.zeros(m)

    def at_el(a):
        """A per-segment value per element (a device's scalar figure stays a scalar)."""
        a = np.asarray(a, float)
        return a if a.ndim == 0 else a[seg]

    rl_s_el = at_el(st.read_latency_s)
    rl_c_el = at_el(ca.read_latency_s) if ca is not None else 0.0

    # X = 1 / (1 + a + b ws + c wc): the waits enter linearly, the rest is fixed per element
    a0 = (fz * costs.decompress_s + fc * (t_sw + rl_c_el) + fs * (t_sw + rl_s_el) + fg * (t_gsw + rl_s_el)) / theta
    b0 = (fs + fg) / theta
    c0 = fc / theta if ca is not None else None

    def x_of(wc, ws):
        if c0 is None:  # no cache device: wc is 0
            return 1.0 / (1.0 + a0 + b0 * ws[seg])
        return 1.0 / (1.0 + a0 + b0 * ws[seg] + c0 * wc[seg])

    a0_c, b0_c = np.ascontiguousarray(a0, dtype=float), np.ascontiguousarray(b0, dtype=float)
    c0_c = np.ascontiguousarray(c0, dtype=float) if c0 is not None else np.zeros(1)
    wc = np.zeros(m)
    ws = np.zeros(m)
    fd_s = fs + fg
    has_s = seg_sum(fd_s, seg, m) > 0
    has_c = (seg_sum(fc, seg, m) > 0) if ca is not None else np.zeros(m, bool)

    def solve(dev, f_dev, bg, other, is_cache, mask):
        """Root of g(lam) = lam - load(wait(lam)) (increasing) by the Illinois method."""
        cap = np.broadcast_to(dev.capacity_iops(p_read), (m,)) * (1.0 - 1e-9)

        f_c = np.ascontiguousarray(f_dev, dtype=float)

        def g(lam):
            wait = np.where(mask, dev.wait_s(lam, p_read), 0.0)
            wc_, ws_ = (wait, other) if is_cache else (other, wait)
            load = _fault_load(f_c, a0_c, b0_c, c0_c, ws_, wc_, seg, m, c0 is not None)
            return lam - (load * (1.0 + w) + bg)

        lo = np.zeros(m)
        g_lo = g(lo)
        hi = np.minimum(-g_lo, cap)  # load at zero wait, capped below saturation
        hi = _illinois(g, hi, iterations, mask=mask, g_lo=g_lo)
        return np.where(mask, dev.wait_s(hi, p_read), 0.0)

    for _ in range(rounds if ca is not None else 1):
        if np.any(has_s):
            ws = solve(st, fd_s, bg_s, wc, False, has_s)
        if ca is None or not np.any(has_c):
            break
        wc = solve(ca, fc, bg_c, ws, True, has_c)
    x_sub = x_of(wc, ws)
    if every:
        x = x_sub
    else:
        x = np.ones(total.shape)
        x[idx] = x_sub

    def scatter(vals, base):
        out = np.array(np.broadcast_to(np.asarray(base, float), (n_seg,)), dtype=float)
        out[useg] = vals
        return out

    lam_s = scatter(seg_sum(fd_s * x_sub, seg, m) * (1.0 + w) + bg_s, bg_s_all)
    lam_c = scatter(seg_sum(fc * x_sub, seg, m) * (1.0 + w) + bg_c, bg_c_all)
    util_s = lam_s / per_seg(store.capacity_iops(p_read))
    util_c = lam_c / per_seg(cache.capacity_iops(p_read)) if cache is not None else np.zeros(n_seg)
    return Throughput(
        throughput=x,
        fault_rate_per_s=total * x,
        cost_cache_s=scatter(t_sw + rl_c + wc, t_sw + per_seg(cache.read_latency_s)) if cache is not None else np.zeros(n_seg),
        cost_store_s=scatter(t_sw + rl_s + ws, t_sw + per_seg(store.read_latency_s)),
        load_cache_iops=lam_c,
        load_store_iops=lam_s,
        util_cache=util_c,
        util_store=util_s,
    )


def reclaim_numpy(
    configured_bytes,
    active_bytes,
    seg,
    n_seg: int,
    capacity_bytes,
    *,
    zero_page_fraction=0.0,
    inter_vm_sharing_fraction=0.0,
    balloon_limit=0.65,
    balloon_active_share=0.0,
    compression_cache_fraction=0.10,
    compression_ratio=2.0,
    compressible_fraction=0.5,
    swap_cache_bytes=0.0,
    iterations: int = 64,
) -> Reclamation:
    """Run the reclamation pipeline for every segment (host x step) at once.

    ``capacity_bytes`` (per segment) is the host memory available to guest memory:
    ``M_host - M_hv - minFree - sum M_ovh``. Per-element parameters broadcast against the elements;
    ``swap_cache_bytes`` broadcasts against the segments.
    """
    cfg = np.asarray(configured_bytes, dtype=float)
    act = np.minimum(np.asarray(active_bytes, dtype=float), cfg)
    seg = np.asarray(seg, dtype=np.int64)
    n = cfg.shape[0]

    def el(x):
        return np.broadcast_to(np.asarray(x, dtype=float), (n,))

    zf, isf, bl, bas = el(zero_page_fraction), el(inter_vm_sharing_fraction), el(balloon_limit), el(balloon_active_share)
    ccf, kappa, pc = el(compression_cache_fraction), el(compression_ratio), el(compressible_fraction)
    cap = np.broadcast_to(np.asarray(capacity_bytes, dtype=float), (n_seg,))
    idle = cfg - act

    deficit = np.maximum(seg_sum(cfg, seg, n_seg) - cap, 0.0)
    d = deficit.copy()

    def take(capacity_el, remaining):
        """Proportional take of ``remaining`` (per segment) from element capacities."""
        tot = seg_sum(capacity_el, seg, n_seg)
        with np.errstate(over="ignore"):  # a denormal capacity gives inf, clipped to 1 below
            frac = np.divide(remaining, tot, out=np.zeros(n_seg), where=tot > 0)
        frac = np.minimum(frac, 1.0)
        got = capacity_el * frac[seg]
        return got, remaining - np.minimum(remaining, tot)

    # 1. page sharing: zero pages of idle memory, inter-VM sharing (of any page) if enabled
    share_idle_cap = np.minimum(zf * idle + isf * idle, idle)
    share_act_cap = np.minimum(isf * act, act)
    shared, d = take(share_idle_cap + share_act_cap, d)
    w = np.divide(share_idle_cap, share_idle_cap + share_act_cap, out=np.ones(n), where=(share_idle_cap + share_act_cap) > 0)
    shared_idle = shared * w
    shared_act = shared - shared_idle

    # 2. balloon on idle memory, up to the per-VM limit
    b_cap = np.maximum(bl * cfg, 0.0)
    b_idle, d = take(np.minimum(idle - shared_idle, b_cap), d)

    # 3. active reclamation at a common fraction phi of each VM's remaining resident memory
    idle_left = idle - shared_idle - b_idle
    act_left = act - shared_act
    res_left = idle_left + act_left
    b_room = np.maximum(b_cap - b_idle, 0.0)
    c_cap = ccf * cfg * kappa  # guest bytes the compression cache can hold
    inv_k = 1.0 / kappa

    ev, bal, comp, sw = (np.zeros(n) for _ in range(4))
    unmet = np.zeros(n_seg)
    active_seg = d > 0
    if np.any(active_seg):
        # only the elements of hosts that still need memory take part in the bisection
        idx = np.flatnonzero(active_seg[seg])
        sg = seg[idx]
        rl_, bas_, br_, cc_, pc_, ik_ = res_left[idx], bas[idx], b_room[idx], c_cap[idx], pc[idx], inv_k[idx]

        def split(phi_el):
            e = rl_ * phi_el
            b = np.minimum(bas_ * e, br_)
            h = e - b
            c = np.minimum(pc_ * h, cc_)
            return e, b, c, h - c

        full = split(np.ones(idx.size))
        freed_max = seg_sum(full[0] - full[2] * ik_, sg, n_seg)
        solve = active_seg & (freed_max > d)
        # freed(phi) is piecewise linear and increasing (kinks where the balloon room or the
        # compression cache fills): safeguarded Newton, i.e. a Newton step inside the bracket
        # [lo, hi] and bisection when the step leaves it; exact once on the root's linear piece.
        phi = np.ones(n_seg)
        lo = np.zeros(n_seg)
        hi = np.ones(n_seg)
        tol = 1e-10 * np.maximum(d, 1.0)
        for _ in range(iterations):
            e, b, c, _s = split(phi[sg])
            gap = seg_sum(e - c * ik_, sg, n_seg) - d
            live = solve & (np.abs(gap) > tol) & (hi - lo > 1e-15)
            if not np.any(live):
                break
            hi = np.where(live & (gap > 0), phi, hi)
            lo = np.where(live & (gap < 0), phi, lo)
            db = np.where(bas_ * e < br_, bas_ * rl_, 0.0)
            dc = np.where(pc_ * (e - b) < cc_, pc_ * (rl_ - db), 0.0)
            slope = seg_sum(rl_ - dc * ik_, sg, n_seg)
            newton = phi - np.divide(gap, slope, out=np.full(n_seg, np.inf), where=slope > 0)
            ok = (newton > lo) & (newton < hi)
            phi = np.where(live, np.where(ok, newton, 0.5 * (lo + hi)), phi)
        phi = np.where(solve, phi, 1.0)
        e, b, c, s_ = split(phi[sg])
        ev[idx], bal[idx], comp[idx], sw[idx] = e, b, c, s_
        freed = seg_sum(e - c * ik_, sg, n_seg)
        unmet = np.where(active_seg & ~solve, np.maximum(d - freed, 0.0), 0.0)

    # active share of what was evicted (victims at random over the remaining resident memory)
    act_share = np.divide(act_left, res_left, out=np.zeros(n), where=res_left > 0)
    evicted_active = ev * act_share
    f = np.divide(act - evicted_active, act, out=np.ones(n), where=act > 0)
    f = np.clip(f, 0.0, 1.0)

    # host swap: the first swap_cache_bytes of each host's swap sit on the cache device
    sw_tot = seg_sum(sw, seg, n_seg)
    cache_b = np.broadcast_to(np.asarray(swap_cache_bytes, dtype=float), (n_seg,))
    cache_frac = np.divide(np.minimum(cache_b, sw_tot), sw_tot, out=np.zeros(n_seg), where=sw_tot > 0)
    sw_cache = sw * cache_frac[seg]
    sw_store = sw - sw_cache

    resident = cfg - shared - b_idle - bal - comp - sw
    return Reclamation(
        configured_bytes=cfg,
        active_bytes=act,
        resident_bytes=resident,
        shared_bytes=shared,
        ballooned_idle_bytes=b_idle,
        ballooned_active_bytes=bal,
        compressed_bytes=comp,
        swapped_cache_bytes=sw_cache,
        swapped_store_bytes=sw_store,
        resident_active_fraction=f,
        deficit_bytes=deficit,
        unmet_bytes=unmet,
        compression_cache_bytes=seg_sum(comp * inv_k, seg, n_seg),
    )
