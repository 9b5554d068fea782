"""Unit strings at the edges: the only place where ``"256 GiB"`` becomes a number.

Every quantity in a scenario, catalog or inventory may be written as a string with a unit
(``"256 GiB"``, ``"2.3 GHz"``, ``"95 W"``, ``"5 min"``, ``"10 Gbit/s"``) or as a bare number in
the field's canonical unit. :func:`parse` converts with pint; the engine only ever sees floats
whose unit is in the variable's name (``_bytes``, ``_mhz``, ``_w``, ``_s``).

pint is imported lazily (it costs ~0.7 s) and only when a string actually carries a unit.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema

# canonical unit of each kind, as pint spells it
CANONICAL = {
    "bytes": "byte",
    "mhz": "MHz",
    "hz": "Hz",
    "w": "W",
    "s": "s",
    "j": "J",
    "bytes_per_s": "byte/s",
    "per_s": "1/s",
}

# ASCII digits only (re.ASCII): Python's \d also matches Arabic-Indic, full-width and other digits
_NUMBER = re.compile(r"^\s*[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?\s*$", re.ASCII)
# a quantity string starts with its number: "256 GiB", "2.3GHz", "1e3 IOPS" (not "GiB", "% ", "inf W")
_LEADING_NUMBER = re.compile(r"^\s*[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?", re.ASCII)
# The whole grammar of a quantity: one number (ASCII digits; commas only as thousands separators),
# then a unit made of unit names joined by "/", "*" or spaces ("GiB", "Gbit/s", "kW h"). No
# arithmetic ("2*3 GiB", "1 GiB + 2 GiB"), no trailing characters ("2.3 GHz;", "5 W # note").
_UNIT_WORD = r"[A-Za-z_%\u00b0\u00b5\u03bc\u03a9]+"
_QUANTITY = re.compile(
    r"^\s*[-+]?(?:(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
    rf"\s*{_UNIT_WORD}(?:\s*[/*]\s*{_UNIT_WORD}|\s+{_UNIT_WORD})*\s*$")
MAX_QUANTITY_CHARS = 64
# the largest magnitude a quantity may have in its canonical unit (bytes, MHz, W, s, J, ...): far
# beyond any real part (1e24 bytes is a yottabyte), small enough that sums and float32 copies stay finite
MAX_MAGNITUDE = 1e24


def _import_pint():
    """Import pint without its dask integration.

    pint probes for dask at import (``pint.compat``) and imports ``dask.base`` when it is installed
    (the ``cluster`` extra): about 0.1 s of every run's start-up for an integration densim never
    uses. While pint is imported, ``sys.modules["dask"]`` is None, so ``find_spec("dask")`` says
    "not installed"; the entry is removed again, so the distributed run still imports dask.
    """
    import sys

    hide = "dask" not in sys.modules
    if hide:
        sys.modules["dask"] = None  # type: ignore[assignment]
    try:
        import pint
    finally:
        if hide and sys.modules.get("dask", 0) is None:
            del sys.modules["dask"]
    return pint


@lru_cache(maxsize=1)
def _registry():  # pragma: no cover - trivial
    pint = _import_pint()

    ureg = pint.UnitRegistry(cache_folder=":auto:")
    # storage and network people say "IOPS", "KB/s"; pint knows kB, KiB, byte, bit
    ureg.define("IOPS = 1 / second")
    ureg.define("IO = 1 = io")
    ureg.define("rpm_disk = 1 / minute")
    return ureg


class UnitError(ValueError):
    pass


# Quantities in the commonest units are converted without pint: pint's import and registry cost
# 0.09 s of every run's start-up. Each factor is the float pint multiplies the number by (an
# integer, or 1e-3, 1e-6, 1e-9 for the sub-second prefixes), so the result is the same float (tests
# compare the two on thousands of values per unit). Anything else goes to pint.
_FAST_FACTORS: dict[str, dict[str, float]] = {
    "byte": {"B": 1, "byte": 1, "bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50,
             "kB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15},
    "MHz": {"MHz": 1, "GHz": 1000},
    "Hz": {"Hz": 1, "kHz": 10**3, "MHz": 10**6, "GHz": 10**9},
    "W": {"W": 1, "kW": 1000},
    "s": {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1, "min": 60, "h": 3600, "hour": 3600, "hours": 3600, "d": 86400, "day": 86400, "days": 86400, "week": 604800},
    "J": {"J": 1, "kJ": 1000, "Wh": 3600, "kWh": 3600000},
    "byte/s": {"B/s": 1, "kB/s": 10**3, "MB/s": 10**6, "GB/s": 10**9, "KiB/s": 2**10, "MiB/s": 2**20, "GiB/s": 2**30,
               "kbit/s": 125, "Mbit/s": 125_000, "Gbit/s": 125_000_000},
}
# a number, at least one space, a unit name ("1e3J" is not a quantity for pint: no space, no fast path)
_SIMPLE_QUANTITY = re.compile(r"^\s*([-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s+([A-Za-z]+(?:/s)?)\s*$", re.ASCII)


def _fast_quantity(text: str, unit: str) -> float | None:
    table = _FAST_FACTORS.get(unit)
    if table is None:
        return None
    m = _SIMPLE_QUANTITY.match(text)
    if m is None or m.group(2) not in table:
        return None
    return float(m.group(1)) * float(table[m.group(2)])


@lru_cache(maxsize=4096)
def _parse_str(text: str, unit: str) -> float:
    if _NUMBER.match(text):
        return _finite(float(text), text)
    fast = _fast_quantity(text, unit) if len(text) <= MAX_QUANTITY_CHARS else None
    if fast is not None:
        return _finite(fast, text)
    if any(ch.isdigit() and not ch.isascii() for ch in text):
        raise UnitError(_grammar_problem(text, unit))
    cleaned = text.strip().replace(",", "")
    if len(cleaned) > MAX_QUANTITY_CHARS:
        raise UnitError(f"a quantity is a number and a unit, not {len(cleaned)} characters")
    if not _LEADING_NUMBER.match(cleaned):
        raise UnitError(f"{text!r} has no number: write a quantity such as {'1 ' + unit!r}")
    if "**" in cleaned or "^" in cleaned:
        # pint evaluates powers with Python integers: "10**10**10 W" would never finish
        raise UnitError(f"{text!r}: powers are not allowed in a quantity; write the number out (e.g. 1e9)")
    if not _QUANTITY.match(text):
        raise UnitError(_grammar_problem(text, unit))
    # "1.5k" style counts are not units; let pint report them
    ureg = _registry()
    try:
        q = ureg.Quantity(cleaned)
    except Exception as exc:  # pint raises several types
        raise UnitError(f"cannot parse {text!r} as a quantity ({type(exc).__name__}: {exc})") from None
    if not hasattr(q, "to"):
        if unit not in ("", "1", "dimensionless"):
            raise UnitError(f"{text!r} is not convertible to {unit}")
        return _finite(float(q), text)
    try:
        # pint treats bits and bytes as dimensionless, so "50 %" would pass as 0.0625 bytes
        info = "byte" in unit and not any(t in str(q.units) for t in ("byte", "bit"))
        if info or q.dimensionality != ureg.Quantity(1, unit).dimensionality:
            raise UnitError(f"{text!r} is not convertible to {unit}")
        return _finite(float(q.to(unit).magnitude), text)
    except UnitError:
        raise
    except Exception:
        raise UnitError(f"{text!r} is not convertible to {unit}") from None


def _grammar_problem(text: str, unit: str) -> str:
    """Why ``text`` is not one number followed by a unit."""
    if any(ch.isdigit() and not ch.isascii() for ch in text):
        return f"{text!r}: digits must be ASCII 0-9"
    return (f"{text!r} is not a number followed by a unit (e.g. '2 {unit}'): arithmetic, several numbers "
            "and characters after the unit are not accepted")


def _finite(x: float, text: Any) -> float:
    if not math.isfinite(x):
        raise UnitError(f"{text!r} is not a finite quantity")
    if abs(x) > MAX_MAGNITUDE:
        raise UnitError(f"{text!r} is too large (more than {MAX_MAGNITUDE:g} in the canonical unit)")
    return x


def parse(value: Any, unit: str) -> float:
    """``value`` (number or string with a unit) as a float in ``unit`` (a pint unit string)."""
    if isinstance(value, bool):
        raise UnitError(f"expected a quantity in {unit}, got a boolean")
    if isinstance(value, (int, float)):
        try:
            x = float(value)
        except OverflowError:
            raise UnitError(f"{value!r} is too large") from None
        if math.isinf(x):
            raise UnitError(f"expected a finite quantity in {unit}, got {value!r}")
        if abs(x) > MAX_MAGNITUDE:
            raise UnitError(f"{value!r} is too large (more than {MAX_MAGNITUDE:g} {unit})")
        return x
    if isinstance(value, str):
        return _parse_str(value, unit)
    raise UnitError(f"expected a number or a string with a unit ({unit}), got {type(value).__name__}")


def _validator(unit: str, *, positive: bool = False, nonnegative: bool = True):
    def check(v: Any) -> float:
        x = parse(v, unit)
        if x != x:  # NaN
            raise ValueError("must be a number, got NaN")
        if positive and not x > 0:
            raise ValueError(f"must be > 0, got {v!r}")
        if nonnegative and x < 0:
            raise ValueError(f"must be >= 0, got {v!r}")
        return x

    return check


def _schema(unit: str, example: str) -> dict:
    return {
        "anyOf": [
            {"type": "number"},
            {"type": "string", "description": f"a quantity with a unit convertible to {unit}, e.g. {example!r}"},
        ],
        "description": f"canonical unit: {unit}",
    }


def quantity(unit: str, example: str, *, positive: bool = False):
    """An Annotated float type for pydantic fields that accepts unit strings."""
    return Annotated[float, BeforeValidator(_validator(unit, positive=positive)), WithJsonSchema(_schema(unit, example))]


Bytes = quantity("byte", "256 GiB")
PosBytes = quantity("byte", "256 GiB", positive=True)

# A decimal byte prefix in a RAM size: VMware, RVTools and most hypervisor tools write "GB" for 2^30
# bytes, SI says 10^9, and the two differ by 7.4 % at GB (10 % at TB) -- enough to make a 124.4 GiB VM
# not fit a host written "128 GB". A memory size must say which it means (issue 31).
_DECIMAL_BYTES = re.compile(r"^\s*[-+]?[0-9.,eE+-]+\s*([kKMGTPE])B\s*$", re.ASCII)


def _memory_validator(*, positive: bool):
    check = _validator("byte", positive=positive)

    def memory(v: Any) -> float:
        if isinstance(v, str) and (m := _DECIMAL_BYTES.match(v)):
            binary = {"k": "KiB", "K": "KiB"}.get(m.group(1), m.group(1) + "iB")
            raise ValueError(f"{v.strip()!r} is ambiguous for a memory size: VMware and RVTools mean {binary} "
                             f"by {m.group(1)}B, SI means 10^n bytes; write '{v.strip()[:-2].strip()} {binary}', "
                             "or the number of bytes")
        return check(v)

    return memory


def memory_quantity(*, positive: bool = False):
    """A RAM size (host or VM memory): as :func:`quantity` in bytes, but a decimal byte prefix
    (``KB``, ``MB``, ``GB``, ``TB``) is refused as ambiguous with a hint; IEC (``GiB``) or a number
    of bytes is accepted."""
    return Annotated[float, BeforeValidator(_memory_validator(positive=positive)),
                     WithJsonSchema(_schema("byte", "256 GiB (binary prefixes only: GB is ambiguous for memory)"))]


MemBytes = memory_quantity()
PosMemBytes = memory_quantity(positive=True)
MHz = quantity("MHz", "2.3 GHz")
PosMHz = quantity("MHz", "2.3 GHz", positive=True)
Watts = quantity("W", "95 W")
Seconds = quantity("s", "5 min")
PosSeconds = quantity("s", "5 min", positive=True)
BytesPerSecond = quantity("byte/s", "10 Gbit/s")
PerSecond = quantity("1/s", "75000 IOPS")
Joules = quantity("J", "1 kWh")

GIB = 1024.0**3
MIB = 1024.0**2
KIB = 1024.0
