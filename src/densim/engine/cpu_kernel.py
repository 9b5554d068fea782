"""The CPU step of the engine as one fused numba kernel per chunk of time steps.

For every host (in parallel over hosts, ``numba.prange``) and every step of the chunk, the kernel
reads each of the host's VMs' demand once and produces, without any (steps x VMs) intermediate:
the claims (demand limited by the VM's vCPUs), the host's claim, max-min fair delivered CPU on an
overloaded host, CPU Ready (the contention model of :mod:`densim.models.cpu`), utilisation and
power (:mod:`densim.models.power`), and the chunk's per-VM and per-host sums and maxima that the
accumulators keep. Per-step host arrays and per-VM arrays are written only when asked for (host
time series, stages that read them, VM time series).

Every operation reproduces the numpy formulation it replaces, in the same precision and order,
so results are bit-identical to it (tests/engine/test_cpu_kernel.py compares them):

* host sums of float32 claims follow ``np.add.reduceat``: the segment's first element plus numpy's
  pairwise sum of the rest (8 accumulators up to 128 elements, halves beyond);
* per-VM and per-host sums over the chunk's steps are sequential in float64, as numpy's
  ``sum(axis=0, dtype=float64)`` of a C-ordered (steps, n) array;
* the water-filling of an overloaded host-step is :func:`densim.models.cpu.maxmin_share` on one row;
* power follows ``np.interp`` (one table for every host) or the per-host table formula of
  :func:`densim.models.power.table_w`, and :func:`~densim.models.power.fan_w` for ``fan`` hosts.

The only values that may differ in the last bits are CPU Ready under the ``binomial`` model, whose
``exp`` and ``erfc`` come from the C library here and from numpy/scipy there, and whose variance
``sum_j v_j u_j (1 - u_j)`` is summed in float64 in VM order here (relative 1e-15).

Demand is given either as a (steps, VMs) array or *factored* as ``base[t, col[v]] * scale[v]``
(float32), the form of a trace replayed by many VMs (PlanetLab: 1,052 files drive 100,000 VMs), so
the (steps x VMs) demand is never materialised.
"""

from __future__ import annotations

import math

import numpy as np
from densim._jit import njit, prange

# contention model codes (densim.models.cpu.CPU_CONTENTION names)
MODEL_CODES = {"none": 0, "fluid": 1, "binomial": 2}
GIVEN_READY = 3  # host ready time given as an input (a contention model with no kernel)
# power modes
POWER_ONE_TABLE, POWER_HOST_TABLES = 0, 1
HOST_BLOCK = 64  # hosts per parallel task

_SQRT_2PI = math.sqrt(2 * math.pi)
_SQRT_2 = math.sqrt(2)


@njit(inline="always")
def _pairwise_block(a, lo, n, zero):
    """numpy's pairwise sum of at most 128 elements: 8 accumulators, then the remainder in order."""
    if n < 8:
        res = zero
        for i in range(n):
            res = res + a[lo + i]
        return res
    r0 = a[lo]
    r1 = a[lo + 1]
    r2 = a[lo + 2]
    r3 = a[lo + 3]
    r4 = a[lo + 4]
    r5 = a[lo + 5]
    r6 = a[lo + 6]
    r7 = a[lo + 7]
    i = 8
    m = n - (n % 8)
    while i < m:
        r0 = r0 + a[lo + i]
        r1 = r1 + a[lo + i + 1]
        r2 = r2 + a[lo + i + 2]
        r3 = r3 + a[lo + i + 3]
        r4 = r4 + a[lo + i + 4]
        r5 = r5 + a[lo + i + 5]
        r6 = r6 + a[lo + i + 6]
        r7 = r7 + a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res = res + a[lo + i]
        i += 1
    return res


