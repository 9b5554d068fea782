"""Up-front memory estimates for ``--max-memory``: refuse a run or plan before it allocates.

The run estimate is computed here from the loaded scenario, not from the engine's own data: VMs
(group counts, or for a trace without a count the files or tasks it holds, read from file names
and Parquet metadata) x time steps (horizon / step; without a horizon, the span of a PlanetLab or
OpenDC trace, read cheaply) x hosts. It models the engine's largest arrays, calibrated on the
benchmark ladder (100,000 VMs x 288 steps: 0.59 GiB peak RSS measured, 0.58 GiB estimated):

* per-VM state (sizes, names, totals): ``PER_VM_BYTES`` per VM;
* one chunk of (steps x VMs) float32 arrays: ``BYTES_PER_CHUNK_CELL`` per cell, at most
  ``CHUNK_CELLS`` cells per chunk (the engine splits time into chunks of that size), at least one
  step of every VM;
* host time series (unless ``output.host_timeseries: off``): ``HOST_SERIES`` float32 per step and host;
* VM time series (``output.vm_timeseries: on``, or ``auto`` up to 5 million cells): ``VM_SERIES``
  float32 per step and VM.

It is an estimate (within a factor of about 2), meant to turn a typo (a 1 ms step over a year,
10^8 VMs) into a one-line refusal instead of a MemoryError or a swapping machine.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

PER_VM_BYTES = 300
BYTES_PER_CHUNK_CELL = 16
CHUNK_CELLS = 40_000_000
HOST_SERIES = 12
VM_SERIES = 8
VM_SERIES_AUTO_CELLS = 5_000_000
DEFAULT_MAX_MEMORY = "8 GiB"


def parse_max_memory(text: str) -> int:
    """``"8 GiB"``, ``"512 MiB"`` or a number of bytes; a usage error otherwise."""
    import typer

    from densim.units import UnitError, parse

    try:
        n = parse(text, "byte")
    except (UnitError, ValueError) as exc:
        raise typer.BadParameter(f"{text!r} is not a memory size such as '8 GiB' ({exc})") from None
    if not (math.isfinite(n) and n > 0):
        raise typer.BadParameter(f"must be a size > 0, got {text!r}")
    return int(n)


def max_memory_option(ctx, param, value: str) -> int:  # noqa: ARG001 - a typer/click option callback
    """``--max-memory`` parsed to bytes (a usage error naming the option when it is not a size)."""
    return parse_max_memory(value)


def _trace_vms_and_steps(trace: Any, step_s: float) -> tuple[int | None, int | None]:
    """(VMs, steps) of a trace without reading it: file names, line counts, Parquet metadata."""
    path = Path(trace.path)
    limit = trace.limit
    try:
        if trace.format == "bitbrains":
            files = [p for p in path.iterdir() if p.name.endswith((".csv", ".csv.gz"))] if path.is_dir() else [path]
            n = len(files)
            return (min(n, limit) if limit else n), None
        if trace.format == "planetlab":
            files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")) if path.is_dir() else [path]
            n = len(files)
            steps = None
            if files and files[0].stat().st_size < 2**26:
                lines = sum(1 for ln in files[0].read_bytes().splitlines() if ln.strip())
                steps = math.ceil(lines * 300.0 / step_s)
            return (min(n, limit) if limit else n), steps
        if trace.format == "opendc":
            import pyarrow.parquet as pq

            folder = path.parent if path.is_file() else path
            if not (folder / "tasks.parquet").is_file():  # a FIFO would block the open: the reader says what is wrong
                return None, None
            tasks = pq.ParquetFile(folder / "tasks.parquet")
            n = tasks.metadata.num_rows
            t = tasks.read(columns=["submission_time", "duration"])
            from densim.workloads.readers.opendc import numpy_of  # to_numpy would import pandas (0.4 s)

            sub = numpy_of(t.column("submission_time")).astype(float) / 1000.0
            end = sub + numpy_of(t.column("duration")).astype(float) / 1000.0
            steps = math.ceil((float(end.max()) - float(sub.min())) / step_s) if n else 0
            return (min(n, limit) if limit else n), steps
    except Exception:  # noqa: BLE001 - an estimate only: the readers report a damaged trace properly
        return None, None
    return None, None


def run_shape(sc: Any) -> tuple[int, int, int | None]:
    """(VMs, hosts, steps or None when unknown before the traces are read) of a scenario."""
    sim = sc.simulation
    hosts = sum(int(g.count) for g in sc.cluster.hosts)
    vms = 0
    trace_steps: list[int] = []
    for g in sc.vms:
        count = g.count
        if g.trace is not None and (count is None or sim.horizon_s is None):  # else nothing to learn from the trace
            n, steps = _trace_vms_and_steps(g.trace, sim.step_s)
            if steps is not None:
                trace_steps.append(steps)
            count = count if count is not None else n
        vms += int(count or 0)
    if sim.horizon_s is not None:
        steps: int | None = math.ceil(sim.horizon_s / sim.step_s)
    elif all(g.trace is None for g in sc.vms):
        steps = None  # the engine asks for a horizon
    else:
        steps = max(trace_steps) if len(trace_steps) == sum(g.trace is not None for g in sc.vms) and trace_steps else None
    return vms, hosts, steps


def run_bytes(sc: Any) -> tuple[float, str]:
    """Estimated peak bytes of the engine's arrays for scenario ``sc``, and how it was reckoned."""
    vms, hosts, steps = run_shape(sc)
    per_vm = PER_VM_BYTES * vms
    if steps is None:
        chunk = BYTES_PER_CHUNK_CELL * max(vms, min(CHUNK_CELLS, vms * 288))
        return per_vm + chunk, f"{vms:,} VMs x (steps unknown until the traces are read) on {hosts:,} hosts"
    cells = vms * steps
    chunk = BYTES_PER_CHUNK_CELL * max(min(cells, CHUNK_CELLS), vms)
    host_series = 0 if sc.output.host_timeseries == "off" else 4 * HOST_SERIES * steps * hosts
    vm_on = sc.output.vm_timeseries == "on" or (sc.output.vm_timeseries == "auto" and cells <= VM_SERIES_AUTO_CELLS)
    vm_series = 4 * VM_SERIES * cells if vm_on else 0
    return per_vm + chunk + host_series + vm_series, f"{vms:,} VMs x {steps:,} steps on {hosts:,} hosts"


