"""Study ``ssd-as-memory``: replace part of a host's DRAM by an SSD used as swap (silicon design).

IT@Intel 2016 [S11]: "substituting lower cost SSDs for part of a server's physical memory
resulted in a 1.63x performance normalized cost advantage ... the SSDs achieved up to 88 percent
of the performance compared with running workloads entirely in more expensive DRAM" (silicon
design jobs; the accessible text gives no configuration, modelling guide §2.6.3 (B)).

Model: one large silicon-design job (``eda-silicon-design`` profile) per 2-socket host. The
all-DRAM host holds the whole job in ``DRAM_FULL_BYTES``; the SSD host keeps ``DRAM_SSD_BYTES``
and swaps the rest to two DC S3710 400 GB drives (Linux swap: no balloon, no compression, the
kernel picks victims as in ``random`` replacement). Performance comes from
:func:`densim.models.memory.evaluate`; cost from the dated prices in ``catalog/memory.yaml``
(section ``memory_prices``); advantage = (cost/performance of all-DRAM) / (cost/performance of SSD).

Role of each headline: the 88 % is **calibration** (the ``eda-silicon-design`` profile's
``access_rate_per_s`` was fitted to it); the cost advantage is **arithmetic**: host prices times the
calibrated performance ratio, with estimated (E) and recalled (R) prices and an estimated host
configuration. Neither is a prediction. SSD swap utilisation of each host (and of the DRAM sweep behind
the figure) is checked for saturation.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from densim.plant.memory import memory_params

from densim.models import memory as M
from densim.models.devices import DeviceSpec
from densim.models.workload_memory import MemoryWorkload, load_workload
from densim.catalog.core import builtin_catalog
from densim.spec.memory import MemorySettings
from densim.tools.studies.base import Study, busy_check, headline
from densim.units import Bytes

GIB = M.GIB
SOURCE = "IT@Intel, Increasing Private Cloud Host Virtualization with Servers and SSDs, Oct 2016 [S11] (modelling guide §2.6.3, (B))"
SSD = "intel-dc-s3710-400gb"
N_SSD = 2  # (E) two 400 GB drives as swap: 800 GB of swap space
DRAM_FULL_MODULES = 12  # 12 x 128 GB = 1.5 TB all-DRAM host (E)
DRAM_SSD_MODULES = 6  # 6 x 128 GB = 768 GB with SSD swap (E)
MODULE = "ddr4-lrdimm-128gb"
JOB_BYTES = 1300 * GIB  # (E) peak memory of the job: fits 1.5 TB, not 768 GB
OS_BYTES = 8 * GIB  # (E) host OS and page cache kept resident
COST_ESTIMATES = (
    "server-platform-2s price (E)", "intel-dc-s3710-400gb price (R)", "xeon-e5-2698-v3 price (R)",
    "host configurations: 12 vs 6 x 128 GB modules, 2 SSDs, 1,300 GiB job (E)",
    "performance ratio: the calibrated 88 % figure (eda-silicon-design access_rate_per_s, F)",
)


class PriceEntry(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)
    name: str
    kind: str
    capacity_bytes: Bytes | None = None
    price_usd: float
    price_date: str
    source: str = ""

    def __init__(self, **data):
        if "capacity" in data:
            data["capacity_bytes"] = data.pop("capacity")
        super().__init__(**data)


def price(name: str) -> PriceEntry:
    return builtin_catalog().get("memory_prices", name, PriceEntry)


def performance(dram_bytes, *, job: MemoryWorkload | None = None, params: M.MemoryParams | None = None, n_ssd: int = N_SSD):
    """Throughput X/X0 of the job for each host DRAM size in ``dram_bytes`` (one segment each)."""
    cat = builtin_catalog()
    wl = job or load_workload("eda-silicon-design", cat)
    base = params or memory_params(MemorySettings(model="vsphere-like"), cat)
    # bare-metal Linux swap: no hypervisor reserve, balloon, compression or minFree
    p = replace(base, hypervisor_bytes=OS_BYTES, overhead_per_vm_bytes=0.0, use_min_free=False, compression=False,
                zero_page_fraction=0.0, balloon_limit=0.0)
    dram = np.atleast_1d(np.asarray(dram_bytes, dtype=float))
    n = dram.size
    spec = cat.get("devices", SSD, DeviceSpec)
    # n_ssd drives striped: n times the IOPS (and parallelism), same latency
    par = spec.servers(1.0 / (1.0 + p.writes_per_fault))
    ssd = spec.model_copy(update={"read_iops": spec.read_iops * n_ssd, "write_iops": spec.write_iops * n_ssd,
                                  "parallelism": par * n_ssd})
    cfg = np.full(n, float(JOB_BYTES))
    res = M.evaluate(
        cfg, wl.active_bytes(cfg), np.arange(n), n, dram, p, store=M.DeviceArrays.from_spec(ssd),
        access_rate_per_s=wl.total_access_rate_per_s, overlap=wl.overlap, miss_model=wl.miss_model,
        miss_params=wl.miss_params(), balloon_active_share=0.0, compressible_fraction=0.0,
    )
    return {"throughput": res.tp.throughput, "miss_ratio": res.faults.miss_ratio, "ssd_utilisation": res.tp.util_store,
            "swapped_gib": res.rec.swapped_bytes / GIB}


def host_cost_usd(modules: int, n_ssd: int) -> float:
    base = 2 * price("xeon-e5-2698-v3").price_usd + price("server-platform-2s").price_usd
    return base + modules * price(MODULE).price_usd + n_ssd * price(SSD).price_usd


def run(out_dir: Path, seed: int) -> dict[str, Any]:
    del out_dir
    mod_bytes = float(price(MODULE).capacity_bytes)
    full = DRAM_FULL_MODULES * mod_bytes
    half = DRAM_SSD_MODULES * mod_bytes
    perf = performance(np.array([full, half]))
    x_full, x_ssd = float(perf["throughput"][0]), float(perf["throughput"][1])
    rel = x_ssd / x_full
    c_full = host_cost_usd(DRAM_FULL_MODULES, 0)
    c_ssd = host_cost_usd(DRAM_SSD_MODULES, N_SSD)
    advantage = (c_full / x_full) / (c_ssd / x_ssd)
    heads = [
        headline("performance with SSD swap, % of all-DRAM", 88.0, 100 * rel, tolerance=5.0, source=SOURCE, unit="%",
                 role="calibration", fitted="eda-silicon-design access_rate_per_s (catalog/memory.yaml)",
                 rests_on=("all-DRAM host", "SSD-swap host")),
        headline("performance-normalised cost advantage", 1.63, advantage, tolerance=0.20, relative=True, source=SOURCE,
                 unit="x", role="arithmetic", estimated_inputs=COST_ESTIMATES, rests_on=("all-DRAM host", "SSD-swap host")),
    ]
    busy = [busy_check(name, [f"{N_SSD} x {SSD} (swap)"], perf["ssd_utilisation"][i:i + 1], kind="swap device")
            for i, name in enumerate(("all-DRAM host", "SSD-swap host"))]
    modules = np.arange(4, DRAM_FULL_MODULES + 1)
    sweep = performance(modules * mod_bytes)
    busy.append(busy_check("sweep", [f"{N_SSD} x {SSD} (swap) at {m} x 128 GB DRAM" for m in modules], sweep["ssd_utilisation"],
                           kind="swap device"))
    fig = {
        "data": [{"type": "scatter", "mode": "lines+markers", "name": "SSD swap (2 x DC S3710)",
                  "x": (modules * mod_bytes / GIB).tolist(), "y": (100 * sweep["throughput"] / x_full).tolist()}],
        "layout": {"title": {"text": "Silicon-design job: performance vs DRAM kept (rest swapped to SSD)"},
                   "xaxis": {"title": {"text": "host DRAM (GiB)"}}, "yaxis": {"title": {"text": "% of all-DRAM"}}},
    }
    prices = {n: price(n).model_dump() for n in (MODULE, SSD, "xeon-e5-2698-v3", "server-platform-2s")}
    return {
        "study": "ssd-as-memory",
        "seed": seed,
        "headline": heads,
        "figures": [fig],
        "busy": busy,
        "hosts": {
            "all_dram": {"dram_gib": full / GIB, "cost_usd": c_full, "throughput": x_full},
            "ssd": {"dram_gib": half / GIB, "ssds": N_SSD, "cost_usd": c_ssd, "throughput": x_ssd,
                    "miss_ratio": float(perf["miss_ratio"][1]), "ssd_utilisation": float(perf["ssd_utilisation"][1]),
                    "swapped_gib": float(perf["swapped_gib"][1])},
        },
        "prices": prices,
        "inputs": {"job_gib": JOB_BYTES / GIB, "os_gib": OS_BYTES / GIB},
    }


STUDY = Study(
    name="ssd-as-memory",
    description="Silicon-design jobs on hosts where half the DRAM is replaced by SSD swap: performance and cost (Intel IT 2016)",
    run=run,
    source=SOURCE,
    tags=("memory",),
    area="memory",
)
