"""Closed-form queueing results shared by every resource model.

Sources: Lazowska et al., *Quantitative System Performance* (1984) ch. 6-7 (MVA, bounds);
Kleinrock, *Queueing Systems* vol. 1 (M/M/1, M/M/c, Erlang C); Kingman (1961) for G/G/1;
Allen-Cunneen for G/G/c; Seidmann et al. (1987) for the multi-server MVA approximation;
A. Thomasian, *Analysis of Fork/Join and Related Queueing Systems*, ACM Computing Surveys 47(2),
art. 17 (2014), eq. (1), for the fork-join response as the expected maximum of the members'
response times (:func:`max_iid_factors`).
All functions take and return plain floats or numpy arrays; times are seconds.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from densim._distributions import binom_pmf
from densim._lazy import lazy

special = lazy("scipy.special")


def mm1_response_s(arrival_per_s, service_s):
    """M/M/1 (and M/G/1-PS) mean response time ``R = S / (1 - rho)``; ``inf`` when saturated."""
    lam = np.asarray(arrival_per_s, dtype=float)
    s = np.asarray(service_s, dtype=float)
    rho = lam * s
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(rho < 1.0, s / (1.0 - rho), np.inf)
    return r[()] if r.ndim == 0 else r


def erlang_c(servers, offered_load):
    """Probability that an arrival waits in M/M/c with ``c`` servers and ``A = lambda * S``.

    Uses the identity ``C(c, A) = B / (1 - rho (1 - B))`` with the Erlang B formula computed from
    the regularised incomplete gamma function, so it is vectorised and stable for large ``c``.
    Returns 1 where ``A >= c``.
    """
    c = np.asarray(servers, dtype=float)
    a = np.asarray(offered_load, dtype=float)
    rho = np.divide(a, c, out=np.full(np.broadcast(a, c).shape, np.inf), where=c > 0)
    # Erlang B via Poisson tail: B = P(N=c) / P(N<=c) for N ~ Poisson(A)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_pmf = c * np.log(np.where(a > 0, a, 1.0)) - a - special.gammaln(c + 1.0)
        cdf = special.gammaincc(c + 1.0, a)  # P(N <= c)
        b = np.where(a > 0, np.exp(log_pmf) / cdf, 0.0)
        pw = np.where(rho < 1.0, b / (1.0 - rho * (1.0 - b)), 1.0)
    pw = np.clip(pw, 0.0, 1.0)
    return pw[()] if pw.ndim == 0 else pw


def mmc_wait_s(arrival_per_s, service_s, servers):
    """Mean queueing delay W_q in M/M/c: ``C(c, A) * S / (c - A)``; ``inf`` when saturated."""
    lam = np.asarray(arrival_per_s, dtype=float)
    s = np.asarray(service_s, dtype=float)
    c = np.asarray(servers, dtype=float)
    a = lam * s
    pw = erlang_c(c, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(a < c, pw * s / (c - a), np.inf)
    return w[()] if w.ndim == 0 else w


def mmc_response_s(arrival_per_s, service_s, servers):
    """Mean response time in M/M/c: ``S + W_q``."""
    return np.asarray(service_s, dtype=float) + mmc_wait_s(arrival_per_s, service_s, servers)


def ggc_wait_s(arrival_per_s, service_s, servers, ca2=1.0, cs2=1.0):
    """Allen-Cunneen G/G/c wait: Erlang-C wait times ``(ca^2 + cs^2) / 2``.

    With ``servers = 1`` this is Kingman's formula ``((ca2+cs2)/2) * rho/(1-rho) * S``.
    """
    return mmc_wait_s(arrival_per_s, service_s, servers) * (np.asarray(ca2) + np.asarray(cs2)) / 2.0



def mmc_response_quantile_s(arrival_per_s, service_s, servers, q, tol=1e-9):
    """Quantile ``q`` of M/M/c response time (exponential service + Erlang-C wait), by bisection."""
    lam = float(arrival_per_s)
    s = float(service_s)
    c = float(servers)
    a = lam * s
    if a >= c:
        return float("inf")
    pw = float(erlang_c(c, a))
    mu = 1.0 / s
    theta = c * mu - lam  # rate of the conditional wait

    def tail(t: float) -> float:
        # P(R > t) = (1-pw) e^{-mu t} + pw * P(W' + S > t), W' ~ Exp(theta), S ~ Exp(mu)
        if abs(theta - mu) < 1e-12 * mu:
            conv = np.exp(-mu * t) * (1 + mu * t)
        else:
            conv = (theta * np.exp(-mu * t) - mu * np.exp(-theta * t)) / (theta - mu)
        return (1 - pw) * np.exp(-mu * t) + pw * conv

    lo, hi = 0.0, s
    while tail(hi) > 1 - q:
        hi *= 2
    while hi - lo > tol * max(hi, 1e-12):
        mid = (lo + hi) / 2
        if tail(mid) > 1 - q:
            lo = mid
        else:
            hi = mid
    return hi


def expected_excess(mean, var, threshold):
    """``E[(K - c)^+]`` for K normal with ``mean`` and ``var`` (vectorised).

    ``sigma * phi(z) + (mu - c) * (1 - Phi(z))`` with ``z = (c - mu) / sigma``; with zero
    variance it is ``max(mu - c, 0)``.
    """
    mu = np.asarray(mean, dtype=np.float64)
    sd = np.sqrt(np.maximum(np.asarray(var, dtype=np.float64), 0.0))
    c = np.asarray(threshold, dtype=np.float64)
    mu, sd, c = (np.atleast_1d(a) for a in np.broadcast_arrays(mu, sd, c))
    scalar = np.ndim(mean) == 0 and np.ndim(var) == 0 and np.ndim(threshold) == 0
    out = np.maximum(mu - c, 0.0)
    # beyond 9 standard deviations the normal tail is below 1e-19: the deterministic part is exact
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (c - mu) / sd
    near = (sd > 0) & (np.abs(z) < 9.0)
    if near.any():
        zz, s_, d_ = z[near], sd[near], (mu - c)[near]
        val = s_ * np.exp(-0.5 * zz * zz) / np.sqrt(2 * np.pi) + d_ * 0.5 * special.erfc(zz / np.sqrt(2))
        out[near] = np.maximum(val, out[near])
    return out[0] if scalar else out


def binomial_expected_excess(n: int, p: float, c: int) -> float:
    """Exact ``E[(K - c)^+]`` for ``K ~ Binomial(n, p)`` (for tests and small hosts)."""
    k = np.arange(int(c) + 1, int(n) + 1)
    return float(np.sum((k - c) * binom_pmf(k, n, p)))


def harmonic(n: int) -> float:
    """``H_n = 1 + 1/2 + ... + 1/n``: the expected maximum of ``n`` iid unit-mean exponentials."""
    return float(sum(1.0 / i for i in range(1, int(n) + 1)))


#: shapes of the tabulated gamma distributions (log-spaced); beyond the top the normal limit is used
_SHAPE_LO, _SHAPE_HI, _SHAPE_N = 1e-3, 1e4, 141


@functools.cache
def _max_gamma_table(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``log(shape)``, ``E[M]`` and ``E[M^2]`` for ``M`` the maximum of ``n`` iid unit-mean gammas.

    ``E[M^p] = integral_0^1 Q(u)^p n u^(n-1) du`` with ``Q`` the gamma quantile, integrated over
    ``u = Phi(z)``, ``z`` in [-9, 9] (the integrand is smooth and decays like a Gaussian in ``z``,
    so the trapezoid rule converges geometrically: 401 points reproduce ``H_n`` to 1e-15 and
    ``scipy.integrate.quad`` to 1e-9 over the tabulated range).
    """
    shapes = np.exp(np.linspace(np.log(_SHAPE_LO), np.log(_SHAPE_HI), _SHAPE_N))
    z = np.linspace(-9.0, 9.0, 401)
    phi = np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi)
    lower = special.ndtr(np.minimum(z, 0.0))
    upper = special.ndtr(-np.maximum(z, 0.0))
    k = shapes[:, None]
    x = np.where(z < 0.0, special.gammaincinv(k, lower), special.gammainccinv(k, upper)) / k
    u = np.where(z < 0.0, lower, 1.0 - upper)
    w = n * u ** (n - 1) * phi
    m1 = np.trapezoid(x * w, z, axis=1)
    m2 = np.trapezoid(x * x * w, z, axis=1)
    return np.log(shapes), m1, m2


