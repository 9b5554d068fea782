"""The engine's uniform time grid and exact resampling of piecewise-constant series onto it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TimeGrid:
    """``n_steps`` steps of ``step_s`` seconds from ``start_s`` (Unix seconds or 0)."""

    start_s: float
    step_s: float
    n_steps: int

    @property
    def horizon_s(self) -> float:
        return self.step_s * self.n_steps

    def edges_s(self, t0: int = 0, t1: int | None = None) -> np.ndarray:
        t1 = self.n_steps if t1 is None else t1
        return self.start_s + self.step_s * np.arange(t0, t1 + 1, dtype=np.float64)


def resample_piecewise(
    seg_start_s: np.ndarray,
    seg_dur_s: np.ndarray,
    seg_value: np.ndarray,
    seg_owner: np.ndarray,
    n_owners: int,
    edges_s: np.ndarray,
) -> np.ndarray:
    """Mean of piecewise-constant series over grid intervals, all owners at once.

    Segment ``i`` holds value ``seg_value[i]`` over ``[seg_start_s[i], seg_start_s[i] + seg_dur_s[i])``
    for owner (VM) ``seg_owner[i]``; segments of one owner must not overlap and be sorted by start.
    Time outside every segment counts as zero. Returns ``(len(edges_s) - 1, n_owners)`` float32 means.

    The cumulative integral ``W(t)`` of each owner is piecewise linear; evaluating it at the grid
    edges and differencing gives exact interval integrals, so total work is conserved whatever the
    step. All owners are handled by one ``np.interp`` over a concatenated, offset time axis.
    """
    n_edges = edges_s.size
    out = np.zeros((n_edges - 1, n_owners), dtype=np.float32)
    if seg_start_s.size == 0 or n_edges < 2:
        return out
    order = np.lexsort((seg_start_s, seg_owner))
    start = seg_start_s[order].astype(np.float64)
    dur = seg_dur_s[order].astype(np.float64)
    val = seg_value[order].astype(np.float64)
    own = seg_owner[order].astype(np.int64)
    # knots: for each segment its start and end; cumulative work is linear inside a segment and
    # flat in gaps, so the knot list (start_i, W_before_i), (end_i, W_after_i) describes W exactly
    work = val * dur
    cum_after = np.cumsum(work)
    owner_first = np.r_[True, own[1:] != own[:-1]]
    base = np.maximum.accumulate(np.where(owner_first, np.arange(own.size), 0))
    before_owner = np.where(base > 0, cum_after[base - 1], 0.0)
    w_after = cum_after - before_owner
    w_before = w_after - work
    span = max(float(edges_s[-1] - edges_s[0]), float(start.max() + dur.max() - min(start.min(), edges_s[0]))) + 1.0
    t_min = min(float(start.min()), float(edges_s[0]))
    offset = (own.astype(np.float64)) * 2.0 * span
    kx = np.empty(2 * own.size)
    ky = np.empty(2 * own.size)
    kx[0::2] = start - t_min + offset
    kx[1::2] = start + dur - t_min + offset
    ky[0::2] = w_before
    ky[1::2] = w_after
    # per-owner query points: edges shifted into the owner's band
    present = np.unique(own)
    q = (edges_s[None, :] - t_min) + (present.astype(np.float64) * 2.0 * span)[:, None]
    # left of an owner's first knot W=0; right of its last knot W=total: add guard knots
    totals = w_after[np.r_[own[1:] != own[:-1], True]]
    gx = np.concatenate([present * 2.0 * span - 0.25 * span, present * 2.0 * span + 1.25 * span])
    gy = np.concatenate([np.zeros(present.size), totals])
    allx = np.concatenate([kx, gx])
    ally = np.concatenate([ky, gy])
    srt = np.argsort(allx, kind="stable")
    cum_at_edges = np.interp(q.ravel(), allx[srt], ally[srt]).reshape(q.shape)
    step = np.diff(edges_s)
    out[:, present] = (np.diff(cum_at_edges, axis=1) / step[None, :]).T.astype(np.float32)
    return out
