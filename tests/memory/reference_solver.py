"""The fault-cost fixed point as it was before the per-segment numba solver (issue 19), kept as a reference.

:func:`solve_throughput_numpy` is the vectorised numpy version of
:func:`densim.models.memory.solve_throughput`: every segment's Illinois iteration advances in lock
step over flat element arrays, with M/M/c waits from :func:`densim.models.queueing.mmc_wait_s`
(scipy's ``gammaincc``). The tests compare the numba solver with it.
"""

from __future__ import annotations

import numpy as np

from densim._jit import njit
from densim.models.memory import (DeviceArrays, FaultCosts, FaultRates, Throughput, _fault_constants, _illinois,
                                  compact_segments,
                                  seg_sum)


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