def max_iid_factors(n: int, shape):
    """``(E[M], E[M^2])`` of the maximum ``M`` of ``n`` iid gamma variables of mean 1 and ``shape``.

    Used for fork-join synchronisation: a request split over ``n`` parallel members (the two
    drives of a mirror) completes when the slowest does, so its mean response is ``E[M] x R`` where
    ``R`` is one member's mean response, here with the members' response times treated as
    independent and gamma-distributed with ``shape = R^2 / Var`` (moment match). For exponential
    members (``shape = 1``, e.g. M/M/1) ``E[M] = H_n`` and ``E[M^2] = sum 1/i^2 + H_n^2``: the
    fork-join bound ``H_n / (mu - lambda)`` of Thomasian (2014) eq. (1). Independence ignores that
    siblings arriving together see correlated queues, so under load this is an upper bound (for two
    M/M/1 members the exact result, Flatto & Hahn 1984, is ``(12 - rho)/8 / (mu - lambda)``: at
    most 9 % lower, at rho -> 1); at zero load it is exact for the assumed service distribution.

    Vectorised over ``shape`` (linear interpolation in ``log(shape)`` of a table computed once per
    ``n``; error < 1e-4). Above the table (nearly deterministic responses) the normal limit is
    used: ``E[M] - 1`` falls like ``1/sqrt(shape)`` and ``Var M`` like ``1/shape``.
    """
    n = int(n)
    scalar = np.ndim(shape) == 0
    k = np.atleast_1d(np.asarray(shape, dtype=float))
    if n <= 1:  # one member: the member itself (E[X^2] = 1 + 1/shape for unit mean)
        e1, e2 = np.ones_like(k), 1.0 + 1.0 / np.clip(k, _SHAPE_LO, None)
    else:
        logs, m1, m2 = _max_gamma_table(n)
        e1 = np.interp(np.log(np.clip(k, _SHAPE_LO, None)), logs, m1)
        e2 = np.interp(np.log(np.clip(k, _SHAPE_LO, None)), logs, m2)
        hi = k > _SHAPE_HI
        if hi.any():
            ratio = _SHAPE_HI / k[hi]
            e1[hi] = 1.0 + (m1[-1] - 1.0) * np.sqrt(ratio)
            e2[hi] = e1[hi] ** 2 + (m2[-1] - m1[-1] ** 2) * ratio
    return (float(e1[0]), float(e2[0])) if scalar else (e1, e2)


