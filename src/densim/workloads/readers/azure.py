"""Azure Public Dataset VM traces (V1 2017 / V2 2019): ``vmtable.csv`` + ``vm_cpu_readings-*.csv``.

Both are CSV (optionally gzip) **without a header**:

* vmtable: ``vmid, subscriptionid, deploymentid, vmcreated, vmdeleted, maxcpu, avgcpu, p95maxcpu,
  vmcategory, vmcorecountbucket, vmmemorybucket`` (times in s from trace start, CPU in %).
* vm_cpu_readings: ``timestamp, vmid, mincpu, maxcpu, avgcpu`` (5-min windows, CPU in %).

Sizes are buckets; densim takes each bucket's upper bound (cores 2, 4, 8, 12, 24; memory 2, 4, 8,
32, 64 GB, read as GiB: ``densim.workloads.readers.conventions``) and for the open buckets ``>24``
cores -> 32 and ``>64`` GB -> 128 GB (stated assumption). The trace has no clock: a vCPU is
``vcpu_mhz`` (default 2,400 MHz). Demand = avgcpu/100 x vCPUs x MHz over the 5-minute window that
starts at the reading's timestamp.

Lifetimes: ``vmcreated`` and ``vmdeleted`` are each VM's arrival and departure (seconds from the
trace start), kept as ``start_s``/``end_s``; a VM deleted before it is created is an error.

Any subset of the dataset reads: readings of VMs that are not in the vmtable (a vmtable cut to some
VMs, or readings files of a longer period) are skipped and counted (``skipped_readings``, a note in
the inventory); ``unknown_vms="error"`` (scenario ``trace.unknown_vms: error``) refuses them instead,
naming the file and row of the first one.

Source: Azure/AzurePublicDataset (Cortez et al., "Resource Central", SOSP 2017); schema as in
../shared/reference/ecosystem.md §1.4.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dataclasses import dataclass, field

from densim.errors import InputError
from densim.workloads.readers._checks import (MAX_MEMORY_BYTES, MAX_TIME_S, MAX_VCPUS, check_budget, check_clock, check_gaps,
                                              check_times, check_values, maybe_gunzip, read_bytes, text_of)
from densim.workloads.readers._grid import to_grid
from densim.workloads.readers.conventions import bytes_per_unit
from densim.workloads.inventory import DEFAULT_VCPU_MHZ, Inventory, build_inventory
from densim.workloads.sources import DemandSource, VmSizes
from densim.workloads.timegrid import TimeGrid, resample_piecewise

VMTABLE_COLUMNS = ["vmid", "subscriptionid", "deploymentid", "vmcreated", "vmdeleted", "maxcpu", "avgcpu",
                   "p95maxcpu", "vmcategory", "vmcorecountbucket", "vmmemorybucket"]
READING_COLUMNS = ["timestamp", "vmid", "mincpu", "maxcpu", "avgcpu"]
OPEN_CORES = 32
OPEN_MEMORY_GB = 128
GB = bytes_per_unit("azure", "memory", "GB")
STEP_S = 300.0  # one reading per VM per 5 minutes
UNKNOWN_VMS = ("skip", "error")


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


@dataclass
class AzureTrace:
    """An Azure Public Dataset folder read into arrays: one entry per vmtable VM, one per kept reading."""

    path: Path
    vmtable_path: Path
    reading_paths: list[Path]
    ids: np.ndarray  # (N,) str
    cores: np.ndarray  # (N,) float64 bucket upper bound
    mem_bytes: np.ndarray  # (N,) float64
    start_s: np.ndarray  # (N,) float64 vmcreated (s from the trace start)
    end_s: np.ndarray  # (N,) float64 vmdeleted
    r_vm: np.ndarray  # (R,) int32 VM index of each kept reading
    r_t: np.ndarray  # (R,) float64 reading timestamp (start of its 5-minute window)
    r_pct: np.ndarray  # (R,) float64 CPU % of the VM's cores
    r_dur: np.ndarray  # (R,) float64 how long the reading holds: 300 s, or less when the VM's next reading comes sooner
    statistic: str = "avgcpu"
    skipped_readings: int = 0  # readings of VMs not in the vmtable
    skipped_vms: int = 0  # distinct such VMs
    skipped_example: str = ""
    skipped_first: tuple[str, int] = ("", 0)  # file and row of the first skipped reading
    notes: list[str] = field(default_factory=list)

    @property
    def n_vms(self) -> int:
        return int(self.ids.size)

    def skip_note(self) -> str:
        if not self.skipped_readings:
            return ""
        return (f"{self.skipped_readings:,} reading(s) of {self.skipped_vms:,} VM(s) not in {self.vmtable_path.name} skipped "
                f"(e.g. {self.skipped_example!r}); unknown_vms: error refuses them")


def _check_min_avg_max(v: dict[str, np.ndarray], path: Path) -> None:
    """mincpu <= avgcpu <= maxcpu on every reading (the minimum, mean and maximum of one 5-minute window)."""
    for lo, hi in (("mincpu", "maxcpu"), ("avgcpu", "maxcpu"), ("mincpu", "avgcpu")):
        bad = v[lo] > v[hi]
        if bad.any():
            r = int(np.argmax(bad))
            raise InputError(path, f"row {r + 1}, column {lo!r}",
                             f"{lo} {v[lo][r]:g} is above {hi} {v[hi][r]:g}: a window's minimum <= mean <= maximum")


def _lifetimes(vmt, vmt_path: Path) -> tuple[np.ndarray, np.ndarray]:
    created = _numbers(vmt, "vmcreated", vmt_path)
    deleted = _numbers(vmt, "vmdeleted", vmt_path)
    for col, v in (("vmcreated", created), ("vmdeleted", deleted)):
        check_values(v, vmt_path, col, row_offset=1, lo=-MAX_TIME_S, hi=MAX_TIME_S, what="time (s)")
    early = deleted < created
    if early.any():
        r = int(np.argmax(early))
        raise InputError(vmt_path, f"row {r + 1}, column 'vmdeleted'",
                         f"the VM is deleted {created[r] - deleted[r]:,.0f} s before it is created (vmdeleted {deleted[r]:g} < "
                         f"vmcreated {created[r]:g}: a departure before its arrival)")
    return created, deleted


def read_azure_trace(path: str | Path, *, statistic: str = "avgcpu", unknown_vms: str = "skip", limit: int | None = None,
                     **_: object) -> AzureTrace:
    """Read an Azure Public Dataset folder (any subset) into an :class:`AzureTrace`; every cell checked first.

    ``limit`` keeps the first ``limit`` VMs of the vmtable (their readings; the others' are dropped, not
    counted as unknown). A reading repeated for one VM and time is kept once if it repeats the same
    values and refused if it does not; every reading must have mincpu <= avgcpu <= maxcpu.
    """
    import polars as pl

    path = Path(path)
    if statistic not in ("avgcpu", "maxcpu"):
        raise InputError(None, "statistic", f"must be avgcpu or maxcpu, got {statistic!r}")
    if unknown_vms not in UNKNOWN_VMS:
        raise InputError(None, "unknown_vms", f"must be skip or error, got {unknown_vms!r}")
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
    mem_gb = _bucket(vmt["vmmemorybucket"].to_list(), vmt_path, "vmmemorybucket", OPEN_MEMORY_GB, MAX_MEMORY_BYTES / GB)
    created, deleted = _lifetimes(vmt, vmt_path)
    del vmt
    n_keep = len(ids) if limit is None else max(1, min(int(limit), len(ids)))
    id_map = pl.DataFrame({"vmid": ids, "_idx": np.arange(len(ids), dtype=np.int64)})
    # every readings file checked on its own, so a bad cell is reported in its file at its row
    parts: list = []
    used: list[Path] = []
    skipped = 0
    unknown: set[str] = set()
    example = ""
    first = ("", 0)
    for p in reading_paths:
        part = _read_headerless(p, READING_COLUMNS)
        if part.height == 0:
            continue
        vm = part["vmid"].str.strip_chars()
        blank = (vm.is_null() | (vm == "")).to_numpy()
        if blank.any():
            raise InputError(p, f"row {int(np.argmax(blank)) + 1}, column 'vmid'", "VM id is blank")
        t = _numbers(part, "timestamp", p)
        check_times(t, p, "timestamp", row_offset=1)
        lo_hi = {}
        for col in ("mincpu", "maxcpu", "avgcpu"):
            lo_hi[col] = _numbers(part, col, p)
            check_values(lo_hi[col], p, col, row_offset=1, hi=100.0, what="CPU %", implausible=False)
        _check_min_avg_max(lo_hi, p)
        pct = lo_hi[statistic]
        idx = pl.DataFrame({"vmid": vm}).join(id_map, on="vmid", how="left", maintain_order="left")["_idx"]
        miss = idx.is_null().to_numpy()
        if miss.any():
            r = int(np.argmax(miss))
            if unknown_vms == "error":
                raise InputError(p, f"row {r + 1}, column 'vmid'", f"reading for VM {vm[r]!r} that is not in {vmt_path.name}")
            if not skipped:
                example = vm[r]
                first = (str(p), r + 1)
            skipped += int(miss.sum())
            if len(unknown) < 1_000_000:
                unknown.update(vm.filter(pl.Series(miss)).unique().to_list())
        vm_idx = idx.fill_null(-1).to_numpy()
        keep = (vm_idx >= 0) & (vm_idx < n_keep)
        parts.append((vm_idx[keep].astype(np.int32), t[keep], pct[keep], np.flatnonzero(keep),
                      np.stack([lo_hi[c][keep] for c in READING_COLUMNS[2:]], axis=1)))
        del lo_hi
        used.append(p)
    if not parts or sum(x[0].size for x in parts) == 0:
        where = reading_paths[0]
        raise InputError(where, "row 1", "empty file: no CPU readings" if not skipped else
                         f"no CPU readings of any VM in {vmt_path.name} ({skipped:,} readings of other VMs)")
    r_vm = np.concatenate([x[0] for x in parts])
    r_t = np.concatenate([x[1] for x in parts])
    r_pct = np.concatenate([x[2] for x in parts])
    offsets = np.cumsum([0] + [x[0].size for x in parts[:-1]])
    file_rows = [x[3] for x in parts]  # the row in its file of every kept reading

    def file_row(i: int) -> tuple[Path, int]:
        """The readings file and its row (1-based, headerless) of kept reading ``i``."""
        f = int(np.searchsorted(offsets, i, side="right")) - 1
        return used[f], int(file_rows[f][i - offsets[f]]) + 1

    if len(parts) == 1:
        check_gaps(r_t, used[0], "timestamp", rows=parts[0][3] + 1)
    else:
        try:
            check_gaps(r_t, path, "timestamp", rows=np.arange(r_t.size))
        except InputError as exc:  # name the readings file and its row
            f_path, f_row = file_row(int(exc.where.split(",")[0].split()[1]))
            raise InputError(f_path, f"row {f_row}, column 'timestamp'", exc.problem) from None
    # sorted by VM then time; a reading repeated for one VM and time must repeat the same values (it is
    # then kept once); each holds 300 s or until the VM's next reading
    order = np.lexsort((r_t, r_vm))
    r_vm, r_t, r_pct = r_vm[order], r_t[order], r_pct[order]
    new = np.r_[True, (r_vm[1:] != r_vm[:-1]) | (r_t[1:] != r_t[:-1])]
    if not new.all():
        r_all = np.concatenate([x[4] for x in parts])[order]  # mincpu, maxcpu, avgcpu
        differ = ~new[1:] & (r_all[1:] != r_all[:-1]).any(axis=1)
        if differ.any():
            k = int(np.argmax(differ))
            # lexsort is stable: order[k] is the earlier of the two readings (by file, then row)
            (fa, ra), (fb, rb) = file_row(int(order[k])), file_row(int(order[k + 1]))
            also = f"row {ra}" + ("" if fa == fb else f" of {fa.name}")
            raise InputError(fb, f"row {rb}, column 'vmid'",
                             f"a second reading of VM {ids[int(r_vm[k])]!r} at timestamp {r_t[k]:g} that disagrees with {also} "
                             f"(mincpu, maxcpu, avgcpu {', '.join(f'{x:g}' for x in r_all[k + 1])} vs {', '.join(f'{x:g}' for x in r_all[k])}): "
                             "which one is right?")
        r_vm, r_t, r_pct = r_vm[new], r_t[new], r_pct[new]
    del parts
    same_next = np.r_[r_vm[1:] == r_vm[:-1], False]
    r_dur = np.full(r_t.size, STEP_S)
    r_dur[same_next] = np.minimum(STEP_S, r_t[1:][same_next[:-1]] - r_t[:-1][same_next[:-1]])
    sl = slice(0, n_keep)
    tr = AzureTrace(path=path, vmtable_path=vmt_path, reading_paths=reading_paths, ids=np.array(ids, dtype=str)[sl], cores=cores[sl],
                    mem_bytes=(mem_gb * GB)[sl], start_s=created[sl], end_s=deleted[sl], r_vm=r_vm, r_t=r_t, r_pct=r_pct, r_dur=r_dur,
                    statistic=statistic, skipped_readings=skipped, skipped_vms=len(unknown), skipped_example=example,
                    skipped_first=first)
    if skipped:
        tr.notes.append(tr.skip_note())
    return tr


def read_azure(path: str | Path, *, vcpu_mhz: float = DEFAULT_VCPU_MHZ, statistic: str = "avgcpu", unknown_vms: str = "skip") -> Inventory:
    """The Azure folder as an inventory: sizes, the CPU demand grid, and each VM's lifetime."""
    check_clock(np.array([vcpu_mhz], dtype=float), "vcpu_mhz", "vcpu_mhz")
    tr = read_azure_trace(path, statistic=statistic, unknown_vms=unknown_vms)
    capacity = tr.cores * vcpu_mhz
    demand = tr.r_pct / 100.0 * capacity[tr.r_vm]
    grid, step, start = to_grid(tr.r_vm, tr.r_t, demand, tr.n_vms, step_s=STEP_S, source=tr.path)
    return build_inventory(
        tr.ids.astype(object), tr.cores.astype(np.int32), np.full(tr.n_vms, float(vcpu_mhz)), tr.mem_bytes,
        cpu_mhz=grid, step_s=step, start_s=start, source=str(tr.path), fmt="azure",
        demand_rule=f"Azure trace: CPU demand = {statistic}/100 x bucket vCPUs x {vcpu_mhz:g} MHz per 5-min window; "
        "sizes are bucket upper bounds (memory GB read as GiB); no memory series (configured memory is used).",
        vm_start_s=tr.start_s, vm_end_s=tr.end_s, notes=tr.notes, skipped_readings=tr.skipped_readings,
    )


