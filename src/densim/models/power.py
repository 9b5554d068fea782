"""Server power against CPU utilisation (modelling guide §6.1).

Each model is a pure vectorised function ``P(u)`` with utilisation clamped to [0, 1]. Energy is the
time integral of power: the engine holds load constant within a step, so energy = sum P x step,
exact for piecewise-constant load and independent of the step for a constant load.
"""

from __future__ import annotations

import numpy as np

from densim.models.cpu_power import dynamic_power_share, governor_clock_busy
from densim.registry import Registry

POWER_MODELS: Registry = Registry("power-model", default="linear")


@POWER_MODELS.register("none", description="draws nothing (do-nothing model)")
def none_w(util, **_):
    return np.zeros_like(np.asarray(util, dtype=np.float64))


@POWER_MODELS.register("constant", description="constant draw regardless of load", source="OpenDC PowerModels.constant")
def constant_w(util, idle_w, **_):
    return np.full_like(np.asarray(util, dtype=np.float64), idle_w)


@POWER_MODELS.register("linear", description="P = idle + (peak - idle) u", source="CloudSim PowerModelLinear; Fan et al. ISCA 2007")
def linear_w(util, idle_w, peak_w, **_):
    u = np.clip(np.asarray(util, dtype=np.float64), 0.0, 1.0)
    return idle_w + (peak_w - idle_w) * u


@POWER_MODELS.register("sqrt", description="P = idle + (peak - idle) sqrt(u)",
                       source="OpenDC SqrtPowerModel (opendc-simulator-compute power models), used in its surf_week experiments")
def sqrt_w(util, idle_w, peak_w, **_):
    u = np.clip(np.asarray(util, dtype=np.float64), 0.0, 1.0)
    return idle_w + (peak_w - idle_w) * np.sqrt(u)


@POWER_MODELS.register("fan", description="P = idle + (peak - idle)(2u - u^r), r ~ 1.4", source="Fan, Weber, Barroso, ISCA 2007")
def fan_w(util, idle_w, peak_w, exponent=1.4, **_):
    u = np.clip(np.asarray(util, dtype=np.float64), 0.0, 1.0)
    return idle_w + (peak_w - idle_w) * (2.0 * u - u**exponent)


@POWER_MODELS.register(
    "table", description="piecewise-linear over 11 readings at 0, 10, ..., 100 % load", source="SPECpower_ssj2008; CloudSim PowerModelSpecPower"
)
def table_w(util, points_w, **_):
    u = np.clip(np.asarray(util, dtype=np.float64), 0.0, 1.0)
    pts = np.asarray(points_w, dtype=np.float64)
    if pts.ndim == 1:
        return np.interp(u, np.linspace(0.0, 1.0, pts.size), pts)
    # one table per host (H, 11) against util (..., H)
    x = u * (pts.shape[1] - 1)
    lo = np.clip(np.floor(x).astype(np.int64), 0, pts.shape[1] - 2)
    frac = x - lo
    h = np.broadcast_to(np.arange(pts.shape[0]), u.shape)
    return pts[h, lo] * (1.0 - frac) + pts[h, lo + 1] * frac


