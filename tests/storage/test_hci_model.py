"""HCI storage model by hand (densim.models.storage.hci): capacity, write amplification, network bytes, resync time."""

from __future__ import annotations

import math

import pytest

from densim.models.storage.hci import (TIB, GroupData, capacity, host_resync_Bps, io_costs, network_Bps, policy,
                                       resync_time_s, vsan_entitlement)


def test_six_host_raid5_usable_capacity_with_slack_and_rebuild_reserve():
    # 6 hosts x 4 disks x 4 TiB = 96 TiB raw; a 1-host rebuild reserve leaves 5 x 16 = 80 TiB; 25 % slack
    # leaves 60 TiB; RAID-5 (3+1) stores 3 bytes in 4: 60 x 3/4 = 45 TiB usable; dedupe/compression 1.5: 67.5 TiB
    raw_host = 4 * 4 * TIB
    a = capacity([GroupData("g", "vsan-raid5", 1.0)], 6, raw_host, slack=0.25, reserve_hosts=1)
    assert a.raw_bytes / TIB == pytest.approx(96.0)
    assert a.available_raw_bytes / TIB == pytest.approx(60.0)
    assert a.usable_bytes / TIB == pytest.approx(45.0)
    b = capacity([GroupData("g", "vsan-raid5", 1.0)], 6, raw_host, slack=0.25, reserve_hosts=1, dedupe_compression=1.5)
    assert b.usable_bytes / TIB == pytest.approx(67.5)


def test_hosts_needed_names_the_policy_or_the_capacity_as_the_limit():
    raw_host = 16 * TIB
    # 40 TiB at RAID-5 and 1.5 dedupe: 40 x 4/3 / 1.5 = 35.6 TiB raw; 12 TiB available per host (16 x 0.75):
    # 1 reserve + ceil(35.6 / 12) = 1 + 3 = 4 hosts; but RAID-5 needs 4 hosts + 1 for the rebuild = 5: policy-bound
    a = capacity([GroupData("g", "vsan-raid5", 40 * TIB)], 6, raw_host, slack=0.25, reserve_hosts=1, dedupe_compression=1.5)
    assert (a.hosts_for_capacity, a.hosts_for_policy, a.hosts_needed) == (4, 5, 5)
    assert a.limiting == "policy vsan-raid5" and a.fits
    # 100 TiB without dedupe: 133.3 TiB raw / 12 = 11.1 -> 12 + 1 reserve = 13 hosts: capacity-bound, 6 do not fit
    b = capacity([GroupData("g", "vsan-raid5", 100 * TIB)], 6, raw_host, slack=0.25, reserve_hosts=1)
    assert (b.hosts_needed, b.limiting, b.fits) == (13, "capacity", False)


def test_minimum_hosts_per_policy():
    # RAID-1 FTT=n: 2n + 1 (replicas and witnesses); RAID-5 3+1: 4; RAID-6 4+2: 6; Nutanix RF3: 5 (metadata RF5)
    got = {n: policy(n).min_hosts for n in ("vsan-raid1-ftt1", "vsan-raid1-ftt2", "vsan-raid1-ftt3", "vsan-raid5",
                                           "vsan-raid6", "nutanix-rf2", "nutanix-rf3", "nutanix-rf2-ecx")}
    assert got == {"vsan-raid1-ftt1": 3, "vsan-raid1-ftt2": 5, "vsan-raid1-ftt3": 7, "vsan-raid5": 4, "vsan-raid6": 6,
                   "nutanix-rf2": 3, "nutanix-rf3": 5, "nutanix-rf2-ecx": 4}


def test_ecx_strip_widens_with_the_nodes_and_only_cold_data_is_coded():
    p = policy("nutanix-rf2-ecx")
    # 4 nodes 2/1, 5 nodes 3/1, 6+ nodes 4/1
    assert [p.strip(n) for n in (4, 5, 6, 12)] == [(2, 1), (3, 1), (4, 1), (4, 1)]
    # 60 % cold on 6 nodes: 0.6 x 5/4 + 0.4 x 2 = 0.75 + 0.8 = 1.55 raw per byte
    assert p.overhead(6, 0.6) == pytest.approx(1.55)


