"""Azure Public Dataset: any subset reads, lifetimes kept, unknown VMs skipped and counted (issue 14)."""

from __future__ import annotations

import numpy as np
import pytest

from densim.errors import InputError
from densim.spec.scenario import VmGroup
from densim.workloads.formats import load_inventory
from densim.workloads.readers.azure import read_azure_trace
from densim.workloads.registry import FORMATS
from densim.workloads.timegrid import TimeGrid

# two VMs: "a" (2 cores, 4 GB) lives [0, 900) s, "b" (4 cores, 8 GB) lives [300, 1,200) s
VMTABLE = "a,s,d,0,900,50,20,40,Interactive,2,4\nb,s,d,300,1200,60,30,50,Delay-insensitive,4,8\n"
# readings (5-minute windows starting at the timestamp); "zz" is not in the vmtable (a cut of the dataset)
READINGS = ("0,a,0,10,10\n0,zz,0,99,99\n300,a,0,30,20\n300,b,0,40,25\n600,a,0,40,40\n600,zz,0,99,99\n"
            "600,b,0,50,50\n900,b,0,10,10\n")


def _folder(tmp_path, vmtable=VMTABLE, readings=READINGS):
    d = tmp_path / "az"
    d.mkdir()
    (d / "vmtable.csv").write_text(vmtable)
    (d / "vm_cpu_readings-file-1-of-1.csv").write_text(readings)
    return d


def _err(fn, *a, **kw) -> str:
    with pytest.raises(InputError) as exc:
        fn(*a, **kw)
    msg = exc.value.one_line()
    assert "\n" not in msg
    return msg


def test_subset_reads_skips_and_counts(tmp_path):
    inv = load_inventory(_folder(tmp_path), "azure")
    assert list(inv.names) == ["a", "b"]
    assert inv.skipped_readings == 2  # the two readings of "zz"
    assert inv.notes and "2 reading(s) of 1 VM(s) not in vmtable.csv skipped (e.g. 'zz')" in inv.notes[0]
    # lifetimes from vmcreated/vmdeleted
    assert list(inv.vm_start_s) == [0.0, 300.0] and list(inv.vm_end_s) == [900.0, 1200.0]
    # demand = avgcpu/100 x cores x 2,400 MHz: a at t=0 is 10 % x 2 x 2,400 = 480 MHz; b at 600 s 50 % x 4 x 2,400 = 4,800
    assert inv.cpu_mhz[0, 0] == pytest.approx(480.0)
    assert inv.cpu_mhz[2, 1] == pytest.approx(4800.0)
    assert inv.mem_bytes[1] == 8 * 2**30  # Azure memory buckets are GiB


def test_unknown_vms_error_option(tmp_path):
    d = _folder(tmp_path)
    msg = _err(load_inventory, d, "azure", unknown_vms="error")
    assert msg == f"{d / 'vm_cpu_readings-file-1-of-1.csv'}:row 2, column 'vmid': reading for VM 'zz' that is not in vmtable.csv"


def test_departure_before_arrival(tmp_path):
    d = _folder(tmp_path, vmtable=VMTABLE.replace("b,s,d,300,1200", "b,s,d,1300,1200"))
    msg = _err(load_inventory, d, "azure")
    assert f"{d / 'vmtable.csv'}:row 2, column 'vmdeleted'" in msg and "deleted 100 s before it is created" in msg


def test_blank_reading_id_is_refused(tmp_path):
    d = _folder(tmp_path, readings=READINGS.replace("300,b,", "300, ,"))
    assert "row 4, column 'vmid': VM id is blank" in _err(load_inventory, d, "azure")


def test_only_unknown_vms(tmp_path):
    d = _folder(tmp_path, readings="0,zz,0,1,1\n")
    assert "no CPU readings of any VM in vmtable.csv (1 readings of other VMs)" in _err(load_inventory, d, "azure")


