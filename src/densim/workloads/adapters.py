"""Inventories from the foundation's trace readers (Bitbrains GWA-T-12, OpenDC Parquet, PlanetLab).

The readers live in :mod:`densim.workloads.readers`; this module only asks their demand sources for
the whole span on the trace's native step and keeps the result as an :class:`Inventory`:
``window(grid, 0, n_steps, ("cpu_mhz", "mem_used_bytes"))`` gives the per-step mean demand (exact
resampling of the piecewise-constant samples), and ``sizes`` gives vCPUs, MHz per vCPU and memory.

PlanetLab files carry CPU % only, so their sizes are options: ``vcpus`` (default 1), ``vcpu_mhz``
(default 2,400 MHz) and ``mem_bytes`` (default 1 GiB); demand = util/100 x vCPUs x MHz.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from densim.workloads.inventory import DEFAULT_VCPU_MHZ, Inventory, build_inventory

RULES = {
    "bitbrains": "Bitbrains GWA-T-12: CPU usage [MHZ], memory usage [KB] and disk read/write throughput [KB/s] as "
    "recorded (Unix-second timestamps), mean per step; sizes = cores, provisioned MHz / cores, provisioned memory",
    "opendc": "OpenDC Parquet: fragment cpu_usage (MHz) laid back to back from each task's submission time (v1: at their "
    "timestamps, idle gaps as zero), mean per step; no memory series (configured memory is used)",
    "planetlab": "PlanetLab: demand = CPU % / 100 x vCPUs x MHz per vCPU (sizes given as options); no memory series",
}


def read_via_foundation(fmt: str, path: str | Path, opener, *, step_s: float | None = None, limit: int | None = None,
                        vcpus: int | None = None, vcpu_mhz: float | None = None, mem_bytes: float | None = None) -> Inventory:
    """The trace at ``path``, opened with ``opener`` (the format's trace reader), as an inventory."""
    from densim.workloads.timegrid import TimeGrid

    path = Path(path)
    trace = opener(path, limit=limit)
    if fmt == "bitbrains":
        from densim.workloads.readers.bitbrains import BitbrainsSource

        src = BitbrainsSource(trace, "vm", None, vcpus, vcpu_mhz, mem_bytes)
        names = np.array([f"vm-{n}" for n in trace.names], dtype=object)
    elif fmt == "opendc":
        from densim.workloads.readers.opendc import OpenDcSource

        src = OpenDcSource(trace, "vm", None, vcpus, vcpu_mhz, mem_bytes)
        names = src.sizes.names
    elif fmt == "planetlab":
        from densim.workloads.readers.planetlab import PlanetLabSource

        src = PlanetLabSource(trace, "vm", trace.n_files, vcpus or 1, vcpu_mhz or DEFAULT_VCPU_MHZ,
                              mem_bytes or float(2**30), assign="in-order")
        names = np.array([f"vm-{f.name}" for f in trace.files], dtype=object)
    else:
        raise ValueError(f"no foundation reader adapter for {fmt!r}")
    lo, hi = src.span_s()
    step = float(step_s or src.native_step_s() or 300.0)
    n = max(1, int(math.ceil((hi - lo) / step - 1e-9)))
    grid = TimeGrid(lo, step, n)
    chans = src.window(grid, 0, n, ("cpu_mhz", "mem_used_bytes", "disk_read_Bps", "disk_write_Bps"))
    sz = src.sizes
    return build_inventory(
        names, sz.vcpus, sz.vcpu_mhz, sz.mem_bytes, cpu_mhz=chans["cpu_mhz"], mem_used_bytes=chans.get("mem_used_bytes"),
        disk_read_Bps=chans.get("disk_read_Bps"), disk_write_Bps=chans.get("disk_write_Bps"),
        step_s=step, start_s=lo, source=str(path), fmt=fmt, demand_rule=RULES[fmt], notes=getattr(src, "notes", ()),
    )
