"""Saturated resources: which parts of a run were at or above 90 % busy, for how long, at what peak.

Every run and study summary carries a ``saturation`` list built with these functions, so that a
figure resting on a saturated resource (where queueing models are at their least accurate and
small input errors move the answer most) is visible next to the figure. Rows look like::

    {"resource": "datastore ds-0", "kind": "datastore", "peak": 0.97, "steps": 12,
     "duration_s": 3600.0, "share_of_time": 0.04}

``steps``/``duration_s``/``share_of_time`` count the time steps at or above the threshold; a
steady-state model (one operating point, no time axis) reports ``steps = 1`` and
``duration_s = None`` ("the whole run").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

THRESHOLD = 0.90


def saturation_rows(
    names: Sequence[str],
    busy: np.ndarray,
    *,
    kind: str,
    step_s: float | None = None,
    threshold: float = THRESHOLD,
) -> list[dict[str, Any]]:
    """Rows for the resources of one kind whose busy share reached ``threshold`` in some step.

    ``busy`` is shaped ``(steps, len(names))`` (a time series per resource) or ``(len(names),)``
    (one steady-state operating point per resource). Busy shares are fractions (1.0 = 100 %).
    """
    b = np.asarray(busy, dtype=float)
    steady = b.ndim == 1
    if steady:
        b = b[None, :]
    if b.ndim != 2 or b.shape[1] != len(names):
        raise ValueError(f"busy must be (steps, {len(names)}) or ({len(names)},), got {np.shape(busy)}")
    if b.size == 0:
        return []
    hot = b >= threshold
    counts = hot.sum(axis=0)
    peaks = np.nanmax(b, axis=0)
    rows = []
    for j in np.flatnonzero(counts):
        n = int(counts[j])
        rows.append({
            "resource": str(names[j]),
            "kind": kind,
            "peak": float(peaks[j]),
            "steps": n,
            "duration_s": None if steady or step_s is None else float(n * step_s),
            "share_of_time": 1.0 if steady else float(n / b.shape[0]),
        })
    return rows


def summarise(rows: Iterable[dict[str, Any]], limit: int = 200) -> list[dict[str, Any]]:
    """Saturation rows sorted by peak (highest first) then name, cut to ``limit`` rows."""
    out = sorted(rows, key=lambda r: (-r["peak"], r["resource"]))
    return out[:limit]
