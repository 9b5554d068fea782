"""Processor power management: SMT throughput, turbo frequency and per-core power gating.

Pure, vectorised functions with the unit in every name. Sources and assumptions:

* Turbo: the power control unit raises the clock of busy cores in bins when fewer cores are active
  (Intel Turbo Boost; the per-active-core bin table is on each CPU's specification update). Without a
  bin table the frequency falls linearly from ``max_turbo_mhz`` (one busy core) to
  ``all_core_turbo_mhz`` (every core busy).
* Power gating: an idle core is put in a deep C-state (C6) by the power control unit and draws almost
  nothing; an ungated idle core (C1) still leaks. A busy core's dynamic power scales with ``f V^2`` and
  V rises roughly with f in the turbo range, hence ``P_dyn ~ f^3`` (E).
* SMT: one core with ``t`` busy hardware threads delivers ``1`` (one thread) to ``smt_gain`` (all
  threads) times a single thread's throughput (modelling guide §3.2, ``h`` = 1.0-1.3).
"""

from __future__ import annotations

import numpy as np
from densim._distributions import binom_pmf


def turbo_frequency_mhz(active_cores, cores: int, base_mhz: float, max_turbo_mhz: float | None, all_core_turbo_mhz: float | None = None):
    """Clock of each busy core when ``active_cores`` of ``cores`` are busy.

    Linear from ``max_turbo_mhz`` at 1 busy core to ``all_core_turbo_mhz`` at ``cores`` busy;
    ``base_mhz`` everywhere when the CPU has no turbo. 0 busy cores returns the 1-core value.
    """
    k = np.asarray(active_cores, dtype=float)
    if max_turbo_mhz is None:
        out = np.full_like(k, float(base_mhz))
        return out[()] if out.ndim == 0 else out
    top = float(max_turbo_mhz)
    low = float(all_core_turbo_mhz) if all_core_turbo_mhz is not None else float(base_mhz)
    if cores <= 1:
        out = np.full_like(k, top)
    else:
        frac = np.clip((k - 1.0) / (cores - 1.0), 0.0, 1.0)
        out = top - (top - low) * frac
    return out[()] if out.ndim == 0 else out


def expected_turbo_frequency_mhz(core_busy_fraction, cores: int, base_mhz: float, max_turbo_mhz: float | None, all_core_turbo_mhz: float | None = None):
    """Work-weighted mean clock when each core is busy with probability ``core_busy_fraction``.

    ``K ~ Binomial(cores, u)`` busy cores; each busy core runs at ``f(K)``; the clock a unit of work
    sees is ``E[K f(K)] / E[K]``.
    """
    u = np.atleast_1d(np.clip(np.asarray(core_busy_fraction, dtype=float), 1e-9, 1.0))
    k = np.arange(1, cores + 1, dtype=float)
    f = np.asarray(turbo_frequency_mhz(k, cores, base_mhz, max_turbo_mhz, all_core_turbo_mhz), dtype=float)
    pmf = binom_pmf(k[None, :], cores, u[:, None])
    out = (pmf * k * f).sum(axis=1) / (pmf * k).sum(axis=1)
    return out[0] if np.ndim(core_busy_fraction) == 0 else out


def smt_core_throughput(busy_threads, threads_per_core: int, smt_gain: float):
    """Throughput of one core (single-thread units) with ``busy_threads`` hardware threads busy.

    0 threads -> 0, 1 thread -> 1, all threads -> ``smt_gain``, linear in between.
    """
    t = np.clip(np.asarray(busy_threads, dtype=float), 0.0, threads_per_core)
    if threads_per_core <= 1:
        out = np.minimum(t, 1.0)
    else:
        out = np.where(t <= 1.0, t, 1.0 + (smt_gain - 1.0) * (t - 1.0) / (threads_per_core - 1.0))
    return out[()] if out.ndim == 0 else out



def core_power_w(frequency_mhz, base_mhz: float, dynamic_w_at_base: float, leakage_w: float):
    """Power of one busy core: ``leak + P_dyn,base (f/f_base)^3``."""
    f = np.asarray(frequency_mhz, dtype=float) / float(base_mhz)
    out = leakage_w + dynamic_w_at_base * f**3
    return out[()] if np.ndim(out) == 0 else out


