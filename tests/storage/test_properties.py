"""Invariants over random storage systems (hypothesis): Little's law on every closed result,
utilisation law, bounds, and monotonicity."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from densim.models.devices import DeviceSpec
from densim.models.storage import (
    RAID_MIN_DRIVES,
    ArrayUnit,
    ControllerSpec,
    HostCpuIo,
    IoPattern,
    build_stations,
    solve_closed,
    solve_open,
)
from densim.catalog.core import builtin_catalog

CAT = builtin_catalog()
DEVICES = [d for d in CAT.all("devices", DeviceSpec)]
CONTROLLERS = [None] + CAT.all("controllers", ControllerSpec)


@st.composite
def systems(draw):
    arrays = []
    for i in range(draw(st.integers(1, 3))):
        dev = draw(st.sampled_from(DEVICES))
        raid = draw(st.sampled_from(list(RAID_MIN_DRIVES)))
        n = draw(st.integers(RAID_MIN_DRIVES[raid], 16))
        if raid in ("raid1", "raid10") and n % 2:
            n += 1
        if raid == "raid1":
            n = 2
        ctl = draw(st.sampled_from(CONTROLLERS))
        k = 1 if ctl is None else math.ceil(n / ctl.devices_limit) + draw(st.integers(0, 1))
        arrays.append(ArrayUnit(f"a{i}", dev, n, raid, ctl, k, draw(st.floats(0.1, 3.0))))
    cpu = None
    if draw(st.booleans()):
        cpu = HostCpuIo(draw(st.integers(1, 32)), draw(st.floats(1e9, 4e9)), draw(st.floats(200, 30000)))
    pattern = IoPattern(draw(st.floats(0.0, 1.0)), draw(st.sampled_from([512, 4096, 8192, 65536])),
                        draw(st.booleans()))
    return arrays, cpu, pattern


@settings(max_examples=60, deadline=None)
@given(systems(), st.integers(1, 300), st.sampled_from([0.0, 0.0, 0.001, 0.05]))
def test_little_law_on_every_closed_result(system, n, think):
    arrays, cpu, pattern = system
    stations = build_stations(arrays, cpu, pattern)
    res = solve_closed(stations, n, think, pattern)
    # Little: N = X (R + Z)
    assert math.isclose(res.outstanding, res.throughput_iops * (res.mean_latency_s + think), rel_tol=1e-9)
    # the stations' shares of the latency add up to it
    assert math.isclose(sum(s.residence_s for s in res.stations), res.mean_latency_s, rel_tol=1e-9)
    # Little per station counts every sub-request, so the queues add up to the I/Os at the stations
    # (X R) when nothing forks, and to more when mirror/parity sub-requests wait at several drives at once
    at_stations = res.throughput_iops * res.mean_latency_s
    queued = sum(s.queue for s in res.stations)
    forked = any(m > 1 and v > 0 for st in stations for v, m in st.parts)
    if forked:
        assert queued >= at_stations * (1 - 1e-9)
    else:
        assert math.isclose(queued, at_stations, rel_tol=1e-9)
    # utilisation law and the asymptotic bound
    assert all(0.0 <= s.utilisation <= 1.0 + 1e-9 for s in res.stations)
    assert res.throughput_iops <= res.max_iops * (1 + 1e-9)
    assert res.throughput_iops <= n / (res.mean_latency_s + think) * (1 + 1e-9)
    assert res.p99_latency_s >= res.mean_latency_s


@settings(max_examples=40, deadline=None)
@given(systems(), st.floats(0.01, 0.95))
def test_open_results_obey_little_and_grow_with_load(system, frac):
    arrays, cpu, pattern = system
    stations = build_stations(arrays, cpu, pattern)
    lo = solve_open(stations, frac * 0.5 * solve_open(stations, 0.0).max_iops, pattern)
    hi = solve_open(stations, frac * solve_open(stations, 0.0).max_iops, pattern)
    assert not hi.saturated
    assert math.isclose(hi.outstanding, hi.throughput_iops * hi.mean_latency_s, rel_tol=1e-9)
    assert hi.mean_latency_s >= lo.mean_latency_s * (1 - 1e-12)
    assert hi.p99_latency_s >= hi.mean_latency_s * (1 - 1e-9)
    assert max(s.utilisation for s in hi.stations) <= frac + 1e-9


@settings(max_examples=25, deadline=None)
@given(systems(), st.integers(1, 100))
def test_more_outstanding_ios_never_lower_throughput(system, n):
    arrays, cpu, pattern = system
    stations = build_stations(arrays, cpu, pattern)
    assert solve_closed(stations, n + 1).throughput_iops >= solve_closed(stations, n).throughput_iops * (1 - 1e-12)