def host_power_w(util: np.ndarray, kind: np.ndarray, idle_w: np.ndarray, peak_w: np.ndarray,
                 table_w_: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """Power of many hosts with possibly different models; ``util`` is (steps, hosts).

    Every host's model is expressed as an 11-point table when it is linear or a table, so the common
    case is one vectorised interpolation; ``fan`` hosts are evaluated in closed form.
    """
    if table_w_.shape[0] and np.all(table_w_ == table_w_[0]):
        out = table_w(util, table_w_[0])  # one table for every host: a single np.interp
    else:
        out = table_w(util, table_w_)
    fan = kind == "fan"
    if fan.any():
        out[:, fan] = fan_w(util[:, fan], idle_w[fan], peak_w[fan], exponent[fan])
    sq = kind == "sqrt"
    if sq.any():  # closed form: the 11-point table is far off near u = 0, where sqrt is steepest
        out[:, sq] = sqrt_w(util[:, sq], idle_w[sq], peak_w[sq])
    return out


def as_table_w(spec) -> np.ndarray:
    """11-point table of a :class:`~densim.models.hardware.PowerSpec` (exact for linear and table)."""
    u = np.linspace(0.0, 1.0, 11)
    if spec.model == "table":
        return np.asarray(spec.points_w, dtype=np.float64)
    if spec.model == "none":
        return np.zeros(11)
    if spec.model == "constant":
        return np.full(11, spec.idle_w)
    if spec.model == "fan":
        return fan_w(u, spec.idle_w, spec.peak_w, spec.exponent)
    if spec.model == "sqrt":
        return sqrt_w(u, spec.idle_w, spec.peak_w)
    if spec.model == "component":  # exact at the 11 SPECpower levels; linear in between (the step sits in 0-10 %)
        return component_w(u, spec.idle_w, spec.peak_w, spec.component)
    return linear_w(u, spec.idle_w, spec.peak_w)


# ---- server power from components (issue 30) ----------------------------------------------------------------
#
# A server's power at load u is its idle floor plus the part of the idle-to-peak span the CPU packages add:
#
#     P(u) = P_idle + (P_peak - P_idle) * (p(u) - p(0)) / (p(1) - p(0))
#
# with p(u) the mean package power in units of its full-load value (the platform's load-dependent part, VR and
# PSU losses and fans, is taken proportional to package power, so it rides on the same shape; its fixed part is
# in P_idle). Per socket with N cores:
#
# * governor (demand-based switching, as SPECpower submissions run): the clock is the lowest that keeps each
#   core busy at most ``busy_target`` of the time, f = clip(u f_top / busy_target, f_min, f_top), and a core is
#   busy b = min(u f_top / f, 1) of the time. Without DVFS, f = f_top and b = u.
# * package C-states: the package (uncore, memory controller, ring/mesh) sleeps only when all N cores are idle
#   at once, probability q = (1 - b)^N (cores taken as independent, (E)); leaving package sleep costs the
#   ``step_share`` of the span at once: the jump from idle to light load. A CPU without package C-states has
#   no such step (q = 0 at every load but the idle floor is then already the awake package: the step is 0).
# * cores: dynamic power of a busy core ~ f V^2 with V/V_top = v_floor + (1 - v_floor) f/f_top (V falls with f
#   down to a floor), so the cores add (1 - step_share) b phi(f/f_top), phi(x) = x (v_floor + (1 - v_floor) x)^2:
#   the convex rise (the clock, and with it the voltage, climbs with load).
#
# p(u) = step_share (1 - q) + (1 - step_share) b phi(f / f_top);  p(0) = 0 and p(1) = 1 by construction.


def package_share(util, *, cores: int, top_mhz: float, min_mhz: float, step_share: float, busy_target: float,
                  v_floor: float, package_c_states: bool = True, dvfs: bool = True):
    """Mean package power at load ``util`` as a share of its full-load value above the idle floor (0 at idle, 1 at full)."""
    f, b = governor_clock_busy(util, top_mhz, min_mhz, busy_target, dvfs)
    phi = dynamic_power_share(f / float(top_mhz), v_floor)
    awake = 1.0 - (1.0 - b) ** int(cores) if package_c_states else np.zeros_like(b)
    return step_share * awake + (1.0 - step_share) * b * phi


@POWER_MODELS.register(
    "component",
    description="idle floor + package C-state step + convex core rise (governor clock, f V^2), anchored at idle and peak",
    source="issue 30; shape from densim.models.cpu_power's f V^2 and power gating; validated in val-specpower-components",
)
def component_w(util, idle_w, peak_w, component=None, **_):
    if component is None:
        raise ValueError("power model 'component' needs a 'component' block (cores_per_socket, top_clock, min_clock)")
    c = component if isinstance(component, dict) else component.model_dump()
    kw = {k: c[k] for k in ("top_mhz", "min_mhz", "step_share", "busy_target", "v_floor", "package_c_states", "dvfs")}
    u = np.asarray(util, dtype=np.float64)
    p = package_share(u, cores=int(c["cores_per_socket"]), **kw)
    p1 = package_share(1.0, cores=int(c["cores_per_socket"]), **kw)
    return idle_w + (peak_w - idle_w) * p / p1
