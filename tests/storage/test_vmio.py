"""Per-VM datastore latency (the engine's vectorised path) against the station solver."""

from __future__ import annotations

import types

import numpy as np
import pytest

from densim.models.devices import DeviceSpec
from densim.models.storage import ArrayUnit, ControllerSpec, IoPattern, build_stations, solve_open
from densim.models.storage.vmio import DatastoreModel, add_swap_io, datastore_latency_s
from densim.catalog.core import builtin_catalog

CAT = builtin_catalog()


@pytest.mark.parametrize("device,raid,drives", [("intel-dc-s3700-400gb", "raid10", 8), ("sas-10k-900gb", "raid5", 6),
                                                ("sata-7k2-2tb", "jbod", 3)])
def test_vectorised_latency_equals_station_solver(device, raid, drives):
    d = CAT.get("devices", device, DeviceSpec)
    ds = DatastoreModel.build("ds", d, drives, raid, None, 1, 8192)
    unit = ArrayUnit("a", d, drives, raid)
    for r in (0.0, 0.3, 0.7, 1.0):
        stations = build_stations([unit], None, IoPattern(r, 8192))
        cap = solve_open(stations, 0.0).max_iops
        lam = np.array([0.1, 0.5, 0.9]) * cap
        lat, util, sat = datastore_latency_s(ds, lam, r)
        ref = [solve_open(stations, x, IoPattern(r, 8192)).mean_latency_s for x in lam]
        np.testing.assert_allclose(lat, ref, rtol=1e-9)
        np.testing.assert_allclose(util, [0.1, 0.5, 0.9], rtol=1e-9)
        assert not sat.any()


def test_vms_on_one_datastore_slow_each_other():
    d = CAT.get("devices", "sas-10k-900gb", DeviceSpec)
    ds = DatastoreModel.build("ds", d, 4, "raid10", CAT.get("controllers", "lsi-9210-8i", ControllerSpec), 1, 4096)
    alone, _, _ = datastore_latency_s(ds, np.array([200.0]), 0.7)
    shared, _, _ = datastore_latency_s(ds, np.array([200.0 + 200.0]), 0.7)
    assert shared[0] > alone[0]
    # saturation is flagged and the latency stays finite
    lat, util, sat = datastore_latency_s(ds, np.array([1e6]), 0.7)
    assert sat[0] and np.isfinite(lat[0]) and util[0] > 1


def test_burstiness_multiplies_the_wait():
    d = CAT.get("devices", "sas-10k-900gb", DeviceSpec)
    ds = DatastoreModel.build("ds", d, 1, "jbod", None, 1)
    t1 = d.read_latency_s
    base, _, _ = datastore_latency_s(ds, np.array([100.0]), 1.0, 1.0)
    bursty, _, _ = datastore_latency_s(ds, np.array([100.0]), 1.0, 2.0)
    # service time is unchanged, the wait doubles
    assert bursty[0] - t1 == pytest.approx(2 * (base[0] - t1), rel=1e-9)


def test_add_swap_io_accumulates():
    chunk = types.SimpleNamespace(vm={})
    add_swap_io(chunk, np.ones((2, 3)), np.zeros((2, 3)))
    add_swap_io(chunk, np.ones((2, 3)), np.full((2, 3), 2.0))
    assert chunk.vm["swap_read_iops"].sum() == 12 and chunk.vm["swap_write_iops"].sum() == 12
