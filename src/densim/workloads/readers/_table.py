"""Header matching shared by the spreadsheet-like readers (RVTools xlsx/CSV, generic long format)."""

from __future__ import annotations

import re

from densim.workloads.readers.conventions import unit_table

# byte multipliers of the units seen in RVTools headers and cells: its "MB" means MiB (vSphere reports
# memory in binary units whatever the header says); the convention is stated in readers/conventions.py
MEM_UNITS = unit_table("rvtools", "memory", ("b", "bytes", "KB", "KiB", "MB", "MiB", "GB", "GiB", "TB", "TiB"))

_NON_ALNUM = re.compile(r"[^a-z0-9#%]+")


def norm(header: object) -> str:
    """``"Provisioned MiB"`` -> ``"provisionedmib"``; ``"# CPU"`` -> ``"#cpu"``."""
    return _NON_ALNUM.sub("", str(header or "").strip().lower())


def strip_prefix(key: str, prefix: str) -> str:
    """RVTools' CSV export prefixes every header with the tab name (``vInfoCPUs``)."""
    p = prefix.lower()
    if key.startswith(p) and len(key) > len(p):
        return key[len(p):]
    return key
