"""Put long-format samples (vm index, time, value) on a uniform steps x VMs grid."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from densim.errors import InputError
from densim.workloads.readers._checks import check_budget

# peak bytes per (step, VM) cell while gridding: float64 sums and means, int64 counts, float32 result
BYTES_PER_CELL = 28


def infer_step_s(times_s: np.ndarray) -> float:
    """The median gap between distinct sample times (300 s for most VM traces)."""
    u = np.unique(times_s)
    if u.size < 2:
        return 300.0
    return float(np.median(np.diff(u)))


def grid_steps(times_s: np.ndarray, step_s: float, start_s: float) -> int:
    """Steps of the grid that holds every sample (no allocation)."""
    if times_s.size == 0:
        return 0
    return int(np.rint((float(np.max(times_s)) - start_s) / step_s)) + 1


def to_grid(vm_idx: np.ndarray, times_s: np.ndarray, values: np.ndarray, n_vms: int, step_s: float | None = None,
            start_s: float | None = None, *, source: str | Path | None = None) -> tuple[np.ndarray, float, float]:
    """Mean of the samples that fall in each (step, VM) cell; cells without samples are 0.

    Returns ``(grid (steps, n_vms) float32, step_s, start_s)``. A sample at time t belongs to step
    ``round((t - start) / step)`` (samples sit on the grid points in every supported trace; duplicates,
    such as Bitbrains' repeated timestamps, are averaged). The grid is sized before it is allocated
    and refused above the memory budget (``--max-memory``).
    """
    times_s = np.asarray(times_s, dtype=np.float64)
    step = float(step_s) if step_s else infer_step_s(times_s)
    if not (np.isfinite(step) and step > 0):
        raise InputError(source, "step", f"the time step must be a positive number of seconds, got {step:g}")
    start = (float(times_s.min()) if times_s.size else 0.0) if start_s is None else float(start_s)
    n_steps = grid_steps(times_s, step, start)
    check_budget(float(n_steps) * n_vms * BYTES_PER_CELL,
                 f"the demand grid ({n_steps:,} steps of {step:g} s x {n_vms:,} VMs)", source)
    k = np.rint((times_s - start) / step).astype(np.int64)
    flat = k * n_vms + np.asarray(vm_idx, dtype=np.int64)
    sums = np.bincount(flat, weights=np.asarray(values, dtype=np.float64), minlength=n_steps * n_vms)
    cnt = np.bincount(flat, minlength=n_steps * n_vms)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(cnt > 0, sums / np.maximum(cnt, 1), 0.0)
    return mean.reshape(n_steps, n_vms).astype(np.float32), step, start
