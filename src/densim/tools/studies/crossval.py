"""Leave-one-out cross-validation of the older studies' fitted parameters (issue 15).

Where one source gives several figures of one mechanism, the parameters are fitted on all figures
but one and the model then predicts the figure left out, for every choice of the one left out.
Each function returns one row per fold: ``left_out`` (the figure), ``measured``, ``predicted``,
``error`` (``predicted / measured - 1``), ``fit`` (what was re-fitted and to what value) and
``note``. The SPECpower load levels are cross-validated by
:func:`densim.tools.studies.validation.specpower_loo`.

* :func:`swap_sql_loo`: swap-device-sql (VMware 2009 [S8]): three swap devices, two fitted
  constants (the per-fault software time and the ``oltp-sql`` access rate). Each fold fits both on
  two devices (exactly: two equations, two unknowns) and predicts the third.
* :func:`host_swap_cache_loo`: host-swap-cache (Intel IT 2016 [S11], figures (B)): two point figures
  (2.3x at 150 %, SSD at 150 % = SAN at 125 %) and three parameters fitted together. With one figure
  left in, the parameter that figure pins is re-fitted: the 2.3x pins the scale (``tpch-hammerdb``
  ``access_rate_per_s``), the equal-degradation point the knee (``active_fraction``; the R it gives
  hardly moves with the access rate). The other two stay at their catalog values, which were fitted
  with *both* figures, so these errors are optimistic. The two bound figures (divergence at 100 % and
  at 125 %) are checked under each re-fit.
* :func:`kvm_tuning_loo`: kvm-tuning (seeds/003): the published +54 % total and the guide's
  illustrative step split 1.20 x 1.15 x 1.12 ((E), modelling guide §3.6.2; not published). Each
  step rests mainly on one fitted parameter (TLB miss rate -> hugepages, virtio-net host cycles ->
  SR-IOV, LLC miss rate -> node binding). Leaving a step out, its parameter is re-fitted to the
  published total with the other two at their catalog values, and the step is predicted; leaving
  the total out, the catalog values (fitted to the three steps) predict it.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np


def _row(source: str, left_out: str, measured: float, predicted: float, fit: dict[str, Any], note: str = "",
         unit: str = "") -> dict[str, Any]:
    return {"source": source, "left_out": left_out, "measured": float(measured), "predicted": float(predicted),
            "error": float(predicted) / float(measured) - 1.0 if measured else math.nan, "unit": unit,
            "fit": fit, "note": note}


def _bisect(g, lo: float, hi: float, iterations: int = 40) -> float | None:
    """Root of ``g`` on ``[lo, hi]`` (log-spaced bisection); ``None`` when the ends do not bracket it."""
    glo, ghi = g(lo), g(hi)
    if glo == 0:
        return lo
    if ghi == 0:
        return hi
    if np.sign(glo) == np.sign(ghi):
        return None
    for _ in range(iterations):
        mid = math.sqrt(lo * hi)
        gm = g(mid)
        if gm == 0:
            return mid
        if np.sign(gm) == np.sign(glo):
            lo, glo = mid, gm
        else:
            hi = mid
    return math.sqrt(lo * hi)


# --------------------------------------------------------------------------------------------- swap-device-sql
def swap_sql_loo() -> list[dict[str, Any]]:
    """Fit ``fault_software_time`` and the ``oltp-sql`` access rate on two swap devices, predict the third."""
    from scipy.optimize import least_squares

    from densim.plant.memory import memory_params

    from densim.catalog.core import builtin_catalog
    from densim.models.workload_memory import load_workload
    from densim.spec.memory import MemorySettings
    from densim.tools.studies import swap_device_sql as S

    cat = builtin_catalog()
    wl0 = load_workload("oltp-sql", cat)
    p0 = memory_params(MemorySettings(model="vsphere-like"), cat)

    def x_of(label: str, t_sw: float, rate: float) -> float:
        wl = wl0.model_copy(update={"access_rate_per_s": rate})
        return float(S.throughput(S.DEVICES[label][0], workload=wl, params=replace(p0, software_s=t_sw))["throughput"][0])

    rows = []
    for out in S.DEVICES:
        fit_on = [lab for lab in S.DEVICES if lab != out]

        def resid(theta, fit_on=fit_on):
            t_sw, rate = np.exp(theta)
            return [x_of(lab, t_sw, rate) / S.DEVICES[lab][1] - 1.0 for lab in fit_on]

        sol = least_squares(resid, np.log([p0.software_s, wl0.access_rate_per_s]),
                            bounds=(np.log([1e-7, 1.0]), np.log([1e-1, 1e6])), xtol=1e-12, ftol=1e-12)
        t_sw, rate = (float(v) for v in np.exp(sol.x))
        worst = float(np.max(np.abs(sol.fun)))
        note = "exact fit" if worst < 1e-4 else f"no exact fit: residual up to {100 * worst:.1f} % on the fitted devices"
        if t_sw <= 2e-7:
            note += "; software time at its lower bound (0)"
        rows.append(_row(S.SOURCE, f"swap on {out}", 100 * S.DEVICES[out][1], 100 * x_of(out, t_sw, rate),
                         {"fitted_on": fit_on, "fault_software_time_ms": 1e3 * t_sw, "access_rate_per_s": rate,
                          "max_fit_residual": worst}, note, unit="% of unconstrained"))
    return rows


# --------------------------------------------------------------------------------------------- host-swap-cache
HSC_POINTS = {"transactions SSD / SAN at 150 %": 2.3, "R the SSD host tolerates at the SAN host's 125 % degradation": 1.5}
#: the parameter each kept figure pins: the 2.3x sets the scale (access rate), the equal-degradation R
#: the knee (active fraction; the filler VMs carry the same value, as in the catalog)
HSC_PARAM = {"transactions SSD / SAN at 150 %": "access_rate_per_s",
             "R the SSD host tolerates at the SAN host's 125 % degradation": "active_fraction"}


def _hsc_figures(access_rate_per_s: float | None = None, active_fraction: float | None = None) -> dict[str, float]:
    from densim.catalog.core import builtin_catalog
    from densim.models.workload_memory import load_workload
    from densim.tools.studies import host_swap_cache as H

    cat = builtin_catalog()
    tpch, filler = load_workload("tpch-hammerdb", cat), load_workload("enterprise-server-load", cat)
    if access_rate_per_s is not None:
        tpch = tpch.model_copy(update={"access_rate_per_s": access_rate_per_s})
    if active_fraction is not None:
        tpch = tpch.model_copy(update={"active_fraction": active_fraction})
        filler = filler.model_copy(update={"active_fraction": active_fraction})
    san, ssd = H.curve(with_cache=False, tpch=tpch, filler=filler), H.curve(with_cache=True, tpch=tpch, filler=filler)
    r = ssd["R"]

    def at(arr, x):
        return float(np.interp(x, r, arr))

    t_san, t_ssd = 1.0 / san["throughput"], 1.0 / ssd["throughput"]
    return {
        "transactions SSD / SAN at 150 %": at(ssd["throughput"], 1.5) / at(san["throughput"], 1.5),
        "R the SSD host tolerates at the SAN host's 125 % degradation": H.tolerated_r(r, ssd["throughput"], at(san["throughput"], 1.25)),
        "divergence at 100 %": at(t_san, 1.0) / at(t_ssd, 1.0) - 1.0,
        "divergence at 125 %": at(t_san, 1.25) / at(t_ssd, 1.25) - 1.0,
    }


def host_swap_cache_loo() -> list[dict[str, Any]]:
    """Re-fit the parameter the kept point figure pins, predict the other; the bound figures checked under each fit."""
    from densim.catalog.core import builtin_catalog
    from densim.models.workload_memory import load_workload
    from densim.tools.studies import host_swap_cache as H

    tpch = load_workload("tpch-hammerdb", builtin_catalog())
    rows = []
    for out, measured in HSC_POINTS.items():
        (keep, target), = ((k, v) for k, v in HSC_POINTS.items() if k != out)
        param = HSC_PARAM[keep]
        v0 = float(getattr(tpch, param))
        lo, hi = (0.25 * v0, 4.0 * v0) if param == "access_rate_per_s" else (0.5, 1.0)
        grid = np.geomspace(lo, hi, 25)

        def g(x, keep=keep, param=param, target=target):
            return _hsc_figures(**{param: float(x)})[keep] - target

        vals = [g(x) for x in grid]
        value = None
        for i in range(len(grid) - 1):
            if np.isfinite(vals[i]) and np.isfinite(vals[i + 1]) and np.sign(vals[i]) != np.sign(vals[i + 1]):
                value = _bisect(g, float(grid[i]), float(grid[i + 1]), 30)
                break
        others = [p for p in ("active_fraction", "access_rate_per_s", "balloon_active_share") if p != param]
        note = (f"{param} re-fitted to the kept figure; {' and '.join(others)} held at catalog values, which were fitted "
                "with both figures (the held values have seen the figure left out: optimistic)")
        if value is None:
            j = int(np.nanargmin(np.abs(vals)))
            value = float(grid[j])
            note += f"; no exact fit in {lo:.3g}-{hi:.3g}, closest {keep} = {vals[j] + target:.3g}"
        figs = _hsc_figures(**{param: value})
        bounds_ok = abs(figs["divergence at 100 %"]) <= 0.05 and figs["divergence at 125 %"] >= 0.10
        rows.append(_row(H.SOURCE, out, measured, figs[out],
                         {"fitted_on": [keep], "parameter": param, "value": value, "catalog_value": v0,
                          "divergence_100": figs["divergence at 100 %"], "divergence_125": figs["divergence at 125 %"],
                          "bounds_hold": bool(bounds_ok)},
                         note + ("" if bounds_ok else "; a bound figure (divergence at 100 % or 125 %) fails under this fit"),
                         unit="x" if out.startswith("transactions") else "ratio"))
    return rows


# --------------------------------------------------------------------------------------------- kvm-tuning
KVM_TOTAL = 1.54  # published: +54 % default -> tuned (seeds/003)
KVM_STEPS = {"+hugepages": 1.20, "+SR-IOV": 1.15, "+node binding (manual)": 1.12}  # (E) modelling guide §3.6.2 split
KVM_PARAM = {"+hugepages": "tlb_mpki_4k scale", "+SR-IOV": "virtio-net host_cycles scale", "+node binding (manual)": "llc_mpki scale"}


def _kvm_inputs(tlb: float = 1.0, host_cycles: float = 1.0, llc: float = 1.0):
    """The built-in tile with its TLB and LLC miss rates scaled, and the catalog with virtio-net's host cycles scaled."""
    from densim.catalog.core import builtin_catalog
    from densim.tools.tiles.core import builtin_tile

    tile = builtin_tile()
    classes = [c.model_copy(update={"visits": [v.model_copy(update={"tlb_mpki_4k": v.tlb_mpki_4k * tlb, "llc_mpki": v.llc_mpki * llc})
                                                for v in c.visits]}) for c in tile.classes]
    tile = tile.model_copy(update={"classes": classes})
    cat = builtin_catalog()
    entry = dict(cat.raw("virt_io_paths", "virtio-net"))
    entry["host_cycles"] = float(entry["host_cycles"]) * host_cycles
    return tile, cat.layered({"virt_io_paths": [entry]})


