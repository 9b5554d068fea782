"""Weighted max-min fair sharing of capacities (fluid model of contention).

A *flow* is anything that consumes shared components at a rate: a tenant's volume, a VM's batch
phase, a host's I/O stream. Flow ``f`` progressing at rate ``x_f`` (its own unit: bytes/s of job
data, IOPS, ...) puts load ``A[f, c] * x_f`` on component ``c`` (the incidence matrix: bytes on a
link per byte of job data, drive-seconds per byte, CPU-seconds per byte). A component of capacity
``cap_c`` must carry ``sum_f A[f, c] x_f <= cap_c``.

Weighted max-min fairness (Bertsekas & Gallager, *Data Networks*, 2nd ed. 1992, §6.5.2,
"progressive filling"): raise every unfrozen flow's rate in proportion to its weight,
``x_f = w_f * t``; when a component fills up, freeze every flow that crosses it; when a flow reaches
its own cap (a per-volume IOPS/bandwidth limit, or the rate its closed loop can ask for), freeze it.
Repeat until every flow is frozen. The result is the unique allocation in which no flow can get more
without taking from a flow that has no more (relative to weight) than it does. With all weights
equal and one component this is processor sharing (modelling guide §5.2): ``n`` heavy flows get
``B/n`` each and a light flow's unused share is redistributed.

The loop runs once per *bottleneck event* (at most ``components + flows`` times) and every step is a
vectorised numpy operation over all flows and components.

Latency: component ``c`` at utilisation ``rho_c`` stretches a request's service time ``S`` to
``S / (1 - rho_c)`` (M/G/1 processor sharing, modelling guide §0.5; :func:`ps_stretch`), or, for
a component made of ``c`` parallel servers (ports, drives), to ``S (1 + C(c, c rho)/(c (1 - rho)))``
(M/M/c, Erlang C; :func:`mmc_stretch`). Both are clipped below saturation because a fluid
allocation can run a component at exactly 100 %.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_REL_TOL = 1e-9


@dataclass(frozen=True)
class Allocation:
    """Result of :func:`maxmin_rates`.

    ``rate`` per flow; ``load`` and ``utilisation`` per component; ``bottleneck[f]`` is the index of
    the component that froze flow ``f`` or ``-1`` when the flow stopped at its own cap
    (``-2`` when it had no cap and crosses no component: unbounded, rate ``inf``).
    """

    rate: np.ndarray
    load: np.ndarray
    utilisation: np.ndarray
    bottleneck: np.ndarray
    rounds: int


def maxmin_rates(incidence, capacity, weights=None, caps=None) -> Allocation:
    """Weighted max-min fair rates of flows over shared components.

    Parameters
    ----------
    incidence:
        ``(flows, components)`` non-negative load each flow puts on each component per unit rate.
    capacity:
        ``(components,)`` non-negative capacities (same unit as ``incidence * rate``).
    weights:
        ``(flows,)`` positive weights (default 1). A flow of weight 2 grows twice as fast.
    caps:
        ``(flows,)`` upper bounds on each flow's rate (``inf`` for none): per-volume limits or
        the flow's own demand.
    """
    a = np.asarray(incidence, dtype=float)
    if a.ndim != 2:
        raise ValueError("incidence must be a 2-d (flows x components) array")
    n_f, n_c = a.shape
    cap_c = np.asarray(capacity, dtype=float).reshape(n_c)
    w = np.ones(n_f) if weights is None else np.asarray(weights, dtype=float).reshape(n_f)
    lim = np.full(n_f, np.inf) if caps is None else np.asarray(caps, dtype=float).reshape(n_f)
    if (a < 0).any() or (cap_c < 0).any():
        raise ValueError("incidence and capacities must be non-negative")
    if (w <= 0).any():
        raise ValueError("weights must be positive")
    if (lim < 0).any():
        raise ValueError("caps must be non-negative")

    x = np.zeros(n_f)
    residual = cap_c.copy()
    bottleneck = np.full(n_f, -1, dtype=np.int64)
    uses = a > 0
    # a flow that needs a zero-capacity component can never move
    dead = (uses & (cap_c <= 0)[None, :]).any(axis=1)
    active = ~dead & (lim > 0)
    if dead.any():
        bottleneck[dead] = np.argmax(uses[dead] & (cap_c <= 0)[None, :], axis=1)
    rounds = 0
    while active.any():
        rounds += 1
        growth = w[active] @ a[active]  # (components,) load added per unit of fill level t
        with np.errstate(over="ignore"):
            t_comp = np.divide(residual, growth, out=np.full(n_c, np.inf), where=growth > 0)
            t_flow = np.where(active, (lim - x) / w, np.inf)
        dt = min(float(t_comp.min(initial=np.inf)), float(t_flow.min(initial=np.inf)))
        if not np.isfinite(dt):
            # remaining flows cross no loaded component and have no cap: unbounded
            x[active] = np.inf
            bottleneck[active] = -2
            break
        dt = max(dt, 0.0)
        x[active] += w[active] * dt
        residual = np.maximum(residual - growth * dt, 0.0)
        full = (growth > 0) & (residual <= _REL_TOL * np.maximum(cap_c, 1e-300))
        full |= (growth > 0) & (t_comp <= dt * (1 + _REL_TOL))
        residual[full] = 0.0
        hit_cap = active & (x >= lim * (1 - _REL_TOL))
        x[hit_cap] = np.minimum(x[hit_cap], lim[hit_cap])
        crosses_full = active & (uses[:, full].any(axis=1) if full.any() else np.zeros(n_f, bool))
        if crosses_full.any():
            # name the tightest full component each frozen flow crosses
            masked = np.where(uses[crosses_full][:, full], 1.0, 0.0)
            idx_full = np.flatnonzero(full)
            bottleneck[crosses_full] = idx_full[np.argmax(masked, axis=1)]
        active &= ~(hit_cap | crosses_full)
    with np.errstate(invalid="ignore"):
        finite_x = np.where(np.isfinite(x), x, 0.0)
    load = finite_x @ a
    util = np.divide(load, cap_c, out=np.zeros(n_c), where=cap_c > 0)
    return Allocation(rate=x, load=load, utilisation=util, bottleneck=bottleneck, rounds=rounds)


def mmc_stretch(utilisation, servers, rho_max: float = 0.95):
    """Response time / service time of a ``c``-server component at utilisation ``rho`` (M/M/c).

    ``1 + C(c, c rho) / (c (1 - rho))`` with Erlang C (:func:`densim.models.queueing.erlang_c`);
    for ``c = 1`` this is the processor-sharing ``1 / (1 - rho)``. ``rho`` is clipped at
    ``rho_max`` as in :func:`ps_stretch`. Components with several ports or drives queue far less
    than one server at the same utilisation.
    """
    from densim.models.queueing import erlang_c

    rho = np.clip(np.asarray(utilisation, dtype=float), 0.0, rho_max)
    c = np.maximum(np.asarray(servers, dtype=float), 1.0)
    return 1.0 + erlang_c(c, c * rho) / (c * (1.0 - rho))


def ps_stretch(utilisation, rho_max: float = 0.95):
    """Processor-sharing stretch ``1 / (1 - rho)`` of a component's service time.

    ``rho`` is clipped at ``rho_max``: in the fluid model a saturated component runs at exactly
    100 % and the closed loop (not an infinite queue) sets the waiting time there.
    """
    rho = np.clip(np.asarray(utilisation, dtype=float), 0.0, rho_max)
    return 1.0 / (1.0 - rho)
