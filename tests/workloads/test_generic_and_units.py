"""Generic long format (lifetimes, memory over time, bytes in a KiB column) and the one unit table (issue 14)."""

from __future__ import annotations

import numpy as np
import pytest

from densim.errors import InputError
from densim.units import parse
from densim.workloads.formats import load_inventory
from densim.workloads.readers.conventions import CONVENTIONS, bytes_per_unit, convention, reference_md
from densim.workloads.readers.generic import write_generic

GIB = 2**30


def _csv(tmp_path, header: str, rows: list[str], name="w.csv"):
    p = tmp_path / name
    p.write_text(header + "\n" + "\n".join(rows) + "\n")
    return p


def _err(fn, *a, **kw) -> str:
    with pytest.raises(InputError) as exc:
        fn(*a, **kw)
    msg = exc.value.one_line()
    assert "\n" not in msg
    return msg


# ------------------------------------------------------------------------------------ units


def test_si_and_iec_in_the_generic_format(tmp_path):
    p = _csv(tmp_path, "vm,time [s],vcpus,memory [GB],cpu_used [MHz],memory_used [MiB]",
             ["a,0,2,4,100,512", "a,300,2,4,100,512"])
    inv = load_inventory(p, "generic")
    assert inv.mem_bytes[0] == 4e9  # GB is 10^9 bytes, as in scenario files
    assert inv.mem_used_bytes[0, 0] == 512 * 2**20  # MiB is 2^20
    p2 = _csv(tmp_path, "vm,time [s],vcpus,memory [GiB],cpu_used [MHz]", ["a,0,2,4,100"], "w2.csv")
    assert load_inventory(p2, "generic").mem_bytes[0] == 4 * GIB


def test_scenario_rows_agree_with_pint():
    # densim.units parses scenario and candidates files with pint; the table states the same meaning
    assert parse("256 GB", "byte") == 256 * bytes_per_unit("scenario", "memory", "GB") == 256e9
    assert parse("256 GiB", "byte") == 256 * bytes_per_unit("scenario", "memory", "GiB") == 256 * GIB
    assert parse("3 MB/s", "byte/s") == 3 * bytes_per_unit("scenario", "throughput", "MB/s")
    assert parse("256 GB", "byte") / GIB == pytest.approx(238.4186, abs=1e-4)


@pytest.mark.parametrize("fmt,quantity,unit,expected", [
    ("bitbrains", "memory", "KB", 1024.0),
    ("bitbrains", "throughput", "KB/s", 1024.0),  # one source, one meaning of KB
    ("opendc", "memory", "KB", 1024.0),
    ("rvtools", "memory", "MB", 2.0**20),
    ("azure", "memory", "GB", 2.0**30),
    ("generic", "memory", "MB", 1e6),
    ("generic", "throughput", "KB/s", 1e3),
    ("generic", "memory", "MiB", 2.0**20),  # IEC prefixes are binary in every format
    ("bitbrains", "memory", "bytes", 1.0),
])
def test_one_function_applies_the_table(fmt, quantity, unit, expected):
    assert bytes_per_unit(fmt, quantity, unit) == expected


def test_every_format_reading_bytes_has_a_row_and_the_reference_lists_it():
    for fmt in ("bitbrains", "opendc", "rvtools", "azure", "generic", "scenario"):
        assert convention(fmt, "memory").basis in ("binary", "decimal")
    md = reference_md()
    assert all(f"| `{c.fmt}` | {c.quantity} |" in md for c in CONVENTIONS)
    with pytest.raises(ValueError):
        bytes_per_unit("generic", "memory", "KB/s")  # a rate is not a memory unit
    with pytest.raises(ValueError):
        bytes_per_unit("generic", "memory", "furlongs")


def test_bitbrains_reader_uses_binary_kb_for_memory_and_throughput(tmp_path):
    head = ("Timestamp [ms];\tCPU cores;\tCPU capacity provisioned [MHZ];\tCPU usage [MHZ];\tCPU usage [%];\t"
            "Memory capacity provisioned [KB];\tMemory usage [KB];\tDisk read throughput [KB/s];\tDisk write throughput [KB/s];\t"
            "Network received throughput [KB/s];\tNetwork transmitted throughput [KB/s]")
    rows = ["0;\t1;\t2000;\t100;\t5;\t2097152;\t1024;\t10;\t20;\t0;\t0", "300;\t1;\t2000;\t100;\t5;\t2097152;\t1024;\t10;\t20;\t0;\t0"]
    d = tmp_path / "bb"
    d.mkdir()
    (d / "1.csv").write_text(head + "\n" + "\n".join(rows) + "\n")
    inv = load_inventory(d, "bitbrains")
    assert inv.mem_bytes[0] == 2 * GIB  # 2,097,152 KB of 1,024 bytes
    assert inv.disk_read_Bps[0, 0] == 10 * 1024.0 and inv.disk_write_Bps[0, 0] == 20 * 1024.0


# ------------------------------------------------------------------------------------ generic: bytes in a KiB column