def _kvm_gains(seed: int, **scales: float) -> dict[str, float]:
    from densim.tools.studies.kvm_tuning import step_scores

    tile, cat = _kvm_inputs(**scales)
    s = step_scores(seed, tile=tile, catalog=cat)
    keys = list(s)
    out = {k: s[k] / s[p] for p, k in zip(keys[:-1], keys[1:])}
    out["total"] = s[keys[-1]] / s[keys[0]]
    return out


def kvm_tuning_loo(seed: int = 42) -> list[dict[str, Any]]:
    """Leave out each step (re-fit its parameter to the published total) and the total (catalog values)."""
    from densim.tools.studies.kvm_tuning import SOURCE

    arg = {"+hugepages": "tlb", "+SR-IOV": "host_cycles", "+node binding (manual)": "llc"}
    rows = []
    base = _kvm_gains(seed)
    rows.append(_row(SOURCE, "score gain, default to tuned (published +54 %)", KVM_TOTAL, base["total"],
                     {"fitted_on": list(KVM_STEPS), "scales": {v: 1.0 for v in KVM_PARAM.values()}},
                     "catalog values: fitted to the three illustrative steps", unit="x"))
    for step, measured in KVM_STEPS.items():
        # the score moves in steps of a tenth of a tile, and the total is not monotone in every
        # parameter: scan a grid instead of root-finding and keep the point closest to the total
        grid = [float(x) for x in np.geomspace(0.7, 1.5, 11)]
        gains = {x: _kvm_gains(seed, **{arg[step]: x}) for x in grid}
        x = min(grid, key=lambda v: (abs(gains[v]["total"] - KVM_TOTAL), abs(math.log(v))))
        near = [gains[v][step] for v in grid if abs(gains[v]["total"] / KVM_TOTAL - 1.0) <= 0.02]
        g = gains[x]
        note = (f"{KVM_PARAM[step]} re-fitted to the published total on a grid 0.7-1.5x (the score moves in tenths of a tile); "
                f"the other two parameters at catalog values; total at the fit {g['total']:.3f}")
        if len(near) > 1:
            note += f"; {len(near)} grid points give the total within 2 %, predicting {min(near):.3f}-{max(near):.3f}"
        rows.append(_row(SOURCE, f"step {step} (illustrative {measured:.2f}, (E))", measured, g[step],
                         {"fitted_on": ["total"] + [k for k in KVM_STEPS if k != step], "parameter": KVM_PARAM[step],
                          "scale": x, "total_at_fit": g["total"],
                          "predicted_range_within_2pct": [min(near), max(near)] if near else None}, note, unit="x"))
    return rows


def all_loo(seed: int = 42) -> dict[str, list[dict[str, Any]]]:
    """Every leave-one-out table of the older studies, by study name."""
    return {"swap-device-sql": swap_sql_loo(), "host-swap-cache": host_swap_cache_loo(), "kvm-tuning": kvm_tuning_loo(seed)}
