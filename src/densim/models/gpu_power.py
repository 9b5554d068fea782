"""GPU power limits: the clock a power limit leaves a GPU, what it then draws, and a host's shared limit.

A GPU's power at busy share ``b`` (of its time, at its full clock) is ``P = idle + span b`` (the gpu stage's
linear model, ``span = max_power - idle``). A power limit ``L`` (``nvidia-smi -pl``; the card accepts
``power_limit_min .. max_power``) is met by the GPU's clock governor: it lowers the SM clock until the board
draws at most ``L``. As for the CPU's P-states (:mod:`densim.models.cpu_power`), a busy unit's dynamic power
scales as ``f V^2`` with ``V`` roughly proportional to ``f``, so ``~ sigma^3`` at clock scale
``sigma = f / f_max``, and the same work keeps the GPU busy ``min(b / sigma, 1)`` of the time::

    P(sigma) = idle + span min(b / sigma, 1) sigma^3                       (increasing in sigma)

The limit's clock is the largest ``sigma <= 1`` with ``P(sigma) <= L``; GPUs scale their clock in fine steps
(~15 MHz), so it is solved in closed form rather than on a grid::

    P(1) <= L                    -> sigma = 1 (the limit does not bind)
    ((L - idle) / span)^(1/3) <= b -> sigma = ((L - idle) / span)^(1/3)   (busy the whole time at the lower clock)
    else                         -> sigma = ((L - idle) / (span b))^(1/2)  (still idle part of the time)

and the GPU then draws ``min(P(1), L)``. The work it serves is ``min(b, sigma)`` of a full-clock GPU's:
its tenants' throughput falls by ``max(1, b / sigma)`` (1 while the slower GPU still keeps up).

The cubic law is an assumption (E): it holds for compute-bound kernels whose voltage follows the clock;
memory-bound work (LLM decoding) loses less throughput than the SM clock falls. McDonald et al. 2022
("Great Power, Great Responsibility", arXiv 2205.09646, V100 250 W boards) measured +6.8 % training time
for large language models at a 150 W limit, where the busy-the-whole-time branch above gives 1/sigma - 1 =
24 % with an idle of 40 W (E): the model is pessimistic for training that does not hold the board at its
limit. See docs/background/gpus.md.
"""

from __future__ import annotations

import numpy as np


def limited_clock_scale(busy, idle_w, span_w, limit_w):
    """Clock scale ``sigma`` in (0, 1] a power limit leaves a GPU busy ``busy`` (arrays broadcast; see above).
    The roots are taken only where the limit binds (a GPU drawing more than its limit at full clock)."""
    b, idle, span, lim = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (busy, idle_w, span_w, limit_w)))
    out = np.ones(b.shape)
    bind = idle + span * b > lim * (1 + 1e-12)
    if bind.any():
        b, span = b[bind], span[bind]
        head = np.maximum(lim[bind] - idle[bind], 0.0)
        sat = np.cbrt(head / span)  # span > 0 where the limit binds (the GPU draws more than idle)
        part = np.sqrt(head / np.maximum(span * b, 1e-300))
        out[bind] = np.clip(np.where(sat <= b, sat, part), 0.0, 1.0)
    return out[()] if out.ndim == 0 else out


def shared_limit_w(draw_w, budget_w):
    """The one power limit ``L`` per row at which GPUs drawing ``draw_w`` (..., G) draw ``sum min(draw, L) = budget``
    (..., ): the busiest GPUs are lowered first, to the same limit (``nvidia-smi -pl L`` on every GPU of the host).
    ``inf`` where the GPUs already draw no more than the budget. Slots without a GPU have draw 0 and take no share.
    It is the water-filling level of max-min fair sharing (:func:`densim.models.cpu.maxmin_level`), vectorised."""
    from densim.models.cpu import maxmin_level

    return maxmin_level(draw_w, budget_w)
