"""The HCI datastore in a run: a host failure's resync by hand, the timeline as the source of absences, refusals."""

from __future__ import annotations

import copy

import pytest

from densim.engine import simulate
from densim.errors import ScenarioInvalid
from densim.plant import resolve
from densim.spec.loader import scenario_from_dict

# five 56-core hosts; ten idle VMs (no I/O) with 200 GiB each on a vSAN RAID-1 FTT=1 datastore of 4 x
# Intel P4600 1.6 TB per host (3,270 MB/s read, 1,300 MB/s write) behind 2 x 25 GbE (6.25 GB/s)
BASE = {
    "name": "hci",
    "cluster": {"hosts": [{"name": "h", "count": 5, "server": "dual-platinum-8180-768g"}]},
    "vms": [{"name": "app", "count": 10, "vcpus": 4, "memory": "16 GiB", "profile": {"kind": "constant", "mean": 0.1},
             "datastore": "vsan"}],
    "placement": {"policy": "first-fit"},
    "simulation": {"step": "1 min", "horizon": "2 h", "seed": 1},
    "storage": {"model": "queueing", "hci": {
        "name": "vsan", "device": "intel-dc-p4600-1.6tb", "disks_per_host": 4, "nic": "connectx-4-lx-2x25g",
        "policies": [{"vms": "app", "policy": "vsan-raid1-ftt1", "disk": "200 GiB"}],
        "rebuild_share": 0.2, "repair_delay": "60 min"}},
}


def run(**changes):
    d = copy.deepcopy(BASE)
    for k, v in changes.items():
        d[k] = v
    return simulate(resolve(scenario_from_dict(d)))


def test_a_failed_hosts_data_is_rebuilt_after_the_repair_delay_at_the_rebuild_share():
    # host h-1 down at 10 min for 100 min (longer than the 60-min repair timer): its share of the raw data,
    # 10 VMs x 200 GiB x 2 copies / 5 hosts = 800 GiB = 858,993,459,200 B, is rebuilt from 70 min.
    # per host: disks 1 / (1/(4 x 3.27e9) + 1/(4 x 1.3e9)) = 3.7208e9 B/s < adapter 6.25e9 B/s;
    # the VMs issue no I/O (u = 0): 0.2 x 4 hosts up x 3.7208e9 = 2.9766e9 B/s -> 858.99e9 / 2.9766e9 = 288.6 s
    r = run(failures={"events": [{"time": "10 min", "target": "h-1", "duration": "100 min"}]})
    h = r.summary["hci"]
    (x,) = h["resyncs"]
    per_host = 1.0 / (1.0 / (4 * 3.27e9) + 1.0 / (4 * 1.3e9))
    assert h["per_host_resync_Bps"] == pytest.approx(per_host)
    assert (x["kind"], x["host"], x["start_s"]) == ("rebuild", "h-1", 4200.0)
    assert x["bytes"] == pytest.approx(800 * 2**30)
    assert x["end_s"] - x["start_s"] == pytest.approx(800 * 2**30 / (0.2 * 4 * per_host), rel=1e-6)
    assert x["time_to_compliance_s"] == pytest.approx(3600.0 + 800 * 2**30 / (0.2 * 4 * per_host), rel=1e-6)
    assert h["resync_bytes"] == pytest.approx(800 * 2**30, rel=1e-6)


def test_a_host_back_before_the_repair_timer_gets_a_delta_resync_only():
    # down 10 min < 60 min: nothing is rebuilt; with no writes there is nothing to copy back (0 bytes)
    r = run(failures={"events": [{"time": "10 min", "target": "h-1", "duration": "10 min"}]})
    (x,) = r.summary["hci"]["resyncs"]
    assert (x["kind"], x["start_s"], x["bytes"], x["finished"]) == ("delta", 1200.0, 0.0, True)


def test_resync_traffic_raises_vm_latency_while_it_runs():
    # the same failure with 200 IOPS per VM (70 % reads): the rebuild takes a share of every host's disks
    # and adapter, so the VMs' mean latency during it is above the mean outside it
    d = copy.deepcopy(BASE)
    d["vms"][0]["workload"] = {"iops": 200}
    d["failures"] = {"events": [{"time": "10 min", "target": "h-1", "duration": "100 min"}]}
    h = simulate(resolve(scenario_from_dict(d))).summary["hci"]
    assert h["latency_s_resync_mean"] > h["latency_s_outside_mean"] > 0
    (x,) = h["resyncs"]
    assert x["finished"] and len(x["series"]["latency_s"]) == len(x["series"]["t_s"]) > 0


