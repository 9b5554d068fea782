"""Study ``val-spdk-scaling``: an 80 M IOPS box's latency, and the 120 M IOPS box that followed it.

Sources:

* SPDK project (Intel), *80 Million I/O Per Second with a Standard 2U Intel Xeon System*, spdk.io news,
  2021-05-06 (modelling guide [S24]): 2x Xeon Platinum 8380, 16x Optane SSD P5800X 800 GB, 512 B random
  reads at QD128 per device; 13.85 M IOPS on 1 core, linear to 4 cores, then limited by the SSDs;
  "over 80 million IOPS at an average latency of 25.54 us" with 8 I/O cores (turbo 3.4 GHz).
* SPDK project (Intel), *120 Million I/O Per Second with a Standard 2U Intel Xeon System*, spdk.io news,
  2023-02-01: 2x Xeon Platinum 8480+, 24x Optane SSD P5800X, 512 B random reads: 120 M IOPS.

Inputs (other figures of the 2021 source): per-drive saturated rate 80 M / 16 = 5 M IOPS (the 2021
text says the drives, not the cores, are the limit past 4 cores), CPU cost per I/O
3.4 GHz / 13.85 M = 245 cycles on each of 8 cores, 2048 outstanding I/Os (16 x QD128); device QD1
latency 5 us (E, it does not matter at this depth: the drives are saturated).

Model: ``densim.models.storage`` JBOD of the drives plus the host-CPU station, solved closed-loop by
exact MVA.

Checked figures (measured) and a-priori tolerances:

* 2021: mean latency 25.54 us (+/-15 %), a prediction of the latency figure from the IOPS and depth
  figures through the closed network (Little's law at saturation);
* 2023: 120 M IOPS with 24 drives (+/-15 %), predicted from the 2021 per-drive rate. The 2023 core
  count is not in the text that could be read, so the CPU station is left out (assumption: as in 2021
  past 4 cores, the drives are the limit).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from densim.models.devices import DeviceSpec
from densim.models.storage import ArrayUnit, HostCpuIo, IoPattern, build_stations, solve_closed
from densim.catalog.core import builtin_catalog
from densim.tools.studies.base import Study, busy_check, headline

SOURCE_2021 = "SPDK (Intel), '80 Million I/O Per Second with a Standard 2U Intel Xeon System', spdk.io, 2021-05-06"
SOURCE_2023 = "SPDK (Intel), '120 Million I/O Per Second with a Standard 2U Intel Xeon System', spdk.io, 2023-02-01"
DEVICE = "intel-optane-p5800x-800gb-512b"
PER_CORE_IOPS = 13.85e6
TURBO_HZ = 3.4e9
QD = 128
TOLERANCE = 0.15


def system(drives: int, cores: int | None) -> dict[str, Any]:
    dev = builtin_catalog().get("devices", DEVICE, DeviceSpec)
    pat = IoPattern(read_fraction=1.0, block_bytes=512)
    cpu = HostCpuIo(cores=cores, clock_hz=TURBO_HZ, cycles_per_io=TURBO_HZ / PER_CORE_IOPS) if cores else None
    st = build_stations([ArrayUnit("optane", dev, drives)], cpu, pat)
    r = solve_closed(st, drives * QD, pattern=pat)
    return {"drives": drives, "cores": cores, "iops": r.throughput_iops, "latency_us": r.mean_latency_s * 1e6,
            "bottleneck": r.bottleneck, "stations": [(x.name, x.utilisation) for x in r.stations]}


def _busy(run: str, res: dict[str, Any]) -> dict[str, Any]:
    names, util = zip(*res["stations"])
    return busy_check(run, list(names), list(util), kind="storage station (closed queue)")


def run(out_dir: Path, seed: int) -> dict[str, Any]:
    del out_dir
    y2021 = system(16, 8)
    y2023 = system(24, None)
    cores = [system(16, c) for c in (1, 2, 4, 8)]
    heads = [
        headline("2021, 16 drives, 8 cores: mean latency at QD128 per drive (us)", 25.54, y2021["latency_us"],
                      tolerance=TOLERANCE, relative=True, source=SOURCE_2021, unit="us", role="arithmetic", rests_on=["2021"],
                 why=("Little's law on the same post's figures: the per-drive rate in catalog validation.yaml was "
                      "derived from its 80 M IOPS, so 16 x 128 outstanding / 80 M IOPS = 25.6 us is an identity")),
        headline("2023, 24 drives: 512 B random-read IOPS (M)", 120.0, y2023["iops"] / 1e6, tolerance=TOLERANCE,
                      relative=True, source=SOURCE_2023, unit="M IOPS", role="arithmetic", rests_on=["2023"],
                 why="24 drives x (80 M IOPS / 16 drives) of the 2021 post: the per-drive rate scaled, not predicted"),
    ]
    fig = {"data": [{"type": "scatter", "mode": "lines+markers", "name": "model, 16 drives",
                     "x": [c["cores"] for c in cores], "y": [c["iops"] / 1e6 for c in cores]}],
           "layout": {"title": {"text": "SPDK 512 B random reads: IOPS against I/O cores"},
                      "xaxis": {"title": {"text": "I/O cores"}}, "yaxis": {"title": {"text": "M IOPS"}}}}
    return {"study": "val-spdk-scaling", "seed": seed, "headline": heads, "figures": [fig],
            "runs": {"2021": y2021, "2023": y2023, "cores": cores}, "busy": [_busy("2021", y2021), _busy("2023", y2023)]}


STUDY = Study(
    name="val-spdk-scaling",
    description="Validation: SPDK 80 M IOPS system latency and the 24-drive 120 M IOPS system, from the 2021 figures",
    run=run,
    source=SOURCE_2021,
    tags=("validation", "storage"),
    area="storage",
)
