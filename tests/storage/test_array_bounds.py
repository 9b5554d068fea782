"""What bounds an array's IOPS (issue 15): drives, controllers (I/O processor or bandwidth), their PCIe
slots and the host CPU, each named with its limit. Hand-calculated micro scenarios."""

from __future__ import annotations

import numpy as np
import pytest

from densim.catalog.core import builtin_catalog
from densim.models.devices import DeviceSpec
from densim.models.storage import (
    ArrayUnit,
    ControllerSpec,
    HostCpuIo,
    IoPattern,
    build_stations,
    solve_closed,
    solve_open,
)
from densim.models.storage.vmio import DatastoreModel, datastore_latency_s

CAT = builtin_catalog()
S3700 = CAT.get("devices", "intel-dc-s3700-400gb", DeviceSpec)
HBA = CAT.get("controllers", "lsi-9210-8i", ControllerSpec)
MIB = 1048576


def by_resource(res) -> dict[str, float]:
    return {b["resource"]: b["max_iops"] for b in res.bounds}


def test_the_hba_binds_eight_ssds():
    # 8 x S3700 (75,000 random 4 KiB reads each) in RAID 0 behind one LSI 9210-8i:
    #   drives     8 x 75,000                          = 600,000 IOPS
    #   HBA        max(1/300,000 = 3.33 us, 4,096 B / 2.5 GB/s = 1.64 us) per I/O -> 300,000 IOPS
    #   PCIe slot  2.0 x8 = 8 x 500 MB/s = 4 GB/s / 4,096 B  = 976,562 IOPS
    # the array does not scale past its HBA: 300,000, not 600,000
    pat = IoPattern(1.0)
    st = build_stations([ArrayUnit("a", S3700, 8, "raid0", HBA, 1)], None, pat)
    res = solve_closed(st, 2000, pattern=pat)
    assert by_resource(res) == pytest.approx({"hba": 300000, "drives": 600000, "pcie slot": 4e9 / 4096})
    assert res.bound == "hba lsi-9210-8i (300,000 IOPS: I/O processor 300,000 IOPS each)"
    assert res.max_iops == pytest.approx(300000)
    assert 0.99 * 300000 < res.throughput_iops <= 300000


def test_the_drives_bind_four_hdds():
    # 4 x 10K SAS (C10K900: t1 = 7.0207 ms, NCQ 1.6 -> 227.9 IOPS each) behind the same HBA:
    # drives 4 x 227.9 = 911.6 IOPS << HBA 300,000: the drives bind
    d = CAT.get("devices", "sas-10k-900gb", DeviceSpec)
    pat = IoPattern(1.0)
    res = solve_open(build_stations([ArrayUnit("a", d, 4, "raid0", HBA, 1)], None, pat), 100.0, pat)
    assert res.bounds[0]["resource"] == "drives" and res.bounds[0]["part"] == "sas-10k-900gb"
    assert res.bounds[0]["max_iops"] == pytest.approx(4 * 1.6 / 0.0070207, rel=1e-4)
    assert res.bound.startswith("drives sas-10k-900gb x4 (912 IOPS")


def test_the_hba_bandwidth_binds_large_sequential_reads():
    # 1 MiB sequential reads: each S3700 streams 500 MB/s -> 476.8 I/Os each, 8 drives 3,815;
    # the HBA's 2.5 GB/s cap / 1 MiB = 2,384 (its 300,000 IOPS processor cap is far away);
    # the PCIe 2.0 x8 slot 4 GB/s / 1 MiB = 3,815
    pat = IoPattern(1.0, MIB, sequential=True)
    res = solve_open(build_stations([ArrayUnit("a", S3700, 8, "raid0", HBA, 1)], None, pat), 100.0, pat)
    assert by_resource(res) == pytest.approx({"hba": 2.5e9 / MIB, "drives": 8 * 500e6 / MIB, "pcie slot": 4e9 / MIB})
    assert res.bound == "hba lsi-9210-8i (2,384 IOPS: bandwidth 2.5 GB/s each)"
    assert res.bounds[0]["max_bandwidth_bps"] == pytest.approx(2.5e9)


def test_the_pcie_slot_binds_a_card_in_a_narrow_slot():
    # the same HBA in a PCIe 1.0 x4 slot: 4 x 250 MB/s = 1 GB/s / 1 MiB = 953.7 IOPS < 2,384 (card)
    narrow = HBA.model_copy(update={"pcie_gen": 1, "pcie_lanes": 4})
    pat = IoPattern(1.0, MIB, sequential=True)
    res = solve_open(build_stations([ArrayUnit("a", S3700, 8, "raid0", narrow, 1)], None, pat), 100.0, pat)
    assert res.bounds[0]["resource"] == "pcie slot"
    assert res.bound == "pcie slot lsi-9210-8i (954 IOPS: PCIe 1.0 x4, 1 GB/s each)"


