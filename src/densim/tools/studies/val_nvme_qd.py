"""Studies ``val-optane-p4800x`` and ``val-nvme-p3700``: NVMe latency and IOPS at QD1 and QD16 from the datasheet.

Source (measured): B. Tallis, AnandTech, *Intel Optane SSD DC P4800X Review: A Deep Dive into 3D
XPoint Enterprise Performance*, 2017, page 4 "Checking Intel's Numbers", tables "4kB Random Read at
a Queue Depth of 1" and "... of 16":

=====================  ==================  ==================
drive                  QD1 mean latency    QD16 IOPS
=====================  ==================  ==================
Optane P4800X 375 GB   8.9 us              584.8 k
DC P3700 800 GB        77.9 us             167.2 k
=====================  ==================  ==================

Inputs (datasheets only, catalog ``validation.yaml``): P4800X typical latency < 10 us (10 us) and
550 k random-read IOPS (Intel product brief as tabulated by AnandTech, 2017); P3700 latency 20 us and
460 k random-read IOPS (Intel product specification, modelling guide §7.2 [S32]).

Model: one device as a multi-server station (``densim.models.devices``: ``c = IOPS x t1`` servers,
Little's law at saturation) driven closed-loop at 1 and 16 outstanding I/Os (exact MVA,
``densim.models.storage.solve_closed``), as Iometer/fio drive it.

Tolerances (a priori): +/-20 % on latency and on IOPS.

Expected weak spot, written before the run: Intel specifies the P3700's 20 us as a *sequential* 4 KB
latency; a random read pays the flash array read (~80 us), and its 460 k IOPS are rated at QD128
(4 workers x QD32). The device model takes ``read_latency`` as the random QD1 latency, so a datasheet
that gives the sequential figure will make it miss both the QD1 latency and (through ``c = IOPS x t1``,
too many servers at too short a service time) the QD16 throughput. Missing: a separate random-read
latency in the part schema (or a rule that refuses a sequential latency for random I/O), and the
rating depth of the IOPS figure, so ``c`` is not overstated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from densim.models.devices import DeviceSpec
from densim.models.storage import ArrayUnit, IoPattern, build_stations, solve_closed
from densim.catalog.core import builtin_catalog
from densim.tools.studies.base import Study, busy_check, headline

SOURCE = ("B. Tallis, AnandTech, 'Intel Optane SSD DC P4800X Review: A Deep Dive into 3D XPoint Enterprise "
          "Performance', 2017, p. 4 'Checking Intel's Numbers' (4 kB random read at QD1 and QD16)")
MEASURED = {
    # device: (QD1 mean latency us, QD16 IOPS)
    "intel-optane-p4800x-375gb": (8.9, 584.8e3),
    "intel-dc-p3700-800gb": (77.9, 167.2e3),
}
TOLERANCE = 0.20


def closed(device: str, outstanding: int) -> dict[str, float]:
    dev = builtin_catalog().get("devices", device, DeviceSpec)
    pat = IoPattern(read_fraction=1.0)
    st = build_stations([ArrayUnit("drive", dev, 1)], None, pat)
    r = solve_closed(st, outstanding, pattern=pat)
    return {"iops": r.throughput_iops, "latency_us": r.mean_latency_s * 1e6, "servers": st[0].servers,
            "stations": [(x.name, x.utilisation) for x in r.stations]}


def _busy(run: str, res: dict[str, Any]) -> dict[str, Any]:
    names, util = zip(*res["stations"])
    return busy_check(run, list(names), list(util), kind="device (closed queue)")


#: rows that restate the datasheet they are computed from (issue 30): not predictions
RESTATED: dict[str, tuple[str, str]] = {
    "intel-optane-p4800x-375gb": (
        "Intel's typical latency '< 10 us' restated: the model's QD1 latency is the datasheet's read_latency itself",
        "Intel rates the 550 k IOPS at QD16, the depth of this row: the model returns the rating, it predicts nothing",
    ),
}


def run_device(device: str, label: str, seed: int) -> dict[str, Any]:
    lat1, iops16 = MEASURED[device]
    q1, q16 = closed(device, 1), closed(device, 16)
    why1, why16 = RESTATED.get(device, (None, None))
    heads = [
        headline(f"{label}: 4 kB random read mean latency at QD1 (us)", lat1, q1["latency_us"], tolerance=TOLERANCE,
                 relative=True, source=SOURCE, unit="us", role="arithmetic" if why1 else "prediction",
                 rests_on=["QD1"], why=why1),
        headline(f"{label}: 4 kB random read IOPS at QD16 (k)", iops16 / 1e3, q16["iops"] / 1e3, tolerance=TOLERANCE,
                 relative=True, source=SOURCE, unit="k IOPS", role="arithmetic" if why16 else "prediction",
                 rests_on=["QD16"], why=why16),
    ]
    curve = [{"qd": q, **closed(device, q)} for q in (1, 2, 4, 8, 16, 32, 64, 128)]
    fig = {"data": [{"type": "scatter", "mode": "lines+markers", "name": "model", "x": [c["qd"] for c in curve],
                     "y": [c["iops"] / 1e3 for c in curve]},
                    {"type": "scatter", "mode": "markers", "name": "AnandTech 2017", "x": [1, 16],
                     "y": [1e3 / lat1, iops16 / 1e3]}],
           "layout": {"title": {"text": f"{label}: 4 kB random read IOPS against queue depth"},
                      "xaxis": {"title": {"text": "outstanding I/Os"}, "type": "log"},
                      "yaxis": {"title": {"text": "k IOPS"}}}}
    return {"headline": heads, "figures": [fig], "runs": {"qd1": q1, "qd16": q16, "curve": curve}, "seed": seed,
            "busy": [_busy("QD1", q1), _busy("QD16", q16)]}


def run_p4800x(out_dir: Path, seed: int) -> dict[str, Any]:
    del out_dir
    return {"study": "val-optane-p4800x", **run_device("intel-optane-p4800x-375gb", "Optane P4800X 375 GB", seed)}


def run_p3700(out_dir: Path, seed: int) -> dict[str, Any]:
    del out_dir
    return {"study": "val-nvme-p3700", **run_device("intel-dc-p3700-800gb", "DC P3700 800 GB", seed)}


STUDY = Study(
    name="val-optane-p4800x",
    description="Validation: Optane P4800X QD1 latency and QD16 IOPS from its datasheet (AnandTech 2017 measurements)",
    run=run_p4800x,
    source=SOURCE,
    tags=("validation", "storage"),
    area="storage",
)
