"""Every CSV densim writes neutralises cells a spreadsheet would run as formulas (issue 29; OWASP CSV injection)."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from densim.csvsafe import safe_cell, unescape_cell
from densim.workloads.inventory import build_inventory


@pytest.mark.parametrize("cell, written", [
    ('=HYPERLINK("http://x.example","x")', '\'=HYPERLINK("http://x.example","x")'),
    ("+1+2", "'+1+2"), ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"), ("\tcmd", "'\tcmd"), ("\r=1", "'\r=1"),
    # numbers and ordinary names are written as they are
    ("-3.5", "-3.5"), ("+4", "+4"), ("1e-06", "1e-06"), ("-", "-"), ("vm-1", "vm-1"), ("a=b", "a=b"), (-2, -2), (1.5, 1.5),
])
def test_safe_cell(cell, written):
    assert safe_cell(cell) == written
    assert unescape_cell(safe_cell(cell)) == cell if isinstance(cell, str) else True


def test_table_csv_of_the_cli(tmp_path):
    from rich.table import Table

    from densim.cli.common import table_csv

    t = Table()
    t.add_column("vm")
    t.add_column("ready %")
    t.add_row("=cmd|' /C calc'!A0", "-1.25")
    t.add_row("db-01", "-")
    rows = list(csv.reader(io.StringIO(table_csv(t))))
    assert rows == [["vm", "ready %"], ["'=cmd|' /C calc'!A0", "-1.25"], ["db-01", "-"]]


def test_generic_csv_export_is_safe_and_reads_back_the_same_names(tmp_path):
    from densim.workloads.formats import load_inventory
    from densim.workloads.readers.generic import write_generic

    names = ["=1+1", "@x", "plain"]
    inv = build_inventory(names, [2, 2, 2], [2400.0] * 3, [2.0**31] * 3, cpu_mhz=np.full((2, 3), 100.0), step_s=300.0)
    p = write_generic(inv, tmp_path / "g.csv")
    assert [r[0] for r in csv.reader(p.read_text().splitlines())][1:4] == ["'=1+1", "'@x", "plain"]
    assert list(load_inventory(p).names) == names
