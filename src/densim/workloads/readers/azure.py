"""Azure Public Dataset VM traces (V1 2017 / V2 2019): ``vmtable.csv`` + ``vm_cpu_readings-*.csv``.

Both are CSV (optionally gzip) **without a header**:

* vmtable: ``vmid, subscriptionid, deploymentid, vmcreated, vmdeleted, maxcpu, avgcpu, p95maxcpu,
  vmcategory, vmcorecountbucket, vmmemorybucket`` (times in s from trace start, CPU in %).
* vm_cpu_readings: ``timestamp, vmid, mincpu, maxcpu, avgcpu`` (5-min windows, CPU in %).

Sizes are buckets; densim takes each bucket's upper bound (cores 2, 4, 8, 12, 24; memory 2, 4, 8,
32, 64 GB) and for the open buckets ``>24`` cores -> 32 and ``>64`` GB -> 128 GB (stated assumption).
The trace has no clock: a vCPU is ``vcpu_mhz`` (default 2,400 MHz). Demand = avgcpu/100 x vCPUs x MHz.
Source: Azure/AzurePublicDataset (Cortez et al., "Resource Central", SOSP 2017); schema as in
../shared/reference/ecosystem.md §1.4.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from densim.errors import InputError
from densim.workloads.readers._grid import to_grid
from densim.workloads.inventory import DEFAULT_VCPU_MHZ, Inventory, build_inventory

VMTABLE_COLUMNS = ["vmid", "subscriptionid", "deploymentid", "vmcreated", "vmdeleted", "maxcpu", "avgcpu",
                   "p95maxcpu", "vmcategory", "vmcorecountbucket", "vmmemorybucket"]
READING_COLUMNS = ["timestamp", "vmid", "mincpu", "maxcpu", "avgcpu"]
OPEN_CORES = 32
OPEN_MEMORY_GB = 128


def _files(path: Path) -> tuple[Path, list[Path]]:
    if not path.is_dir():
        raise InputError(path, "", "an Azure trace is a folder holding vmtable.csv[.gz] and vm_cpu_readings-*.csv[.gz]")
    vmt = sorted(p for p in path.iterdir() if p.name.startswith("vmtable"))
    rd = sorted(p for p in path.iterdir() if p.name.startswith("vm_cpu_readings"))
    if not vmt:
        raise InputError(path, "vmtable.csv", "not found in the folder")
    if not rd:
        raise InputError(path, "vm_cpu_readings-*.csv", "not found in the folder")
    return vmt[0], rd


def is_azure(path: Path) -> bool:
    return path.is_dir() and any(p.name.startswith("vmtable") for p in path.iterdir())


def _read_headerless(path: Path, names: list[str]):
    import polars as pl

    try:
        df = pl.read_csv(path, has_header=False, new_columns=names, infer_schema_length=0)
    except Exception as exc:
        raise InputError(path, "", f"cannot read as headerless CSV ({type(exc).__name__}: {str(exc).splitlines()[0][:80]})") from None
    if df.width != len(names):
        raise InputError(path, "row 1", f"expected {len(names)} columns ({', '.join(names)}), found {df.width}")
    return df


def _bucket(values: list[str], source: Path, column: str, open_value: float) -> np.ndarray:
    out = np.empty(len(values))
    for i, v in enumerate(values):
        s = (v or "").strip()
        if s.startswith(">"):
            out[i] = open_value
            continue
        try:
            out[i] = float(s)
        except ValueError:
            raise InputError(source, f"row {i + 1}, column {column!r}", f"not a bucket value: {s!r}") from None
        if out[i] <= 0:
            raise InputError(source, f"row {i + 1}, column {column!r}", f"bucket must be > 0, got {s!r}")
    return out


def read_azure(path: str | Path, *, vcpu_mhz: float = DEFAULT_VCPU_MHZ, statistic: str = "avgcpu") -> Inventory:
    import polars as pl

    path = Path(path)
    vmt_path, reading_paths = _files(path)
    vmt = _read_headerless(vmt_path, VMTABLE_COLUMNS)
    if vmt.height == 0:
        raise InputError(vmt_path, "row 1", "empty file: no VMs")
    ids = [s.strip() for s in vmt["vmid"].to_list()]
    seen: dict[str, int] = {}
    for i, v in enumerate(ids):
        if v in seen:
            raise InputError(vmt_path, f"row {i + 1}, column 'vmid'", f"duplicate VM id {v!r} (also in row {seen[v] + 1})")
        seen[v] = i
    cores = _bucket(vmt["vmcorecountbucket"].to_list(), vmt_path, "vmcorecountbucket", OPEN_CORES)
    mem_gb = _bucket(vmt["vmmemorybucket"].to_list(), vmt_path, "vmmemorybucket", OPEN_MEMORY_GB)
    if statistic not in ("avgcpu", "maxcpu"):
        raise InputError(None, "statistic", f"must be avgcpu or maxcpu, got {statistic!r}")
    parts = [_read_headerless(p, READING_COLUMNS) for p in reading_paths]
    rd = pl.concat(parts)
    rd = rd.with_columns(pl.col("vmid").str.strip_chars())
    id_map = pl.DataFrame({"vmid": ids, "_idx": np.arange(len(ids), dtype=np.int64)})
    rd = rd.join(id_map, on="vmid", how="left")
    if rd["_idx"].null_count():
        bad = rd.filter(pl.col("_idx").is_null())["vmid"][0]
        raise InputError(reading_paths[0], "column 'vmid'", f"reading for VM {bad!r} that is not in vmtable")
    try:
        t = rd["timestamp"].cast(pl.Float64).to_numpy()
        pct = rd[statistic].cast(pl.Float64).to_numpy()
    except Exception:
        raise InputError(reading_paths[0], f"column 'timestamp' or {statistic!r}", "not a number") from None
    bad = ~np.isfinite(pct) | (pct < 0) | (pct > 100)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(reading_paths[0], f"row {i + 1}, column {statistic!r}", f"CPU % must be in [0, 100], got {pct[i]:g}")
    idx = rd["_idx"].to_numpy()
    capacity = cores * vcpu_mhz
    demand = pct / 100.0 * capacity[idx]
    grid, step, start = to_grid(idx, t, demand, len(ids), step_s=300.0)
    return build_inventory(
        ids, cores.astype(np.int32), np.full(len(ids), float(vcpu_mhz)), mem_gb * 2.0**30,
        cpu_mhz=grid, step_s=step, start_s=start, source=str(path), fmt="azure",
        demand_rule=f"Azure trace: CPU demand = {statistic}/100 x bucket vCPUs x {vcpu_mhz:g} MHz per 5-min window; "
        "sizes are bucket upper bounds; no memory series (configured memory is used).",
    )
