"""One unit convention per input format, in one table, applied by one function.

Traces and inventories write byte quantities as ``KB``, ``MB``, ``GB`` (and ``KB/s``) without saying
whether a kilobyte is 1,000 or 1,024 bytes. :data:`CONVENTIONS` states, for every format densim reads,
which one each kind of quantity uses and why; :func:`bytes_per_unit` is the only place a reader turns
such a unit into bytes (or bytes per second). A unit written with an IEC prefix (``KiB``, ``MiB``,
``GiB``, ``TiB``, ``KiB/s`` ...) is binary in every format; only the bare SI-looking prefixes depend on
the format.

densim's own files follow the SI/IEC standard (IEC 80000-13): in scenario, candidates and study files
(parsed by pint, :mod:`densim.units`) and in the generic long format, ``GB`` is 10^9 bytes and ``GiB``
is 2^30 bytes (``256 GB`` = 238.4 GiB). The table is rendered into the generated reference
(``docs/reference/units.md``) by :mod:`densim.tools.docgen`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Basis = Literal["binary", "decimal"]
Quantity = Literal["memory", "throughput"]


@dataclass(frozen=True)
class Convention:
    fmt: str  # format name (densim.workloads.registry.FORMATS) or "scenario" for densim's YAML files
    quantity: Quantity  # memory (bytes) or throughput (bytes per second)
    written: str  # how the source writes the unit
    basis: Basis  # what KB/MB/GB/TB (and KB/s ...) mean in this format
    why: str  # the evidence or the source's own statement


CONVENTIONS: tuple[Convention, ...] = (
    Convention("scenario", "memory", "any pint unit: `GB`, `GiB`, `MB`, `MiB` ...", "decimal",
               "SI/IEC as pint reads them (IEC 80000-13): `GB` = 10^9 bytes, `GiB` = 2^30 bytes; scenario, candidates "
               "(`densim plan --candidates`) and study files alike"),
    Convention("scenario", "throughput", "any pint unit: `MB/s`, `MiB/s`, `Gbit/s` ...", "decimal",
               "SI/IEC as pint reads them: `MB/s` = 10^6 bytes/s, `MiB/s` = 2^20 bytes/s"),
    Convention("generic", "memory", "`[KB]`, `[MB]`, `[GB]`, `[TB]` or `[KiB]` ... `[TiB]`, `[bytes]`", "decimal",
               "densim's own format follows the scenario files: SI prefixes are decimal, IEC prefixes binary"),
    Convention("generic", "throughput", "`[KB/s]`, `[MB/s]`, `[GB/s]` or `[KiB/s]`, `[MiB/s]`, `[B/s]`", "decimal",
               "as the scenario files"),
    Convention("rvtools", "memory", "`MiB` in 4.x exports, `MB` in older ones, or no unit", "binary",
               "vSphere reports VM and host memory in MiB; older RVTools versions label the same numbers `MB` "
               "(../shared/reference/ecosystem.md §1.1: the same columns are `Memory`, `Provisioned MB` and "
               "`Provisioned MiB` across versions)"),
    Convention("azure", "memory", "`vmmemorybucket` in GB (2, 4, 8, 32, 64, >64)", "binary",
               "Azure lists VM memory in GiB (learn.microsoft.com VM size tables); the buckets are those sizes"),
    Convention("bitbrains", "memory", "`Memory capacity provisioned [KB]`, `Memory usage [KB]`", "binary",
               "GWA-T-12 (gwa.ewi.tudelft.nl; Shen, van Beek, Iosup, CCGrid 2015) does not define KB; the data do: "
               "provisioned memory is whole GiB in KB of 1,024 bytes (2,097,152; 4,194,304; 8,388,608 ... are the "
               "commonest values of the Rnd 250-VM sample)"),
    Convention("bitbrains", "throughput", "`Disk read/write throughput [KB/s]`, `Network ... [KB/s]`", "binary",
               "the same files and the same undefined prefix as the memory columns: one source, one meaning"),
    Convention("opendc", "memory", "`mem_capacity` in KB", "binary",
               "OpenDC's sample workloads are converted from GWA-T-12 (78 % of bitbrains-small's `mem_capacity` "
               "values are multiples of 1,024, e.g. 2,097,152 = 2 GiB); OpenDC's own loader divides by 1,000 "
               "(\"KB to MB\", ComputeWorkloadLoader.kt), 2.4 % less memory than densim reads"),
)

_PREFIX = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_UNIT = re.compile(r"^(?P<prefix>[kmgtp]?)(?P<i>i?)(?:b|byte|bytes)(?P<rate>/s|ps)?$")


def convention(fmt: str, quantity: Quantity) -> Convention:
    """The row of :data:`CONVENTIONS` for ``fmt`` and ``quantity`` (KeyError if the format has none)."""
    for c in CONVENTIONS:
        if c.fmt == fmt and c.quantity == quantity:
            return c
    raise KeyError(f"no unit convention for {quantity} in format {fmt!r}")


def bytes_per_unit(fmt: str, quantity: Quantity, unit: str) -> float:
    """Bytes (or bytes per second) in one ``unit`` as format ``fmt`` writes it.

    ``unit`` is case-insensitive: ``b``/``bytes``, ``KB``, ``KiB``, ``MB``, ... ``PiB``, each optionally
    followed by ``/s`` (or ``ps``) for a throughput. IEC prefixes (``KiB``) are always 1,024-based; SI-looking
    prefixes (``KB``) follow the format's row of :data:`CONVENTIONS`. Raises ValueError for anything else.
    """
    u = unit.strip().lower().replace(" ", "")
    m = _UNIT.match(u)
    if not m or (m.group("i") and not m.group("prefix")):
        raise ValueError(f"not a byte unit: {unit!r}")
    if (m.group("rate") is not None) != (quantity == "throughput"):
        raise ValueError(f"{unit!r} is not a {quantity} unit")
    power = _PREFIX[m.group("prefix")]
    if power == 0:
        return 1.0
    binary = bool(m.group("i")) or convention(fmt, quantity).basis == "binary"
    return float(1024**power) if binary else float(1000**power)


def unit_table(fmt: str, quantity: Quantity, units: tuple[str, ...]) -> dict[str, float]:
    """``{unit (lower case): bytes per unit}`` for the ``units`` a reader accepts, from :func:`bytes_per_unit`."""
    return {u.lower(): bytes_per_unit(fmt, quantity, u) for u in units}


def reference_md() -> str:
    """The generated reference page (docs/reference/units.md)."""
    lines = ["# Units of the input formats", "", "Generated from code by `make docs`; do not edit. The table is "
             "`densim.workloads.readers.conventions.CONVENTIONS`; every reader converts with its one function "
             "`bytes_per_unit(format, quantity, unit)`.", "",
             "A unit with an IEC prefix (`KiB`, `MiB`, `GiB`, `TiB`, `KiB/s` ...) is 1,024-based in every format. "
             "What a bare `KB`, `MB`, `GB`, `TB` (or `KB/s`) means depends on the format:", "",
             "| format | quantity | written as | `KB`/`MB`/`GB` mean | why |", "|---|---|---|---|---|"]
    for c in CONVENTIONS:
        meaning = "10^3 / 10^6 / 10^9 bytes" if c.basis == "decimal" else "2^10 / 2^20 / 2^30 bytes"
        if c.quantity == "throughput":
            meaning = meaning.replace("bytes", "bytes/s")
        lines.append(f"| `{c.fmt}` | {c.quantity} | {c.written} | {meaning} ({c.basis}) | {c.why} |")
    lines += ["", "In a scenario, candidates or forecast file a memory size (host or VM `memory`, "
              "`hypervisor_memory`) must use a binary prefix: `memory: 256 GB` is refused as ambiguous (VMware and "
              "RVTools mean 2^30 bytes by GB, SI means 10^9: 7.4 % apart) with the hint to write `256 GiB`. Other "
              "byte quantities (disk capacities, volumes, bandwidths) follow SI: `375 GB` is 375 x 10^9 bytes, as "
              "drive datasheets mean it. `planetlab` traces carry no byte quantities (memory comes from the "
              "scenario or the reader's `mem_bytes` option).", ""]
    return "\n".join(lines)
