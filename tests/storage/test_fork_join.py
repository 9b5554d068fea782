"""Mirrored and parity writes as fork-joins (issue 15): hand-calculated micro cases.

A RAID 1/10 write goes to both drives of a mirror pair at once and completes when the slower one
does; a RAID 5/6 small write is a read phase (old data + parity) then a write phase, each on 2 (3)
drives in parallel. The latency of an ``m``-wide phase is the expected maximum of ``m`` member
responses: ``H_m x R`` for exponential responses (Thomasian, ACM Computing Surveys 47(2), 2014,
eq. (1)), not ``m x R`` as serial visits would have it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from densim.catalog.core import builtin_catalog
from densim.models.devices import DeviceSpec
from densim.models.queueing import harmonic, max_iid_factors
from densim.models.storage import ArrayUnit, IoPattern, build_stations, raid_write_phases, solve_closed, solve_open
from densim.models.storage.vmio import DatastoreModel, datastore_latency_s

CAT = builtin_catalog()


def mm1_drive(latency_s: float = 1e-3) -> DeviceSpec:
    """A drive that is one M/M/1 server: QD1 latency 1 ms and 1,000 IOPS, so c = IOPS x t1 = 1."""
    return DeviceSpec(name="mm1", kind="sata_ssd", read_latency=latency_s, write_latency=latency_s,
                      read_iops=1 / latency_s, write_iops=1 / latency_s, capacity=1e12)


def test_expected_maximum_closed_forms():
    # n iid unit exponentials: E[max] = H_n, Var[max] = sum 1/i^2
    assert max_iid_factors(2, 1.0) == pytest.approx((1.5, 1.25 + 1.5**2), rel=1e-9)
    assert max_iid_factors(3, 1.0) == pytest.approx((11 / 6, 1 + 1 / 4 + 1 / 9 + (11 / 6) ** 2), rel=1e-9)
    assert harmonic(3) == pytest.approx(11 / 6)
    # two iid gammas of mean 1 and shape k (scale 1/k): E[max] = 1 + E|X1 - X2| / 2
    # = 1 + Gamma(k + 1/2) / (sqrt(pi) Gamma(k) k); k = 2: 1 + 1.32934 / (1.77245 x 1 x 2) = 1.375
    for k in (0.5, 2.0, 7.3):
        exact = 1 + math.gamma(k + 0.5) / (math.sqrt(math.pi) * math.gamma(k) * k)
        assert max_iid_factors(2, k)[0] == pytest.approx(exact, rel=2e-4)
    # one member is itself; nearly deterministic members: the maximum is barely above the mean
    assert max_iid_factors(1, 3.0) == pytest.approx((1.0, 1 + 1 / 3))
    assert 1.0 < max_iid_factors(2, 1e8)[0] < 1.0001
    # vectorised
    e1, _ = max_iid_factors(2, np.array([1.0, 2.0]))
    np.testing.assert_allclose(e1, [1.5, 1.375], rtol=2e-4)


def test_raid_write_phases():
    assert [raid_write_phases(x) for x in ("jbod", "raid0", "raid1", "raid10", "raid5", "raid6")] == \
        [(1,), (1,), (2,), (2,), (2, 2), (3, 3)]


def test_zero_load_raid1_write_is_one_and_a_half_drives_not_two():
    # 2 x 7.2K SATA in RAID 1, 4 KiB random writes, no load. One drive: 9.3 ms seek + 60/(2 x 7200)
    # = 4.1667 ms rotation + 4096 B / 180 MB/s = 0.0228 ms -> t1 = 13.489 ms.
    # Serial visits (before issue 15): 2 x 13.489 = 26.98 ms. Fork-join of two exponential
    # members: H_2 x 13.489 = 1.5 x 13.489 = 20.23 ms. A read is one member: 8.5 + 4.1667 + 0.0228.
    d = CAT.get("devices", "sata-7k2-2tb", DeviceSpec)
    t_w = 9.3e-3 + 60 / (2 * 7200) + 4096 / 180e6
    t_r = 8.5e-3 + 60 / (2 * 7200) + 4096 / 180e6
    one = solve_open(build_stations([ArrayUnit("d", d, 1)], None, IoPattern(0.0)), 0.0, IoPattern(0.0))
    assert one.mean_latency_s == pytest.approx(t_w, rel=1e-6)
    st = build_stations([ArrayUnit("m", d, 2, "raid1")], None, IoPattern(0.0))
    assert solve_open(st, 0.0, IoPattern(0.0)).mean_latency_s == pytest.approx(1.5 * t_w, rel=1e-6)
    st_r = build_stations([ArrayUnit("m", d, 2, "raid1")], None, IoPattern(1.0))
    assert solve_open(st_r, 0.0, IoPattern(1.0)).mean_latency_s == pytest.approx(t_r, rel=1e-6)
    # service closer to deterministic (service_cv2 0.5: gamma shape 2): 1.375 x t1
    pat = IoPattern(0.0, service_cv2=0.5)
    st = build_stations([ArrayUnit("m", d, 2, "raid1")], None, pat)
    assert solve_open(st, 0.0, pat).mean_latency_s == pytest.approx(1.375 * t_w, rel=2e-4)


def test_mirror_of_mm1_drives_under_load():
    # two M/M/1 drives (S = 1 ms), 500 front-end writes/s: each write goes to both drives, so each
    # sees 500/s, rho = 0.5 and R = S / (1 - rho) = 2 ms. Fork-join (independent members):
    # H_2 x 2 ms = 3 ms; serial visits would say 4 ms; the exact two-server fork-join (Flatto &
    # Hahn 1984) is (12 - rho) / 8 x R = 2.875 ms, so the bound is 4.3 % high at this load.
    pat = IoPattern(0.0)
    st = build_stations([ArrayUnit("m", mm1_drive(), 2, "raid1")], None, pat)
    res = solve_open(st, 500.0, pat)
    assert res.mean_latency_s == pytest.approx(3e-3, rel=1e-9)
    assert [s.utilisation for s in res.stations] == pytest.approx([0.5, 0.5])
    # each drive's share of the latency is H_2 / 2 of its residence; the queues follow Little
    # per drive: 500/s x 2 ms = 1 request at each drive (2 in all for 1.5 writes in flight)
    assert [s.residence_s for s in res.stations] == pytest.approx([1.5e-3, 1.5e-3])
    assert [s.queue for s in res.stations] == pytest.approx([1.0, 1.0])
    assert res.outstanding == pytest.approx(500 * 3e-3)


def test_parity_writes_are_two_fork_join_phases():
    # M/M/1 drives, no load, S = 1 ms. RAID 5 small write: read old data + parity (max of 2: 1.5 ms)
    # then write both (1.5 ms) = 3 ms (serial: 4 ms). RAID 6: 2 x H_3 = 2 x 11/6 = 3.667 ms (serial: 6).
    pat = IoPattern(0.0)
    r5 = solve_open(build_stations([ArrayUnit("p", mm1_drive(), 4, "raid5")], None, pat), 0.0, pat)
    r6 = solve_open(build_stations([ArrayUnit("q", mm1_drive(), 6, "raid6")], None, pat), 0.0, pat)
    assert r5.mean_latency_s == pytest.approx(3e-3, rel=1e-9)
    assert r6.mean_latency_s == pytest.approx(2 * 11 / 6 * 1e-3, rel=1e-9)
    # a 70 % read mix on RAID 10: 0.7 x 1 ms + 0.3 x 1.5 ms = 1.15 ms
    mix = IoPattern(0.7)
    r10 = solve_open(build_stations([ArrayUnit("t", mm1_drive(), 4, "raid10")], None, mix), 0.0, mix)
    assert r10.mean_latency_s == pytest.approx(1.15e-3, rel=1e-9)


def test_closed_mirror_with_one_outstanding_write():
    # one outstanding write on two M/M/1 drives: it is at both at once and returns after the slower,
    # R = H_2 x 1 ms = 1.5 ms, so X = 1 / 1.5 ms = 666.7 writes/s and each drive is 2/3 busy
    # (serial visits: R = 2 ms, X = 500/s)
    pat = IoPattern(0.0)
    st = build_stations([ArrayUnit("m", mm1_drive(), 2, "raid1")], None, pat)
    res = solve_closed(st, 1, pattern=pat)
    assert res.mean_latency_s == pytest.approx(1.5e-3, rel=1e-9)
    assert res.throughput_iops == pytest.approx(1 / 1.5e-3, rel=1e-9)
    assert [s.utilisation for s in res.stations] == pytest.approx([2 / 3, 2 / 3])
    assert res.little_residual() == pytest.approx(0.0, abs=1e-12)


def test_p99_of_a_mirror_write_at_zero_load():
    # the maximum of two unit exponentials has CDF (1 - e^-x)^2; its p99 solves (1 - e^-x)^2 = 0.99:
    # x = -ln(1 - sqrt(0.99)) = 5.296 (S = 1 ms: 5.30 ms). The solver matches mean 1.5 and variance
    # 1.25 with a gamma (shape 1.8), whose p99 is 5.19: within 3 %.
    pat = IoPattern(0.0)
    st = build_stations([ArrayUnit("m", mm1_drive(), 2, "raid1")], None, pat)
    p99 = solve_open(st, 0.0, pat).p99_latency_s
    assert p99 == pytest.approx(-math.log(1 - math.sqrt(0.99)) * 1e-3, rel=0.03)


def test_engine_datastore_latency_uses_the_same_fork_join():
    # the engine's vectorised path gives the station solver's figure: 2 x SATA RAID 1 at zero load
    d = CAT.get("devices", "sata-7k2-2tb", DeviceSpec)
    ds = DatastoreModel.build("ds", d, 2, "raid1", None, 1, 4096)
    lat, _, _ = datastore_latency_s(ds, np.array([0.0, 20.0]), np.array([0.0, 0.0]))
    st = build_stations([ArrayUnit("m", d, 2, "raid1")], None, IoPattern(0.0))
    ref = [solve_open(st, x, IoPattern(0.0)).mean_latency_s for x in (0.0, 20.0)]
    np.testing.assert_allclose(lat, ref, rtol=1e-9)
    assert lat[0] == pytest.approx(1.5 * (9.3e-3 + 60 / (2 * 7200) + 4096 / 180e6), rel=1e-6)
