"""A placement you already have: ``placement: {policy: given, assignment: FILE}``, and per-VM sizes (``vms[].sizes``).

The assignment file (CSV, or Parquet by its ``.parquet`` suffix) has one row per VM with columns ``vm`` (the VM's name
as the engine names it: ``<group>-<n>`` for a profile group, ``<group>-<trace VM>`` for a trace group) and ``host``
(a host's name, ``<host group>-<i>`` with ``i`` counted over the whole cluster, or its 0-based index in scenario
order). Every VM of the scenario must have exactly one row; an unknown VM or host, a host index out of range or a
host whose vCPUs or configured memory exceed its capacity under the over-commit
(:func:`densim.placement.capacity.within`, the rule every placement uses) is refused with the file, the row and the
column. A given placement is the VMs' host at the start of the run: it places once (``scheduling.lifetimes: off``);
with host failures the restarts need an online policy (``failures.ha.restart_policy``), and maintenance
evacuations pick their destinations as they do for any other policy.

The sizes file (``vms[].sizes`` of a trace group) has columns ``vm``, ``vcpus`` and ``memory`` (bytes, or a
quantity with a unit such as ``8 GiB``): each listed VM of the group takes these sizes instead of the trace's (the
trace still gives its CPU demand in MHz and its memory in use). ``densim plan`` writes both files beside
``chosen-scenario.yaml``: the plan's placement and its right-sized VMs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from densim.errors import InputError


def _path(path: str | Path, base_dir: str | Path | None) -> Path:
    p = Path(path)
    return p if p.is_absolute() or base_dir is None else Path(base_dir) / p


def read_table(path: Path, columns: tuple[str, ...], field: str):
    """``path`` (CSV, or Parquet by suffix) as a polars DataFrame of strings with ``columns`` (others are ignored)."""
    import polars as pl

    if not path.is_file():
        raise InputError(path, field, "file not found")
    try:
        if path.suffix.lower() == ".parquet":
            df = pl.read_parquet(path)
            df = df.select([pl.col(c).cast(pl.Utf8) for c in df.columns])
        else:
            from densim.textio import read_text_file

            import io

            df = pl.read_csv(io.StringIO(read_text_file(path, field)), infer_schema=False)
            # a name written safe for spreadsheets ('=x: densim.csvsafe.safe_cell) is read back as it was
            df = df.with_columns(pl.col(pl.Utf8).str.replace(r"^'([=+\-@\t\r])", "$1"))
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - polars raises several kinds for a malformed file
        raise InputError(path, field, f"not a {'Parquet' if path.suffix.lower() == '.parquet' else 'CSV'} file: "
                         f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(path, "header", f"missing column(s) {', '.join(missing)} (need {', '.join(columns)})")
    df = df.select(list(columns))
    for c in columns:
        empty = df[c].is_null() | (df[c].str.strip_chars() == "")
        if empty.any():
            raise InputError(path, f"row {int(np.flatnonzero(empty.to_numpy())[0]) + 2}, column '{c}'", "empty")
    return df


def _rows_of(names: np.ndarray, wanted: np.ndarray, path: Path, what: str, column: str = "vm") -> np.ndarray:
    """For each name in ``names`` (the file's column), its index in ``wanted``; refuses duplicates and unknown names."""
    index = {str(n): i for i, n in enumerate(wanted)}
    idx = np.fromiter((index.get(str(n), -1) for n in names), dtype=np.int64, count=len(names))
    bad = np.flatnonzero(idx < 0)
    if bad.size:
        r = int(bad[0])
        raise InputError(path, f"row {r + 2}, column '{column}'", f"unknown {what} {str(names[r])!r}"
                         + (f" ({bad.size} rows name unknown {what}s)" if bad.size > 1 else ""))
    order = np.argsort(idx, kind="stable")
    dup = np.flatnonzero(idx[order][1:] == idx[order][:-1])
    if dup.size:
        first, again = int(order[dup[0]]), int(order[dup[0] + 1])
        raise InputError(path, f"row {again + 2}, column '{column}'", f"{what} {str(names[again])!r} again (first on row "
                                                                        f"{first + 2}): one row per {what}")
    return idx


@dataclass(frozen=True)
class Assignment:
    """An assignment file resolved against a run's VMs and hosts: ``host_of`` per VM and the file row of each VM."""

    path: Path
    host_of: np.ndarray  # int64 (VMs,)
    row: np.ndarray  # int64 (VMs,): the CSV row (header = row 1) that places the VM
    host_names: np.ndarray


def assignment(path: str | Path, vm_names, host_names, base_dir: str | Path | None = None) -> Assignment:
    """Read ``path`` and map it onto ``vm_names`` / ``host_names``; every problem is a one-line InputError."""
    p = _path(path, base_dir)
    df = read_table(p, ("vm", "host"), "placement.assignment")
    vm_names, host_names = np.asarray(vm_names, dtype=object), np.asarray(host_names, dtype=object)
    vm_idx = _rows_of(df["vm"].str.strip_chars().to_numpy(), vm_names, p, "VM")
    hosts = df["host"].str.strip_chars().to_numpy()
    by_name = {str(n): i for i, n in enumerate(host_names)}
    # a cell is a host's name, else (all digits) its 0-based index; host names always have a '-' (<group>-<i>)
    h_idx = np.fromiter((by_name.get(str(h), int(h) if str(h).isdigit() else -1) for h in hosts), dtype=np.int64,
                        count=len(hosts))
    out = np.flatnonzero(h_idx >= len(host_names))
    if out.size:
        r = int(out[0])
        raise InputError(p, f"row {r + 2}, column 'host'", f"host index {h_idx[r]} out of range: the scenario has "
                                                           f"{len(host_names)} hosts (0 to {len(host_names) - 1})")
    bad = np.flatnonzero(h_idx < 0)
    if bad.size:
        r = int(bad[0])
        some = ", ".join(map(str, host_names[:3])) + (", ..." if len(host_names) > 3 else "")
        raise InputError(p, f"row {r + 2}, column 'host'", f"unknown host {str(hosts[r])!r} (the scenario's hosts: "
                                                           f"{some}; or a 0-based host index)")
    host_of = np.full(len(vm_names), -1, dtype=np.int64)
    row = np.full(len(vm_names), -1, dtype=np.int64)
    host_of[vm_idx] = h_idx
    row[vm_idx] = np.arange(len(vm_idx)) + 2
    missing = np.flatnonzero(row < 0)
    if missing.size:
        raise InputError(p, "column 'vm'", f"no row for VM {str(vm_names[missing[0]])!r}"
                         + (f" and {missing.size - 1} more" if missing.size > 1 else "")
                         + ": a given placement places every VM of the scenario")
    return Assignment(p, host_of, row, host_names)


def kernel_params(sc, vm_names, host_names) -> dict[str, Any]:
    """The ``given`` kernel's ``assignment`` for a scenario whose ``placement.policy`` is ``given`` (else nothing)."""
    pl = sc.placement
    if pl.policy != "given":
        return {}
    return {"assignment": assignment(pl.assignment, vm_names, host_names, sc.base_dir)}


def place_given(vm_cpu, vm_mem, cpu_cap, mem_cap, rng=None, assignment: Assignment | None = None, **_) -> np.ndarray:
    """The assignment's host per VM, after checking every host's vCPUs and configured memory fit its capacity."""
    from densim.placement.capacity import within

    if assignment is None:
        raise ValueError("placement 'given' needs an assignment (placement.assignment)")
    a = assignment
    vm_cpu, vm_mem = np.asarray(vm_cpu, dtype=np.float64), np.asarray(vm_mem, dtype=np.float64)
    if a.host_of.size != vm_cpu.size:
        raise ValueError(f"assignment of {a.host_of.size} VMs for {vm_cpu.size} VMs")
    h = len(cpu_cap)
    load = np.stack([np.bincount(a.host_of, weights=vm_cpu, minlength=h), np.bincount(a.host_of, weights=vm_mem, minlength=h)], 1)
    cap = np.stack([np.asarray(cpu_cap, dtype=np.float64), np.asarray(mem_cap, dtype=np.float64)], 1)
    over = ~within(cap, load)
    if over.any():
        host, dim = (int(x[0]) for x in np.nonzero(over))
        on = np.flatnonzero(a.host_of == host)
        what = ("vCPUs", "placement.cpu_overcommit", "{:g}") if dim == 0 else ("bytes of configured memory", "placement.memory_overcommit", "{:.0f}")
        fmt = what[2]
        raise InputError(a.path, f"row {int(a.row[on].max())}, column 'host'",
                         f"host {str(a.host_names[host])!r} gets {fmt.format(load[host, dim])} {what[0]} from {on.size} VMs (rows "
                         f"{', '.join(str(int(r)) for r in np.sort(a.row[on])[:5])}{', ...' if on.size > 5 else ''}), above its "
                         f"capacity of {fmt.format(cap[host, dim])} under {what[1]}")
    return a.host_of.copy()


def sizes_override(sizes, path: str | Path, where: str, base_dir: str | Path | None = None):
    """``sizes`` (a :class:`densim.workloads.sources.VmSizes`-like object) with the vCPUs and memory of the VMs listed in
    the sizes file at ``path`` (columns vm, vcpus, memory); VMs it does not list keep theirs."""
    from dataclasses import replace

    from pydantic import TypeAdapter, ValidationError

    from densim.units import PosMemBytes

    mem_type = TypeAdapter(PosMemBytes)
    p = _path(path, base_dir)
    df = read_table(p, ("vm", "vcpus", "memory"), where)
    idx = _rows_of(df["vm"].str.strip_chars().to_numpy(), np.asarray(sizes.names, dtype=object), p,
                   f"VM of this group ({where.rsplit('.', 1)[0]})")
    vc = df["vcpus"].str.strip_chars().to_numpy()
    ok = np.fromiter((v.isdigit() and 0 < int(v) <= 2**31 - 1 for v in vc), dtype=bool, count=len(vc))
    if not ok.all():
        r = int(np.flatnonzero(~ok)[0])
        raise InputError(p, f"row {r + 2}, column 'vcpus'", f"{vc[r]!r} is not a whole number of vCPUs above 0")
    mem = np.empty(len(vc))
    for r, v in enumerate(df["memory"].str.strip_chars().to_list()):
        try:
            mem[r] = mem_type.validate_python(float(v) if _number(v) else v)
        except ValidationError as e:
            raise InputError(p, f"row {r + 2}, column 'memory'", f"{v!r}: {e.errors()[0]['msg'].removeprefix('Value error, ')}") from None
    vcpus = np.asarray(sizes.vcpus).copy()
    mem_bytes = np.asarray(sizes.mem_bytes, dtype=np.float64).copy()
    vcpus[idx] = np.array([int(v) for v in vc], dtype=vcpus.dtype)
    mem_bytes[idx] = mem
    return replace(sizes, vcpus=vcpus, mem_bytes=mem_bytes)


def _number(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True


__all__ = ["Assignment", "assignment", "kernel_params", "place_given", "read_table", "sizes_override"]
