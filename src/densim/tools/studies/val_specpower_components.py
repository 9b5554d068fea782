"""Study ``val-specpower-components``: server power at every SPECpower load level from components.

Source: 20 SPECpower_ssj2008 results, 2008-2017, six vendors (Supermicro, Fujitsu, IBM, HP, Dell, Huawei),
catalog ``specpower.yaml`` (each result's spec.org URL, the transcription it was read from, and the CPU's
datasheet figures with their marks). The six CloudSim servers of ``val-specpower-1s``/``-2s`` are among them.

Model (``densim.models.power`` ``component``; docs/background/power.md "Server power from components"): the
idle floor, the step on leaving package sleep, and the convex rise of the cores as the governor raises the
clock (dynamic power ~ f V^2), anchored at the server's idle and full-load readings.

Per-server choice of model, by a rule on the CPU's datasheet written before the run (not on the curve):
CPUs with package C-states (Nehalem and later) get ``component``; Core 2-generation CPUs (no package C-state,
no turbo, a narrow EIST range) get ``linear``: nothing in them makes a step or a strong convexity.

Inputs of each server's prediction:
* its own 0 % (active idle) and 100 % readings, as a datasheet-level user gives ``idle``/``peak`` (the same
  convention as ``val-specpower-1s``/``-2s``); the 0 % and 100 % figures are therefore inputs, not rows;
* its CPU's cores per socket, full-load clock and lowest clock (catalog, datasheet (R) or rule (E));
* two shape parameters shared by all servers (``step_share``, ``busy_target``), fitted by least squares on the
  nine intermediate levels of the *other* ``component`` servers (leave-one-server-out): no parameter is
  fitted to any figure of the server predicted; ``v_floor`` = 0.5 (E), fixed.

Checked figures: each of the nine intermediate levels (10 %, ..., 90 %) of each server, one row each.
Tolerance: +/-10 % (a priori, as ``val-specpower-2s``: the spread between comparable servers' curves).

The idle floor and the full-load power (the 0 % and 100 % rows), from the datasheet only (added after the
first run of the rows above, before its own first run): per class of CPU (package C-states or not),
``P_idle = a + b S TDP`` and ``P_peak = c + d S TDP`` (S sockets, TDP from the datasheet; a and c the
platform: board, memory, fans, disks, PSU loss; b and d the packages' idle and full-load share of TDP), the
four coefficients fitted by least squares on the *other* servers of the class (leave-one-server-out; a class
of n servers gives each fold n - 1). Rows: active idle and 100 % of each server. Tolerance +/-25 % (a priori:
the platform, memory amount and PSU are not in the inputs, and they move idle power by tens of watts). The
curve from these two predictions and the shape above (every level from the datasheet alone) is reported in
the runs, not as rows.

Added after the first runs (catalog section ``specpower_ends``; written before its own first run): seven
2018-2023 results (HPE, ASUS, Dell, Fujitsu; AMD EPYC 7551P/7702/7742/9654, Xeon 8180/8490H) whose intermediate
levels are not in a readable transcription. Their idle and 100 % rows use the same rule, ``a + b S TDP`` fitted on
every other server of the class (the 20 above and the other six); tolerance +/-25 %. The 20 servers' own rows keep
their fits on the 20 (unchanged).

Also reported (runs, not rows): the linear model's errors on the same levels (before), both models on every
server (so the rule's choice can be checked against the data), the parameters of each fold, and the fit on all
servers (the defaults of ``PowerComponents``: calibration).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from densim.tools.studies.base import Study, headline

TOLERANCE = 0.10
LEVELS = np.linspace(0.0, 1.0, 11)
V_FLOOR = 0.5  # (E) V/V_top extrapolated to f = 0, fixed before the run
SOURCE = "SPECpower_ssj2008 results (spec.org/power_ssj2008/results), 20 servers 2008-2017; catalog specpower.yaml"


@lru_cache(maxsize=1)
def servers() -> tuple[dict[str, Any], ...]:
    """The catalog's SPECpower results with their CPU as :class:`~densim.models.hardware.PowerComponents` inputs."""
    from densim.catalog.core import builtin_catalog
    from densim.models.hardware import PowerComponents

    cat = builtin_catalog()
    out = []
    for name in cat.names("specpower_results"):
        e = cat.raw("specpower_results", name)
        cpu = e["cpu"]
        comp = PowerComponents(cores_per_socket=cpu["cores_per_socket"], top_clock=cpu["top_clock"],
                               min_clock=cpu["min_clock"], package_c_states=cpu["package_c_states"], v_floor=V_FLOOR)
        out.append({**e, "components": comp, "points": np.asarray(e["points_w"], dtype=float),
                    "year": int(str(e["result"]).rsplit("power_ssj2008-", 1)[1][:4])})
    return tuple(sorted(out, key=lambda s: (s["year"], s["name"])))


