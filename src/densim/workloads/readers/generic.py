"""densim's generic long format: one row per VM per timestamp, units in the column names.

Columns (CSV with a header row, or Parquet); a unit goes in brackets after the name, e.g.
``memory [GiB]``, or as a suffix, e.g. ``memory_bytes``:

============== ========= ==================================================================
column         required  meaning and accepted units
============== ========= ==================================================================
``vm``         yes       VM name (string)
``time``       yes       sample time: ``[s]``, ``[ms]``, ``[min]``, ``[h]`` (default s)
``vcpus``      yes       vCPUs (same on every row of a VM)
``vcpu_speed`` no        MHz one vCPU delivers: ``[MHz]``, ``[GHz]`` (default 2,400 MHz)
``memory``     yes       configured memory: ``[bytes]``, ``[KiB]``, ``[MiB]``, ``[GiB]``, ``[TiB]``, ``[KB]``, ``[MB]``,
                         ``[GB]``, ``[TB]``; may change over time (each VM is sized at its largest)
``cpu_used``   yes       CPU demand: ``[MHz]``, ``[GHz]``, or ``[%]`` of the VM's vCPUs x speed
``memory_used`` no       memory in use, memory units as above
``start``      no        when the VM arrives, time units as ``time`` (same on every row of a VM)
``end``        no        when the VM leaves (same on every row of a VM; after ``start``)
``disk_read``  no        disk read throughput: ``[B/s]``, ``[KB/s]``, ``[KiB/s]``, ``[MB/s]``, ``[MiB/s]`` (default B/s)
``disk_write`` no        disk write throughput, units as ``disk_read`` (give both or neither)
``anti_affinity`` no     group label: no two VMs of a group on one host (same on every row)
``affinity``   no        group label: the VMs of a group share one host (same on every row)
============== ========= ==================================================================

Units follow the scenario files (``densim.workloads.readers.conventions``): ``KB``, ``MB``, ``GB`` are
10^3, 10^6, 10^9 bytes and ``KiB``, ``MiB``, ``GiB`` 2^10, 2^20, 2^30. A memory above 256 GiB per vCPU
(or 1 PiB per VM) is refused: it is most likely bytes in a KiB column.

Samples belong to step ``round((time - first time) / step)``, the step being the median gap between
distinct times (or ``step_s``); several samples in one step are averaged, steps without samples are 0.
A VM with ``start``/``end`` may not have demand outside ``[start, end)``.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np

from densim.csvsafe import safe_cell, unescape_cell
from densim.errors import InputError
from densim.workloads.readers._checks import (MAX_TIME_S, check_clock, check_gaps, check_memory_per_vcpu, check_times,
                                              check_values, check_vcpus, read_bytes, regular_file, text_of)
from densim.workloads.readers._grid import to_grid
from densim.workloads.readers.conventions import unit_table
from densim.workloads.inventory import DEFAULT_VCPU_MHZ, Inventory, build_inventory

_HEADER = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_ ]*?)\s*(?:\[\s*([^\]]*)\s*\])?\s*$")
TIME_UNITS = {"s": 1.0, "sec": 1.0, "ms": 1e-3, "us": 1e-6, "min": 60.0, "h": 3600.0}
FREQ_UNITS = {"mhz": 1.0, "ghz": 1000.0, "khz": 1e-3, "hz": 1e-6}
MEM_UNITS = unit_table("generic", "memory", ("b", "bytes", "KB", "KiB", "MB", "MiB", "GB", "GiB", "TB", "TiB"))
RATE_UNITS = unit_table("generic", "throughput", ("B/s", "KB/s", "KiB/s", "MB/s", "MiB/s", "GB/s", "GiB/s"))
COLUMNS = {
    "vm": None,
    "time": TIME_UNITS,
    "vcpus": None,
    "vcpu_speed": FREQ_UNITS,
    "memory": MEM_UNITS,
    "cpu_used": {**FREQ_UNITS, "%": None},
    "memory_used": MEM_UNITS,
    "start": TIME_UNITS,
    "end": TIME_UNITS,
    "disk_read": RATE_UNITS,
    "disk_write": RATE_UNITS,
    "anti_affinity": None,
    "affinity": None,
}
DEFAULT_UNIT = {"time": "s", "start": "s", "end": "s", "vcpu_speed": "mhz", "memory": "bytes", "memory_used": "bytes", "disk_read": "b/s", "disk_write": "b/s"}
# demand (CPU MHz, memory in use) may exceed the configured size (turbo clocks, hypervisor overhead),
# but not by this factor: such a value is damaged
MAX_DEMAND_FACTOR = 4.0
SUFFIX = {"_bps": "b/s", "_s": "s", "_ms": "ms", "_mhz": "mhz", "_ghz": "ghz", "_bytes": "bytes", "_mib": "mib", "_gib": "gib", "_pct": "%"}


def parse_header(source: Path, col: int, header: str) -> tuple[str, str | None] | None:
    """``"memory [GiB]"`` -> ("memory", "gib"); unknown names -> None; bad units raise."""
    m = _HEADER.match(header)
    if not m:
        return None
    name = m.group(1).strip().lower().replace(" ", "_")
    unit = m.group(2).strip().lower() if m.group(2) is not None else None
    if name not in COLUMNS and unit is None:
        for suf, u in SUFFIX.items():
            if name.endswith(suf) and name[: -len(suf)] in COLUMNS:
                name, unit = name[: -len(suf)], u
                break
    if name not in COLUMNS:
        return None
    allowed = COLUMNS[name]
    if unit is None:
        unit = DEFAULT_UNIT.get(name)
        if name == "cpu_used":
            raise InputError(source, f"column {col + 1} {header!r}", "cpu_used needs a unit: [MHz], [GHz] or [%]")
    if allowed is None and unit not in (None, ""):
        raise InputError(source, f"column {col + 1} {header!r}", f"{name} takes no unit")
    if allowed is not None and unit not in allowed:
        raise InputError(source, f"column {col + 1} {header!r}", f"unknown unit {unit!r} for {name} (use {', '.join(k for k in allowed)})")
    return name, unit


def _frame(path: Path):
    """The file as a table of strings (CSV) or as stored (Parquet); file kind and encoding checked."""
    import io

    import polars as pl

    if path.suffix.lower() == ".parquet":
        regular_file(path, "generic inventory (Parquet)")
        try:
            return pl.read_parquet(path)
        except Exception as exc:  # noqa: BLE001 - polars/arrow raise many types for a damaged file
            raise InputError(path, "", f"not a readable Parquet file ({type(exc).__name__}: {str(exc).splitlines()[0][:100]})") from None
    text = text_of(read_bytes(path, "generic inventory CSV"), path, "CSV file")
    if not text.strip():
        raise InputError(path, "row 1", "empty file: no header row")
    try:
        header = next(csv.reader([next((ln for ln in text.splitlines() if ln.strip()), "")]), [])
    except csv.Error:  # a damaged header: the CSV reader below names the problem
        header = []
    seen: dict[str, int] = {}
    for i, h in enumerate(header):
        key = h.strip()
        if key in seen:  # the CSV reader would rename the second one and drop it silently
            raise InputError(path, f"row 1, column {i + 1} {key!r}", f"duplicate column name (also column {seen[key] + 1}): "
                                                                    "which one holds the values?")
        seen[key] = i
    try:
        df = pl.read_csv(io.StringIO(text), infer_schema_length=0)
    except Exception as exc:  # noqa: BLE001
        first = text.splitlines()[0]
        n = len(next(csv.reader([first])))
        for i, fields in enumerate(csv.reader(text.splitlines()[1:]), start=2):
            if fields and len(fields) > n:
                raise InputError(path, f"row {i}", f"{len(fields)} fields where the header has {n}") from None
        raise InputError(path, "", f"cannot read as CSV ({type(exc).__name__}: {str(exc).splitlines()[0][:100]})") from None
    if df.width == 1 and any(c in df.columns[0] for c in ";\t|"):
        raise InputError(path, "row 1", f"one column {df.columns[0][:60]!r}: the generic format separates columns with commas")
    return df


def read_generic(path: str | Path, *, step_s: float | None = None) -> Inventory:
    import polars as pl

    path = Path(path)
    if not path.exists():
        raise InputError(path, "", "inventory not found")
    df = _frame(path)
    found: dict[str, tuple[str, str | None]] = {}
    for i, h in enumerate(df.columns):
        parsed = parse_header(path, i, h)
        if parsed is not None:
            if parsed[0] in found:
                raise InputError(path, f"column {i + 1} {h!r}", f"second column for {parsed[0]} (first is {found[parsed[0]][0]!r})")
            found[parsed[0]] = (h, parsed[1])
    for need in ("vm", "time", "vcpus", "memory", "cpu_used"):
        if need not in found:
            raise InputError(path, "header", f"missing column {need!r} (columns: {', '.join(df.columns)[:200]})")
    # blank lines (all cells empty) are skipped; every other row keeps its line number for messages
    # (a CSV's first data row is line 2, under the header; a Parquet file's first record is row 1)
    blank = df.select(pl.all_horizontal(pl.all().is_null())).to_series().to_numpy() if df.height else np.zeros(0, bool)
    line_of = np.flatnonzero(~blank) + (1 if path.suffix.lower() == ".parquet" else 2)
    if blank.any():
        df = df.filter(~pl.Series(blank))
    if df.height == 0:
        raise InputError(path, "row 2", "no data rows")

    def num(key: str) -> np.ndarray:
        """A column as float64; the first cell that is not a number is an error at its row (file row = index + 2)."""
        h, _ = found[key]
        col = df[h]
        if col.dtype == pl.Utf8:
            col = col.str.strip_chars()
        conv = col.cast(pl.Float64, strict=False)
        bad = conv.is_null()
        if bad.any():
            r = int(np.argmax(bad.to_numpy()))
            v = col[r]
            raise InputError(path, f"row {line_of[r]}, column {h!r}", "empty value" if v is None or str(v) == "" else
                             f"not a number: {str(v)[:30]!r}")
        arr = conv.to_numpy().astype(np.float64)
        check_values(arr, path, h, rows=line_of, what=key)
        return arr

    def scale(key: str, table: dict) -> float:
        return float(table[found[key][1]])

    names_col = df[found["vm"][0]].cast(pl.Utf8).to_list()
    for r, v in enumerate(names_col):
        if v is None or str(v).strip() == "":
            raise InputError(path, f"row {line_of[r]}, column {found['vm'][0]!r}", "VM name is blank")
    names_col = [unescape_cell(str(v).strip()) for v in names_col]  # "'=x" as written by write_generic is "=x"
    names, first_row, vm_idx = np.unique(np.array(names_col, dtype=object), return_index=True, return_inverse=True)
    order = np.argsort(first_row)  # VMs in order of first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    vm_idx = rank[vm_idx]
    names = names[order]
    first_row = first_row[order]
    t_s = num("time") * scale("time", TIME_UNITS)
    check_times(t_s, path, found["time"][0], rows=line_of)
    check_gaps(t_s, path, found["time"][0], rows=line_of)
    vcpus_rows = num("vcpus")
    mem_rows = num("memory") * scale("memory", MEM_UNITS)
    speed_rows = num("vcpu_speed") * scale("vcpu_speed", FREQ_UNITS) if "vcpu_speed" in found else np.full(df.height, DEFAULT_VCPU_MHZ)

    def per_vm(rows: np.ndarray, key: str, what: str) -> np.ndarray:
        v = rows[first_row]
        diff = rows != v[vm_idx]
        if diff.any():
            r = int(np.argmax(diff))
            raise InputError(path, f"row {line_of[r]}, column {found[key][0]!r}",
                             f"{what} of VM {names[vm_idx[r]]!r} changes over time ({rows[r]:g} vs {v[vm_idx[r]]:g})")
        return v

    vcpus = per_vm(vcpus_rows, "vcpus", "vcpus")
    bad = (vcpus < 1) | (vcpus != np.round(vcpus))
    if bad.any():
        r = int(first_row[np.argmax(bad)])
        raise InputError(path, f"row {line_of[r]}, column {found['vcpus'][0]!r}", f"VM {names[np.argmax(bad)]!r} has {vcpus[np.argmax(bad)]:g} vCPUs; must be a whole number >= 1")
    check_vcpus(vcpus, path, found["vcpus"][0], rows=line_of[first_row])
    # configured memory may change over time (a resize): each VM is sized at its largest, the series kept
    if (mem_rows <= 0).any():
        r = int(np.argmax(mem_rows <= 0))
        raise InputError(path, f"row {line_of[r]}, column {found['memory'][0]!r}", "memory must be > 0")
    m_head = _HEADER.match(found["memory"][0])
    written = (m_head.group(2) or "").strip() if m_head else ""
    check_memory_per_vcpu(mem_rows, vcpus[vm_idx], path, found["memory"][0], unit=written or found["memory"][1] or "", rows=line_of)
    mem = np.zeros(names.size)
    np.maximum.at(mem, vm_idx, mem_rows)
    mem_varies = bool((mem_rows != mem[vm_idx]).any())
    speed = per_vm(speed_rows, "vcpu_speed", "vcpu_speed") if "vcpu_speed" in found else speed_rows[first_row]
    if "vcpu_speed" in found:
        check_clock(speed, path, found["vcpu_speed"][0], rows=line_of[first_row])
    cap_rows = (vcpus * speed)[vm_idx]
    unit = found["cpu_used"][1]
    cpu_rows = num("cpu_used")
    if unit == "%":
        check_values(cpu_rows, path, found["cpu_used"][0], rows=line_of, hi=100.0, what="CPU %", implausible=False)
        cpu_rows = cpu_rows / 100.0 * cap_rows
    else:
        cpu_rows = cpu_rows * FREQ_UNITS[unit]
        over = cpu_rows > MAX_DEMAND_FACTOR * cap_rows
        if over.any():
            r = int(np.argmax(over))
            raise InputError(path, f"row {line_of[r]}, column {found['cpu_used'][0]!r}",
                             f"CPU demand {cpu_rows[r]:.6g} MHz is more than {MAX_DEMAND_FACTOR:g} x the VM's vCPUs x speed "
                             f"({cap_rows[r]:.6g} MHz)")
    # lifetimes: optional start/end per VM, no demand outside [start, end)
    life = {}
    for key in ("start", "end"):
        if key in found:
            t = num(key) * scale(key, TIME_UNITS)
            check_values(t, path, found[key][0], rows=line_of, lo=-MAX_TIME_S, hi=MAX_TIME_S, what=f"{key} time (s)")
            life[key] = per_vm(t, key, key)
    vm_start = life.get("start")
    vm_end = life.get("end")
    if vm_start is not None or vm_end is not None:
        lo = vm_start if vm_start is not None else np.full(names.size, -np.inf)
        hi = vm_end if vm_end is not None else np.full(names.size, np.inf)
        early = hi < lo
        if early.any():
            v = int(np.argmax(early))
            raise InputError(path, f"row {line_of[first_row[v]]}, column {found['end'][0]!r}",
                             f"VM {names[v]!r} leaves {lo[v] - hi[v]:g} s before it arrives (end before start: a departure "
                             f"before its arrival)")
        outside = ((t_s < lo[vm_idx]) | (t_s >= hi[vm_idx])) & (cpu_rows > 0)
        if outside.any():
            r = int(np.argmax(outside))
            raise InputError(path, f"row {line_of[r]}, column {found['time'][0]!r}",
                             f"VM {names[vm_idx[r]]!r} has CPU demand at {t_s[r]:g} s, outside its lifetime "
                             f"[{lo[vm_idx[r]]:g}, {hi[vm_idx[r]]:g}) s")
        vm_start, vm_end = lo, hi
    cpu, step, start = to_grid(vm_idx, t_s, cpu_rows, names.size, step_s=step_s, source=path)
    mem_used = None
    if "memory_used" in found:
        mu = num("memory_used") * scale("memory_used", MEM_UNITS)
        over = mu > MAX_DEMAND_FACTOR * mem_rows
        if over.any():
            r = int(np.argmax(over))
            raise InputError(path, f"row {line_of[r]}, column {found['memory_used'][0]!r}",
                             f"memory in use {mu[r]:.6g} bytes is more than {MAX_DEMAND_FACTOR:g} x the VM's memory ({mem_rows[r]:.6g} bytes)")
        mem_used, _, _ = to_grid(vm_idx, t_s, mu, names.size, step_s=step, start_s=start, source=path)
    mem_config = None
    if mem_varies:
        mem_config, _, _ = to_grid(vm_idx, t_s, mem_rows, names.size, step_s=step, start_s=start, source=path)
    disk = {}
    if ("disk_read" in found) != ("disk_write" in found):
        have, miss = ("disk_read", "disk_write") if "disk_read" in found else ("disk_write", "disk_read")
        raise InputError(path, "header", f"column {have!r} needs {miss!r} too")
    for key in ("disk_read", "disk_write"):
        if key in found:
            rate = num(key) * scale(key, RATE_UNITS)
            check_values(rate, path, found[key][0], rows=line_of, what=f"{key} (bytes/s)")
            disk[key + "_Bps"], _, _ = to_grid(vm_idx, t_s, rate, names.size, step_s=step, start_s=start, source=path)
    tags = {}
    for key in ("anti_affinity", "affinity"):
        if key in found:
            col = np.array([("" if v is None else str(v).strip()) for v in df[found[key][0]].cast(pl.Utf8).to_list()], dtype=object)
            first = col[first_row]
            diff = col != first[vm_idx]
            if diff.any():
                r = int(np.argmax(diff))
                raise InputError(path, f"row {line_of[r]}, column {found[key][0]!r}", f"{key} group of VM {names[vm_idx[r]]!r} changes over time")
            tags[key] = first
    rule = "generic long format: demand as given, averaged per step"
    if mem_varies:
        rule += "; configured memory changes over time: each VM is sized at its largest (series in mem_config_bytes)"
    return build_inventory(
        names, vcpus, speed, mem, cpu_mhz=cpu, mem_used_bytes=mem_used, mem_config_bytes=mem_config, step_s=step, start_s=start,
        tags=tags, **disk, source=str(path), fmt="generic", demand_rule=rule, vm_start_s=vm_start, vm_end_s=vm_end,
    )


def write_generic(inv: Inventory, path: str | Path) -> Path:
    """Write an inventory in the generic long format (CSV or Parquet by suffix), atomically."""
    import polars as pl

    from densim.atomic import write_atomic

    if inv.cpu_mhz is None:
        raise ValueError("the generic format needs a demand series")
    t, n = inv.cpu_mhz.shape
    parquet = Path(path).suffix.lower() == ".parquet"  # a CSV's VM names are made safe for spreadsheets (densim.csvsafe)
    data = {
        "vm": np.tile(np.array([str(x) if parquet else safe_cell(str(x)) for x in inv.names], dtype=object), t).astype(str),
        "time [s]": np.repeat(inv.start_s + inv.step_s * np.arange(t), n),
        "vcpus": np.tile(inv.vcpus, t),
        "vcpu_speed [MHz]": np.tile(inv.vcpu_mhz, t),
        "memory [bytes]": np.tile(inv.mem_bytes, t) if inv.mem_config_bytes is None else inv.mem_config_bytes.reshape(-1).astype(np.float64),
        "cpu_used [MHz]": inv.cpu_mhz.reshape(-1).astype(np.float64),
    }
    for key, arr in (("start [s]", inv.vm_start_s), ("end [s]", inv.vm_end_s)):
        if arr is not None and np.isfinite(arr).any():
            if not np.isfinite(arr).all():
                raise ValueError(f"the generic format needs {key.split()[0]} for every VM or none")
            data[key] = np.tile(arr, t)
    if inv.mem_used_bytes is not None:
        data["memory_used [bytes]"] = inv.mem_used_bytes.reshape(-1).astype(np.float64)
    if inv.has_disk:
        data["disk_read [B/s]"] = inv.disk_read_Bps.reshape(-1).astype(np.float64)
        data["disk_write [B/s]"] = inv.disk_write_Bps.reshape(-1).astype(np.float64)
    df = pl.DataFrame(data)
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        return write_atomic(path, lambda p: df.write_parquet(p))
    return write_atomic(path, lambda p: df.write_csv(p))
