"""Inputs that contradict themselves are refused with one line naming file, row and column (issue 29);
inputs that are valid but unusual (thousands separators, UTF-16, turbo above 100 %) are read right (issues 29, 31)."""

from __future__ import annotations

import pytest

from densim.errors import InputError
from densim.workloads.formats import load_inventory

# Azure: vmtable of two VMs, and their 5-minute readings "timestamp, vmid, mincpu, maxcpu, avgcpu"
VMTABLE = "a,s,d,0,900,50,20,40,Interactive,2,4\nb,s,d,0,900,60,30,50,Delay-insensitive,4,8\n"
READINGS = "0,a,0,10,10\n0,b,5,40,25\n300,a,0,30,20\n300,b,0,50,50\n"


def _azure(tmp_path, readings: str):
    d = tmp_path / "az"
    d.mkdir()
    (d / "vmtable.csv").write_text(VMTABLE)
    (d / "vm_cpu_readings-file-1-of-1.csv").write_text(readings)
    return d


def _err(path, *a, **kw) -> str:
    with pytest.raises(InputError) as exc:
        load_inventory(path, *a, **kw)
    msg = exc.value.one_line()
    assert "\n" not in msg
    return msg


def test_azure_consistent_readings_read(tmp_path):
    inv = load_inventory(_azure(tmp_path, READINGS), "azure")
    # b at 300 s: avgcpu 50 % x 4 cores x 2,400 MHz = 4,800 MHz
    assert inv.cpu_mhz[1, 1] == pytest.approx(4800.0)


def test_azure_min_above_max_is_refused(tmp_path):
    d = _azure(tmp_path, READINGS.replace("0,b,5,40,25", "0,b,45,40,25"))
    assert _err(d, "azure") == (f"{d / 'vm_cpu_readings-file-1-of-1.csv'}:row 2, column 'mincpu': mincpu 45 is above maxcpu 40: "
                                "a window's minimum <= mean <= maximum")


def test_azure_avg_above_max_is_refused(tmp_path):
    d = _azure(tmp_path, READINGS.replace("300,a,0,30,20", "300,a,0,30,35"))
    assert _err(d, "azure") == (f"{d / 'vm_cpu_readings-file-1-of-1.csv'}:row 3, column 'avgcpu': avgcpu 35 is above maxcpu 30: "
                                "a window's minimum <= mean <= maximum")


def test_azure_disagreeing_duplicate_in_a_second_file_names_both_files(tmp_path):
    d = _azure(tmp_path, READINGS)
    (d / "vm_cpu_readings-file-2-of-2.csv").write_text("300,b,0,60,55\n")
    msg = _err(d, "azure")
    assert msg == (f"{d / 'vm_cpu_readings-file-2-of-2.csv'}:row 1, column 'vmid': a second reading of VM 'b' at timestamp 300 "
                   "that disagrees with row 4 of vm_cpu_readings-file-1-of-1.csv (mincpu, maxcpu, avgcpu 0, 60, 55 vs 0, 50, 50): "
                   "which one is right?")


# ------------------------------------------------------------------------------------ generic CSV


def test_generic_duplicated_header_is_refused(tmp_path):
    # the CSV reader renamed the second 'cpu_used [%]' to 'cpu_used [%]_duplicated_0' and ignored it: the first
    # column's values were taken without a word
    p = tmp_path / "g.csv"
    p.write_text("vm,time [s],vcpus,memory [GiB],cpu_used [%],cpu_used [%]\nv1,0,2,4,10,90\nv1,300,2,4,20,80\n")
    assert _err(p) == (f"{p}:row 1, column 6 'cpu_used [%]': duplicate column name (also column 5): which one holds the values?")
