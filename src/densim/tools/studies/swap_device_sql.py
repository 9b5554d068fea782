"""Study ``swap-device-sql``: where the swap file lives decides how much a swapping VM keeps.

C. Kumar (VMware), *Using solid-state drives to improve performance of SQL databases on vSphere
hosts when memory is overcommitted*, 2009 [S8]: a SQL Server OLTP VM whose memory is cut so that
it swaps, with its swap file on a local SSD, on Fibre Channel SAN disks, or on a local SATA disk.
Published throughput: 88 %, 31 % and 17 % of the unconstrained run (modelling guide §2.6.1).

Model: one VM (``oltp-sql`` profile) on a host whose memory for it is cut to ``LIMIT_BYTES``;
the three runs differ only in the swap device (catalog ``devices``). Two constants were fitted
to the SSD and FC SAN points (the profile's access rate and the hypervisor's per-fault software
time, see ``catalog/memory.yaml``); the SATA point is a prediction.

Role of each headline: SSD and FC SAN are **calibration** (``fault_software_time`` of the
vsphere-like model and the ``oltp-sql`` profile's ``access_rate_per_s`` were fitted to them);
local SATA is a **prediction**. Swap-device utilisation of each run (and of the memory-limit sweep
behind the figure) is checked for saturation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from densim.plant.memory import memory_params

from densim.models import memory as M
from densim.models.devices import DeviceSpec
from densim.models.workload_memory import MemoryWorkload, load_workload
from densim.catalog.core import builtin_catalog
from densim.spec.memory import MemorySettings
from densim.tools.studies.base import Study, busy_check, headline

GIB = M.GIB
SOURCE = "C. Kumar (VMware), SSDs for SQL databases on vSphere hosts when memory is overcommitted, 2009 [S8]"
VM_BYTES = 16 * GIB  # (E) configured memory of the SQL VM
LIMIT_BYTES = 12 * GIB  # (E) memory left to it ("memory cut so that it swaps")
FITTED = "vsphere-like fault_software_time and oltp-sql access_rate_per_s (fitted together, catalog/memory.yaml)"
DEVICES = {"local SSD": ("intel-dc-s3710-400gb", 0.88), "FC SAN": ("fc-san-lun", 0.31), "local SATA": ("sata-7k2-2tb", 0.17)}


def throughput(
    device: str,
    *,
    limit_bytes=LIMIT_BYTES,
    vm_bytes: float = VM_BYTES,
    workload: MemoryWorkload | None = None,
    params: M.MemoryParams | None = None,
    device_spec: DeviceSpec | None = None,
) -> dict[str, np.ndarray]:
    """X/X0 of the SQL VM for each memory limit in ``limit_bytes`` (vectorised: one segment per limit)."""
    cat = builtin_catalog()
    wl = workload or load_workload("oltp-sql", cat)
    base = params or memory_params(MemorySettings(model="vsphere-like"), cat)
    # a per-VM memory limit: no hypervisor reserve, overhead or minFree inside the VM's budget
    from dataclasses import replace

    p = replace(base, hypervisor_bytes=0.0, overhead_per_vm_bytes=0.0, use_min_free=False)
    limits = np.atleast_1d(np.asarray(limit_bytes, dtype=float))
    n = limits.size
    spec = device_spec or cat.get("devices", device, DeviceSpec)
    cfg = np.full(n, float(vm_bytes))
    res = M.evaluate(
        cfg, wl.active_bytes(cfg), np.arange(n), n, limits, p,
        store=M.DeviceArrays.from_spec(spec),
        access_rate_per_s=wl.total_access_rate_per_s, balloon_active_share=wl.balloon_active_share,
        compressible_fraction=wl.compressible_fraction, overlap=wl.overlap,
        miss_model=wl.miss_model, miss_params=wl.miss_params(),
    )
    return {
        "throughput": res.tp.throughput,
        "miss_ratio": res.faults.miss_ratio,
        "fault_cost_s": res.tp.cost_store_s,
        "device_utilisation": res.tp.util_store,
        "swapped_gib": res.rec.swapped_bytes / GIB,
        "faults_per_s": res.tp.fault_rate_per_s,
    }


def run(out_dir: Path, seed: int) -> dict[str, Any]:
    del out_dir
    heads, rows, busy = [], {}, []
    for label, (dev, published) in DEVICES.items():
        r = throughput(dev)
        x = float(r["throughput"][0])
        rows[label] = {
            "device": dev,
            "throughput_fraction": x,
            "fault_cost_ms": float(r["fault_cost_s"][0]) * 1e3,
            "device_utilisation": float(r["device_utilisation"][0]),
            "faults_per_s": float(r["faults_per_s"][0]),
            "swapped_gib": float(r["swapped_gib"][0]),
        }
        fitted = label != "local SATA"
        note = " (fitted point)" if fitted else " (predicted)"
        run_name = f"swap on {label}"
        busy.append(busy_check(run_name, [dev], r["device_utilisation"][:1], kind="swap device"))
        heads.append(headline(f"throughput with swap on {label}, % of unconstrained{note}", 100 * published, 100 * x,
                              tolerance=5.0, source=SOURCE, unit="%", role="calibration" if fitted else "prediction",
                              fitted=FITTED if fitted else None, rests_on=(run_name,)))
    # limit sweep for the figure
    limits = np.linspace(VM_BYTES * 0.5, VM_BYTES, 21)
    data = []
    for label, (dev, _) in DEVICES.items():
        r = throughput(dev, limit_bytes=limits)
        busy.append(busy_check(f"sweep {label}", [f"{dev} at {lim / GIB:.1f} GiB limit" for lim in limits],
                               r["device_utilisation"], kind="swap device"))
        data.append({"type": "scatter", "mode": "lines", "name": label, "x": (limits / GIB).tolist(),
                     "y": (100 * r["throughput"]).tolist()})
    fig = {"data": data, "layout": {"title": {"text": "SQL OLTP throughput vs memory left to the VM"},
                                     "xaxis": {"title": {"text": "memory limit (GiB)"}},
                                     "yaxis": {"title": {"text": "% of unconstrained throughput"}}}}
    return {"study": "swap-device-sql", "seed": seed, "headline": heads, "figures": [fig], "runs": rows, "busy": busy,
            "inputs": {"vm_gib": VM_BYTES / GIB, "limit_gib": LIMIT_BYTES / GIB}}


STUDY = Study(
    name="swap-device-sql",
    description="SQL Server OLTP VM swapping to a local SSD, FC SAN disks or a local SATA disk (VMware 2009)",
    run=run,
    source=SOURCE,
    tags=("memory",),
    area="memory",
)