@lru_cache(maxsize=1)
def ends_only() -> tuple[dict[str, Any], ...]:
    """The catalog's results with only their idle and 100 % readings (``specpower_ends``)."""
    from densim.catalog.core import builtin_catalog

    cat = builtin_catalog()
    out = []
    for name in cat.names("specpower_ends"):
        e = cat.raw("specpower_ends", name)
        pts = np.full(11, np.nan)
        pts[0], pts[10] = float(e["idle_w"]), float(e["peak_w"])
        out.append({**e, "points": pts, "year": int(e["year"])})
    return tuple(sorted(out, key=lambda s: (s["year"], s["name"])))


def choose_model(s: dict[str, Any]) -> tuple[str, str]:
    """The model the CPU's datasheet supports, and why (the rule, not the curve)."""
    cpu = s["cpu"]
    if cpu["package_c_states"]:
        return "component", (f"{cpu['model']}: package C-states (idle package sleeps, so light load costs a step) and a "
                             f"{float(s['components'].min_mhz):.0f}-{float(s['components'].top_mhz):.0f} MHz clock range the "
                             "governor climbs (convex rise)")
    return "linear", (f"{cpu['model']}: no package C-state (no step) and EIST's narrow "
                      f"{float(s['components'].min_mhz):.0f}-{float(s['components'].top_mhz):.0f} MHz range, no turbo: a straight line")


def curve(s: dict[str, Any], model: str, step_share: float | None = None, busy_target: float | None = None) -> np.ndarray:
    """Predicted power (W) at the 11 levels from the server's idle and peak readings."""
    from densim.models.power import component_w, linear_w

    idle, peak = float(s["points"][0]), float(s["points"][-1])
    if model == "linear":
        return np.asarray(linear_w(LEVELS, idle, peak))
    c = s["components"].model_copy(update={k: v for k, v in (("step_share", step_share), ("busy_target", busy_target))
                                           if v is not None})
    return np.asarray(component_w(LEVELS, idle, peak, c))


def fit_shape(train: list[dict[str, Any]]) -> tuple[float, float]:
    """``step_share``, ``busy_target`` minimising the squared relative errors at 10-90 % over ``train``."""
    from scipy.optimize import least_squares

    def resid(x):
        return np.concatenate([curve(s, "component", x[0], x[1])[1:10] / s["points"][1:10] - 1.0 for s in train])

    r = least_squares(resid, x0=[0.2, 0.8], bounds=([0.0, 0.3], [0.9, 1.0]))
    return float(r.x[0]), float(r.x[1])


TOLERANCE_ENDS = 0.25


def total_tdp_w(s: dict[str, Any]) -> float:
    from densim.units import parse

    return float(s["sockets"]) * parse(s["cpu"]["tdp"], "W")