def test_repeated_reading_is_kept_once_and_a_disagreeing_one_refused(tmp_path):
    # the same reading twice (a file concatenated with itself, say) is one reading: a at t=0 stays 10 %
    tr = read_azure_trace(_folder(tmp_path, readings=READINGS + "0,a,0,10,10\n"))
    assert tr.r_pct[(tr.r_vm == 0) & (tr.r_t == 0)] == pytest.approx([10.0])
    # a second reading of a at t=0 with other values (avg 30 % against 10 %): which is right is unknown (issue 29)
    d = tmp_path / "b"
    d.mkdir()
    msg = _err(read_azure_trace, _folder(d, readings=READINGS + "0,a,0,30,30\n"))
    assert msg == (f"{d / 'az' / 'vm_cpu_readings-file-1-of-1.csv'}:row 9, column 'vmid': a second reading of VM 'a' at timestamp 0 "
                   "that disagrees with row 1 (mincpu, maxcpu, avgcpu 0, 30, 30 vs 0, 10, 10): which one is right?")


def _group(unknown="skip", **kw):
    return VmGroup.model_validate({"name": "az", "trace": {"format": "azure", "path": "az", "unknown_vms": unknown}, **kw})


def test_engine_source_and_scenario_option(tmp_path):
    d = _folder(tmp_path)
    fmt = FORMATS.get("azure")
    assert fmt.replayable
    tr = fmt.open(d)
    src = fmt.to_source(tr, _group())
    assert list(src.start_s) == [0.0, 300.0] and list(src.end_s) == [900.0, 1200.0]
    w = src.window(TimeGrid(0.0, 300.0, 4), 0, 4, ("cpu_mhz",))["cpu_mhz"]
    # a: 10 %, 20 %, 40 % of 4,800 MHz, then no reading; b: none, 25 %, 50 %, 10 % of 9,600 MHz
    assert w[:, 0] == pytest.approx([480, 960, 1920, 0])
    assert w[:, 1] == pytest.approx([0, 2400, 4800, 960])
    # a 600-s grid averages two readings: (480 + 960) / 2
    w2 = src.window(TimeGrid(0.0, 600.0, 2), 0, 2, ("cpu_mhz",))["cpu_mhz"]
    assert w2[0, 0] == pytest.approx(720.0)
    msg = _err(fmt.to_source, tr, _group("error"))
    assert "row 2, column 'vmid': reading for VM 'zz' that is not in vmtable.csv (trace.unknown_vms: error)" in msg


def test_engine_source_sizes_from_the_group(tmp_path):
    tr = read_azure_trace(_folder(tmp_path))
    src = FORMATS.get("azure").to_source(tr, _group(count=3, vcpu_speed="2 GHz"))
    assert list(src.sizes.names) == ["az-a-0", "az-b-0", "az-a-1"]
    assert np.all(src.sizes.vcpu_mhz == 2000.0)
    w = src.window(TimeGrid(0.0, 300.0, 1), 0, 1, ("cpu_mhz",))["cpu_mhz"]
    assert w[0, 0] == pytest.approx(0.10 * 2 * 2000) and w[0, 2] == w[0, 0]


def test_azure_vms_arrive_and_leave_in_the_engine(tmp_path):
    # "a" lives [0, 900) s and "b" [300, 1,200) s (vmtable created/deleted); on one 8-core host both fit.
    # Demand counts only while each lives: a = (480 + 960 + 1,920) x 300, b = (2,400 + 4,800 + 960) x 300
    from densim.engine import simulate
    from densim.plant import resolve
    from densim.spec.loader import scenario_from_dict

    d = _folder(tmp_path)
    sc = scenario_from_dict({
        "name": "az", "cluster": {"hosts": [{"count": 1, "cpu": {"sockets": 1, "cores_per_socket": 8, "base_clock": "2400 MHz"},
                                             "memory": "64 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]},
        "vms": [{"name": "az", "trace": {"format": "azure", "path": str(d), "unknown_vms": "skip"}}],
        "simulation": {"step": "5 min"},
    })
    r = simulate(resolve(sc))
    s = r.summary["scheduling"]
    assert s["completed"] == 2 and s["scheduling_delay_total_s"] == 0.0
    assert s["simulated_end_s"] == pytest.approx(1200.0)
    want = (480 + 960 + 1920 + 2400 + 4800 + 960) * 300.0
    assert r.summary["totals"]["cpu_demand_mhz_s"] == pytest.approx(want, rel=1e-6)
    v = r.vms.sort("vm")
    assert v["start_s"].to_list() == [0.0, 300.0] and v["end_s"].to_list() == [900.0, 1200.0]