def check_run_memory(sc: Any, source: Any, max_bytes: int) -> None:
    from densim.errors import InputError
    from densim.workloads.readers._checks import gib

    need, shape = run_bytes(sc)
    if need > max_bytes:
        raise InputError(source, "", f"the run needs about {gib(need)} ({shape}), more than --max-memory "
                                     f"({gib(max_bytes)}); raise --max-memory, or use a longer step, a shorter horizon "
                                     "or fewer VMs")


def plan_bytes(n_vms: int, n_steps: int) -> float:
    """The plan's largest arrays: a few (steps x VMs) float32 copies of the demand series while placing
    and re-checking (CPU and memory series, right-sized copies, per-host sums)."""
    return 8 * 4.0 * max(n_steps, 1) * n_vms + PER_VM_BYTES * n_vms


def sizing_space(sc: Any) -> int:
    """Configurations ``densim size`` could evaluate (an upper bound, without searching): devices x RAID
    levels x drive counts x controllers x controller counts (the minimum plus ``extra_controllers``) x
    core counts. The search usually stops far sooner (at the first drive count meeting the target for
    each combination); it scans the whole range only when nothing in it meets the target."""
    return math.prod(_sizing_factors(sc).values())


def _sizing_factors(sc: Any) -> dict[str, int]:
    c = sc.candidates
    return {"device": len(c.devices), "RAID level": len(c.raid),
            "drive count": max(0, int(c.drives_max) - int(c.drives_min) + 1),
            "controller": max(1, len(c.controllers)), "controller count": int(c.extra_controllers) + 1,
            "core count": len(c.cores)}


# The search evaluates about 2,700 configurations a second on the development machine (2 shared cores;
# examples/storage/size-500k-iops.yaml with a target nothing meets: 17,850 configurations in 6.5 s,
# 8 to 96 drives each; a configuration costs about 8 us more per drive), so the default refuses a
# search that could run longer than some minutes.
DEFAULT_MAX_CONFIGURATIONS = 1_000_000


def check_sizing_space(sc: Any, source: Any, max_configurations: int) -> None:
    """Refuse a sizing search whose space is above ``max_configurations``, before searching."""
    from densim.errors import InputError

    n = sizing_space(sc)
    if n > max_configurations:
        shape = " x ".join(f"{v:,} {k}{'s' if v != 1 else ''}" for k, v in _sizing_factors(sc).items())
        raise InputError(source, "candidates", f"the search could evaluate up to {n:,} configurations ({shape}), "
                                               f"more than --max-configurations ({max_configurations:,}); narrow "
                                               "drives_min..drives_max or the candidate lists, or raise --max-configurations")
