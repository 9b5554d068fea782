"""HCI resync mechanisms by hand (issue 32 item 1): erasure-coded rebuilds read k pieces per piece written, and
the resync's storage-stack CPU is taken from the hosts before the CPU step (so CPU Ready includes it)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from densim.engine import simulate
from densim.models.storage.hci import (GroupData, host_resync_Bps, mean_rebuild_reads, policy, rebuild_reads,
                                       resync_stack_bytes)
from densim.plant import resolve
from densim.spec.loader import scenario_from_dict

# Intel P4600 1.6 TB: 3,270 MB/s sequential read, 1,300 MB/s write; 4 per host; 2 x 25 GbE = 6.25 GB/s per direction
RD, WR, NIC = 4 * 3.27e9, 4 * 1.3e9, 6.25e9

BASE = {
    "name": "hci-mech",
    "cluster": {"hosts": [{"name": "h", "count": 7, "server": "dual-platinum-8180-768g"}]},
    "vms": [{"name": "app", "count": 14, "vcpus": 4, "memory": "16 GiB", "profile": {"kind": "constant", "mean": 0.1},
             "datastore": "vsan"}],
    "placement": {"policy": "first-fit"},
    "simulation": {"step": "1 min", "horizon": "2 h", "seed": 1},
    "storage": {"model": "queueing", "hci": {
        "name": "vsan", "device": "intel-dc-p4600-1.6tb", "disks_per_host": 4, "nic": "connectx-4-lx-2x25g",
        "policies": [{"vms": "app", "policy": "vsan-raid1-ftt1", "disk": "200 GiB"}],
        "rebuild_share": 0.2, "repair_delay": "60 min"}},
    "failures": {"events": [{"time": "10 min", "target": "h-1", "duration": "100 min"}]},
}


def run(d):
    return simulate(resolve(scenario_from_dict(d)))


def test_pieces_read_per_piece_rebuilt_by_policy():
    # a mirror copies one surviving copy; a d+p code reads the d survivors of the stripe
    got = {n: rebuild_reads(policy(n), 8) for n in ("vsan-raid1-ftt1", "nutanix-rf3", "vsan-raid5", "vsan-raid6",
                                                   "vsan-esa-raid5", "vsan-esa-raid5-2p1", "vsan-esa-raid6")}
    assert got == {"vsan-raid1-ftt1": 1.0, "nutanix-rf3": 1.0, "vsan-raid5": 3.0, "vsan-raid6": 4.0,
                   "vsan-esa-raid5": 4.0, "vsan-esa-raid5-2p1": 2.0, "vsan-esa-raid6": 4.0}
    # EC-X RF2 on 6 nodes (strip 4/1), 60 % cold: raw 0.6 x 5/4 = 0.75 coded (k = 4) and 0.4 x 2 = 0.8 RF copies
    # (k = 1): (0.75 x 4 + 0.8 x 1) / 1.55 = 3.8 / 1.55 = 2.4516
    assert rebuild_reads(policy("nutanix-rf2-ecx"), 6, 0.6) == pytest.approx(3.8 / 1.55)
    # a mix by raw bytes: 1 TB at RAID-1 (2 TB raw, k = 1) and 3 TB at RAID-5 3+1 (4 TB raw, k = 3): (2 + 12) / 6
    mix = [GroupData("a", "vsan-raid1-ftt1", 1e12), GroupData("b", "vsan-raid5", 3e12)]
    assert mean_rebuild_reads(mix, 6) == pytest.approx(14 / 6)
    assert resync_stack_bytes(1) == 4.0 and resync_stack_bytes(4) == 13.0  # 3k + 1: read, sent, received; written


def test_per_host_rebuild_rate_reads_k_bytes_per_byte_written():
    # k = 1: min(6.25e9, 1 / (1/13.08e9 + 1/5.2e9)) = 3.7208e9 B/s (disk-bound), as before
    assert host_resync_Bps(4, 3.27e9, 1.3e9, NIC) == pytest.approx(1 / (1 / RD + 1 / WR))
    # k = 4 (RAID-5 4+1): disks 1 / (4/13.08e9 + 1/5.2e9) = 2.0076e9; adapter 6.25e9 / 4 = 1.5625e9: network-bound
    assert host_resync_Bps(4, 3.27e9, 1.3e9, NIC, reads=4) == pytest.approx(NIC / 4)
    # with 100 GbE (12.5e9 / 4 = 3.125e9) the disks bind: 2.0076e9
    assert host_resync_Bps(4, 3.27e9, 1.3e9, 12.5e9, reads=4) == pytest.approx(1 / (4 / RD + 1 / WR))
    with pytest.raises(ValueError):
        host_resync_Bps(4, 3.27e9, 1.3e9, NIC, reads=0.5)


def test_raid1_against_raid5_4p1_rebuild_time_by_hand():
    # seven hosts, 14 idle VMs x 200 GiB = 2,800 GiB of data; h-1 down 10..110 min, rebuilt from 70 min on 6 hosts up
    # RAID-1 FTT=1: raw 5,600 GiB, h-1's share 800 GiB; per host 3.7208e9 B/s (k = 1):
    #     800 x 2^30 / (0.2 x 6 x 3.7208e9) = 858.99e9 / 4.4650e9 = 192.39 s
    # vSAN ESA RAID-5 4+1: raw 2,800 x 5/4 = 3,500 GiB, share 500 GiB; each rebuilt byte reads 4 on other hosts, so per
    # host min(6.25e9 / 4, 2.0076e9) = 1.5625e9 B/s: 500 x 2^30 / (0.2 x 6 x 1.5625e9) = 536.87e9 / 1.875e9 = 286.33 s
    # (the old model read one byte per byte for every policy: 536.87e9 / 4.4650e9 = 120.24 s).
    # Ratio: (500 / 800) x (3.7208e9 / 1.5625e9) = 0.625 x 2.3813 = 1.488
    t1 = 800 * 2**30 / (0.2 * 6 * (1 / (1 / RD + 1 / WR)))
    t5 = 500 * 2**30 / (0.2 * 6 * NIC / 4)
    assert t1 == pytest.approx(192.39, abs=0.01) and t5 == pytest.approx(286.33, abs=0.01)
    (m,) = run(BASE).summary["hci"]["resyncs"]
    d = copy.deepcopy(BASE)
    d["storage"]["hci"]["policies"][0]["policy"] = "vsan-esa-raid5"
    h = run(d).summary["hci"]
    (e,) = h["resyncs"]
    assert h["rebuild_reads_per_byte"] == 4.0 and h["per_host_resync_Bps"] == pytest.approx(NIC / 4)
    assert (m["kind"], e["kind"], m["start_s"], e["start_s"]) == ("rebuild", "rebuild", 4200.0, 4200.0)
    assert (m["bytes"], e["bytes"]) == pytest.approx((800 * 2**30, 500 * 2**30))
    assert m["end_s"] - m["start_s"] == pytest.approx(t1, rel=1e-6)
    assert e["end_s"] - e["start_s"] == pytest.approx(t5, rel=1e-6)
    assert (e["end_s"] - e["start_s"]) / (m["end_s"] - m["start_s"]) == pytest.approx(1.488, abs=1e-3)


def test_resync_cpu_is_taken_from_the_hosts_while_it_runs():
    # RAID-1 (k = 1): 4 stack bytes per rebuilt byte (read, sent, received, written). The rebuild of 800 GiB on 6 hosts
    # up runs 4,200..4,392.4 s at 0.2 x 6 x 3.7208e9 = 4.4650e9 B/s: per host up 0.74416e9 rebuilt B/s x 4 = 2.9766e9
    # stack B/s; at 1 cycle per byte (the default (E)) 2,976.6 MHz in steps 70..72 (fully inside), 0 on h-1 (down)
    # and outside the rebuild. Over the rebuild: 4 x 858.99e9 x 1 = 3.436e12 cycles.
    r = run(BASE)
    h = r.summary["hci"]
    per_host = 0.2 * 6 * (1 / (1 / RD + 1 / WR)) / 6 * 4 / 1e6
    cpu = np.asarray(r.host_acc.series["hci_resync_cpu_mhz"], dtype=np.float64)
    up = [i for i in range(7) if i != 1]
    assert cpu[70:73][:, up] == pytest.approx(per_host, rel=1e-5)
    assert per_host == pytest.approx(2976.6, abs=0.1)
    assert cpu[70:73, 1].max() == 0.0 and cpu[:70].max() == 0.0 and cpu[74:].max() == 0.0
    assert h["resync_cycles_per_byte"] == 1.0
    assert h["resync_cpu_cycles"] == pytest.approx(4 * 800 * 2**30, rel=1e-5)
    # ESA RAID-5 4+1 (k = 4): 13 stack bytes per rebuilt byte: 13 x 500 x 2^30 = 6.979e12 cycles
    d = copy.deepcopy(BASE)
    d["storage"]["hci"]["policies"][0]["policy"] = "vsan-esa-raid5"
    assert run(d).summary["hci"]["resync_cpu_cycles"] == pytest.approx(13 * 500 * 2**30, rel=1e-5)


def test_resync_cpu_raises_cpu_ready_on_a_host_near_full():
    # four hosts of 140,000 MHz, eight 28-vCPU VMs (2,000 MHz per vCPU) at 90 %: 50,400 MHz each, two per host:
    # 100,800 MHz, no CPU Ready. h-1 fails at 10 min for 100 min; its two VMs restart on two of the others. The
    # rebuild (800 GiB, 3 hosts up) runs from 70 min for 384.8 s at 0.2 x 3 x 3.7208e9 = 2.2325e9 B/s: per host up
    # 0.74416e9 rebuilt B/s, 2.9766e9 stack B/s. At 20 cycles per byte that is 59,533 MHz per host, more than the
    # 39,200 MHz the host that kept two VMs has spare: its VMs wait during the rebuild (steps 70..75) and not in the
    # step before it. With 0 cycles per byte they do not wait then (the old model charged no CPU for the resync).
    d = copy.deepcopy(BASE)
    d["cluster"]["hosts"][0]["count"] = 4
    d["vms"][0].update(count=8, vcpus=28, profile={"kind": "constant", "mean": 0.9}, memory="64 GiB")
    d["storage"]["hci"]["policies"][0]["disk"] = "200 GiB"
    d["placement"] = {"policy": "worst-fit", "cpu_overcommit": 2.0}

    def ready_on_the_host_left_alone(cycles):
        d["storage"]["hci"]["resync_cycles_per_byte"] = cycles
        r = run(d)
        pct = np.asarray(r.vm_acc.series["cpu_ready_pct"], dtype=np.float64)
        host = np.asarray(r.ctx.vms.host)
        took = {int(host[8]), int(host[9])}  # rows 8, 9: the restarts
        alone = [v for v in range(8) if int(host[v]) not in took | {1}]  # the two VMs of the host that took none
        assert len(alone) == 2
        cpu = np.asarray(r.host_acc.series["hci_resync_cpu_mhz"], dtype=np.float64)
        return pct[:, alone], cpu[71, int(host[alone[0]])], r.summary["hci"]

    p0, c0, h0 = ready_on_the_host_left_alone(0.0)
    p10, c10, h10 = ready_on_the_host_left_alone(20.0)
    assert c0 == 0.0 and c10 == pytest.approx(20 * 0.2 * 3 * (1 / (1 / RD + 1 / WR)) / 3 * 4 / 1e6, rel=1e-5)
    assert c10 == pytest.approx(59533, abs=1)
    assert p0[69:76].max() == 0.0 and p10[69].max() == 0.0
    assert p10[71:75].min() > 1.0  # waiting during the rebuild, only because of its CPU
    assert h10["cpu_ready_pct_resync_mean"] > h0["cpu_ready_pct_resync_mean"]


def test_a_failed_disk_inside_a_host_is_rebuilt_at_once():
    # six hosts of 4 P4600; 12 VMs x 200 GiB at RAID-1 FTT=1: raw 4,800 GiB, a host's share 800 GiB, a disk's
    # 800 / 4 = 200 GiB = 214,748,364,800 B. Disk 2 of h-3 fails at 10 min (replaced after 4 h): its components
    # are lost (degraded), not absent, so the rebuild starts at once (no 60-min repair timer) with all 6 hosts up:
    # 0.2 x 6 x 3.7208e9 = 4.4650e9 B/s -> 214.75e9 / 4.4650e9 = 48.10 s: 600 .. 648.10 s, time to compliance 48.10 s.
    # (The VMs are idle: u = 0.) With 100 IOPS per VM the foreground slows it a little and VM latency during the
    # rebuild is above latency outside it.
    d = copy.deepcopy(BASE)
    d["cluster"]["hosts"][0]["count"] = 6
    d["vms"][0].update(count=12)
    d["failures"] = {"events": [{"time": "10 min", "target": "datastore:vsan@h-3/drive:2", "duration": "4 h"}]}
    h = run(d).summary["hci"]
    (x,) = h["resyncs"]
    t = 200 * 2**30 / (0.2 * 6 * (1 / (1 / RD + 1 / WR)))
    assert t == pytest.approx(48.10, abs=0.01)
    assert (x["kind"], x["host"], x["event"]) == ("drive", "h-3", "drive failure datastore:vsan@h-3/drive:2")
    assert x["bytes"] == pytest.approx(200 * 2**30)
    assert x["start_s"] == 600.0 and x["end_s"] == pytest.approx(600.0 + t, rel=1e-6)
    assert x["time_to_compliance_s"] == pytest.approx(t, rel=1e-6) and x["absent_to_s"] is None
    assert h["resync_bytes"] == pytest.approx(200 * 2**30, rel=1e-6)
    d["vms"][0]["workload"] = {"iops": 100}
    h = run(d).summary["hci"]
    (y,) = h["resyncs"]
    assert y["kind"] == "drive" and y["start_s"] == 600.0 and y["end_s"] > x["end_s"]
    assert h["latency_s_resync_mean"] > h["latency_s_outside_mean"] > 0


def test_a_disk_target_beyond_the_hosts_disks_is_refused():
    from densim.errors import InputError, ScenarioInvalid

    d = copy.deepcopy(BASE)
    d["failures"] = {"events": [{"time": "10 min", "target": "datastore:vsan@h-3/drive:4", "duration": "4 h"}]}
    with pytest.raises((ScenarioInvalid, InputError), match=r"datastore:vsan@h-3/drive:4.*drive:0\.\.3"):
        run(d)
