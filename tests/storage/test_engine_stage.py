"""The engine's storage stage: VM I/O lands on datastores, VMs on one datastore slow each other."""

from __future__ import annotations

import numpy as np
import pytest

from densim.engine import simulate
from densim.plant import resolve
from densim.errors import InputError
from densim.models.devices import DeviceSpec
from densim.models.storage.vmio import DatastoreModel, datastore_latency_s
from densim.spec import scenario_from_dict
from densim.catalog.core import builtin_catalog

CAT = builtin_catalog()


def _scenario(groups, datastores, **storage):
    hosts = [{"name": "h", "count": 2, "cpu": {"sockets": 1, "cores_per_socket": 16, "base_clock": "2000 MHz"},
              "memory": "256 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]
    vms = [{"name": n, "count": c, "vcpus": 1, "vcpu_speed": "2000 MHz", "memory": "4 GiB",
            "profile": {"kind": "constant", "mean": 0.1}, "workload": {"iops": iops, "read_fraction": 0.7},
            "datastore": ds} for n, c, iops, ds in groups]
    return scenario_from_dict({
        "name": "io-micro",
        "cluster": {"hosts": hosts},
        "vms": vms,
        "placement": {"policy": "first-fit"},
        "simulation": {"step": "5 min", "horizon": "15 min", "seed": 1},
        "storage": {"model": "queueing", "datastores": datastores, "block_size": "4 KiB", **storage},
    })


SHARED = {"name": "san", "device": "sas-10k-900gb", "drives": 8, "raid": "raid10"}


def test_vm_latency_is_the_datastore_latency_at_the_total_load():
    # 4 VMs x 100 IOPS on one shared 8-drive RAID 10 set: lambda = 400 IOPS at 70 % reads
    res = simulate(resolve(_scenario([("a", 4, 100.0, "san")], [SHARED])))
    vms = res.vms
    ds = DatastoreModel.build("san", CAT.get("devices", "sas-10k-900gb", DeviceSpec), 8, "raid10", None, 1, 4096)
    expected, _, _ = datastore_latency_s(ds, np.array([400.0]), 0.7)
    np.testing.assert_allclose(vms["io_latency_s_mean"].to_numpy(), expected[0], rtol=1e-5)
    np.testing.assert_allclose(vms["io_iops_mean"].to_numpy(), 100.0, rtol=1e-6)
    st = res.summary["storage"]["datastores"]["san"]
    assert st["mean_iops"] == pytest.approx(400.0) and st["saturated_steps"] == 0


def test_neighbours_on_the_same_datastore_slow_a_vm():
    alone = simulate(resolve(_scenario([("a", 1, 150.0, "san")], [SHARED]))).vms["io_latency_s_mean"][0]
    crowded = simulate(resolve(_scenario([("a", 1, 150.0, "san"), ("b", 5, 150.0, "san")], [SHARED]))).vms["io_latency_s_mean"][0]
    other = simulate(resolve(_scenario([("a", 1, 150.0, "san"), ("b", 5, 150.0, "ssd")],
                               [SHARED, {"name": "ssd", "device": "intel-dc-s3700-400gb", "drives": 4, "raid": "raid10"}])
                     )).vms["io_latency_s_mean"][0]
    assert crowded > 1.5 * alone
    assert other == pytest.approx(alone, rel=1e-6)  # neighbours on another datastore do not matter


def test_per_host_datastores_are_separate_arrays():
    # 2 hosts with 16 cores; 32 one-vCPU VMs fill both; a per-host datastore splits the load in two
    local = {"name": "local", "device": "sas-10k-900gb", "drives": 4, "raid": "raid10", "scope": "per-host"}
    res = simulate(resolve(_scenario([("a", 32, 20.0, "local")], [local])))
    ds = res.summary["storage"]["datastores"]
    assert len(ds) == 2 and all(v["mean_iops"] == pytest.approx(320.0) for v in ds.values())


def test_io_cpu_cost_is_added_to_demand():
    base = simulate(resolve(_scenario([("a", 2, 1000.0, "san")], [SHARED])))
    costly = simulate(resolve(_scenario([("a", 2, 1000.0, "san")], [SHARED], cycles_per_io=20000)))
    # 1,000 IOPS x 20,000 cycles = 20 MHz per VM
    d0 = base.vms["cpu_demand_mhz_s"].to_numpy()
    d1 = costly.vms["cpu_demand_mhz_s"].to_numpy()
    np.testing.assert_allclose(d1 - d0, 20.0 * 15 * 60, rtol=1e-5)


def test_bad_datastore_drive_count_names_the_field():
    from densim.errors import ScenarioInvalid

    with pytest.raises(ScenarioInvalid) as exc:
        _scenario([("a", 1, 1.0, "san")], [{**SHARED, "raid": "raid5", "drives": 2}])
    assert "storage.datastores[0].drives: raid5 needs at least 3 drives, got 2" in exc.value.lines()[0]


def test_unknown_device_is_an_input_error():
    with pytest.raises(InputError, match=r"storage.datastores\[0\].device"):
        simulate(resolve(_scenario([("a", 1, 1.0, "san")], [{**SHARED, "device": "nope"}])))


def test_unknown_datastore_of_a_vm_names_the_field():
    with pytest.raises(InputError, match=r"vms\[0\].datastore: unknown datastore 'nas'"):
        simulate(resolve(_scenario([("a", 1, 1.0, "nas")], [SHARED])))


def test_bitbrains_example_disk_traffic_lands_on_datastores(repo, traces, tmp_path):
    import yaml

    from densim.spec import load_scenario

    doc = yaml.safe_load((repo / "examples/storage/bitbrains-datastores.yaml").read_text())
    for g in doc["vms"]:
        g["trace"]["path"] = str(traces / "gwa-t-12-rnd-2013-8-first250")
        g["trace"]["limit"] = 10
    doc["simulation"]["horizon"] = "1 d"
    p = tmp_path / "bb.yaml"
    p.write_text(yaml.safe_dump(doc))
    res = simulate(resolve(load_scenario(p)))
    st = res.summary["storage"]["datastores"]
    # the same 10 traces drive both groups: equal I/O, but the HDD array is ~100x slower
    assert st["hdd-array"]["mean_iops"] == pytest.approx(st["ssd-array"]["mean_iops"], rel=1e-9)
    assert st["hdd-array"]["mean_iops"] > 0
    assert st["hdd-array"]["mean_latency_s"] > 20 * st["ssd-array"]["mean_latency_s"]
    vms = res.vms
    assert (vms.filter(vms["group"] == "on-hdd")["io_latency_s_mean"] > 1e-3).all()
