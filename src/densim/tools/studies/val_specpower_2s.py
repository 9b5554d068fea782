"""Study ``val-specpower-2s``: power of two 2-socket Westmere servers between idle and full load.

Source: SPECpower_ssj2008 results power_ssj2008-20100315-00239 (IBM x3550 M3, 2x Xeon X5670, 12 GB)
and power_ssj2008-20110406-00368 (IBM x3550 M3, 2x Xeon X5675, 16 GB), SPEC 2010/2011, table of
average active power at each target load; read from CloudSim's ``PowerModelSpecPowerIbmX3550XeonX5670``
/ ``...X5675`` (Beloglazov & Buyya, CCPE 2012), modelling guide §6.1 [S40].

Set-up: the SPEC run drives the server at 100 %, 90 %, ..., 10 % of its calibrated ssj_ops and at
active idle, and reports the average power at each level.

Inputs: only the 0 % (active idle) and 100 % readings of each table, as a datasheet-level user would
give them (``idle``/``peak`` of a server's ``power`` block), with the project's default power
model (``linear``, ``densim.models.power``).

Checked figures (measured, written down before the model was run):

* X5670: 156 W at 50 % load; mean of the nine intermediate levels (10-90 %) 162.3 W;
* X5675: 140 W at 50 % load; mean of the nine intermediate levels 145.6 W.

Tolerance: +/-10 % (a priori; the spread between comparable servers' curves is of that order).

Also reported, not checked: the Fan et al. curve ``idle + (peak - idle)(2u - u^1.4)`` from the same
two readings (the catalog's alternative for servers without a table), and the leave-one-out errors of
the 11-point table itself (:func:`densim.tools.studies.validation.specpower_loo`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from densim.tools.studies.base import Study, headline
from densim.tools.studies.validation import LEVELS, SPECPOWER, SPECPOWER_SOURCE, specpower_loo, specpower_prediction

SERVERS = ("ibm-x3550-2x-x5670", "ibm-x3550-2x-x5675")
TOLERANCE = 0.10


def evaluate(keys, *, mean_levels: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    heads, rows = [], {}
    for key in keys:
        t = SPECPOWER[key]
        pts = np.asarray(t["points_w"], float)
        lin = specpower_prediction(key, "linear")
        fan = specpower_prediction(key, "fan")
        src = f"{SPECPOWER_SOURCE}: {t['result']}"
        heads.append(headline(f"{t['label']}: power at 50 % load (W)", float(pts[5]), float(lin[5]), tolerance=TOLERANCE,
                              relative=True, source=src, unit="W", role="prediction"))
        if mean_levels:
            heads.append(headline(f"{t['label']}: mean power over the 10-90 % levels (W)", float(pts[1:10].mean()),
                                  float(lin[1:10].mean()), tolerance=TOLERANCE, relative=True, source=src, unit="W",
                                  role="prediction"))
        rows[key] = {
            "measured_w": pts.tolist(),
            "linear_w": lin.tolist(),
            "fan_w": fan.tolist(),
            "linear_max_abs_error_pct": float(100 * np.max(np.abs(lin[1:10] / pts[1:10] - 1))),
            "fan_max_abs_error_pct": float(100 * np.max(np.abs(fan[1:10] / pts[1:10] - 1))),
            "loo": specpower_loo(key),
        }
    return heads, rows


def figure(keys, title: str) -> dict[str, Any]:
    data = []
    for key in keys:
        t = SPECPOWER[key]
        x = (100 * LEVELS).tolist()
        data.append({"type": "scatter", "mode": "markers", "name": f"{t['label']} (SPEC)", "x": x, "y": t["points_w"]})
        data.append({"type": "scatter", "mode": "lines", "name": f"{t['label']} (linear from idle/peak)", "x": x,
                     "y": specpower_prediction(key, "linear").tolist()})
    return {"data": data, "layout": {"title": {"text": title}, "xaxis": {"title": {"text": "target load (%)"}},
                                     "yaxis": {"title": {"text": "average power (W)"}, "rangemode": "tozero"}}}


def run(out_dir: Path, seed: int) -> dict[str, Any]:
    del out_dir
    heads, rows = evaluate(SERVERS, mean_levels=True)
    return {"study": "val-specpower-2s", "seed": seed, "headline": heads, "runs": rows,
            "figures": [figure(SERVERS, "2-socket Westmere servers: SPECpower readings vs linear model")]}


STUDY = Study(
    name="val-specpower-2s",
    description="Validation: power of 2-socket Xeon X5670/X5675 servers at intermediate load, predicted from idle and peak",
    run=run,
    source=SPECPOWER_SOURCE,
    tags=("validation", "power", "no-queueing"),
    area="power",
)