@njit(inline="always")
def pairwise_sum(a, lo, n, zero):
    """numpy's pairwise summation of ``a[lo:lo+n]`` in the array's precision (``@TYPE@_pairwise_sum``):
    blocks of up to 128 elements; a longer run is split at ``n/2`` rounded down to a multiple of 8
    and the halves' sums added (the recursion is unrolled onto a small stack)."""
    if n <= 128:
        return _pairwise_block(a, lo, n, zero)
    s_lo = np.empty(64, dtype=np.int64)
    s_n = np.empty(64, dtype=np.int64)
    s_state = np.zeros(64, dtype=np.int64)
    vals = np.empty(64, dtype=a.dtype)
    sp = 1
    vp = 0
    s_lo[0] = lo
    s_n[0] = n
    s_state[0] = 0
    while sp > 0:
        top = sp - 1
        lo_, n_ = s_lo[top], s_n[top]
        if n_ <= 128:
            vals[vp] = _pairwise_block(a, lo_, n_, zero)
            vp += 1
            sp -= 1
            continue
        n2 = n_ // 2
        n2 -= n2 % 8
        if s_state[top] == 0:
            s_state[top] = 1
            s_lo[sp], s_n[sp], s_state[sp] = lo_, n2, 0
            sp += 1
        elif s_state[top] == 1:
            s_state[top] = 2
            s_lo[sp], s_n[sp], s_state[sp] = lo_ + n2, n_ - n2, 0
            sp += 1
        else:
            vals[vp - 2] = vals[vp - 2] + vals[vp - 1]
            vp -= 1
            sp -= 1
    return vals[0]


@njit(inline="always")
def segment_sum(a, lo, n, zero):
    """``np.add.reduceat`` over one segment ``a[lo:lo+n]`` (n >= 1): first element plus the pairwise sum of the rest."""
    return a[lo] + pairwise_sum(a, lo + 1, n - 1, zero)


@njit(inline="always")
def ready_cores(model, mu, n_vcpus, cap_cores, burst, var_k):
    """Expected runnable vCPUs without a logical CPU, ``E[(K - C)^+]`` (models/cpu.py, one host-step).

    ``var_k``: the variance of the runnable vCPUs ``K``, ``sum_j v_j u_j (1 - u_j)`` over the host's VMs
    (each vCPU of VM ``j`` runnable with its VM's ``u_j``: a sum of Bernoulli variables, modelling guide
    §3.2); a negative value asks for the pooled ``N p (1 - p)`` of the host's mean ``p``."""
    if model == 0:
        return 0.0
    if model == 1:
        return max(mu - cap_cores, 0.0)
    # binomial: K can never exceed N, so with N <= C nothing waits
    if not n_vcpus > cap_cores:
        return 0.0
    m = min(mu, n_vcpus)
    if var_k >= 0.0:
        var = burst * var_k
    else:
        p = m / n_vcpus if n_vcpus > 0 else 0.0
        var = burst * n_vcpus * p * (1.0 - p)
    # models.queueing.expected_excess
    sd = math.sqrt(max(var, 0.0))
    out = max(m - cap_cores, 0.0)
    if sd > 0:
        z = (cap_cores - m) / sd
        if abs(z) < 9.0:
            val = sd * math.exp(-0.5 * z * z) / _SQRT_2PI + (m - cap_cores) * 0.5 * math.erfc(z / _SQRT_2)
            out = max(val, out)
    return out


@njit(inline="always")
def interp(x, xp, fp, slopes):
    """``np.interp`` for one value (numpy's arr_interp: ``slopes[j] x (x - xp[j]) + fp[j]``, with
    ``slopes[j] = (fp[j+1] - fp[j]) / (xp[j+1] - xp[j])`` precomputed as numpy does for long inputs)."""
    if x != x:
        return x
    last = xp.size - 1
    if x < xp[0]:
        return fp[0]
    if x > xp[last]:
        return fp[last]
    j = min(int(x * last), last) if last > 0 else 0  # a guess for uniform points, then the exact bracket
    while j > 0 and xp[j] > x:
        j -= 1
    while j < last and xp[j + 1] <= x:
        j += 1
    if j == last or xp[j] == x:
        return fp[j]
    slope = slopes[j]
    r = slope * (x - xp[j]) + fp[j]
    if r != r:
        r = slope * (x - xp[j + 1]) + fp[j + 1]
        if r != r and fp[j] == fp[j + 1]:
            r = fp[j]
    return r


