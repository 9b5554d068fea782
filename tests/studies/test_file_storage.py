"""Study private-cloud-files (issue 32 item 3): the sizing, network and re-protection rules by hand."""

from __future__ import annotations

import math

import pytest

from densim.tools.studies import file_storage as F
from densim.tools.studies.base import all_studies

GIB, MIB = 2**30, 2**20


def test_network_bytes_per_client_byte():
    # 3 copies: the primary keeps one and ships two; a GET is served where a copy lives
    assert F.replication_traffic(3) == {"put_in": 3.0, "put_out": 2.0, "get_in": 0.0, "get_out": 1.0}
    # EC 12 + 4 over 16 nodes: shards 16/12 of the object, 15/16 of them elsewhere: 1.25 shipped, 0.9375 fetched
    t = F.erasure_traffic(12, 4, 16)
    assert t["put_in"] == pytest.approx(2.25) and t["put_out"] == pytest.approx(1.25)
    assert t["get_in"] == pytest.approx(0.9375) and t["get_out"] == pytest.approx(1.9375)


def test_minio_bounds_by_hand():
    # 32 nodes x 12.5 GB/s = 400 GB/s of ingress; PUT: 400e9 / 2.25 = 177.8e9 B/s = 165.6 GiB/s (published 165 GiB/s);
    # GET: 400e9 / 1.9375 = 206.5e9 B/s = 192.3 GiB/s (published 325: a miss, kept)
    m = F.minio_check()
    assert m["put_gib_s"] == pytest.approx(400e9 / 2.25 / GIB) and m["get_gib_s"] == pytest.approx(400e9 / 1.9375 / GIB)


def test_demand_and_gateways_by_hand():
    d = F.demand()
    # 5,000 users x 25 GiB x 1 % = 1,250 GiB changed a day = 640,000 files of 2 MiB, over 8 h x 2.5 peak = 55.56 /s
    assert d.put_per_s == pytest.approx(5000 * 25 * GIB * 0.01 / (2 * MIB) / (8 * 3600) * 2.5)
    assert d.put_per_s == pytest.approx(55.556, rel=1e-4)
    assert d.get_per_s == pytest.approx(1.5 * d.put_per_s)  # 2.5 devices: 1.5 others download each change
    assert d.poll_per_s == pytest.approx(5000 * 2.5 / 30)  # 416.7
    # CPU: (55.56 + 83.33) x 0.04 + 416.7 x 0.003 = 5.556 + 1.25 = 6.806 s/s; / (8 vCPUs x 0.6) = 1.42 -> 2 VMs, + 1 spare
    assert F.gateway_cpu_s(d) == pytest.approx(6.8056, rel=1e-4)
    assert F.gateways(d) == 3
    assert F.gateways(F.demand({"users": 20000})) == math.ceil(4 * 6.8056 / 4.8) + 1  # 6 + 1


def test_nodes_by_hand():
    s = F.size()
    # raw: 5,000 x 25 GiB x 3 = 402.65 TB; a node: 12 x 4 TB = 48 TB; 402.65 / (0.85 x 48) = 9.87 -> 10 nodes, + 1 so the
    # survivors hold it after a node fails = 11 (copies + 1 = 4; drives and NICs nowhere near their bounds)
    assert s["raw_used_tb"] == pytest.approx(5000 * 25 * GIB * 3 / 1e12)
    assert s["nodes"] == 11 and s["limiting"] == "capacity on the survivors after one node fails"
    assert s["drives"] == 132 and s["gateway_vms"] == 3
    small = F.size(F.demand({"users": 1000}))
    assert small["nodes"] == 4 and small["limiting"].startswith("pieces + 1")  # 80.5 TB needs 2 nodes; 3 copies + 1 = 4


