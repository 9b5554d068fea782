"""One entry point: :func:`load_inventory` picks the reader from the format registry (:data:`densim.workloads.registry.FORMATS`) by name or by looking at the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from densim.errors import InputError
from densim.workloads.inventory import Inventory
from densim.workloads.registry import FORMATS, get_format



def detect_format(path: Path) -> str:
    """Guess the format of ``path`` from its name and first bytes."""
    from densim.workloads.readers import azure, rvtools

    try:
        path.exists()
    except OSError as exc:
        raise InputError(path, "", f"not a usable file name: {exc.strerror}") from None
    if not path.exists():
        raise InputError(path, "", "inventory not found")
    suffix = "".join(path.suffixes).lower()
    if suffix.endswith(".xlsx"):
        return "rvtools"
    if path.is_dir():
        names = [p.name for p in path.iterdir()]
        if azure.is_azure(path):
            return "azure"
        if "tasks.parquet" in names or "fragments.parquet" in names or "meta.parquet" in names:
            return "opendc"
        if rvtools.is_rvtools(path):
            return "rvtools"
        if any(n.endswith((".csv", ".csv.gz")) for n in names):
            return "bitbrains"
        if _looks_like_planetlab(path):
            return "planetlab"
        if not names:
            raise InputError(path, "", "empty folder: cannot tell the inventory format")
        raise InputError(path, "", f"cannot tell the inventory format of this folder; pass --format ({', '.join(FORMATS.names())})")
    if suffix.endswith(".parquet"):
        return "generic"
    if suffix.endswith(".csv"):
        from densim.workloads.readers._checks import first_line

        head = first_line(path, "inventory CSV").strip().lower()
        if "cpu_used" in head:  # the generic long format's required demand column
            return "generic"
        if rvtools.is_rvtools(path):
            return "rvtools"
        return "generic"
    raise InputError(path, "", f"cannot tell the inventory format; pass --format ({', '.join(FORMATS.names())})")


def _looks_like_planetlab(path: Path) -> bool:
    """A PlanetLab folder holds plain files whose first line is a CPU % (an integer)."""
    from densim.workloads.readers._checks import first_line

    files = sorted(p for p in path.iterdir() if not p.name.startswith(".") and p.is_file())
    if not files:
        return False
    try:
        head = first_line(files[0]).strip()
    except InputError:
        return False
    try:
        float(head)
    except ValueError:
        return False
    return True


def load_inventory(path: str | Path, fmt: str = "auto", **options: Any) -> Inventory:
    """Read an inventory in any supported format (``fmt="auto"`` guesses it)."""
    path = Path(path)
    try:
        path.exists()
    except OSError as exc:  # a name too long for the file system
        raise InputError(path, "", f"not a usable file name: {exc.strerror}") from None
    fmt = detect_format(path) if fmt in ("auto", "", None) else fmt.lower()
    if fmt not in FORMATS:
        raise InputError(path, "format", f"unknown inventory format {fmt!r}; valid: {', '.join(FORMATS.names())}")
    return get_format(fmt, path).read_inventory(path, **options)