class AzureSource(DemandSource):
    """An Azure trace for the engine: each reading holds for the 5-minute window it starts (CPU % x cores x MHz)."""

    channels = ("cpu_mhz",)

    def __init__(self, trace: AzureTrace, name: str, count: int | None = None, vcpus: int | None = None,
                 vcpu_mhz: float | None = None, mem_bytes: float | None = None, offset_s: float = 0.0) -> None:
        self.trace = trace
        n = trace.n_vms
        count = n if count is None else count
        self.vm_of = np.arange(count) % n
        clock = float(vcpu_mhz or DEFAULT_VCPU_MHZ)
        self.offset_s = float(offset_s)
        self.sizes = VmSizes(
            names=np.array([f"{name}-{trace.ids[v]}" + (f"-{i // n}" if count > n else "") for i, v in enumerate(self.vm_of)], dtype=object),
            vcpus=(np.full(count, vcpus) if vcpus else trace.cores[self.vm_of]).astype(np.int32),
            vcpu_mhz=np.full(count, clock, dtype=np.float64),
            mem_bytes=(np.full(count, mem_bytes) if mem_bytes else trace.mem_bytes[self.vm_of]).astype(np.float64),
        )
        # demand of each reading in MHz, for the trace's own VMs (bucket cores x the clock)
        self._mhz = trace.r_pct / 100.0 * (trace.cores * clock)[trace.r_vm]
        self.start_s = trace.start_s[self.vm_of]  # lifetimes of this group's VMs
        self.end_s = trace.end_s[self.vm_of]

    def span_s(self):
        t = self.trace
        return float(t.r_t.min()) + self.offset_s, float((t.r_t + t.r_dur).max())

    def native_step_s(self):
        return STEP_S

    def window(self, grid: TimeGrid, t0: int, t1: int, channels):
        if "cpu_mhz" not in channels:
            return {}
        t = self.trace
        check_budget(4.0 * (t1 - t0) * (self.n_vms + t.n_vms), f"the Azure demand window ({t1 - t0:,} steps x {self.n_vms:,} VMs)", t.path)
        edges = grid.edges_s(t0, t1)
        keep = (t.r_t < edges[-1]) & (t.r_t + STEP_S > edges[0])
        per_vm = resample_piecewise(t.r_t[keep], t.r_dur[keep], self._mhz[keep], t.r_vm[keep], t.n_vms, edges)
        if self.vm_of.size == t.n_vms and np.array_equal(self.vm_of, np.arange(t.n_vms)):
            return {"cpu_mhz": per_vm}
        return {"cpu_mhz": per_vm[:, self.vm_of]}