def test_capacity_answer_in_the_summary():
    # 5 hosts x 4 x 1.6e12 B = 29.1 TiB raw; 1 reserve host and 25 % slack: 4 x 5.82 x 0.75 = 17.5 TiB;
    # RAID-1 FTT=1 halves it: 8.73 TiB usable; the VMs take 10 x 200 GiB x 2 = 3.9 TiB raw
    c = run().summary["hci"]["capacity"]
    assert c["raw_tib"] == pytest.approx(5 * 4 * 1.6e12 / 2**40)
    assert c["usable_tib"] == pytest.approx(4 * 4 * 1.6e12 / 2**40 * 0.75 / 2)
    assert c["used_raw_tib"] == pytest.approx(10 * 200 * 2 / 1024)
    assert (c["hosts_needed"], c["limiting"]) == (4, "policy vsan-raid1-ftt1")  # 3 hosts + 1 to rebuild on


def test_refusals_name_the_field():
    d = copy.deepcopy(BASE)
    d["storage"]["hci"]["policies"][0]["policy"] = "vsan-raid6"  # 4+2 needs 6 hosts
    with pytest.raises(ScenarioInvalid, match=r"storage.hci.policies\[0\].policy: vsan-raid6 places its components on at "
                                              r"least 6 hosts; the cluster has 5"):
        resolve(scenario_from_dict(d))
    d = copy.deepcopy(BASE)
    d["vms"].append({"name": "db", "count": 1, "vcpus": 2, "memory": "8 GiB", "profile": {"kind": "constant", "mean": 0.1},
                     "datastore": "vsan"})
    with pytest.raises(ScenarioInvalid, match=r"vms\[1\].datastore: VM group 'db' lives on the HCI datastore 'vsan' but"):
        resolve(scenario_from_dict(d))
    d = copy.deepcopy(BASE)
    d["storage"]["hci"]["policies"][0]["disk"] = "2 TiB"  # 10 x 2 TiB x 2 = 40 TiB raw > 29.1 TiB
    with pytest.raises(ScenarioInvalid, match=r"storage.hci.policies: the VMs' data takes 40.0 TiB raw"):
        resolve(scenario_from_dict(d))  # densim validate says it too (the engine checks a trace's VMs at run time)
    d = copy.deepcopy(BASE)
    d["storage"]["hci"]["policies"][0] |= {"policy": "nutanix-rf2-ecx"}
    with pytest.raises(ScenarioInvalid, match="give cold_fraction"):
        resolve(scenario_from_dict(d))


def test_two_failures_resync_one_after_the_other():
    # h-1 down at 10 min, h-2 at 11 min, both for 100 min: rebuilds due at 70 and 71 min (60-min timer).
    # 3 hosts up: 0.2 x 3 x 3.7208e9 = 2.2325e9 B/s; 800 GiB each -> 384.8 s. The first runs 4,200..4,584.8 s,
    # the second waits for it (resyncs run one after the other) and ends 384.8 s later
    r = run(failures={"events": [{"time": "10 min", "target": "h-1", "duration": "100 min"},
                                 {"time": "11 min", "target": "h-2", "duration": "100 min"}]})
    a, b = r.summary["hci"]["resyncs"]
    per_host = 1.0 / (1.0 / (4 * 3.27e9) + 1.0 / (4 * 1.3e9))
    t = 800 * 2**30 / (0.2 * 3 * per_host)
    assert (a["start_s"], a["end_s"]) == pytest.approx((4200.0, 4200.0 + t), rel=1e-6)
    assert (b["start_s"], b["end_s"]) == pytest.approx((4200.0 + t, 4200.0 + 2 * t), rel=1e-6)


