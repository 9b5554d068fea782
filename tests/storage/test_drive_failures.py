"""Drive and controller failures of datastores: degraded arrays, rebuilds, lost data, boot storms (issue 16)."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from densim.catalog.core import builtin_catalog
from densim.cli.main import app
from densim.engine import simulate
from densim.errors import InputError
from densim.models.devices import DeviceSpec
from densim.models.storage import ControllerSpec
from densim.models.storage.vmio import DatastoreModel, _latency_parts, array_lost, degraded_latency_s
from densim.plant import resolve
from densim.spec.loader import scenario_from_dict

CAP = 400e9  # intel-dc-s3700-400gb: 400 GB, 460 MB/s sequential write, 500 MB/s read, MTBF 2,000,000 h
SEQ_W = 460e6


def scenario(failures, raid="raid5", drives=4, controllers=1, iops=0.0, read_fraction=1.0, horizon="12 h", controller="lsi-9210-8i"):
    """2 hosts of 8 cores; 4 VMs of 2 vCPUs (all on h-0, first-fit), each issuing ``iops`` (profile) on datastore ``a``."""
    ds = {"name": "a", "device": "intel-dc-s3700-400gb", "drives": drives, "raid": raid, "controllers": controllers}
    if controller:
        ds["controller"] = controller
    d = {
        "name": "drv",
        "cluster": {"hosts": [{"name": "h", "count": 2, "cpu": {"sockets": 1, "cores_per_socket": 8, "base_clock": "2 GHz"},
                               "memory": "32 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]},
        "vms": [{"name": "db", "count": 4, "vcpus": 2, "memory": "1 GiB", "vcpu_speed": "2 GHz",
                 "profile": {"kind": "constant", "mean": 0.5}, "workload": {"iops": iops, "read_fraction": read_fraction}}],
        "placement": {"policy": "first-fit"},
        "simulation": {"step": "5 min", "horizon": horizon},
        "storage": {"model": "queueing", "datastores": [ds], "default_datastore": "a"},
        "failures": failures,
    }
    return scenario_from_dict(d)


def model(raid="raid5", drives=4, controllers=0):
    cat = builtin_catalog()
    dev = cat.get("devices", "intel-dc-s3700-400gb", DeviceSpec)
    ctl = cat.get("controllers", "lsi-9210-8i", ControllerSpec) if controllers else None
    return DatastoreModel.build("a", dev, drives, raid, ctl, controllers, 16384.0)


def one(failures, **kw):
    return {"events": [{"time": "1 h", "target": "datastore:a/drive:1", "duration": "1 h"}], **failures}


# ---- the degraded array's model ---------------------------------------------------------------------
def test_raid5_degraded_read_amplification():
    # RAID 5 of n = 4 drives, reads only, lambda front-end reads/s. Healthy: each read is one back-end read
    # on one of 4 drives: 1/4 read per drive per front-end read. Drive 1 down: the 3/4 of reads whose block
    # survives cost 1 read; the 1/4 on the lost drive are rebuilt from the n - 1 = 3 others of the stripe:
    # 3/4 x 1 + 1/4 x 3 = 1.5 back-end reads per front-end read, over 3 survivors = 0.5 each: every
    # survivor's utilisation doubles (0.5 / 0.25 = 2).
    m = model()
    lam = np.array([1000.0, 10000.0])
    healthy = _latency_parts(m, lam, 1.0)[4]
    lat, util, sat, deg = degraded_latency_s(m, lam, 1.0, failed=1)
    np.testing.assert_allclose(deg / healthy, 2.0, rtol=1e-12)
    assert (lat > _latency_parts(m, lam, 1.0)[0]).all()  # slower: busier drives, and a rebuilt read waits for 3
    # RAID 6 with one drive down: a lost block is rebuilt from n - 2 = 2 reads: 3/4 + 1/4 x 2 = 1.25 over 3
    # survivors = 0.4167 per drive against 0.25: x 5/3
    np.testing.assert_allclose(degraded_latency_s(model("raid6"), lam, 1.0, failed=1)[3] / healthy, 1.25 / 3 / 0.25, rtol=1e-12)


def test_raid10_survivor_carries_its_pairs_reads():
    # RAID 10 of 4 drives, reads only: healthy each drive serves lambda/4. Drive 1 down: its mirror (drive 0)
    # serves the pair's reads alone, lambda x 2/4 = twice a healthy drive's load.
    m = model("raid10")
    lam = np.array([8000.0])
    healthy = _latency_parts(m, lam, 1.0)[4]
    np.testing.assert_allclose(degraded_latency_s(m, lam, 1.0, failed=1)[3] / healthy, 2.0, rtol=1e-12)


def test_which_failures_lose_data():
    assert array_lost("raid0", [2]) and array_lost("jbod", [0])
    assert not array_lost("raid5", [1]) and array_lost("raid5", [1, 3])
    assert not array_lost("raid6", [0, 1]) and array_lost("raid6", [0, 1, 2])
    assert not array_lost("raid10", [1, 2]) and array_lost("raid10", [2, 3])  # pairs (0, 1), (2, 3)


def test_controller_failure_halves_the_controllers_capacity():
    # 2 controllers of 300,000 IOPS each (lsi-9210-8i, plain HBA: every back-end I/O crosses it). With one
    # down the survivor carries every I/O: its utilisation doubles, i.e. the pair's capacity halves.
    m = model("raid10", controllers=2)
    lam = np.array([50000.0])
    be = 1.0  # reads only: one back-end I/O per front-end I/O
    u_healthy = lam * be / 2 * m.controller_service_s
    u_one = lam * be / 1 * m.controller_service_s
    assert u_one[0] == pytest.approx(2 * u_healthy[0])
    lat1, util1, _, _ = degraded_latency_s(m, lam, 1.0, failed=0, failed_controllers=1)
    lat0, util0, _, _ = degraded_latency_s(m, lam, 1.0, failed=0, failed_controllers=0)
    assert lat1[0] > lat0[0]
    assert util1[0] >= u_one[0] - 1e-12 and util0[0] >= u_healthy[0] - 1e-12


# ---- in a run ---------------------------------------------------------------------------------------
def test_rebuild_time_is_capacity_over_rate_on_an_idle_array():
    # No foreground I/O: the rebuild runs at 0.3 (default share) x 460 MB/s = 138 MB/s and writes the drive's
    # 400 GB: 400e9 / 138e6 = 2,898.55 s. The drive fails at 1 h, is replaced at 2 h; the array is degraded from
    # the step of the failure to the step the rebuild ends: 12 steps down + ceil(2,898.55 / 300) = 10 steps
    # rebuilding = 22 steps x 5 min = 1.8333 h.
    r = simulate(resolve(scenario(one({}))))
    a = r.summary["storage_failures"]["datastores"]["a"]
    assert a["rebuilds"] == 1 and a["rebuilds_unfinished"] == 0
    assert a["rebuild_s_max"] == pytest.approx(CAP / (0.3 * SEQ_W))
    assert a["degraded_h"] == pytest.approx(22 * 5 / 60)
    assert a["data_lost"] is False and a["down_h"] == 0.0
    # an explicit rate: 400 GB at 200 MB/s = 2,000 s
    r = simulate(resolve(scenario(one({"rebuild": {"rate": "200 MB/s"}}))))
    assert r.summary["storage_failures"]["datastores"]["a"]["rebuild_s_max"] == pytest.approx(2000.0)


def test_rebuild_is_longer_under_foreground_io_and_raises_latency():
    # 4 VMs x 10,000 reads/s = 40,000 reads/s on the degraded RAID 5. The survivors are busy u (from the
    # degraded model at that load), the rebuild gets 0.3 x 460 MB/s x (1 - u): it takes 2,898.55 / (1 - u) s.
    lam = 40000.0
    u = degraded_latency_s(model(controllers=1), np.array([lam]), np.array([1.0]), failed=1)[3][0]
    assert 0.2 < u < 0.9
    r = simulate(resolve(scenario(one({}), iops=10000.0)))
    a = r.summary["storage_failures"]["datastores"]["a"]
    assert a["rebuild_s_max"] == pytest.approx(CAP / (0.3 * SEQ_W * (1 - u)), rel=1e-9)
    assert a["latency_s_degraded_mean"] > a["latency_s_outside_mean"]
    assert a["latency_s_degraded_worst"] > a["latency_s_outside_worst"]


def test_controller_down_without_a_pair_takes_the_datastore_down():
    # One controller, down 1 h (12 whole steps): the datastore is down; 4 VMs x 60 min of I/O not served.
    fs = {"events": [{"time": "1 h", "target": "datastore:a/controller:0", "duration": "1 h"}]}
    r = simulate(resolve(scenario(fs, iops=100.0)))
    s = r.summary["storage_failures"]
    assert s["datastores"]["a"]["down_h"] == pytest.approx(1.0)
    assert s["vm_io_down_minutes"] == pytest.approx(4 * 60.0)
    # a pair: the survivor carries the I/O, nothing is down, the steps count as degraded
    r = simulate(resolve(scenario(fs, iops=100.0, controllers=2)))
    a = r.summary["storage_failures"]["datastores"]["a"]
    assert a["down_h"] == 0.0 and a["degraded_h"] == pytest.approx(1.0)
    assert a["latency_s_degraded_mean"] > a["latency_s_outside_mean"]


def test_raid0_drive_failure_and_a_second_raid5_failure_lose_the_data():
    # RAID 0: any drive lost = data lost, the datastore is down from 1 h to the end (12 h): 11 h.
    r = simulate(resolve(scenario(one({}), raid="raid0", iops=10.0)))
    s = r.summary["storage_failures"]
    assert s["data_loss_events"] == 1 and s["datastores"]["a"]["down_h"] == pytest.approx(11.0)
    assert s["vm_io_down_minutes"] == pytest.approx(4 * 11 * 60.0)
    # RAID 5: drive 2 fails at 2.5 h while drive 1 rebuilds (replaced at 2 h, rebuild 2,898 s): lost at 2.5 h
    fs = {"events": [{"time": "1 h", "target": "datastore:a/drive:1", "duration": "1 h"},
                     {"time": "2.5 h", "target": "datastore:a/drive:2", "duration": "1 h"}]}
    s = simulate(resolve(scenario(fs))).summary["storage_failures"]
    assert s["data_loss_events"] == 1 and s["datastores"]["a"]["down_h"] == pytest.approx(9.5)


def test_random_drive_failures_use_the_catalog_mtbf_and_are_seeded():
    # 4 drives x 10 y with MTBF 2,000,000 h (228 y): expected 4 x 10 / 228 = 0.18 failures; use a short MTBF
    # to see some: mtbf 30 d over 10 d x 4 drives ~ 1.3. The catalog figure applies when none is given.
    fs = {"random": {"drive": {"mtbf": "30 d", "mttr": "2 h"}}}
    a = simulate(resolve(scenario(fs, raid="raid6", horizon="10 d")), seed=7).summary["storage_failures"]
    b = simulate(resolve(scenario(fs, raid="raid6", horizon="10 d")), seed=7).summary["storage_failures"]
    assert a == b
    from densim.workloads.failures import StorageParts

    plant = resolve(scenario({"random": {"drive": {"mttr": "2 h"}}}))
    parts = StorageParts.of(plant.datastores, ["h-0", "h-1"])
    assert parts.names[:2] == ["datastore:a/drive:0", "datastore:a/drive:1"] and parts.names[-1] == "datastore:a/controller:0"
    assert parts.mtbf_s[0] == pytest.approx(2e6 * 3600)
    simulate(plant)  # runs with the catalog's MTBF


def test_boot_storm_reads_land_on_the_datastore_for_profile_vms():
    # Host h-0 (all 4 VMs) fails at 1 h; after 30 s detection they restart on h-1 and boot 120 s, each reading
    # 100 MB/s: 4 x 120 s x 100e6 B/s = 48 GB read on datastore a, in the steps of the boot.
    fs = {"events": [{"time": "1 h", "target": "h-0", "duration": "4 h"}],
          "ha": {"boot_read": "100 MB/s", "boot_delay": "2 min", "detection": "30 s"}}
    r = simulate(resolve(scenario(fs, iops=100.0)))
    b = r.summary["storage_failures"]["boot_storms"]["a"]
    assert b["boot_read_bytes"] == pytest.approx(4 * 120 * 100e6, rel=1e-6)
    assert b["latency_s_boot_mean"] > b["latency_s_outside_mean"]


# ---- bad input --------------------------------------------------------------------------------------
def test_unknown_drive_is_a_one_line_error(tmp_path, write_yaml):
    fs = {"events": [{"time": "1 h", "target": "datastore:a/drive:9", "duration": "1 h"}]}
    with pytest.raises(InputError, match=r"failures.events\[0\].target.*'datastore:a/drive:9'.*drive:0..3"):
        simulate(resolve(scenario(fs)))
    p = write_yaml(scenario(fs).model_dump(by_alias=True, exclude_none=True))
    r = CliRunner().invoke(app, ["run", str(p), "--out", str(tmp_path / "o"), "--no-progress", "--no-report"])
    assert r.exit_code == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "datastore:a/drive:9" in lines[0]


def test_overlapping_failures_of_one_drive_are_one_line(tmp_path):
    tr = tmp_path / "f.csv"
    tr.write_text("time,target,duration\n1 h,datastore:a/drive:1,2 h\n2 h,datastore:a/drive:1,1 h\n")
    with pytest.raises(InputError) as e:
        simulate(resolve(scenario({"trace": str(tr)})))
    msg = str(e.value)
    assert "\n" not in msg and "row 3" in msg and "may not overlap" in msg


def test_missing_catalog_mtbf_is_required_in_the_scenario():
    sc = scenario({"random": {"drive": {"mttr": "2 h"}}}).model_dump(by_alias=True, exclude_none=True)
    sc["storage"]["datastores"][0]["device"] = "sas-10k-900gb"
    with pytest.raises(InputError, match=r"failures.random.drive.mtbf.*'sas-10k-900gb' has no mtbf or afr"):
        simulate(resolve(scenario_from_dict(sc)))


def test_direct_attach_has_no_controller_target():
    fs = {"events": [{"time": "1 h", "target": "datastore:a/controller:0", "duration": "1 h"}]}
    with pytest.raises(InputError, match=r"no controller"):
        simulate(resolve(scenario(fs, controller=None)))


def test_a_profile_vm_issues_no_io_while_it_is_down():
    # 4 VMs x 100 IOPS; host h-0 (all of them) fails at 1 h, they are down 30 s (detection) + 120 s (boot)
    # each: the datastore's mean over 12 h is 400 x (1 - 150 / 43,200) = 398.611 IOPS (it was 400 before
    # profile iops followed the instances' up-times).
    fs = {"events": [{"time": "1 h", "target": "h-0", "duration": "4 h"}], "ha": {"boot_delay": "2 min", "detection": "30 s"}}
    r = simulate(resolve(scenario(fs, iops=100.0)))
    assert r.summary["storage"]["datastores"]["a"]["mean_iops"] == pytest.approx(400 * (1 - 150 / 43200), rel=1e-6)
    assert r.summary["storage_failures"]["boot_storms"] == {}


def test_random_drive_failures_happen_and_rebuild():
    # mtbf 30 d, 4 drives, 10 d: about 4 x 10 / 31 = 1.3 failures expected; seed 7 gives some
    fs = {"random": {"drive": {"mtbf": "30 d", "mttr": "2 h"}}}
    r = simulate(resolve(scenario(fs, raid="raid6", horizon="10 d")), seed=7)
    a = r.summary["storage_failures"]["datastores"]["a"]
    assert a["drive_failures"] >= 1 and a["rebuilds"] + a["rebuilds_unfinished"] >= 1
    assert r.summary["failures"]["events"] == a["drive_failures"]
