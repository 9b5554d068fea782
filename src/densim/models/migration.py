"""Pre-copy live migration of a VM's memory (Clark et al., NSDI 2005; Hirofuchi et al., SimGrid VM).

A migration copies the VM's memory ``M`` to the destination while the VM runs, then pauses it and
copies what is left (*stop-and-copy*). Round ``i`` sends ``V_i`` bytes at bandwidth ``B``, taking
``t_i = V_i / B``; meanwhile the VM dirties ``D_i t_i`` bytes (at most its writable working set
``W``, and at most ``M``), which round ``i + 1`` must send again::

    V_0 = M,     V_{i+1} = min(D_i V_i / B, W, M)

With a constant dirty rate ``D < B`` and no working-set bound this is a geometric series,
``V_i = M (D/B)^i``. Pre-copy stops after the first round ``n`` whose dirtied remainder fits the
downtime target (``V_{n+1} / B <= target``), when a round makes no progress (``V_{n+1} >= V_n``:
the VM dirties as fast as the link sends, Clark et al. section 4's "diminishing returns" rule),
or after ``max_rounds`` live rounds. Then the VM stops and the remainder is sent::

    downtime   = V_{n+1} / B_stop + resume
    total time = sum_{i=0}^{n} V_i / B + downtime
               = (M/B) (1 - r^{n+1}) / (1 - r) + downtime      (r = D/B, constant, unbounded W)
    bytes sent = sum_{i=0}^{n+1} V_i

``B`` and ``D`` may differ by round (arrays with a last axis of rounds; the last column holds for
later rounds), which covers Xen's rate-adaptive pre-copy (a low first-round rate, raised each
round) and a dirty rate read from a trace. Everything is vectorised over migrations: the only loop
is over rounds (at most ``max_rounds``).

Sources: C. Clark et al., "Live Migration of Virtual Machines", NSDI 2005 (pre-copy, writable
working set, stop conditions); T. Hirofuchi, A. Lebre, L. Pouilloux, "Adding a Live Migration
Model into SimGrid", CloudCom 2013 and "SimGrid VM", IEEE TCC 2015 (the same round recurrence
with the dirty rate as the workload's "memory update intensity"); QEMU's default downtime limit
is 300 ms (``downtime-limit``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_DOWNTIME_TARGET_S = 0.3  # QEMU's default downtime-limit (300 ms)
DEFAULT_MAX_ROUNDS = 30  # estimate: Xen's pre-copy gives up after about 30 iterations


@dataclass(frozen=True)
class Precopy:
    """Per migration (arrays of the broadcast input shape)."""

    total_s: np.ndarray  # from the start of round 0 to the VM running on the destination
    downtime_s: np.ndarray  # stop-and-copy of the remainder + resume
    bytes_sent: np.ndarray  # every round's bytes, the stop-and-copy included
    rounds: np.ndarray  # live pre-copy rounds (round 0, the full copy, counts)
    converged: np.ndarray  # the remainder fitted the downtime target (not stopped by a limit)
    live_s: np.ndarray  # time the VM ran while being copied (total - downtime)


def _round_col(a: np.ndarray, i: int) -> np.ndarray:
    """Column ``i`` of a per-round array (the last column for later rounds)."""
    return a[..., min(i, a.shape[-1] - 1)]


def precopy(memory_bytes, bandwidth_bps, dirty_rate_bps=0.0, *, wws_bytes=None,
            max_rounds: int = DEFAULT_MAX_ROUNDS, downtime_target_s=DEFAULT_DOWNTIME_TARGET_S,
            resume_s=0.0, stop_bandwidth_bps=None, per_round: bool = False) -> Precopy:
    """Pre-copy migrations, vectorised: see the module docstring for the recurrence.

    ``memory_bytes``, ``wws_bytes``, ``downtime_target_s``, ``resume_s`` and ``stop_bandwidth_bps``
    broadcast over migrations; so do ``bandwidth_bps`` and ``dirty_rate_bps``, which with
    ``per_round=True`` carry one more (last) axis of rounds (size 1: the same every round; the last
    column holds for later rounds). ``wws_bytes`` None: no working-set bound (only ``M``). The stop-and-copy
    runs at ``stop_bandwidth_bps`` (default: the last round's bandwidth).
    """
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be >= 1, got {max_rounds}")
    mem = np.asarray(memory_bytes, dtype=np.float64)
    bw = np.asarray(bandwidth_bps, dtype=np.float64)
    dirty = np.asarray(dirty_rate_bps, dtype=np.float64)
    bw_r = np.atleast_1d(bw) if per_round else bw[..., None]  # a scalar is one column: every round
    dr_r = np.atleast_1d(dirty) if per_round else dirty[..., None]
    shape = np.broadcast_shapes(mem.shape, bw_r.shape[:-1], dr_r.shape[:-1])
    if np.any(bw_r <= 0):
        raise ValueError("migration bandwidth must be > 0")
    if np.any(dr_r < 0) or np.any(mem < 0):
        raise ValueError("memory and dirty rate must be >= 0")
    cap = np.broadcast_to(mem, shape).astype(np.float64)
    if wws_bytes is not None:
        cap = np.minimum(cap, np.broadcast_to(np.asarray(wws_bytes, dtype=np.float64), shape))
    target = np.broadcast_to(np.asarray(downtime_target_s, dtype=np.float64), shape)
    v = np.broadcast_to(mem, shape).astype(np.float64).copy()  # bytes the current round sends
    total = np.zeros(shape)
    sent = np.zeros(shape)
    rounds = np.zeros(shape, dtype=np.int64)
    converged = np.zeros(shape, dtype=bool)
    active = np.ones(shape, dtype=bool)
    last_bw = np.broadcast_to(_round_col(bw_r, 0), shape).astype(np.float64).copy()
    for i in range(max_rounds):
        b = np.broadcast_to(_round_col(bw_r, i), shape)
        d = np.broadcast_to(_round_col(dr_r, i), shape)
        t = v / b
        total = np.where(active, total + t, total)
        sent = np.where(active, sent + v, sent)
        rounds = rounds + active
        last_bw = np.where(active, b, last_bw)
        nxt = np.minimum(d * t, cap)
        b_next = np.broadcast_to(_round_col(bw_r, i + 1), shape)
        fits = nxt / b_next <= target
        stuck = nxt >= v  # no progress: the VM dirties as fast as the link sends
        stop = active & (fits | stuck | (i + 1 == max_rounds))
        converged = converged | (active & fits)
        v = np.where(active, nxt, v)
        active = active & ~stop
        if not active.any():
            break
    b_stop = last_bw if stop_bandwidth_bps is None else np.broadcast_to(np.asarray(stop_bandwidth_bps, dtype=np.float64), shape)
    down = v / b_stop + np.broadcast_to(np.asarray(resume_s, dtype=np.float64), shape)
    return Precopy(total_s=total + down, downtime_s=down, bytes_sent=sent + v, rounds=rounds,
                   converged=converged, live_s=total)


def geometric_total_s(memory_bytes: float, bandwidth_bps: float, dirty_rate_bps: float, rounds: int) -> float:
    """Closed form of the live rounds' time for a constant dirty rate and no working-set bound:
    ``sum_{i=0}^{rounds-1} (M/B) r^i = (M/B)(1 - r^rounds)/(1 - r)``, ``r = D/B`` (``rounds x M/B`` at r = 1)."""
    r = dirty_rate_bps / bandwidth_bps
    base = memory_bytes / bandwidth_bps
    return base * rounds if r == 1.0 else base * (1.0 - r**rounds) / (1.0 - r)
