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
from densim.workloads.readers._checks import (MAX_MEMORY_BYTES, MAX_VCPUS, check_clock, check_gaps, check_times,
                                              check_values, maybe_gunzip, read_bytes, text_of)
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
    if len(vmt) > 1:
        raise InputError(path, "", f"more than one vmtable file ({', '.join(p.name for p in vmt)})")
    if not rd:
        raise InputError(path, "vm_cpu_readings-*.csv", "not found in the folder")
    return vmt[0], rd


def is_azure(path: Path) -> bool:
    return path.is_dir() and any(p.name.startswith("vmtable") for p in path.iterdir())


def _read_headerless(path: Path, names: list[str]):
    """All cells as strings; file kind, gzip, encoding and the field count of every row checked."""
    import io

    import polars as pl

    text = text_of(maybe_gunzip(read_bytes(path, "Azure trace file"), path), path, "CSV file")
    if not text.strip():
        return pl.DataFrame({n: [] for n in names}, schema={n: pl.Utf8 for n in names})
    try:
        df = pl.read_csv(io.StringIO(text), has_header=False, new_columns=names, infer_schema_length=0)
    except Exception as exc:  # noqa: BLE001 - polars raises several types for ragged rows
        for i, line in enumerate(text.splitlines(), start=1):
            if line.strip() and line.count(",") + 1 != len(names):
                raise InputError(path, f"row {i}", f"{line.count(',') + 1} fields, expected {len(names)} "
                                                   f"({', '.join(names)})") from None
        raise InputError(path, "", f"cannot read as headerless CSV ({type(exc).__name__}: {str(exc).splitlines()[0][:80]})") from None
    if df.width != len(names):
        raise InputError(path, "row 1", f"expected {len(names)} columns ({', '.join(names)}), found {df.width}")
    return df


def _numbers(df, column: str, path: Path):
    """A string column as float64; a cell that is not a number is an error at its row (headerless: row = index + 1)."""
    import polars as pl

    col = df[column].str.strip_chars()
    conv = col.cast(pl.Float64, strict=False)
    bad = conv.is_null().to_numpy()
    if bad.any():
        r = int(np.argmax(bad))
        v = col[r]
        raise InputError(path, f"row {r + 1}, column {column!r}", "empty value" if not v else f"not a number: {v[:30]!r}")
    return conv.to_numpy().astype(np.float64)


def _bucket(values: list[str], source: Path, column: str, open_value: float, hi: float) -> np.ndarray:
    out = np.empty(len(values))
    for i, v in enumerate(values):
        s = (v or "").strip()
        if s.startswith(">"):
            out[i] = open_value
            continue
        try:
            out[i] = float(s)
        except ValueError:
            raise InputError(source, f"row {i + 1}, column {column!r}", f"not a bucket value: {s[:30]!r}") from None
        if not (out[i] > 0) or not np.isfinite(out[i]):
            raise InputError(source, f"row {i + 1}, column {column!r}", f"bucket must be a number > 0, got {s[:30]!r}")
        if out[i] > hi:
            raise InputError(source, f"row {i + 1}, column {column!r}", f"bucket {s[:30]} is implausibly large (more than {hi:g})")
    return out


def read_azure(path: str | Path, *, vcpu_mhz: float = DEFAULT_VCPU_MHZ, statistic: str = "avgcpu") -> Inventory:
    import polars as pl

    path = Path(path)
    if statistic not in ("avgcpu", "maxcpu"):
        raise InputError(None, "statistic", f"must be avgcpu or maxcpu, got {statistic!r}")
    check_clock(np.array([vcpu_mhz], dtype=float), "vcpu_mhz", "vcpu_mhz")
    vmt_path, reading_paths = _files(path)
    vmt = _read_headerless(vmt_path, VMTABLE_COLUMNS)
    if vmt.height == 0:
        raise InputError(vmt_path, "row 1", "empty file: no VMs")
    ids = [(s or "").strip() for s in vmt["vmid"].to_list()]
    for i, v in enumerate(ids):
        if not v:
            raise InputError(vmt_path, f"row {i + 1}, column 'vmid'", "VM id is blank")
    seen: dict[str, int] = {}
    for i, v in enumerate(ids):
        if v in seen:
            raise InputError(vmt_path, f"row {i + 1}, column 'vmid'", f"duplicate VM id {v!r} (also in row {seen[v] + 1})")
        seen[v] = i
    cores = _bucket(vmt["vmcorecountbucket"].to_list(), vmt_path, "vmcorecountbucket", OPEN_CORES, MAX_VCPUS)
    bad = cores != np.round(cores)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(vmt_path, f"row {i + 1}, column 'vmcorecountbucket'", f"a core count must be whole, got {cores[i]:g}")
    mem_gb = _bucket(vmt["vmmemorybucket"].to_list(), vmt_path, "vmmemorybucket", OPEN_MEMORY_GB, MAX_MEMORY_BYTES / 2**30)
    # every readings file checked on its own, so a bad cell is reported in its file at its row
    parts: list = []
    used: list[Path] = []
    for p in reading_paths:
        part = _read_headerless(p, READING_COLUMNS)
        if part.height == 0:
            continue
        vm = part["vmid"].str.strip_chars()
        known = vm.is_in(list(seen)).fill_null(False).to_numpy()
        if not known.all():
            r = int(np.argmax(~known))
            raise InputError(p, f"row {r + 1}, column 'vmid'", f"reading for VM {vm[r]!r} that is not in {vmt_path.name}")
        t = _numbers(part, "timestamp", p)
        check_times(t, p, "timestamp", row_offset=1)
        pct = _numbers(part, statistic, p)
        check_values(pct, p, statistic, row_offset=1, hi=100.0, what="CPU %", implausible=False)
        parts.append(pl.DataFrame({"vmid": vm, "t": t, "pct": pct}))
        used.append(p)
    if not parts:
        raise InputError(reading_paths[0], "row 1", "empty file: no CPU readings")
    rd = pl.concat(parts)
    offsets = np.cumsum([0] + [q.height for q in parts[:-1]])
    t = rd["t"].to_numpy()
    if len(parts) == 1:
        check_gaps(t, reading_paths[0], "timestamp", row_offset=1)
    else:
        try:
            check_gaps(t, path, "timestamp", rows=np.arange(t.size))
        except InputError as exc:  # name the readings file and its row
            i = int(exc.where.split(",")[0].split()[1])
            f = int(np.searchsorted(offsets, i, side="right")) - 1
            raise InputError(used[f], f"row {i - offsets[f] + 1}, column 'timestamp'", exc.problem) from None
    id_map = pl.DataFrame({"vmid": ids, "_idx": np.arange(len(ids), dtype=np.int64)})
    idx = rd.join(id_map, on="vmid", how="left", maintain_order="left")["_idx"].to_numpy()
    pct = rd["pct"].to_numpy()
    capacity = cores * vcpu_mhz
    demand = pct / 100.0 * capacity[idx]
    grid, step, start = to_grid(idx, t, demand, len(ids), step_s=300.0, source=path)
    return build_inventory(
        ids, cores.astype(np.int32), np.full(len(ids), float(vcpu_mhz)), mem_gb * 2.0**30,
        cpu_mhz=grid, step_s=step, start_s=start, source=str(path), fmt="azure",
        demand_rule=f"Azure trace: CPU demand = {statistic}/100 x bucket vCPUs x {vcpu_mhz:g} MHz per 5-min window; "
        "sizes are bucket upper bounds; no memory series (configured memory is used).",
    )
