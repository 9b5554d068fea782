"""One registry of workload formats, for traces and inventories alike.

Every format (``planetlab``, ``bitbrains``, ``opendc``, ``generic``, ``rvtools``, ``azure``) is one
:class:`WorkloadFormat` entry in :data:`FORMATS` that says what it can do:

* ``open(path, **options)`` reads a trace that the engine can replay (None: inventory only);
* ``to_source(trace, group)`` turns an opened trace and a scenario's VM group into the
  :class:`~densim.workloads.sources.DemandSource` the engine streams;
* ``read_inventory(path, **options)`` reads it as an :class:`~densim.workloads.inventory.Inventory`
  for ``densim plan``.

Readers are imported only when their format is used (pyarrow, openpyxl and polars are not start-up
costs). :func:`densim.workloads.formats.detect_format` guesses a format from a path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any

from densim.errors import InputError
from densim.registry import Registry


def _lazy(target: str) -> Callable[..., Any]:
    """``"module:attr"`` as a callable that imports the module on first call."""
    mod, attr = target.split(":")

    def call(*args, **kwargs):
        return getattr(import_module(mod), attr)(*args, **kwargs)

    call.__qualname__ = call.__name__ = attr
    return call


@dataclass(frozen=True)
class WorkloadFormat:
    name: str
    read_inventory: Callable[..., Any]
    open: Callable[..., Any] | None = None
    to_source: Callable[[Any, Any], Any] | None = None

    @property
    def replayable(self) -> bool:
        """The engine can replay it (a trace, not only an inventory)."""
        return self.open is not None


FORMATS: Registry[WorkloadFormat] = Registry("workload-format")


def _foundation(fmt: str) -> Callable[..., Any]:
    def read(path, **options):
        from densim.workloads.adapters import read_via_foundation

        return read_via_foundation(fmt, path, FORMATS.get(fmt).open, **options)

    return read


def _planetlab_source(trace, g):
    from densim.workloads.readers.planetlab import PlanetLabSource

    t = g.trace
    return PlanetLabSource(trace, g.name, g.count, g.vcpus, g.vcpu_mhz or 1000.0, g.memory_bytes, t.assign, t.offset)


def _bitbrains_source(trace, g):
    from densim.workloads.readers.bitbrains import BitbrainsSource

    return BitbrainsSource(trace, g.name, g.count, g.vcpus, g.vcpu_mhz, g.memory_bytes, g.trace.offset)


def _opendc_source(trace, g):
    from densim.workloads.readers.opendc import OpenDcSource

    return OpenDcSource(trace, g.name, g.count, g.vcpus, g.vcpu_mhz, g.memory_bytes, g.trace.offset, gpu=g.gpu,
                        gpu_field=f"vms[{g.name}].gpu")


def _azure_source(trace, g):
    from densim.workloads.readers.azure import AzureSource

    t = g.trace
    if t.unknown_vms == "error" and trace.skipped_readings:
        file, row = trace.skipped_first
        raise InputError(file, f"row {row}, column 'vmid'", f"reading for VM {trace.skipped_example!r} that is not in "
                                                            f"{trace.vmtable_path.name} (trace.unknown_vms: error)")
    return AzureSource(trace, g.name, g.count, g.vcpus, g.vcpu_mhz, g.memory_bytes, t.offset)


def _add(name: str, description: str, source: str = "", **kw) -> None:
    FORMATS.add(name, WorkloadFormat(name=name, **kw), description=description, source=source)


_add("planetlab", "PlanetLab/CoMon folder: one file of CPU % per VM, 288 samples of 300 s",
     "Park & Pai, ACM SIGOPS OSR 2006 (CoMon); Beloglazov & Buyya 2012",
     open=_lazy("densim.workloads.readers.planetlab:PlanetLabTrace"), to_source=_planetlab_source,
     read_inventory=_foundation("planetlab"))
_add("bitbrains", "Bitbrains GWA-T-12 folder of raw per-VM CSVs (separator ';\\t', Unix-second timestamps)",
     "Shen, van Beek, Iosup, CCGrid 2015; Grid Workloads Archive GWA-T-12",
     open=_lazy("densim.workloads.readers.bitbrains:BitbrainsTrace"), to_source=_bitbrains_source,
     read_inventory=_foundation("bitbrains"))
_add("opendc", "OpenDC Parquet folder: tasks.parquet + fragments.parquet (schemas v2-v5 and 2.0) or meta.parquet + trace.parquet (v1)",
     "OpenDC (atlarge-research/opendc) workload format; versions of atlarge-research/opendc-traces workload/schemas",
     open=_lazy("densim.workloads.readers.opendc:OpenDcTrace"), to_source=_opendc_source,
     read_inventory=_foundation("opendc"))
_add("generic", "densim long format CSV/Parquet: one row per VM per timestamp, units in column names",
     read_inventory=_lazy("densim.workloads.readers.generic:read_generic"))
_add("rvtools", "RVTools export: .xlsx workbook, a vInfo CSV, or a folder of tab CSVs",
     read_inventory=_lazy("densim.workloads.readers.rvtools:read_rvtools"))
_add("azure", "Azure Public Dataset folder: vmtable.csv + vm_cpu_readings-*.csv (headerless); any subset, with VM lifetimes",
     "Cortez et al., SOSP 2017 (Resource Central)",
     open=_lazy("densim.workloads.readers.azure:read_azure_trace"), to_source=_azure_source,
     read_inventory=_lazy("densim.workloads.readers.azure:read_azure"))


def get_format(name: str, source: str | Path | None = None, where: str = "format") -> WorkloadFormat:
    try:
        return FORMATS.get(name)
    except KeyError as exc:
        raise InputError(source, where, str(exc).strip("'\"")) from None


def open_trace(fmt: str, path: str | Path, **kwargs):
    """Open a trace of format ``fmt`` at ``path``; returns a reader-specific trace object."""
    f = get_format(fmt, path)
    if f.open is None:
        raise InputError(path, "format", f"format {fmt!r} is an inventory read by 'densim plan'; the engine replays "
                         f"{', '.join(e.name for e in FORMATS if e.obj.replayable)}")
    return f.open(Path(path), **kwargs)
