"""CSV cells that a spreadsheet cannot run as formulas (CSV injection, OWASP).

A cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a formula to Excel,
LibreOffice and Google Sheets (``=HYPERLINK(...)`` in a VM name opens a link when clicked). Every CSV densim
writes passes its text cells through :func:`safe_cell`, which prefixes such a cell with a single quote, as
OWASP recommends; the spreadsheet then shows the text as it is. Numbers (``-3.5``, ``1e-06``) are left alone:
they cannot be formulas, and a program reading the CSV gets them unchanged; so is a lone ``-`` (a table's
"nothing here"). :func:`unescape_cell` undoes it
for densim's own readers of its CSV files.

Source: OWASP, "CSV Injection" (https://owasp.org/www-community/attacks/CSV_Injection).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")


def safe_cell(value: Any) -> Any:
    """``value`` itself, or a text that a spreadsheet would run as a formula with a ``'`` in front."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and value != "-" and not _NUMBER.match(value):
        return "'" + value
    return value


def safe_row(values: Iterable[Any]) -> list[Any]:
    return [safe_cell(v) for v in values]


def unescape_cell(value: str) -> str:
    """The text :func:`safe_cell` was given: a leading ``'`` before a formula character removed."""
    if isinstance(value, str) and len(value) > 1 and value[0] == "'" and value[1:].startswith(FORMULA_START):
        return value[1:]
    return value