def interp_slopes(xp: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """The slopes numpy's ``interp`` precomputes (last axis of ``fp``)."""
    return (fp[..., 1:] - fp[..., :-1]) / (xp[1:] - xp[:-1])


@njit(inline="always")
def host_power(util, h, mode, xp, table, slopes, fan, idle, peak, expo):
    """Power (W, float64) of host ``h`` at utilisation ``util`` (models/power.py host_power_w)."""
    u = min(max(util, 0.0), 1.0)
    closed = fan[h]  # 0: the 11-point table, 1: Fan et al. (fan_w), 2: square root (sqrt_w)
    if closed == 1:
        return idle[h] + (peak[h] - idle[h]) * (2.0 * u - u ** expo[h])
    if closed == 2:
        return idle[h] + (peak[h] - idle[h]) * np.sqrt(u)
    if mode == POWER_ONE_TABLE:
        return interp(u, xp, table[0], slopes[0])
    npts = table.shape[1]
    x = u * (npts - 1)
    lo = min(max(math.floor(x), 0.0), npts - 2.0)
    frac = x - lo
    k = int(lo)
    return table[h, k] * (1.0 - frac) + table[h, k + 1] * frac


@njit
def maxmin_fill(claims, k, cap, out):
    """Max-min fair shares of ``cap`` among ``claims[:k]`` into ``out[:k]`` (models.cpu.maxmin_share, one row)."""
    d = np.empty(k)
    for i in range(k):
        d[i] = np.float64(claims[i])
    s = np.sort(d)
    csum = 0.0
    level = np.inf
    for i in range(k):
        csum += s[i]
        before = csum - s[i]
        level_at = (cap - before) / (k - i)
        if level_at < s[i]:
            level = level_at
            break
    for i in range(k):
        out[i] = min(d[i], level)  # stored in the claims' precision


@njit(parallel=True)
def cpu_chunk(base, colp, scalep, factored, zero, capp, factorp, perm, starts, ends, seg_host, unplaced, unpl_col,
              unpl_scale, empty_hosts, cap_h, cap32, core_mhz, vcpus_h, model, burst, step_s, ready_given,
              nv_h, host_on, boot_w, power_mode, xp, table, slopes, fan, idle, peak, expo, sat_thr,
              vm_dem, vm_del, vm_rdy, vm_rdy_max,
              h_claim, h_del, h_util, h_util_max, h_rpct, h_rpct_max, h_power, sat_peak, sat_count,
              o_claim, o_del, o_util, o_rready, o_rpct, o_power,
              v_claim, v_del, v_ready):
    """One chunk of the CPU model; see the module docstring.

    The placed VMs are taken in host order: position ``q`` is VM ``perm[q]``, the hosts' VMs are
    the segments ``[starts[s], ends[s])`` on hosts ``seg_host[s]``. Per position: ``colp``/``scalep``
    locate its demand (``base[t, colp[q]] * scalep[q]`` when ``factored``, else ``base[t, colp[q]]``
    with ``base`` (steps, VMs)), ``capp`` its claim limit (MHz), ``factorp`` 100 / (vCPUs x step).
    ``zero`` is a zero of the demand's type. The VMs placed nowhere are ``unplaced`` (demand at
    ``unpl_col``/``unpl_scale``); the hosts without VMs ``empty_hosts``. ``cap_h`` (1 or steps,
    hosts) is the capacity in MHz as float64, ``cap32`` when the engine's capacity array is float32
    (then the overload test and utilisation are float32, as numpy computes them); ``ready_given``
    (steps, hosts) host ready seconds when ``model == GIVEN_READY``; ``sat_thr`` the saturation
    threshold as float32 (utilisation is float32). ``vcpus_h``, ``nv_h`` (vCPUs x step), ``host_on``
    and ``boot_w`` (power added in a step a host boots) are (1 or steps, hosts): per step when VMs
    arrive and leave.

    Outputs (zeroed by the caller): per-VM chunk sums ``vm_*`` (float64), per-host chunk sums and
    maxima ``h_*``, the saturation peak and steps at or over ``sat_thr``; per-step host arrays
    ``o_*`` and per-VM arrays ``v_*`` when they have a non-zero size.
    """
    n = base.shape[0]
    n_seg = starts.size
    want_host = o_claim.size > 0
    want_rready = o_rready.size > 0
    want_vm = v_claim.size > 0
    cap_rows = cap_h.shape[0]
    live_rows = vcpus_h.shape[0]
    over32 = np.float32(1 + 1e-6)
    # blocks of hosts in parallel; within a block, step by step: the block's VMs' running sums stay
    # in small local arrays (each VM's sum still runs over the steps in order), the per-step host
    # arrays are written along rows
    n_blk = (n_seg + HOST_BLOCK - 1) // HOST_BLOCK
    for blk in prange(n_blk):
        s0 = blk * HOST_BLOCK
        s1 = min(n_seg, s0 + HOST_BLOCK)
        p0 = starts[s0]
        m = ends[s1 - 1] - p0
        dem = np.zeros(m)
        dl = np.zeros(m)
        rdy = np.zeros(m)
        rmax = np.zeros(m)
        cl = np.empty(m, dtype=base.dtype)
        dv = np.empty(m, dtype=base.dtype)
        ov = np.zeros(s1 - s0, dtype=np.bool_)
        for t in range(n):
            row = base[t]
            # claims: demand limited by the VM's own vCPUs (np.minimum: a NaN demand stays NaN)
            if factored:
                for j in range(m):
                    d = row[colp[p0 + j]] * scalep[p0 + j]  # float32 x float32, as the source's window computes it
                    cap_v = capp[p0 + j]
                    c = cap_v if cap_v < d else d
                    cl[j] = c
                    dem[j] += np.float64(d)
            else:
                for j in range(m):
                    d = row[colp[p0 + j]]
                    cap_v = capp[p0 + j]
                    c = cap_v if cap_v < d else d
                    cl[j] = c
                    dem[j] += np.float64(d)
            any_over = False
            cap_row = t if cap_rows > 1 else 0
            lr = t if live_rows > 1 else 0
            for s in range(s0, s1):
                h = seg_host[s]
                lo = starts[s] - p0
                k = ends[s] - starts[s]
                hc = np.float32(segment_sum(cl, lo, k, zero))
                cap = cap_h[cap_row, h]
                if cap32:
                    overloaded = hc > np.float32(np.float32(cap) * over32)
                else:
                    overloaded = np.float64(hc) > cap * (1 + 1e-6)
                ov[s - s0] = overloaded
                if overloaded:
                    any_over = True
                    maxmin_fill(cl[lo:lo + k], k, cap, dv[lo:lo + k])
                    hd = np.float32(segment_sum(dv, lo, k, zero))
                else:
                    hd = hc
                # CPU Ready: runnable vCPUs against the host's logical capacity
                if model == GIVEN_READY:
                    rs = ready_given[t, h]
                elif model == 0:
                    rs = np.float32(0.0)
                else:
                    c_mhz = core_mhz[h]
                    mu = np.float64(hc) / c_mhz
                    cc = cap / c_mhz
                    var_k = 0.0
                    # binomial: sum_j v_j u_j (1 - u_j) = sum_j (c_j / core) (1 - c_j / (v_j core)); it is at most mu, so
                    # where N <= C, or mu < C with (C - mu)^2 >= 81 b mu (z >= 9 even at var = mu), ready_cores gives 0
                    # whatever it is: the VMs' loop is skipped there (same result)
                    if model == 2 and vcpus_h[lr, h] > cc and not (mu < cc and (cc - mu) * (cc - mu) >= 81.0 * burst * mu):
                        for j in range(lo, lo + k):
                            cv = np.float64(capp[p0 + j])
                            if cv > 0:
                                cj = np.float64(cl[j])
                                var_k += cj / c_mhz * (1.0 - cj / cv)
                    rs = np.float32(ready_cores(model, mu, vcpus_h[lr, h], cc, burst, var_k) * step_s)
                if rs != 0 and hc > 0:  # each VM's share of the host's ready time is its share of the claim
                    ratio = np.float32(rs / hc)
                    for j in range(lo, lo + k):
                        r = cl[j] * ratio
                        pct = r * factorp[p0 + j]
                        rdy[j] += np.float64(pct)
                        if pct > rmax[j]:
                            rmax[j] = pct
                        if want_vm:
                            v_ready[t, perm[p0 + j]] = r
                # utilisation is float32 (divided in float32, or in float64 against a float64 capacity)
                if cap > 0:
                    q = np.float32(hd / np.float32(cap)) if cap32 else np.float32(np.float64(hd) / cap)
                    u = np.float64(min(max(q, np.float32(0.0)), np.float32(1.0)))
                else:
                    u = 0.0
                p = host_power(u, h, power_mode, xp, table, slopes, fan, idle, peak, expo) if host_on[lr, h] else 0.0
                p += boot_w[lr, h]
                rpct = np.float64(rs) / nv_h[lr, h] * 100.0
                h_claim[h] += np.float64(hc)
                h_del[h] += np.float64(hd)
                h_util[h] += u
                h_rpct[h] += rpct
                h_power[h] += p
                if t == 0 or u > h_util_max[h]:
                    h_util_max[h] = u
                if t == 0 or rpct > h_rpct_max[h]:
                    h_rpct_max[h] = rpct
                if t == 0 or u > sat_peak[h]:
                    sat_peak[h] = u
                if u >= sat_thr:
                    sat_count[h] += 1
                if want_host:
                    o_claim[t, h] = hc
                    o_del[t, h] = hd
                    o_util[t, h] = u
                    o_rpct[t, h] = rpct
                    o_power[t, h] = p
                if want_rready:
                    o_rready[t, h] = rs
            # delivered: the claims (summed above), or the fair shares on an overloaded host
            if any_over:
                for s in range(s0, s1):
                    src = dv if ov[s - s0] else cl
                    for j in range(starts[s] - p0, ends[s] - p0):
                        dl[j] += np.float64(src[j])
            else:
                for j in range(m):
                    dl[j] += np.float64(cl[j])
            if want_vm:
                for j in range(m):
                    v = perm[p0 + j]
                    v_claim[t, v] = cl[j]
                    v_del[t, v] = cl[j]
                if any_over:
                    for s in range(s0, s1):
                        if ov[s - s0]:
                            for j in range(starts[s] - p0, ends[s] - p0):
                                v_del[t, perm[p0 + j]] = dv[j]
        for j in range(m):
            v = perm[p0 + j]
            vm_dem[v] = dem[j]
            vm_del[v] = dl[j]
            vm_rdy[v] = rdy[j]
            vm_rdy_max[v] = rmax[j]
    # hosts without VMs: utilisation 0, idle power when powered on
    for j in prange(empty_hosts.size):
        h = empty_hosts[j]
        p_idle = host_power(0.0, h, power_mode, xp, table, slopes, fan, idle, peak, expo)
        for t in range(n):
            lr = t if live_rows > 1 else 0
            p0 = (p_idle if host_on[lr, h] else 0.0) + boot_w[lr, h]
            h_power[h] += p0
            if want_host:
                o_power[t, h] = p0
    # VMs placed nowhere claim nothing: only their demand is summed
    for j in prange(unplaced.size):
        v = unplaced[j]
        acc = 0.0
        for t in range(n):
            if factored:
                acc += np.float64(base[t, unpl_col[j]] * unpl_scale[j])
            else:
                acc += np.float64(base[t, unpl_col[j]])
        vm_dem[v] = acc


@njit(parallel=True)
def host_claims(base, colp, scalep, factored, zero, capp, starts, ends, seg_host, out):
    """Host claims (steps, hosts) alone, as :func:`cpu_chunk` computes them (for a contention model with no kernel)."""
    n = base.shape[0]
    kmax = 1
    for s in range(starts.size):
        kmax = max(kmax, ends[s] - starts[s])
    for s in prange(starts.size):
        a = starts[s]
        k = ends[s] - a
        cl = np.empty(kmax, dtype=base.dtype)
        for t in range(n):
            for i in range(k):
                d = base[t, colp[a + i]] * scalep[a + i] if factored else base[t, colp[a + i]]
                cap_v = capp[a + i]
                cl[i] = cap_v if cap_v < d else d
            out[t, seg_host[s]] = np.float32(segment_sum(cl, 0, k, zero))