def package_power_w(
    busy_cores,
    cores: int,
    frequency_mhz,
    *,
    base_mhz: float,
    uncore_w: float,
    core_dynamic_w_at_base: float,
    core_leakage_w: float,
    gated_core_w: float = 0.0,
    power_gating: bool = True,
):
    """Socket power: uncore + busy cores at ``core_power_w(f)`` + idle cores gated or leaking.

    ``busy_cores`` may be fractional (a mean). Idle cores draw ``gated_core_w`` when power gating
    is on, otherwise their leakage ``core_leakage_w`` (clock-gated C1).
    """
    b = np.clip(np.asarray(busy_cores, dtype=float), 0.0, cores)
    busy = b * core_power_w(frequency_mhz, base_mhz, core_dynamic_w_at_base, core_leakage_w)
    idle_each = gated_core_w if power_gating else core_leakage_w
    out = uncore_w + busy + (cores - b) * idle_each
    return out[()] if np.ndim(out) == 0 else out


def expected_package_power_w(core_busy_fraction, cores: int, *, base_mhz: float, max_turbo_mhz: float | None,
                             all_core_turbo_mhz: float | None, uncore_w: float, core_dynamic_w_at_base: float,
                             core_leakage_w: float, gated_core_w: float = 0.0, power_gating: bool = True, turbo: bool = True):
    """Mean socket power with ``K ~ Binomial(cores, u)`` busy cores, each at ``f(K)``."""
    u = np.atleast_1d(np.clip(np.asarray(core_busy_fraction, dtype=float), 0.0, 1.0))
    k = np.arange(0, cores + 1, dtype=float)
    f = turbo_frequency_mhz(k, cores, base_mhz, max_turbo_mhz if turbo else None, all_core_turbo_mhz)
    p_k = package_power_w(k, cores, f, base_mhz=base_mhz, uncore_w=uncore_w, core_dynamic_w_at_base=core_dynamic_w_at_base,
                          core_leakage_w=core_leakage_w, gated_core_w=gated_core_w, power_gating=power_gating)
    pmf = binom_pmf(k[None, :], cores, u[:, None])
    out = (pmf * p_k).sum(axis=1)
    return out[0] if np.ndim(core_busy_fraction) == 0 else out


def power_limited_frequency_mhz(active_cores, *, tdp_w: float, base_mhz: float, uncore_w: float,
                                core_dynamic_w_at_base: float, core_leakage_w: float, cores: int,
                                gated_core_w: float = 0.0, power_gating: bool = True):
    """Highest clock at which ``active_cores`` busy cores keep the socket within ``tdp_w``.

    Solves ``uncore + k (leak + P_dyn (f/f_b)^3) + (cores-k) P_idle = TDP`` for ``f``: the power
    control unit can give each busy core more headroom when fewer are busy (and more still when the
    idle ones are power-gated).
    """
    k = np.maximum(np.asarray(active_cores, dtype=float), 1.0)
    idle_each = gated_core_w if power_gating else core_leakage_w
    budget = tdp_w - uncore_w - (cores - k) * idle_each
    per_core_dyn = budget / k - core_leakage_w
    with np.errstate(invalid="ignore"):
        out = base_mhz * np.cbrt(np.maximum(per_core_dyn, 0.0) / core_dynamic_w_at_base)
    return out[()] if out.ndim == 0 else out


# ---- governor and voltage scaling for the server power model (issue 30; models/power.py ``component``) -----


def governor_clock_busy(util, top_mhz: float, min_mhz: float, busy_target: float, dvfs: bool = True):
    """Clock (MHz) and busy share of a core at load ``util`` of the full-clock capacity (demand-based switching).

    The governor picks the lowest clock that keeps a core busy at most ``busy_target`` of the time,
    ``f = clip(u f_top / busy_target, f_min, f_top)``; the core is then busy ``b = min(u f_top / f, 1)``.
    Without DVFS the clock stays at ``f_top`` and ``b = u``.
    """
    u = np.clip(np.asarray(util, dtype=np.float64), 0.0, 1.0)
    if not dvfs:
        return np.full_like(u, float(top_mhz)), u
    f = np.clip(u * top_mhz / busy_target, min_mhz, top_mhz)
    b = np.minimum(u * top_mhz / f, 1.0)
    return f, b


def dynamic_power_share(freq_ratio, v_floor: float):
    """Dynamic power of a busy core at ``f / f_top`` relative to ``f_top``: ``f V^2`` with ``V / V_top = v0 + (1 - v0) f / f_top``.

    ``v_floor = 0`` gives the ``(f / f_base)^3`` law of :func:`core_power_w`; a floor > 0 keeps the voltage
    from falling in proportion at low clocks (the lowest P-states share a minimum voltage), so power falls
    more slowly than ``f^3``.
    """
    x = np.asarray(freq_ratio, dtype=np.float64)
    return x * (v_floor + (1.0 - v_floor) * x) ** 2


