"""The readers check every input before any work (issue 20): types, finiteness, ranges, unique ids,
references, 64-bit overflow, zero rows, timestamps and gaps, file kind, and the memory budget."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from densim.errors import InputError
from densim.workloads.formats import load_inventory
from densim.workloads.readers import open_trace
from densim.workloads.readers._checks import memory_budget
from tests.planning.fixtures import (small_workload, write_azure, write_bitbrains, write_generic_csv, write_opendc,
                                     write_planetlab, write_rvtools_xlsx)

W = small_workload()


def _err(fn, *a, **kw) -> str:
    with pytest.raises(InputError) as exc:
        fn(*a, **kw)
    msg = exc.value.one_line()
    assert "\n" not in msg
    return msg


def _rewrite(path, column, row, value, typ=None):
    t = pq.read_table(path)
    vals = t.column(column).to_pylist()
    vals[row] = value
    arr = pa.array(vals, typ) if typ is not None else pa.array(vals)
    pq.write_table(t.set_column(t.column_names.index(column), column, arr), path)


# ------------------------------------------------------------------------------------ OpenDC


def test_opendc_zero_tasks(tmp_path):
    d = write_opendc(tmp_path / "odc", W)
    pq.write_table(pq.read_table(d / "tasks.parquet").slice(0, 0), d / "tasks.parquet")
    assert "tasks.parquet:row 1: no tasks (the file has zero rows)" in _err(open_trace, "opendc", d)


@pytest.mark.parametrize("value,typ,words", [
    (2**63 + 5, pa.uint64(), "overflows a 64-bit integer"),
    (1e30, pa.float64(), "is not a 64-bit integer"),
    (2.5, pa.float64(), "is not a whole number"),
])
def test_opendc_ids_must_be_64_bit_integers(tmp_path, value, typ, words):
    d = write_opendc(tmp_path / "odc", W)
    _rewrite(d / "tasks.parquet", "id", 2, value, typ)
    msg = _err(open_trace, "opendc", d)
    assert "tasks.parquet:row 3, column 'id'" in msg and words in msg


def test_opendc_huge_id_does_not_allocate_a_lookup_table(tmp_path):
    # ids are looked up by binary search: an id of 10^15 is a valid id, not a 8-PB array
    d = write_opendc(tmp_path / "odc", W)
    _rewrite(d / "tasks.parquet", "id", 0, 10**15, pa.int64())
    _rewrite(d / "fragments.parquet", "id", 0, 10**15, pa.int64())
    t = pq.read_table(d / "fragments.parquet")
    ids = t.column("id").to_pylist()
    ids = [10**15 if x == 1 else x for x in ids]
    pq.write_table(t.set_column(0, "id", pa.array(ids, pa.int64())), d / "fragments.parquet")
    tr = open_trace("opendc", d)
    assert tr.total_cpu_mhz_s() > 0


def test_opendc_duplicate_and_negative_task_ids(tmp_path):
    d = write_opendc(tmp_path / "odc", W)
    _rewrite(d / "tasks.parquet", "id", 1, 1, pa.int32())
    assert "row 2, column 'id': duplicate task id 1 (also in row 1)" in _err(open_trace, "opendc", d)


def test_opendc_submission_time_overflow_and_string_usage(tmp_path):
    d = write_opendc(tmp_path / "odc", W)
    _rewrite(d / "tasks.parquet", "submission_time", 0, 2**62, pa.int64())
    msg = _err(open_trace, "opendc", d)
    assert "tasks.parquet:row 1, column 'submission_time'" in msg and "implausibly large" in msg
    d = write_opendc(tmp_path / "odc2", W)
    t = pq.read_table(d / "fragments.parquet")
    pq.write_table(t.set_column(2, "cpu_usage", pa.array([str(x) for x in t.column(2).to_pylist()])), d / "fragments.parquet")
    assert "fragments.parquet:column 'cpu_usage': not numeric (a string column)" in _err(open_trace, "opendc", d)


def test_opendc_fragment_of_a_task_that_does_not_exist(tmp_path):
    d = write_opendc(tmp_path / "odc", W)
    _rewrite(d / "fragments.parquet", "id", 7, 99, pa.int32())
    msg = _err(open_trace, "opendc", d)
    assert "fragments.parquet:row 8, column 'id': fragment of task 99, which is not in tasks.parquet" in msg
    # with a limit, fragments of tasks beyond it are skipped, not errors
    d = write_opendc(tmp_path / "odc2", W)
    assert open_trace("opendc", d, limit=1).n_tasks == 1


def test_opendc_tasks_years_apart(tmp_path):
    d = write_opendc(tmp_path / "odc", W)
    _rewrite(d / "tasks.parquet", "submission_time", 3, int((W.start_s + 5 * 365 * 86400) * 1000), pa.int64())
    msg = _err(open_trace, "opendc", d)
    assert "row 4, column 'submission_time'" in msg and "days after every earlier task ended" in msg


# ------------------------------------------------------------------------------------ Azure


@pytest.mark.parametrize("value,words", [("nan", "not a finite number"), ("1e30", "implausibly large"), ("-300", "must be >= 0")])
def test_azure_bad_timestamps(tmp_path, value, words):
    d = write_azure(tmp_path / "az", W)
    f = d / "vm_cpu_readings-file-1-of-1.csv"
    lines = f.read_text().splitlines()
    parts = lines[5].split(",")
    parts[0] = value
    lines[5] = ",".join(parts)
    f.write_text("\n".join(lines) + "\n")
    msg = _err(load_inventory, d, "azure")
    assert f"{f}:row 6, column 'timestamp'" in msg and words in msg


def test_azure_cell_reported_in_its_own_readings_file_and_row(tmp_path):
    d = write_azure(tmp_path / "az", W)
    f1 = d / "vm_cpu_readings-file-1-of-1.csv"
    lines = f1.read_text().splitlines()
    f1.write_text("\n".join(lines[:10]) + "\n")
    f2 = d / "vm_cpu_readings-file-2-of-2.csv"
    bad = lines[12].split(",")
    bad[4] = "140"
    f2.write_text("\n".join(lines[10:12] + [",".join(bad)] + lines[13:]) + "\n")
    assert _err(load_inventory, d, "azure").startswith(f"{f2}:row 3, column 'avgcpu': CPU % must be <= 100, got 140")


def test_azure_core_bucket_above_2_31(tmp_path):
    d = write_azure(tmp_path / "az", W)
    import gzip

    rows = gzip.decompress((d / "vmtable.csv.gz").read_bytes()).decode().splitlines()
    parts = rows[1].split(",")
    parts[9] = str(2**33)
    rows[1] = ",".join(parts)
    (d / "vmtable.csv.gz").write_bytes(gzip.compress(("\n".join(rows) + "\n").encode()))
    msg = _err(load_inventory, d, "azure")
    assert "row 2, column 'vmcorecountbucket'" in msg and "implausibly large" in msg


# ------------------------------------------------------------------------------------ Bitbrains, PlanetLab


def test_bitbrains_multi_year_gap(tmp_path):
    import gzip

    d = write_bitbrains(tmp_path / "bb", W)
    f = d / "2.csv.gz"
    lines = gzip.decompress(f.read_bytes()).decode().splitlines()
    parts = lines[4].split(";\t")
    parts[0] = str(int(float(parts[0])) + 3 * 365 * 86400)
    lines[4] = ";\t".join(parts)
    f.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    msg = _err(open_trace, "bitbrains", d)
    assert f"{f}:row 5, column 'Timestamp [ms]': a gap of 1,095 days" in msg


def test_bitbrains_two_files_for_one_vm(tmp_path):
    d = write_bitbrains(tmp_path / "bb", W)
    (d / "1.csv").write_bytes(__import__("gzip").decompress((d / "1.csv.gz").read_bytes()))
    assert "two files for VM '1'" in _err(open_trace, "bitbrains", d)


def test_unknown_folder_is_not_taken_for_planetlab(tmp_path):
    d = tmp_path / "stuff"
    d.mkdir()
    (d / "notes.yaml").write_text("a: 1\n")
    assert "cannot tell the inventory format of this folder" in _err(load_inventory, d)
    p = write_planetlab(tmp_path / "pl", W)
    assert load_inventory(p).n_vms == len(W.names)


# ------------------------------------------------------------------------------------ sizes and counts


def test_generic_vcpus_above_2_31_do_not_wrap(tmp_path):
    p = write_generic_csv(tmp_path / "w.csv", W)
    lines = p.read_text().splitlines()
    rows = [ln.split(",") for ln in lines]
    for r in rows[1:]:
        if r[0] == "vm-2":
            r[2] = str(2**33)
    p.write_text("\n".join(",".join(r) for r in rows) + "\n")
    msg = _err(load_inventory, p)
    assert "row 3, column 'vcpus': vCPU count 8.58993e+09 is implausibly large" in msg


def test_generic_cells_reported_at_their_file_row_with_blank_lines(tmp_path):
    p = write_generic_csv(tmp_path / "w.csv", W)
    lines = p.read_text().splitlines()
    parts = lines[6].split(",")
    parts[5] = "abc"
    lines[6] = ",".join(parts)
    p.write_text("\n".join(lines[:3] + [""] + lines[3:]) + "\n\n")  # blank lines 4 and at the end: skipped
    assert "row 8, column 'cpu_used [MHz]': not a number: 'abc'" in _err(load_inventory, p)
    p.write_text("\n".join(lines[:3] + ["", ""] + lines[3:6]) + "\n\n")
    assert load_inventory(p).n_vms == 4


@pytest.mark.parametrize("row,value,words", [
    ({"VM": "big", "CPUs": 10**12}, None, "vCPU count 1e+12 is implausibly large"),
    ({"VM": "nan-cpu", "CPUs": "nan"}, None, "vCPUs; must be a whole number >= 1"),
    ({"VM": "neg-mem", "Memory": -4096}, None, "must be > 0"),
    ({"VM": "inf-mem", "Memory": "inf"}, None, "memory (bytes) is not a finite number"),
])
def test_rvtools_bad_sizes(tmp_path, row, value, words):
    path = write_rvtools_xlsx(tmp_path / "e.xlsx", W, extra_rows=[row])
    msg = _err(load_inventory, path)
    assert "sheet vInfo, row 8" in msg and words in msg


def test_rvtools_snapshot_peak_factor_must_be_positive(tmp_path):
    path = write_rvtools_xlsx(tmp_path / "e.xlsx", W)
    assert "--snapshot-peak-factor: must be a number > 0" in _err(load_inventory, path, snapshot_peak_factor=-1)


# ------------------------------------------------------------------------------------ file kind, budget


@pytest.mark.parametrize("kind", ["directory", "fifo", "dev-zero", "binary"])
def test_file_kind_where_a_csv_is_expected(tmp_path, kind):
    p = tmp_path / "w.csv"
    if kind == "directory":
        p.mkdir()
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "dev-zero":
        p.symlink_to("/dev/zero")
    else:
        p.write_bytes(b"vm,time\x00\xff\xfe" * 10)
    msg = _err(load_inventory, p, "generic")
    words = {"directory": "is a directory", "fifo": "not a regular file", "dev-zero": "not a regular file",
             "binary": "not UTF-8 text"}[kind]
    assert msg.startswith(str(p)) and words in msg


def test_demand_grid_is_sized_before_it_is_allocated(tmp_path):
    p = write_generic_csv(tmp_path / "w.csv", W)
    with memory_budget(100):
        msg = _err(load_inventory, p)
    assert "the demand grid (6 steps of 300 s x 4 VMs) would need about" in msg and "--max-memory" in msg
    assert load_inventory(p).n_steps == 6
    assert np.isfinite(load_inventory(p).cpu_mhz).all()
