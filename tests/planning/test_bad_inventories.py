"""Bad inventories give one-line errors that name the file, sheet, row and column."""

from __future__ import annotations

import csv

import pytest

from densim.errors import InputError
from densim.workloads.formats import load_inventory

from .fixtures import VINFO_HEADER, small_workload, write_generic_csv, write_rvtools_csv, write_rvtools_xlsx

W = small_workload()


def _err(path, **kw) -> str:
    with pytest.raises(InputError) as exc:
        load_inventory(path, **kw)
    msg = exc.value.one_line()
    assert "\n" not in msg
    assert msg.startswith(str(path))
    return msg


def test_zero_vcpus_names_sheet_row_and_column(tmp_path):
    # rows: 1 header, 2-5 the four VMs, 6 template, 7 powered-off VM, 8 the bad VM
    path = write_rvtools_xlsx(tmp_path / "e.xlsx", W, extra_rows=[{"VM": "bad-vm", "CPUs": 0}])
    msg = _err(path)
    assert "sheet vInfo, row 8, column 'CPUs'" in msg
    assert "'bad-vm' has 0 vCPUs" in msg


def test_unknown_memory_unit_in_a_cell(tmp_path):
    path = write_rvtools_xlsx(tmp_path / "e.xlsx", W, extra_rows=[{"VM": "odd-vm", "Memory": "4 XB"}])
    msg = _err(path)
    assert "sheet vInfo, row 8, column 'Memory'" in msg
    assert "unknown memory unit 'XB'" in msg


def test_memory_with_a_known_unit_in_a_cell_is_converted(tmp_path):
    path = write_rvtools_xlsx(tmp_path / "e.xlsx", W, extra_rows=[{"VM": "gib-vm", "Memory": "6 GiB"}])
    inv = load_inventory(path)
    assert inv.mem_bytes[list(inv.names).index("gib-vm")] == 6 * 2**30


def test_unknown_memory_unit_in_a_header(tmp_path):
    folder = write_rvtools_csv(tmp_path / "csv", W, prefixed=False)
    f = folder / "RVTools_tabvInfo.csv"
    rows = list(csv.reader(f.read_text().splitlines()))
    rows[0][VINFO_HEADER.index("Memory")] = "Memory PB2"
    rows[0][VINFO_HEADER.index("Memory")] = "Memory furl"
    f.write_text("\n".join(",".join(r) for r in rows) + "\n")
    msg = _err(folder)
    assert "sheet vInfo, column 'Memory furl'" in msg
    assert "unknown memory unit 'furl'" in msg


def test_duplicate_vm_names(tmp_path):
    path = write_rvtools_xlsx(tmp_path / "e.xlsx", W, extra_rows=[{"VM": "vm-2"}])
    msg = _err(path)
    assert "sheet vInfo, row 8, column 'VM'" in msg
    assert "duplicate VM name 'vm-2' (also in row 3)" in msg


def test_empty_sheet(tmp_path):
    path = write_rvtools_xlsx(tmp_path / "e.xlsx", W, empty_vinfo=True)
    msg = _err(path)
    assert "sheet vInfo, row 2: empty sheet: no VM rows under the header" in msg


def test_missing_vinfo_sheet(tmp_path):
    from openpyxl import Workbook

    wb = Workbook()
    wb.active.title = "vHost"
    wb.save(tmp_path / "e.xlsx")
    assert "sheet vInfo: missing" in _err(tmp_path / "e.xlsx")


def test_generic_format_errors(tmp_path):
    path = write_generic_csv(tmp_path / "w.csv", W)
    lines = path.read_text().splitlines()
    # zero vCPUs on every row of VM vm-1 (its first row is file row 2)
    rows = [ln.split(",") for ln in lines]
    for r in rows[1:]:
        if r[0] == "vm-1":
            r[2] = "0"
    bad = tmp_path / "zero.csv"
    bad.write_text("\n".join(",".join(r) for r in rows) + "\n")
    msg = _err(bad)
    assert "row 2, column 'vcpus'" in msg and "'vm-1' has 0 vCPUs" in msg
    # vCPUs that change over time
    rows[6][2] = "3" if rows[6][0] != "vm-1" else "5"
    bad.write_text("\n".join(",".join(r) for r in rows) + "\n")
    assert "row 7, column 'vcpus'" in _err(bad)
    # an unknown unit in a header
    bad2 = tmp_path / "unit.csv"
    bad2.write_text(lines[0].replace("memory [bytes]", "memory [furlongs]") + "\n" + "\n".join(lines[1:]) + "\n")
    msg = _err(bad2)
    assert "column 5 'memory [furlongs]'" in msg and "unknown unit 'furlongs'" in msg


def test_azure_duplicate_vm_ids(tmp_path):
    from .fixtures import write_azure

    folder = write_azure(tmp_path / "az", W)
    import gzip

    text = gzip.open(folder / "vmtable.csv.gz", "rt").read().splitlines()
    text.append(text[0])
    with gzip.open(folder / "vmtable.csv.gz", "wt") as fh:
        fh.write("\n".join(text) + "\n")
    with pytest.raises(InputError) as exc:
        load_inventory(folder)
    assert "row 5, column 'vmid'" in exc.value.one_line() and "duplicate VM id 'vm-1' (also in row 1)" in exc.value.one_line()


def test_missing_or_unrecognisable_inventory(tmp_path):
    assert "inventory not found" in _err(tmp_path / "nope.xlsx")
    odd = tmp_path / "inventory.json"
    odd.write_text("{}")
    assert "cannot tell the inventory format" in _err(odd)
    with pytest.raises(InputError) as exc:
        load_inventory(odd, "nonsense")
    assert "unknown inventory format 'nonsense'" in exc.value.one_line()


def test_generic_disk_read_without_disk_write_is_named(tmp_path):
    p = tmp_path / "w.csv"
    p.write_text("vm,time [s],vcpus,memory [GiB],cpu_used [%],disk_read [KB/s]\na,0,2,4,10,100\na,300,2,4,20,100\n")
    with pytest.raises(InputError, match=r"header: column 'disk_read' needs 'disk_write' too"):
        load_inventory(p)


def test_generic_disk_unit_must_be_a_rate(tmp_path):
    p = tmp_path / "w.csv"
    p.write_text("vm,time [s],vcpus,memory [GiB],cpu_used [%],disk_read [GiB],disk_write [KB/s]\na,0,2,4,10,1,1\n")
    with pytest.raises(InputError, match=r"unknown unit 'gib' for disk_read"):
        load_inventory(p)