def test_rf3_ecx_strip_follows_the_cited_table():
    # the cited EC-X strip table for RF3 (parity 2): 2/2 on 6 nodes, 3/2 on 7, 4/2 from 8 (d = min(4, n - 2 p));
    # the old d = n - p - 1 gave 3/2 on 6 and 4/2 on 7
    p = policy("nutanix-rf3-ecx")
    assert [p.strip(n) for n in (6, 7, 8, 12)] == [(2, 2), (3, 2), (4, 2), (4, 2)]
    # 50 % cold on 6 nodes: 0.5 x 4/2 + 0.5 x 3 copies = 1 + 1.5 = 2.5 raw per byte (the old 3/2 strip: 2.333)
    assert p.overhead(6, 0.5) == pytest.approx(2.5)


@pytest.mark.parametrize(("name", "amp", "net"), [
    # 6 hosts: a vSAN component is on the VM's host with 1/6, so 5/6 of each back-end I/O crosses the network
    ("vsan-raid1-ftt1", 2, 2 * 5 / 6),      # 2 copies written
    ("vsan-raid1-ftt2", 3, 3 * 5 / 6),
    ("vsan-raid5", 4, 4 * 5 / 6),           # read old data + parity, write both: 2 + 2
    ("vsan-raid6", 6, 6 * 5 / 6),           # 3 + 3
    ("vsan-esa-raid5", 3.25, 3.25 * 5 / 6),  # performance leg 2 copies + full stripe 5/4
    ("nutanix-rf2", 2, 1),                  # first copy local: one copy crosses the network
    ("nutanix-rf3", 3, 2),
    ("nutanix-rf2-ecx", 2, 1),              # EC-X is post-process: writes land as RF2
])
def test_write_amplification_and_network_transfers_per_policy(name, amp, net):
    c = io_costs(policy(name), 6)
    assert c.write_amplification == pytest.approx(amp)
    assert c.write_net == pytest.approx(net)


def test_network_bytes_per_policy_for_a_mixed_load():
    # 1,000 reads/s + 1,000 writes/s of 4 KiB on 6 hosts
    # vSAN RAID-1 FTT=1: reads 1000 x 5/6 + writes 1000 x 5/3 = 2,500 transfers/s x 4096 B = 10.24 MB/s
    assert network_Bps(policy("vsan-raid1-ftt1"), 6, 1000, 1000, 4096) == pytest.approx(2500 * 4096)
    # Nutanix RF2: reads local (0) + writes 1 copy = 1,000 x 4096 = 4.096 MB/s
    assert network_Bps(policy("nutanix-rf2"), 6, 1000, 1000, 4096) == pytest.approx(1000 * 4096)


def test_degraded_ec_reads_rebuild_from_the_stripe():
    # RAID-5 3+1 on 6 hosts with 1 absent: 1/6 of reads rebuilt from 3 others: 5/6 + 3/6 = 4/3 back-end reads
    assert io_costs(policy("vsan-raid5"), 6, absent=1).read_reads == pytest.approx(4 / 3)
    assert io_costs(policy("vsan-raid1-ftt1"), 6, absent=1).read_reads == 1.0  # a mirror reads the other copy


def test_resync_time_of_a_hosts_data_at_a_rebuild_share():
    # a host: 4 disks at 2 GB/s read, 1 GB/s write, 2 x 25 GbE (6.25 GB/s): disks move
    # 1 / (1/8 + 1/4) GB/s = 2.667 GB/s < 6.25, so 2.667 GB/s per host
    per = host_resync_Bps(4, 2e9, 1e9, 6.25e9)
    assert per == pytest.approx(8e9 / 3)
    # 10 TiB on 5 hosts up at share 0.2: 0.2 x 5 x 2.667 GB/s = 2.667 GB/s -> 10.995e12 / 2.667e9 = 4,123 s
    t = resync_time_s(10 * TIB, 5, per, 0.2)
    assert t == pytest.approx(10 * TIB / (8e9 / 3))
    assert t / 60 == pytest.approx(68.72, abs=0.01)
    # the foreground keeps half of every host busy: the rate halves, the time doubles
    assert resync_time_s(10 * TIB, 5, per, 0.2, foreground_util=0.5) == pytest.approx(2 * t)
    assert math.isinf(resync_time_s(1.0, 5, per, 0.2, foreground_util=1.0))


def test_vcf_vsan_entitlement_per_core():
    # 6 hosts x 2 x 16 cores = 192 cores x 1 TiB = 192 TiB included; 96 TiB raw: no add-on; 250 TiB: 58 add-on
    assert vsan_entitlement(192, 96 * TIB, 1.0)["addon_tib"] == 0
    assert vsan_entitlement(192, 250 * TIB, 1.0)["addon_tib"] == 58
