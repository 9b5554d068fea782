"""Stage power: drives and controllers draw power that enters energy_j, the hosts table and carbon."""

from __future__ import annotations

import copy

import pytest

from densim.engine import simulate
from densim.plant import resolve
from densim.spec.loader import scenario_from_dict

BASE = {
    "name": "drive-power",
    "cluster": {"hosts": [{"name": "h", "count": 2, "cpu": {"sockets": 1, "cores_per_socket": 4, "base_clock": "2 GHz"},
                           "memory": "64 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]},
    "vms": [{"name": "v", "count": 2, "vcpus": 1, "vcpu_speed": "2 GHz", "memory": "4 GiB",
             "profile": {"kind": "constant", "mean": 0.5}, "workload": {"iops": 0}}],
    "placement": {"policy": "first-fit"},
    "simulation": {"step": "1 h", "horizon": "2 h"},
    "carbon": {"grid_gco2_per_kwh": 500},
}


def _run(storage):
    d = copy.deepcopy(BASE)
    if storage is not None:
        d["storage"] = storage
    return simulate(resolve(scenario_from_dict(d)))


def test_idle_drives_and_controller_power_enter_energy_hosts_and_carbon():
    # Both VMs (1 vCPU, 50 %) on h-0 by first-fit; h-1 empty and idle (100 W). One per-host datastore of
    # 4 Intel DC S3700 (0.65 W idle, 6 W active) behind an LSI 9210-8i (9.5 W) with no I/O: only h-0 uses
    # it, so h-0 draws 4 x 0.65 + 9.5 = 12.1 W more, over 2 h: 12.1 x 7,200 = 87,120 J = 0.0242 kWh.
    # Carbon: 0.0242 kWh x 500 g = 12.1 g more.
    plain = _run(None)
    ds = _run({"model": "queueing", "default_datastore": "local", "datastores": [
        {"name": "local", "scope": "per-host", "device": "intel-dc-s3700-400gb", "drives": 4, "raid": "raid10",
         "controller": "lsi-9210-8i"}]})
    extra = ds.hosts["energy_j"].to_numpy() - plain.hosts["energy_j"].to_numpy()
    assert extra == pytest.approx([12.1 * 7200, 0.0])
    assert ds.summary["totals"]["energy_kwh"] - plain.summary["totals"]["energy_kwh"] == pytest.approx(0.0242)
    assert ds.summary["storage"]["datastores"]["local@h-0"]["energy_kwh"] == pytest.approx(0.0242)
    assert ds.summary["carbon"]["operational_kg"] - plain.summary["carbon"]["operational_kg"] == pytest.approx(0.0121)
    assert ds.summary["carbon"]["it_energy_kwh"] == pytest.approx(ds.summary["totals"]["energy_kwh"])


def test_busy_drives_draw_more_in_proportion_to_their_busy_share():
    # The same with 2 x 500 IOPS (reads 70 %, 4 KiB...): each drive's busy share u from the queueing
    # model (summary peak_utilisation is the busiest station); power = 4 x (0.65 + 5.35 u) + 9.5 > 12.1 W
    d = {"model": "queueing", "default_datastore": "local", "datastores": [
        {"name": "local", "scope": "per-host", "device": "intel-dc-s3700-400gb", "drives": 4, "raid": "raid10",
         "controller": "lsi-9210-8i"}]}
    idle = _run(d)
    BASE["vms"][0]["workload"]["iops"] = 5000
    try:
        busy = _run(d)
    finally:
        BASE["vms"][0]["workload"]["iops"] = 0
    w_idle = idle.summary["storage"]["datastores"]["local@h-0"]["energy_kwh"] * 3.6e6 / 7200
    w_busy = busy.summary["storage"]["datastores"]["local@h-0"]["energy_kwh"] * 3.6e6 / 7200
    assert w_idle == pytest.approx(12.1)
    assert 12.1 < w_busy <= 4 * 6.0 + 9.5


def test_a_down_host_draws_no_drive_power_and_a_shared_array_powers_the_hosts_up():
    # 2 hosts of 2 cores; first-fit puts on-local and on-shared-0 on h-0, on-shared-1 and -2 on h-1
    # (both hosts full: no HA restart finds room). A shared array (4 x 0.65 W + 9.5 W = 12.1 W) has one
    # of its VMs on h-0 and two on h-1; the per-host array 'local' (12.1 W) only on h-0. h-0 fails for
    # the second hour.
    # Hour 1: h-0 = 12.1 (local) + 12.1 / 3 = 16.133 W, h-1 = 12.1 x 2/3 = 8.067 W.
    # Hour 2: h-0 is down and draws nothing (its local drives are off); h-1 powers the whole shared array.
    d = copy.deepcopy(BASE)
    d["cluster"]["hosts"][0]["cpu"]["cores_per_socket"] = 2
    d["vms"] = [dict(d["vms"][0], count=1, name="on-local", datastore="local"),
                dict(d["vms"][0], count=3, name="on-shared", datastore="shared")]
    d["storage"] = {"model": "queueing", "datastores": [
        {"name": "shared", "device": "intel-dc-s3700-400gb", "drives": 4, "raid": "raid10", "controller": "lsi-9210-8i"},
        {"name": "local", "scope": "per-host", "device": "intel-dc-s3700-400gb", "drives": 4, "raid": "raid10",
         "controller": "lsi-9210-8i"}]}
    d["failures"] = {"events": [{"time": "1 h", "target": "h-0", "duration": "5 h"}]}
    d["output"] = {"host_timeseries": "on"}
    r = simulate(resolve(scenario_from_dict(d)))
    d.pop("storage")
    for g in d["vms"]:
        g.pop("datastore")
    plain = simulate(resolve(scenario_from_dict(d)))
    p = r.host_steps().sort(["step", "host"])["power_w"].to_numpy().reshape(2, 2)
    q = plain.host_steps().sort(["step", "host"])["power_w"].to_numpy().reshape(2, 2)
    assert (p - q)[0] == pytest.approx([12.1 + 12.1 / 3, 12.1 * 2 / 3], rel=1e-5)
    assert (p - q)[1] == pytest.approx([0.0, 12.1], rel=1e-5)
