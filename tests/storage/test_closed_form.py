"""Closed-form checks of the storage solvers: M/M/1, M/M/c (Erlang C) and MVA solved by hand."""

from __future__ import annotations

import math

import pytest

from densim.models.queueing import erlang_c, mmc_response_s
from densim.models.storage import IoPattern, Station, solve_closed, solve_open


def _erlang_c_by_formula(c: int, a: float) -> float:
    """P_wait = [A^c/c! * c/(c-A)] / [sum_{k<c} A^k/k! + A^c/c! * c/(c-A)] (modelling guide §0.5)."""
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top)


def test_open_single_station_is_mm1():
    # one server, S = 5 ms, lambda = 150/s: rho = 0.75, R = S / (1 - rho) = 20 ms
    st = [Station("disk", "device", "a", 1.0, 0.005, 1.0)]
    res = solve_open(st, 150.0)
    assert res.mean_latency_s == pytest.approx(0.020, rel=1e-12)
    assert res.stations[0].utilisation == pytest.approx(0.75)
    # Little: mean number in system = lambda R = 3
    assert res.outstanding == pytest.approx(3.0)
    # p99 of an M/M/1 response (exponential with mean R) is R ln 100 = 92.1 ms; the gamma fit is exact here
    assert res.p99_latency_s == pytest.approx(0.020 * math.log(100), rel=1e-6)


@pytest.mark.parametrize("c,a", [(2, 1.5), (4, 3.0), (8, 7.2), (16, 12.0)])
def test_erlang_c_matches_formula(c, a):
    assert float(erlang_c(c, a)) == pytest.approx(_erlang_c_by_formula(c, a), rel=1e-10)


def test_open_multiserver_station_is_mmc():
    # c = 4 servers, S = 1 ms, lambda = 3,000/s: A = 3, W = C(4,3) S / (c - A), R = S + W
    c, s, lam = 4, 0.001, 3000.0
    expected = s + _erlang_c_by_formula(c, lam * s) * s / (c - lam * s)
    res = solve_open([Station("ssd", "device", "a", 1.0, s, float(c))], lam)
    assert res.mean_latency_s == pytest.approx(expected, rel=1e-10)
    assert float(mmc_response_s(lam, s, c)) == pytest.approx(expected, rel=1e-10)


def test_kingman_scales_the_wait():
    # G/G/1 with ca2 = 3, cs2 = 1: W = (3+1)/2 * rho/(1-rho) * S = 2 * 3 * 5 ms = 30 ms at rho = 0.75
    st = [Station("disk", "device", "a", 1.0, 0.005, 1.0)]
    res = solve_open(st, 150.0, IoPattern(arrival_cv2=3.0, service_cv2=1.0))
    assert res.mean_latency_s == pytest.approx(0.005 + 0.030, rel=1e-12)


def test_mva_two_stations_by_hand():
    # Two queueing stations, demands D1 = 10 ms (visits 1 x 10 ms), D2 = 5 ms (visits 2 x 2.5 ms), Z = 0.
    # n = 1: R1 = 10, R2 = 5, X = 1/15 ms = 66.67/s, Q1 = 2/3, Q2 = 1/3
    # n = 2: R1 = 10 (1 + 2/3) = 16.667, R2 = 5 (1 + 1/3) = 6.667, R = 23.333 ms, X = 2/23.333 ms = 85.714/s
    #        Q1 = 85.714 * 0.016667 = 1.4286, Q2 = 0.5714
    # n = 3: R1 = 10 (2.4286) = 24.286, R2 = 5 (1.5714) = 7.857, R = 32.143 ms, X = 3/32.143 ms = 93.333/s
    st = [Station("d1", "device", "a", 1.0, 0.010, 1.0), Station("d2", "device", "a", 2.0, 0.0025, 1.0)]
    r2 = solve_closed(st, 2)
    assert r2.throughput_iops == pytest.approx(600 / 7, rel=1e-12)
    assert r2.mean_latency_s == pytest.approx(0.07 / 3, rel=1e-12)
    assert r2.stations[0].queue == pytest.approx(10 / 7, rel=1e-12)
    r3 = solve_closed(st, 3)
    assert r3.throughput_iops == pytest.approx(280 / 3, rel=1e-12)
    assert r3.mean_latency_s == pytest.approx(0.45 / 14, rel=1e-12)
    # utilisation law: U1 = X D1 = 0.9333; bottleneck is d1 (largest D/c), bound X <= 100/s
    assert r3.stations[0].utilisation == pytest.approx(14 / 15, rel=1e-12)
    assert r3.bottleneck == "d1" and r3.max_iops == pytest.approx(100.0)


def test_mva_with_think_time_by_hand():
    # One station D = 10 ms, think Z = 40 ms, N = 2.
    # n = 1: R = 10, X = 1/50 ms = 20/s, Q = 0.2;  n = 2: R = 10 * 1.2 = 12 ms, X = 2/52 ms = 38.46/s
    res = solve_closed([Station("d", "device", "a", 1.0, 0.010, 1.0)], 2, think_s=0.040)
    assert res.mean_latency_s == pytest.approx(0.012)
    assert res.throughput_iops == pytest.approx(2 / 0.052)
    assert res.little_residual() == pytest.approx(0.0, abs=1e-12)


def test_mva_multiplicity_equals_expanded_stations():
    # 3 identical disks (D = 4 ms each) + one controller (D = 1 ms): classes with multiplicity give
    # exactly the same answer as listing every station (and the numpy path for > 16 stations agrees)
    from densim.models.queueing import mva

    full = mva([0.004, 0.004, 0.004, 0.001], 50, servers=[1.6, 1.6, 1.6, 1])
    cls = mva([0.004, 0.001], 50, servers=[1.6, 1], multiplicity=[3, 1])
    assert cls.throughput_per_s == pytest.approx(full.throughput_per_s, rel=1e-12)
    assert cls.response_s == pytest.approx(full.response_s, rel=1e-12)
    big = mva([0.004] * 20 + [0.001], 50, servers=[1.6] * 20 + [1])
    big_cls = mva([0.004, 0.001], 50, servers=[1.6, 1], multiplicity=[20, 1])
    assert big_cls.throughput_per_s == pytest.approx(big.throughput_per_s, rel=1e-12)


@pytest.mark.parametrize("rho,expected_ms", [(0.5, 14.0), (0.7, 23.3), (0.8, 35.0), (0.9, 70.0)])
def test_hdd_latency_table_of_the_modelling_guide(rho, expected_ms):
    # guide §4.3: a 10K HDD with S ~ 7 ms as one server: R = S/(1-rho) = 14 / 23 / 35 / 70 ms
    st = [Station("hdd", "device", "a", 1.0, 0.007, 1.0)]
    assert solve_open(st, rho / 0.007).mean_latency_s * 1e3 == pytest.approx(expected_ms, abs=0.05)