def fit_ends(train: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """``(a, b)`` of ``P = a + b S TDP`` for idle (0 %) and full load (100 %), least squares over ``train``."""
    x = np.array([total_tdp_w(s) for s in train])
    A = np.column_stack([np.ones_like(x), x])
    out = {}
    for key, k in (("idle", 0), ("peak", 10)):
        y = np.array([s["points"][k] for s in train])
        coef, *_ = np.linalg.lstsq(A, y, rcond=None)
        out[key] = (float(coef[0]), float(coef[1]))
    return out


def evaluate() -> dict[str, Any]:
    """Leave-one-server-out predictions of every server, the linear baseline and the all-server fit."""
    ss = servers()
    comp = [s for s in ss if choose_model(s)[0] == "component"]
    rows = []
    for s in ss:
        model, why = choose_model(s)
        others = [t for t in comp if t["name"] != s["name"]]
        step, busy = fit_shape(others)
        c_curve = curve(s, "component", step, busy)
        l_curve = curve(s, "linear")
        chosen = c_curve if model == "component" else l_curve
        cls = [t for t in ss if t["name"] != s["name"] and t["cpu"]["package_c_states"] == s["cpu"]["package_c_states"]]
        ends = fit_ends(cls)
        tdp = total_tdp_w(s)
        idle_hat = ends["idle"][0] + ends["idle"][1] * tdp
        peak_hat = ends["peak"][0] + ends["peak"][1] * tdp
        shape = (chosen - s["points"][0]) / (s["points"][-1] - s["points"][0])
        strict = idle_hat + (peak_hat - idle_hat) * shape
        rows.append({"server": s["name"], "label": s["label"], "vendor": s["vendor"], "year": s["year"],
                     "result": s["result"], "model": model, "why": why,
                     "fold": {"step_share": step, "busy_target": busy, "fitted_on": len(others)},
                     "measured_w": s["points"].tolist(), "predicted_w": chosen.tolist(),
                     "component_w": c_curve.tolist(), "linear_w": l_curve.tolist(),
                     "total_tdp_w": tdp, "ends_fold": {**ends, "fitted_on": len(cls)},
                     "idle_predicted_w": float(idle_hat), "peak_predicted_w": float(peak_hat),
                     "datasheet_only_w": strict.tolist(),
                     "datasheet_only_mape_pct": float(100 * np.mean(np.abs(strict / s["points"] - 1))),
                     "component_mape_pct": float(100 * np.mean(np.abs(c_curve[1:10] / s["points"][1:10] - 1))),
                     "linear_mape_pct": float(100 * np.mean(np.abs(l_curve[1:10] / s["points"][1:10] - 1)))})
        # which model the server's own curve favours (hindsight, for checking the rule; never used to choose)
        rows[-1]["data_favours"] = "component" if rows[-1]["component_mape_pct"] < rows[-1]["linear_mape_pct"] else "linear"
        rows[-1]["rule_agrees_with_data"] = rows[-1]["data_favours"] == model
    step_all, busy_all = fit_shape(comp)
    ends_rows = []
    pool = list(ss) + list(ends_only())
    for s in ends_only():
        cls = [t for t in pool if t["name"] != s["name"] and t["cpu"]["package_c_states"] == s["cpu"]["package_c_states"]]
        ends = fit_ends(cls)
        tdp = total_tdp_w(s)
        ends_rows.append({"server": s["name"], "label": s["label"], "vendor": s["vendor"], "year": s["year"],
                          "result": s.get("result") or ("SPECpower results list (cloud-carbon-footprint/cloud-carbon-coefficients), "
                                                         f"{s['listed_in']}"),
                          "total_tdp_w": tdp, "ends_fold": {**ends, "fitted_on": len(cls)},
                          "measured_w": [float(s["points"][0]), float(s["points"][10])],
                          "idle_predicted_w": ends["idle"][0] + ends["idle"][1] * tdp,
                          "peak_predicted_w": ends["peak"][0] + ends["peak"][1] * tdp})
    return {"servers": rows, "ends_only": ends_rows,
            "fit_all": {"step_share": step_all, "busy_target": busy_all, "v_floor": V_FLOOR, "fitted_on": len(comp)}}


def run(out_dir: Path, seed: int) -> dict[str, Any]:
    del out_dir
    ev = evaluate()
    heads = []
    lin_err, chosen_err, strict_err = [], [], []
    for r in ev["servers"]:
        meas, pred = np.asarray(r["measured_w"]), np.asarray(r["predicted_w"])
        est = [f"CPU {r['label']}: cores, full-load and lowest clock (catalog specpower.yaml, (R)/(E)/(I) as marked)",
               "v_floor 0.5 (E)"]
        if r["model"] == "component":
            est.append(f"step_share {r['fold']['step_share']:.3f}, busy_target {r['fold']['busy_target']:.3f}: fitted on "
                       f"the {r['fold']['fitted_on']} other component servers (leave-one-server-out)")
        for k in range(1, 10):
            heads.append(headline(f"{r['label']} ({r['year']}): power at {10 * k} % load (W), {r['model']}",
                                  float(meas[k]), float(pred[k]), tolerance=TOLERANCE, relative=True,
                                  source=f"SPECpower_ssj2008 {r['result']}", unit="W", role="prediction",
                                  estimated_inputs=est))
        ends_est = [f"total TDP {r['total_tdp_w']:.0f} W (sockets x datasheet TDP; (E) where the SKU is not read)",
                    f"a + b S TDP fitted on the {r['ends_fold']['fitted_on']} other servers of the CPU class "
                    "(leave-one-server-out)"]
        for k, key in ((0, "idle"), (10, "peak")):
            heads.append(headline(f"{r['label']} ({r['year']}): power at {'active idle' if k == 0 else '100 % load'} (W), "
                                  "from TDP and sockets", float(meas[k]), float(r[f"{key}_predicted_w"]),
                                  tolerance=TOLERANCE_ENDS, relative=True, source=f"SPECpower_ssj2008 {r['result']}",
                                  unit="W", role="prediction", estimated_inputs=ends_est))
        strict_err += list(np.abs(np.asarray(r["datasheet_only_w"]) / meas - 1))
        lin_err += list(np.abs(np.asarray(r["linear_w"])[1:10] / meas[1:10] - 1))
        chosen_err += list(np.abs(pred[1:10] / meas[1:10] - 1))
    for r in ev["ends_only"]:
        est = [f"total TDP {r['total_tdp_w']:.0f} W (sockets x datasheet TDP)",
               f"a + b S TDP fitted on the {r['ends_fold']['fitted_on']} other servers of the CPU class "
               "(leave-one-server-out)"]
        src = r["result"] if r["result"].startswith("http") else r["result"]
        for k, key in ((0, "idle"), (1, "peak")):
            heads.append(headline(f"{r['label']} ({r['year']}): power at {'active idle' if k == 0 else '100 % load'} (W), "
                                  "from TDP and sockets", float(r["measured_w"][k]), float(r[f"{key}_predicted_w"]),
                                  tolerance=TOLERANCE_ENDS, relative=True, source=f"SPECpower_ssj2008 {src}", unit="W",
                                  role="prediction", estimated_inputs=est))
    lin_err, chosen_err = np.asarray(lin_err), np.asarray(chosen_err)
    summary = {"levels": int(lin_err.size),
               "rule_agrees_with_data": f"{sum(r['rule_agrees_with_data'] for r in ev['servers'])} of {len(ev['servers'])}",
               "linear": {"mape_pct": float(100 * lin_err.mean()), "within": int((lin_err <= TOLERANCE + 1e-12).sum())},
               "chosen": {"mape_pct": float(100 * chosen_err.mean()), "within": int((chosen_err <= TOLERANCE + 1e-12).sum())},
               "datasheet_only_all_levels": {"levels": len(strict_err), "mape_pct": float(100 * np.mean(strict_err)),
                                             "within_25pct": int((np.asarray(strict_err) <= 0.25 + 1e-12).sum())}}
    return {"study": "val-specpower-components", "seed": seed, "headline": heads,
            "runs": {"servers": ev["servers"], "ends_only": ev["ends_only"], "fit_all": ev["fit_all"],
                     "before_after": summary},
            "figures": [figure(ev["servers"])]}


def figure(rows: list[dict[str, Any]]) -> dict[str, Any]:
    data = []
    x = (100 * LEVELS).tolist()
    for r in rows:
        meas = np.asarray(r["measured_w"])
        span = meas[-1] - meas[0]
        norm = lambda y: ((np.asarray(y) - meas[0]) / span).tolist()  # noqa: E731 - share of the idle-to-peak span
        data.append({"type": "scatter", "mode": "markers", "name": f"{r['label']} (SPEC)", "x": x, "y": norm(meas)})
        data.append({"type": "scatter", "mode": "lines", "name": f"{r['label']} ({r['model']})", "x": x,
                     "y": norm(r["predicted_w"])})
    return {"data": data, "layout": {"title": {"text": "SPECpower curves as a share of the idle-to-peak span: readings vs model"},
                                     "xaxis": {"title": {"text": "target load (%)"}},
                                     "yaxis": {"title": {"text": "(P - P_idle) / (P_peak - P_idle)"}}}}


STUDY = Study(
    name="val-specpower-components",
    description="Validation: server power at every SPECpower level (20 servers, 2008-2017) from the component model",
    run=run,
    source=SOURCE,
    tags=("validation", "power", "no-queueing"),
    area="power",
)