# ---- power capping: the highest P-state whose power fits the cap ------------------------------------------
#
# A host's power model P(u) is stated at its nominal clock f0 (the capacity the engine gives it). At a
# P-state with clock f = s f0 the CPU's dynamic power while busy scales as f V^2 ~ s^3 (V roughly
# proportional to f; see the module docstring) and the same demand D keeps it busy u = min(D / (s C0), 1)
# of the time, so
#
#     P(s) = P(0) + (P(min(u0 / s, 1)) - P(0)) s^3,        u0 = D / C0
#
# (idle power P(0) is the floor a clock change does not touch). For a linear model this is
# P0 + (Pp - P0) min(u0 s^2, s^3): increasing in s, so the cap's clock is the largest P-state with
# P(s) <= cap, found by bisection over the P-state grid.


def pstate_scales(base_mhz: float, min_mhz: float, step_mhz: float) -> np.ndarray:
    """Clock scales ``f / base`` of the P-states ``min, min + step, ... <= base`` and the base clock itself, ascending."""
    n = int(np.floor((base_mhz - min_mhz) / step_mhz + 1e-9))
    f = min_mhz + step_mhz * np.arange(max(n, 0) + 1, dtype=float)
    if f[-1] < base_mhz - 1e-6:
        f = np.append(f, base_mhz)
    return f / base_mhz


def scaled_power_w(scale, u0, power_of_util, p0):
    """``P(s)`` above: host power at clock scale ``s`` with load ``u0`` of the uncapped capacity.

    ``power_of_util(u)`` is the host's power model (W) at utilisation ``u`` of the nominal clock;
    ``p0`` its idle power (``power_of_util(0)``). Arrays broadcast.
    """
    s = np.asarray(scale, dtype=float)
    u = np.minimum(np.divide(u0, s, out=np.ones(np.broadcast(u0, s).shape), where=s > 0), 1.0)
    return p0 + (power_of_util(u) - p0) * s**3


def capped_scale(u0, cap_w, scales, power_of_util, p0):
    """Clock scale of the highest P-state whose :func:`scaled_power_w` is within ``cap_w``, per (step, host).

    ``u0`` is (steps, H) load of the uncapped capacity, ``cap_w`` (H,) or (steps, H), ``scales`` (H, K) ascending P-state
    scales per host (rows padded at the front with their lowest scale), ``power_of_util`` maps a (steps, H)
    utilisation to W and ``p0`` is (H,) idle W. The lowest P-state must fit (the caller checks a fully busy
    host at it); where even it does not, the lowest is returned. Bisection: ``ceil(log2 K)`` evaluations.
    """
    u0 = np.asarray(u0, dtype=float)
    T, H = u0.shape
    K = scales.shape[1]
    cols = np.arange(H)[None, :]
    cap = np.broadcast_to(np.asarray(cap_w, dtype=float), (T, H))  # (H,) or, per step, (steps, H)
    top = scaled_power_w(scales[:, -1][None, :], u0, power_of_util, p0) <= cap * (1 + 1e-12)
    lo = np.zeros((T, H), dtype=np.int64)  # feasible
    hi = np.full((T, H), K - 1, dtype=np.int64)  # infeasible unless `top`
    while True:
        open_ = (hi - lo > 1) & ~top
        if not open_.any():
            break
        mid = (lo + hi) // 2
        ok = scaled_power_w(scales[cols, mid], u0, power_of_util, p0) <= cap * (1 + 1e-12)
        lo = np.where(open_ & ok, mid, lo)
        hi = np.where(open_ & ~ok, mid, hi)
    k = np.where(top, K - 1, lo)
    return scales[cols, k]


def full_load_capped_scale(p0_w: float, p1_w: float, cap_w: float, scales: np.ndarray) -> float | None:
    """Largest P-state scale ``s`` at which a fully busy host draws ``p0 + (p1 - p0) s^3 <= cap`` (1.0 when the
    power model's full-load power ``p1`` is within the cap); None when not even the lowest P-state fits."""
    ok = p0_w + (p1_w - p0_w) * np.asarray(scales, dtype=float) ** 3 <= cap_w * (1 + 1e-12)
    return float(scales[ok][-1]) if ok.any() else None
