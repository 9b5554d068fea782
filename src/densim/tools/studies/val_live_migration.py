"""Study ``val-live-migration``: VM downtime during live migration (Clark et al., NSDI 2005).

Source (measured): C. Clark, K. Fraser, S. Hand, J. G. Hansen, E. Jul, C. Limpach, I. Pratt,
A. Warfield, *Live Migration of Virtual Machines*, NSDI 2005, abstract and section 1: pre-copy
migration in Xen between two hosts on a gigabit LAN; "an OS running the SPECweb benchmark [migrates]
across two physical hosts with only 210 ms unavailability, or an OS running a Quake 3 server ...
with just 60 ms downtime".

Set-up densim would need: the VM's memory size and writable working set (page-dirtying rate), the
migration link's bandwidth and its share of the host NIC, the pre-copy rounds (copy all pages, then
re-copy the pages dirtied meanwhile until the remainder is small) and the final stop-and-copy.
Tolerance (a priori): +/-50 % on each downtime.

densim has **no live-migration model**: the engine never moves a running VM between hosts (its
placement is a packing at start; the tile benchmark's NUMA moves within a host are charged as host
CPU per byte, not as downtime). The case is kept so the gap stays in the validation table: the
prediction is "none" (NaN) and both figures count as misses. Missing mechanism: a pre-copy
migration model per VM (rounds of ``dirty rate x round time`` bytes over the link's share, a
stop-and-copy threshold, downtime = last round's bytes / bandwidth + resume time) and the network
contention it causes for the other VMs on both hosts.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from densim.tools.studies.base import Study, headline

SOURCE = ("C. Clark et al., 'Live Migration of Virtual Machines', NSDI 2005, abstract and section 1 "
          "(downtime: SPECweb 210 ms, Quake 3 60 ms; Xen pre-copy over gigabit Ethernet)")
MEASURED_MS = {"SPECweb server": 210.0, "Quake 3 server": 60.0}
TOLERANCE = 0.5
NO_MODEL = math.nan  # densim has no live-migration mechanism: no prediction


def run(out_dir: Path, seed: int) -> dict[str, Any]:
    del out_dir
    heads = [headline(f"live-migration downtime, {k} (ms)", v, NO_MODEL, tolerance=TOLERANCE, relative=True,
                      source=SOURCE, unit="ms", role="prediction") for k, v in MEASURED_MS.items()]
    return {"study": "val-live-migration", "seed": seed, "headline": heads, "model": "none",
            "notes": ["densim has no live-migration model: no prediction (NaN); the figures count as misses"]}


STUDY = Study(
    name="val-live-migration",
    description="Validation gap: live-migration downtime (Clark et al. 2005); densim has no migration model",
    run=run,
    source=SOURCE,
    tags=("validation", "cluster", "gap", "no-queueing"),
    area="cluster",
)
