"""Device mechanics, RAID arithmetic, controllers and links: hand-calculable micro cases."""

from __future__ import annotations

import pytest

from densim.models.devices import DeviceSpec, block_service, device_response_s, endurance_years, hdd_service_s, ncq_gain
from densim.models.storage import (
    ArrayUnit,
    ControllerSpec,
    HostCpuIo,
    IoPattern,
    build_stations,
    pcie_bandwidth_bps,
    raid_check,
    raid_functional_iops,
    raid_usable_bytes,
    raid_write_penalty,
    solve_open,
)
from densim.catalog.core import builtin_catalog

CAT = builtin_catalog()


def dev(name: str) -> DeviceSpec:
    return CAT.get("devices", name, DeviceSpec)


def test_hdd_mechanics_give_the_datasheet_latency():
    # HGST C10K900: 4.0 ms seek + 60/(2*10,000) = 3.0 ms rotation + 4096 B / 198 MB/s = 0.0207 ms -> 7.0207 ms
    d = dev("sas-10k-900gb")
    assert d.read_latency_s == pytest.approx(0.0070207, rel=1e-4)
    assert d.rotation_s == pytest.approx(0.003)
    # saturated IOPS = NCQ gain / t1 = 1.6 / 7.0207 ms = 227.9
    assert d.read_iops == pytest.approx(1.6 / 0.0070207, rel=1e-4)
    assert float(hdd_service_s(0.009, 7200, 4096, 215e6)) == pytest.approx(0.009 + 0.0041667 + 0.0000191, rel=1e-4)


def test_ncq_gain_curve_end_points():
    assert float(ncq_gain(1, 1.6)) == pytest.approx(1.0)
    assert float(ncq_gain(32, 1.6)) == pytest.approx(1.6)
    assert float(ncq_gain(64, 1.6)) == pytest.approx(1.6)
    assert float(ncq_gain(4, 1.6)) == pytest.approx(1 + 0.6 * 2 / 5)


def test_hdd_station_ramps_from_qd1_to_ncq_rate():
    # multi-server form: unloaded latency = t1, saturated rate = G / t1
    d = dev("sas-10k-900gb")
    t1, cap, c = block_service(d, 4096, 1.0)
    assert t1 == pytest.approx(d.read_latency_s)
    assert c == pytest.approx(1.6, rel=1e-9)
    assert float(device_response_s(d, 1e-9)) == pytest.approx(t1, rel=1e-6)


def test_block_size_adds_transfer_time():
    # S3700: 8 KiB read = 50 us + 4096 B / 500 MB/s = 58.192 us; cap: 1/(1/75000 + 4096/500e6) = 46,440 IOPS
    d = dev("intel-dc-s3700-400gb")
    t1, cap, _ = block_service(d, 8192, 1.0)
    assert t1 == pytest.approx(50e-6 + 4096 / 500e6)
    assert cap == pytest.approx(1 / (1 / 75000 + 4096 / 500e6))


def test_endurance():
    # S3700 400 GB: 7.3 PB; at 100 MB/s of writes: 7.3e15 / (1e8 * 31,536,000) = 2.31 years
    d = dev("intel-dc-s3700-400gb")
    assert float(endurance_years(d, 1e8)) == pytest.approx(7.3e15 / (1e8 * 365 * 86400))
    # P4600 has DWPD only: 3 x 1.6 TB x 365 x 5 years
    assert dev("intel-dc-p4600-1.6tb").endurance_total_bytes() == pytest.approx(3 * 1.6e12 * 365 * 5)


def test_every_catalog_device_has_a_source_and_consistent_figures():
    for d in CAT.all("devices", DeviceSpec):
        assert d.source, d.name
        assert d.read_latency_s > 0 and d.read_iops > 0
        assert d.servers(0.7) >= 1.0


@pytest.mark.parametrize("level,pen", [("jbod", 1), ("raid0", 1), ("raid1", 2), ("raid10", 2), ("raid5", 4), ("raid6", 6)])
def test_write_penalty(level, pen):
    assert raid_write_penalty(level) == pen


def test_raid_arithmetic_by_hand():
    # five 15K disks, 900 raw IOPS, RAID 5, 16 % writes: front-end = 900 / (0.84 + 0.16 * 4) = 608.1 IOPS
    assert float(raid_functional_iops("raid5", 900, 0.84)) == pytest.approx(900 / 1.48)
    assert raid_usable_bytes("raid6", 8, 1e12) == 6e12
    assert raid_usable_bytes("raid10", 8, 1e12) == 4e12
    assert raid_check("raid5", 2) == "raid5 needs at least 3 drives, got 2"
    assert "even" in raid_check("raid10", 5)
    assert raid_check("raid6", 4) is None


def test_raid10_write_visits_two_drives():
    # 4-drive RAID 10, all writes, 100 IOPS: back-end 200 writes spread over 4 drives = 50 per drive
    d = dev("sas-10k-900gb")
    st = build_stations([ArrayUnit("a", d, 4, "raid10")], None, IoPattern(0.0))
    assert all(s.visits == pytest.approx(0.5) for s in st)
    res = solve_open(st, 100.0, IoPattern(0.0))
    assert res.stations[0].utilisation == pytest.approx(50 * d.write_latency_s / 1.6 * (1.6 / d.write_latency_s) / d.write_iops, rel=1e-9)


def test_pcie_link_bandwidth():
    # PCIe 2.0 x8 = 8 x 500 MB/s = 4 GB/s per direction; 3.0 x4 = 3.94 GB/s
    assert pcie_bandwidth_bps(2, 8) == 4e9
    assert pcie_bandwidth_bps(3, 4) == pytest.approx(3.9384e9)


def test_controller_cap_and_cpu_can_be_the_bottleneck():
    d = dev("intel-dc-s3700-400gb")
    hba = CAT.get("controllers", "lsi-9210-8i", ControllerSpec)
    arr = ArrayUnit("a", d, 8, "raid0", hba, 1)
    # 8 drives x 75K reads = 600K > 300K HBA cap: the HBA is the bottleneck
    res = solve_open(build_stations([arr], None, IoPattern(1.0)), 1000.0, IoPattern(1.0))
    assert res.bottleneck.endswith("lsi-9210-8i#1")
    assert res.max_iops == pytest.approx(300000)
    # one slow core at 15,000 cycles per I/O: 1 GHz / 15,000 = 66.7K IOPS, now the CPU limits
    cpu = HostCpuIo(1, 1e9, 15000)
    res = solve_open(build_stations([arr], cpu, IoPattern(1.0)), 1000.0, IoPattern(1.0))
    assert res.bottleneck == "host-cpu"
    assert res.max_iops == pytest.approx(1e9 / 15000)


def test_too_many_drives_for_a_controller():
    d = dev("intel-dc-s3700-400gb")
    hba = CAT.get("controllers", "lsi-9210-8i", ControllerSpec)
    with pytest.raises(ValueError, match="exceed 1 x lsi-9210-8i"):
        build_stations([ArrayUnit("a", d, 9, "raid0", hba, 1)], None, IoPattern())