@dataclass(frozen=True)
class MvaResult:
    """Result of exact MVA for a single-class closed network at population ``n``."""

    throughput_per_s: float
    response_s: float  # total time at the stations (excludes think time)
    station_response_s: np.ndarray
    station_queue: np.ndarray
    station_utilisation: np.ndarray

    def little_population(self, think_s: float = 0.0) -> float:
        """``X * (R + Z)``: equals the population by Little's law."""
        return self.throughput_per_s * (self.response_s + think_s)


def mva(
    demands_s: Sequence[float] | np.ndarray,
    population: int,
    think_s: float = 0.0,
    servers: Sequence[float] | np.ndarray | None = None,
    delay: Sequence[bool] | np.ndarray | None = None,
    multiplicity: Sequence[float] | np.ndarray | None = None,
    latency_weight: Sequence[float] | np.ndarray | None = None,
    fixed_s: Sequence[float] | np.ndarray | None = None,
) -> MvaResult:
    """Exact single-class Mean Value Analysis (Reiser & Lavenberg 1980).

    ``servers[k] > 1`` uses the Seidmann approximation: a queueing station of demand ``D/c`` in
    series with a delay station of demand ``D (c-1)/c``. ``delay[k]`` marks pure delay stations.
    Utilisation of a multi-server station is ``X D / c``.

    ``multiplicity[k]`` (added for the storage model) says entry ``k`` stands for that many
    identical stations (e.g. the 30 drives of a striped set): identical stations have identical
    queues in MVA, so this is exact and the per-station arrays describe one member of the class;
    ``response_s`` sums over every member. It makes large symmetric systems cheap.

    ``latency_weight[k]`` (default 1; added for fork-join synchronisation in the storage model)
    scales station ``k``'s residence in the *response time* only: a request forked over ``m``
    members waits for the slowest, ``H_m`` times one member's residence, not ``m`` times, so the
    ``m`` members each count ``H_m / m`` of their residence. Queues still follow Little's law per
    station (``Q_k = X R_k``: every sub-request is somewhere), so with weights below 1 the queues
    add up to more than ``X R`` (siblings wait at several stations at once). This is the
    independent-members approximation (Thomasian 2014, eq. (1)) inside exact MVA's recursion;
    with all weights 1 the recursion is the exact product-form one.

    ``fixed_s[k]`` (default 0) is a pure delay per cycle added to entry ``k``'s residence (a
    controller's firmware path): it lengthens the response like a delay station but occupies no
    server, so it enters neither the queue recursion nor the utilisation.
    """
    d = np.asarray(demands_s, dtype=float)
    k = d.size
    c = np.ones(k) if servers is None else np.maximum(np.asarray(servers, dtype=float), 1.0)
    is_delay = np.zeros(k, dtype=bool) if delay is None else np.asarray(delay, dtype=bool)
    mult = np.ones(k) if multiplicity is None else np.asarray(multiplicity, dtype=float)
    lw = np.ones(k) if latency_weight is None else np.asarray(latency_weight, dtype=float)
    wm = mult * lw  # weight of each entry's residence in the response time
    if population < 0:
        raise ValueError("population must be >= 0")
    dq = np.where(is_delay, 0.0, d / c)  # queueing part
    dd = np.where(is_delay, d, d * (c - 1.0) / c)  # delay part
    if fixed_s is not None:
        dd = dd + np.asarray(fixed_s, dtype=float)
    q = np.zeros(k)
    x = 0.0
    r = dq + dd
    if 0 < k <= 16 and population > 0:
        # few stations: plain floats beat numpy's per-call overhead by ~10x
        dql, ddl, ml = dq.tolist(), dd.tolist(), wm.tolist()
        ql = [0.0] * k
        rl = [0.0] * k
        for n in range(1, int(population) + 1):
            tot = think_s
            for i in range(k):
                rl[i] = dql[i] * (1.0 + ql[i]) + ddl[i]
                tot += ml[i] * rl[i]
            x = n / tot
            for i in range(k):
                ql[i] = x * dql[i] * (1.0 + ql[i])
        r = np.array(rl)
    else:
        for n in range(1, int(population) + 1):
            r = dq * (1.0 + q) + dd
            x = n / (think_s + float(wm @ r))
            q = x * dq * (1.0 + q)  # queue at the queueing part only
    if population == 0:
        r = dq + dd
    return MvaResult(
        throughput_per_s=float(x),
        response_s=float(wm @ r) if population else 0.0,
        station_response_s=r,
        station_queue=x * r,
        station_utilisation=x * d / c,
    )