def test_erasure_coding_by_hand():
    d = F.demand()
    ec = F.erasure_scheme()
    assert (ec.name, ec.amplification) == ("EC 4+2", 1.5)
    s = F.size(d, scheme=ec)
    # raw 134.2 TB x 1.5 = 201.3 TB: 201.3 / 40.8 = 4.93 -> 5 nodes, + 1 = 6; but 6 pieces on 6 nodes + 1 = 7
    assert s["raw_used_tb"] == pytest.approx(5000 * 25 * GIB * 1.5 / 1e12) and s["nodes"] == 7
    assert s["limiting"].startswith("pieces + 1")
    # a download of 2 MiB reads 4 pieces of 512 KiB: one I/O each, 4 per download; an upload writes 6
    op = s["healthy"]
    assert op["backend_iops_per_node"] == pytest.approx((d.put_per_s * 6 + d.get_per_s * 4) / 7)
    # re-protection reads 4 pieces per rebuilt byte and writes one: 0.3 x 255e6 / 5 = 15.3 MB/s per survivor drive
    f = F.failure(7, d, scheme=ec)
    u = f["after_recovery"]["drive_util"]
    assert f["recovery_rate_MBps"] == pytest.approx(6 * 12 * 0.3 * 255e6 / 5 * (1 - u) / 1e6)
    assert f["recovery_hours"] == pytest.approx(5000 * 25 * GIB * 1.5 / 7 / (f["recovery_rate_MBps"] * 1e6) / 3600)
    rows = {r["scheme"]: r for r in F.compare_schemes(d)}
    assert rows["EC 4+2"]["raw_tb"] < rows["3 copies"]["raw_tb"]  # 7 x 48 TB against 11 x 48 TB
    assert rows["EC 4+2"]["recovery_hours"] > rows["3 copies"]["recovery_hours"]  # 4 reads per rebuilt byte


def test_a_busy_estate_is_sized_by_its_drives():
    # 2,000 users changing 40 % of 25 GiB a day: capacity needs 5 nodes, the drives' peak utilisation needs more
    d = F.demand({"users": 2000, "change_per_day": 0.4})
    s = F.size(d)
    assert s["limiting"] == "peak drive / NIC utilisation" and s["nodes"] > s["reasons"]["capacity on the survivors after one node fails"]
    assert s["healthy"]["drive_util"] <= 0.7
    assert F.operating_point(s["nodes"] - 1, d)["drive_util"] > 0.7 or max(
        F.operating_point(s["nodes"] - 1, d)["nic_in_util"], F.operating_point(s["nodes"] - 1, d)["nic_out_util"]) > 0.7


def test_node_failure_by_hand():
    d = F.demand()
    f = F.failure(11, d)
    # the failed node held 402.65 / 11 = 36.6 TB; each survivor drive re-protects at 0.3 of its time when idle, a byte
    # costing a read and a write at 255 MB/s: 0.3 x 255e6 / 2 = 38.25 MB/s, x 120 drives x (1 - u) with u the survivors'
    # foreground utilisation
    u = f["after_recovery"]["drive_util"]
    rate = 120 * 0.3 * 255e6 / 2 * (1 - u)
    assert f["recovery_rate_MBps"] == pytest.approx(rate / 1e6) and f["recovery_bound"] == "drives"
    assert f["recovery_hours"] == pytest.approx(5000 * 25 * GIB * 3 / 11 / rate / 3600)
    h, dur, after = f["healthy"], f["during_recovery"], f["after_recovery"]
    assert dur["upload_s"] > after["upload_s"] >= h["upload_s"]  # recovery takes drive time; then 10 nodes carry 11's load
    assert dur["recovery_drive_share"] == pytest.approx(0.3 * (1 - u), rel=1e-6)
    times = [p[0] for p in f["series"]]
    during = [p for p in f["series"] if 1.0 <= p[0] < 1.0 + f["recovery_hours"]]
    assert during and all(p[1] == pytest.approx(dur["upload_s"]) for p in during) and times[0] == 0.0


def test_the_study_is_built_in_with_honest_roles(tmp_path):
    st = all_studies()["private-cloud-files"]
    s = st.run(tmp_path, 0)
    roles = [h["role"] for h in s["headline"]]
    # PUT: its arithmetic was worked out before its tolerance was written (arithmetic); GET: a prediction
    assert roles.count("prediction") == 1 and roles.count("arithmetic") == 1 and "calibration" not in roles
    heads = {h["name"].split(":")[-1].strip(): h for h in s["headline"]}
    assert heads["PUT throughput (GiB/s)"]["passed"] and not heads["GET throughput (GiB/s)"]["passed"]
    assert all(h["why"] for h in s["headline"] if h["role"] != "prediction")