def test_the_host_cpu_binds_direct_attached_ssds():
    # 8 x S3700 on the host's own ports, 15,000 cycles per I/O on 2 cores at 2.5 GHz:
    # 2 x 2.5e9 / 15,000 = 333,333 IOPS < 600,000 from the drives
    pat = IoPattern(1.0)
    cpu = HostCpuIo(2, 2.5e9, 15000)
    res = solve_open(build_stations([ArrayUnit("a", S3700, 8, "raid0")], cpu, pat), 1000.0, pat)
    assert by_resource(res) == pytest.approx({"cpu": 1e6 / 3, "drives": 600000})
    assert res.bound == "cpu host (333,333 IOPS: 15,000 cycles per I/O on 2 cores at 2.5 GHz)"


def test_raid_behind_an_hba_costs_host_cpu_and_slot_per_back_end_io():
    # RAID 10 writes behind a plain HBA: the host does the mirroring, so each front-end write is 2
    # I/Os for the HBA, its slot and the CPU; a RAID controller takes 1 from the host and makes 2.
    # 100 % writes, 4 KiB, 2 cores at 2.5 GHz, 15,000 cycles: CPU 333,333 / 2 = 166,667 front-end IOPS
    pat = IoPattern(0.0)
    cpu = HostCpuIo(2, 2.5e9, 15000)
    hba = solve_open(build_stations([ArrayUnit("a", S3700, 8, "raid10", HBA, 1)], cpu, pat), 10.0, pat)
    assert by_resource(hba)["cpu"] == pytest.approx(1e6 / 6)
    raid = CAT.get("controllers", "hp-smart-array-p410i", ControllerSpec)
    ctl = solve_open(build_stations([ArrayUnit("a", S3700, 8, "raid10", raid, 1)], cpu, pat), 10.0, pat)
    assert by_resource(ctl)["cpu"] == pytest.approx(1e6 / 3)
    # the P410i processes both back-end writes: 60,000 / 2 = 30,000 front-end writes
    assert by_resource(ctl)["raid controller"] == pytest.approx(30000)


def test_controller_firmware_latency_is_a_delay_not_a_cap():
    # Smart Array P410i: 60,000 IOPS processor cap and a 20 us firmware path. The cap stays 60,000
    # (not 1 / (16.7 + 20 us) = 27,273); the 20 us is added to every I/O's latency.
    # 4 x S3700 RAID 0, 4 KiB reads, no load: 50 us (drive) + 16.67 us (processor) + 20 us + 1.02 us
    # (4,096 B over the PCIe 2.0 x8 slot, 4 GB/s) = 87.69 us
    p410 = CAT.get("controllers", "hp-smart-array-p410i", ControllerSpec)
    pat = IoPattern(1.0)
    st = build_stations([ArrayUnit("a", S3700, 4, "raid0", p410, 1)], None, pat)
    res = solve_open(st, 0.0, pat)
    assert by_resource(res)["raid controller"] == pytest.approx(60000)
    assert res.mean_latency_s == pytest.approx(50e-6 + 1 / 60000 + 20e-6 + 4096 / 4e9, rel=1e-9)
    # closed, one outstanding I/O: the same 87.69 us, X = 1 / 87.69 us
    one = solve_closed(st, 1, pattern=pat)
    assert one.mean_latency_s == pytest.approx(res.mean_latency_s, rel=1e-9)


def test_engine_datastore_sees_the_slot_and_the_firmware_delay():
    # the vectorised datastore latency equals the station solver with a controller, and a step
    # saturates when the HBA does (8 S3700 at 4 KiB reads: 300,000 IOPS)
    for ctl in (HBA, CAT.get("controllers", "hp-smart-array-p410i", ControllerSpec)):
        ds = DatastoreModel.build("ds", S3700, 8, "raid10", ctl, 1, 4096)
        st = build_stations([ArrayUnit("a", S3700, 8, "raid10", ctl, 1)], None, IoPattern(0.7, 4096))
        lam = np.array([100.0, 20000.0])
        lat, _, sat = datastore_latency_s(ds, lam, 0.7)
        ref = [solve_open(st, x, IoPattern(0.7, 4096)).mean_latency_s for x in lam]
        np.testing.assert_allclose(lat, ref, rtol=1e-9)
        assert not sat.any()
    ds = DatastoreModel.build("ds", S3700, 8, "raid0", HBA, 1, 4096)
    _, util, sat = datastore_latency_s(ds, np.array([290000.0, 310000.0]), 1.0)
    assert util == pytest.approx([290000 / 300000, 310000 / 300000])
    assert list(sat) == [False, True]
