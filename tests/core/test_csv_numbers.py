"""``--csv`` writes numbers (issue 31): one quantity per column with its unit in the header, cells that parse as
numbers, never a formatted "10,000 / 10,000" or "1.2 ms"; text stays only in name and category columns."""

from __future__ import annotations

import csv
import io
import re

import pytest
from typer.testing import CliRunner

from densim.cli.main import app
from tests.core.test_cli_conventions import _argv, inputs  # noqa: F401  (the module's fixture: small inputs for each command)

runner = CliRunner(mix_stderr=False) if "mix_stderr" in CliRunner.__init__.__code__.co_varnames else CliRunner()

# columns that name or classify (text by nature); every other column must hold numbers or nothing
TEXT = {"candidate", "rw", "job", "where", "figure", "unit", "component", "kind", "resource", "part", "limit", "bound", "bottleneck",
        "device", "raid", "controller", "not_modelled", "role", "tolerance", "study", "left_out", "refitted", "error_kind", "name",
        "area", "server", "scenario"}
BOOL = {"feasible", "saturated", "fitted_to_data", "passed", "within"}
FORMATTED = re.compile(r"\d,\d{3}|\d\s?(%|ms|us|s|W|kWh|TB|MB/s|GHz)(\b|$)| / ")


def _blocks(stdout: str) -> list[tuple[str, list[str], list[list[str]]]]:
    out = []
    for b in (b for b in stdout.split("\n\n") if b.strip()):
        lines = b.splitlines()
        title = lines[0][2:] if lines[0].startswith("# ") else ""
        rows = list(csv.reader(io.StringIO("\n".join(ln for ln in lines if not ln.startswith("# ")))))
        out.append((title, rows[0], rows[1:]))
    return out


def _numeric(x: str) -> bool:
    try:
        float(x)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("name", ["run", "plan", "io", "size", "study", "bench compare"])
def test_csv_cells_are_numbers(inputs, tmp_path, name):  # noqa: F811
    r = runner.invoke(app, [*_argv(name, inputs, tmp_path), "--csv"])
    assert r.exit_code == 0, r.output
    blocks = _blocks(r.stdout)
    assert blocks
    for title, header, rows in blocks:
        assert rows, title
        for j, col in enumerate(header):
            cells = [row[j] for row in rows]
            if name == "bench compare" and j >= 2:  # per-row unit: text rows (hardware) carry no unit
                cells = [row[j] for row in rows if row[1]]
            elif col in TEXT:
                continue
            if col in BOOL:
                assert set(cells) <= {"true", "false"}, (title, col, cells)
                continue
            bad = [c for c in cells if c != "" and not _numeric(c)]
            assert not bad, (name, title, col, bad)
        for row in rows:
            if name == "bench compare" and not row[1]:
                continue  # hardware and configuration named in words (CPU model, paging, NUMA policy)
            assert not any(FORMATTED.search(c) for c in row if not _numeric(c) and c not in ("true", "false")
                           and header[row.index(c)] not in ("tolerance", "bound", "limit", "not_modelled", "figure")), (title, row)


def test_run_csv_is_one_row_of_quantities(inputs, tmp_path):  # noqa: F811
    r = runner.invoke(app, [*_argv("run", inputs, tmp_path), "--csv"])
    ((_title, header, rows),) = _blocks(r.stdout)
    row = dict(zip(header, rows[0]))
    assert {"vms_placed", "vms_total", "hosts_used", "energy_kwh", "cpu_ready_mean_pct"} <= set(header)
    assert int(row["vms_placed"]) <= int(row["vms_total"]) and float(row["energy_kwh"]) > 0


FIO = __import__("pathlib").Path(__file__).resolve().parents[1] / "storage" / "fixtures"


@pytest.mark.parametrize("argv", [["io", str(FIO / "fio-nvme-depth-sweep.json")],
                                  ["calibrate", str(FIO / "fio-nvme-depth-sweep.json"), "--device", "intel-dc-p4600-1.6tb"]])
def test_fio_profile_and_calibration_csv_are_numbers(tmp_path, argv):
    r = runner.invoke(app, [*argv, "--csv", *(["--out", str(tmp_path / "c")] if argv[0] == "calibrate" else [])])
    assert r.exit_code == 0, r.output
    for title, header, rows in _blocks(r.stdout):
        for j, col in enumerate(header):
            if col in TEXT or col in BOOL:
                continue
            bad = [row[j] for row in rows if row[j] != "" and not _numeric(row[j])]
            assert not bad, (title, col, bad)
    if argv[0] == "io":
        (_t, header, rows), = _blocks(r.stdout)
        iops = header.index("iops")
        assert all(float(row[iops]) > 0 for row in rows)


def test_csv_data_writes_numbers_booleans_and_blanks():
    import numpy as np
    from rich.table import Table

    from densim.cli.common import csv_data, table_csv

    t = Table("a", "b")
    t.add_row("10,000 / 10,000", "1.2 ms")
    csv_data(t, ["name", "vms_placed", "latency_ms", "ok", "missing"], [["=cmd", np.int64(10000), 1.2, True, None]])
    assert table_csv(t) == "name,vms_placed,latency_ms,ok,missing\n'=cmd,10000,1.2,true,\n"  # formula guard kept
    with pytest.raises(ValueError, match="csv row of 2 cells for 3 columns"):
        csv_data(Table("x"), ["a", "b", "c"], [[1, 2]])
