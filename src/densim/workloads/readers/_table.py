"""Header matching shared by the spreadsheet-like readers (RVTools xlsx/CSV, generic long format)."""

from __future__ import annotations

import re

# byte multipliers of the units seen in inventory headers; RVTools' "MB" means MiB (it reports
# memory in binary units whatever the header says), as do Azure Migrate's "(In MB)" columns.
MEM_UNITS = {
    "b": 1.0,
    "bytes": 1.0,
    "kb": 1024.0,
    "kib": 1024.0,
    "mb": 2.0**20,
    "mib": 2.0**20,
    "gb": 2.0**30,
    "gib": 2.0**30,
    "tb": 2.0**40,
    "tib": 2.0**40,
}

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