def test_full_data_migration_maintenance_copies_the_hosts_share_from_the_decision():
    # h-0 into maintenance at 10 min with full-data-migration: its 800 GiB are copied away from 600 s on, at
    # 0.2 x hosts up x 3.7208e9 B/s: between 5 hosts up (288.6 s) and 4 once h-0 has emptied (360.8 s)
    d = copy.deepcopy(BASE)
    d["storage"]["hci"]["maintenance_mode"] = "full-data-migration"
    d["migration"] = {"model": "precopy", "maintenance": [{"host": "h-0", "at": "10 min"}]}
    (x,) = simulate(resolve(scenario_from_dict(d))).summary["hci"]["resyncs"]
    per_host = 1.0 / (1.0 / (4 * 3.27e9) + 1.0 / (4 * 1.3e9))
    b = 800 * 2**30
    assert (x["kind"], x["host"], x["start_s"], x["finished"]) == ("evacuate", "h-0", 600.0, True)
    assert b / (0.2 * 5 * per_host) <= x["time_to_compliance_s"] <= b / (0.2 * 4 * per_host) + 1e-6


def test_cpu_ready_during_the_resync_against_outside_it():
    # four hosts, eight 28-vCPU VMs at 90 % spread two per host (worst-fit, 2 vCPUs per core allowed): 2 x 25.2
    # = 50.4 busy cores of 56, no CPU Ready. h-1 fails at 10 min for 100 min; its two VMs restart at 750 s on
    # h-0 and h-2, which then hold 3 x 25.2 = 75.6 busy cores of 56: their three VMs each wait R % per vCPU
    # (the CPU model's figure, read from the kept series), h-3's two wait nothing. The rebuild (800 GiB at
    # 0.2 x 3 hosts x 3.72e9 B/s = 384.8 s) runs from 70 min (the 60-min repair timer): steps 70..76, when the
    # eight VMs are alive, six at R and two at 0: mean 6/8 R. Outside it the steps before the failure (0) and
    # after the restart (R) are pooled per VM over its own alive time, as cpu_ready_pct_mean pools them.
    # (The resync's own storage-stack CPU is off here, resync_cycles_per_byte 0: this is the accounting alone;
    # test_hci_mechanisms.py charges it.)
    import numpy as np

    from densim.workloads.tasks import alive_fraction

    d = copy.deepcopy(BASE)
    d["storage"]["hci"]["resync_cycles_per_byte"] = 0.0
    d["cluster"]["hosts"][0]["count"] = 4
    d["vms"][0].update(count=8, vcpus=28, profile={"kind": "constant", "mean": 0.9}, memory="64 GiB")
    d["placement"] = {"policy": "worst-fit", "cpu_overcommit": 2.0}
    d["failures"] = {"events": [{"time": "10 min", "target": "h-1", "duration": "100 min"}]}
    r = simulate(resolve(scenario_from_dict(d)))
    h = r.summary["hci"]
    (x,) = h["resyncs"]
    assert (x["start_s"], x["finished"]) == (4200.0, True) and 4560.0 < x["end_s"] < 4620.0
    pct = r.vm_acc.series["cpu_ready_pct"].astype(np.float64)  # (steps, rows): rows 8, 9 are the restarts
    host = np.asarray(r.ctx.vms.host)
    over = np.isin(host, [host[8], host[9]])  # the rows on the two hosts that took a restart
    R = float(pct[72, over & (np.arange(host.size) != 1) & (np.arange(host.size) != 5)][0])
    assert R > 1.0 and pct[:10].max() == 0.0  # over-committed after the restart, none before the failure
    assert h["cpu_ready_pct_resync_mean"] == pytest.approx(6 / 8 * R, rel=1e-5)
    # outside: each VM's ready over its alive steps outside 70..76, its runs (vm_of) pooled, averaged over VMs
    sch, vm_of = r.ctx.schedule, r.ctx.source.vm_of
    alive = alive_fraction(np.asarray(sch.start_s, float), np.asarray(sch.end_s, float), r.ctx.grid.edges_s())
    out = np.ones(pct.shape[0], bool)
    out[70:77] = False
    num = np.bincount(vm_of, weights=pct[out].sum(axis=0))
    den = np.bincount(vm_of, weights=alive[out].sum(axis=0))
    assert h["cpu_ready_pct_outside_mean"] == pytest.approx(float((num / den).mean()), rel=1e-5)
    assert 0 < h["cpu_ready_pct_outside_mean"] < h["cpu_ready_pct_resync_mean"]