def test_bytes_in_a_kib_column_is_named(tmp_path):
    # 16 GiB written in bytes (17,179,869,184) under a KiB header: 16 TiB for 4 vCPUs = 4 TiB per vCPU
    p = _csv(tmp_path, "vm,time [s],vcpus,memory [KiB],cpu_used [MHz]", ["a,0,4,16777216,100", "b,0,4,17179869184,100"])
    msg = _err(load_inventory, p, "generic")
    assert msg.startswith(f"{p}:row 3, column 'memory [KiB]': memory 16,384.0 GiB for 4 vCPU(s) (4,096.0 GiB per vCPU) is implausible")
    assert msg.endswith("(at most 256.0 GiB per vCPU and 1,048,576.0 GiB per VM): a value in bytes in a KiB column?")


def test_more_than_a_pib_per_vm(tmp_path):
    # 2^40 KiB = 1 PiB: implausible for any VM whatever its vCPUs
    p = _csv(tmp_path, "vm,time [s],vcpus,memory [KiB],cpu_used [MHz]", ["a,0,65536,1099511627777,100"])
    assert "row 2, column 'memory [KiB]'" in _err(load_inventory, p, "generic")


# ------------------------------------------------------------------------------------ generic: memory over time, lifetimes


def test_memory_that_changes_over_time(tmp_path):
    # VM a is resized from 4 to 8 GiB at 600 s: sized at 8 GiB, the series kept per step
    p = _csv(tmp_path, "vm,time [s],vcpus,memory [GiB],cpu_used [MHz]",
             ["a,0,2,4,100", "a,300,2,4,100", "a,600,2,8,100", "b,0,1,2,50", "b,300,1,2,50", "b,600,1,2,50"])
    inv = load_inventory(p, "generic")
    assert list(inv.mem_bytes) == [8 * GIB, 2 * GIB]
    assert inv.mem_config_bytes[:, 0].tolist() == [4 * GIB, 4 * GIB, 8 * GIB]
    assert inv.mem_config_bytes[:, 1].tolist() == [2 * GIB] * 3
    assert "sized at its largest" in inv.demand_rule
    # round trip through the writer
    back = load_inventory(write_generic(inv, tmp_path / "back.csv"), "generic")
    assert np.array_equal(back.mem_config_bytes, inv.mem_config_bytes)
    # constant memory: no series
    q = _csv(tmp_path, "vm,time [s],vcpus,memory [GiB],cpu_used [MHz]", ["a,0,2,4,100", "a,300,2,4,100"], "c.csv")
    assert load_inventory(q, "generic").mem_config_bytes is None


def test_memory_in_use_is_checked_against_the_memory_of_its_row(tmp_path):
    p = _csv(tmp_path, "vm,time [s],vcpus,memory [GiB],cpu_used [MHz],memory_used [GiB]",
             ["a,0,2,1,100,1", "a,300,2,8,100,6"])
    assert load_inventory(p, "generic").mem_used_bytes[1, 0] == 6 * GIB
    bad = _csv(tmp_path, "vm,time [s],vcpus,memory [GiB],cpu_used [MHz],memory_used [GiB]",
               ["a,0,2,1,100,6", "a,300,2,8,100,6"], "bad.csv")
    assert "row 2, column 'memory_used [GiB]'" in _err(load_inventory, bad, "generic")  # 6 GiB in use of 1 GiB


def test_lifetimes_per_vm(tmp_path):
    p = _csv(tmp_path, "vm,time [s],vcpus,memory [GiB],cpu_used [MHz],start [min],end [min]",
             ["a,0,2,4,100,0,10", "a,300,2,4,100,0,10", "b,300,1,2,50,5,60", "b,600,1,2,0,5,60"])
    inv = load_inventory(p, "generic")
    assert list(inv.vm_start_s) == [0.0, 300.0] and list(inv.vm_end_s) == [600.0, 3600.0]
    back = load_inventory(write_generic(inv, tmp_path / "back.parquet"), "generic")
    assert list(back.vm_start_s) == [0.0, 300.0] and list(back.vm_end_s) == [600.0, 3600.0]


def test_only_an_end_column(tmp_path):
    p = _csv(tmp_path, "vm,time [s],vcpus,memory [GiB],cpu_used [MHz],end_s", ["a,0,2,4,100,300"])
    inv = load_inventory(p, "generic")
    assert inv.vm_start_s[0] == -np.inf and inv.vm_end_s[0] == 300.0


def test_departure_before_arrival(tmp_path):
    p = _csv(tmp_path, "vm,time [s],vcpus,memory [GiB],cpu_used [MHz],start [s],end [s]",
             ["a,0,2,4,100,0,600", "b,0,2,4,0,900,300"])
    msg = _err(load_inventory, p, "generic")
    assert msg == f"{p}:row 3, column 'end [s]': VM 'b' leaves 600 s before it arrives (end before start: a departure before its arrival)"


def test_demand_outside_the_lifetime(tmp_path):
    p = _csv(tmp_path, "vm,time [s],vcpus,memory [GiB],cpu_used [MHz],start [s],end [s]",
             ["a,0,2,4,100,0,300", "a,300,2,4,100,0,300"])
    msg = _err(load_inventory, p, "generic")
    assert "row 3, column 'time [s]': VM 'a' has CPU demand at 300 s, outside its lifetime [0, 300) s" in msg


def test_start_must_be_the_same_on_every_row(tmp_path):
    p = _csv(tmp_path, "vm,time [s],vcpus,memory [GiB],cpu_used [MHz],start [s]", ["a,0,2,4,100,0", "a,300,2,4,100,60"])
    assert "row 3, column 'start [s]': start of VM 'a' changes over time (60 vs 0)" in _err(load_inventory, p, "generic")
