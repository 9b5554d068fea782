"""Helpers shared by the readers."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from densim.errors import InputError


def check_finite_nonneg(values: np.ndarray, source: str | Path, column: str, row_offset: int = 0, rows: np.ndarray | None = None) -> None:
    """Raise :class:`InputError` at the first NaN or negative value of ``values``."""
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        i = int(np.argmax(bad))
        row = int(rows[i]) if rows is not None else i + row_offset
        what = "not a number" if not np.isfinite(values[i]) else f"negative value {values[i]:g}"
        raise InputError(source, f"row {row}, column {column!r}", what)
