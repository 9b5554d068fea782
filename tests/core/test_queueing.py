"""Closed forms: M/M/1, Erlang C, MVA, Little's law, normal vs exact binomial excess."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from densim.models import queueing as q


def test_mm1():
    # S = 7 ms, rho = 0.5 / 0.7 / 0.8 / 0.9 -> R = S/(1-rho) = 14 / 23.3 / 35 / 70 ms (guide §4.3)
    s = 0.007
    r = q.mm1_response_s(np.array([0.5, 0.7, 0.8, 0.9]) / s, s)
    assert r * 1000 == pytest.approx([14, 23.333, 35, 70], rel=1e-3)
    assert q.mm1_response_s(200.0, 0.007) == float("inf")


def test_erlang_c_guide_values():
    # guide §3.2: c = 32; A = 24 -> 0.08, A = 28 -> 0.36, A = 30 -> 0.63
    assert q.erlang_c(32, [24, 28, 30]) == pytest.approx([0.0829, 0.3630, 0.6302], abs=5e-4)


def test_erlang_c_two_servers_by_hand():
    # c = 2, A = 1: P_wait = (A^2/2! * 2/(2-1)) / (1 + A + A^2/2! * 2) = 1 / (1 + 1 + 1) = 1/3
    assert q.erlang_c(2, 1.0) == pytest.approx(1 / 3)
    # W_q = C * S / (c - A) = (1/3) * 1 / 1
    assert q.mmc_wait_s(1.0, 1.0, 2) == pytest.approx(1 / 3)


def test_mva_two_stations_by_hand():
    # D = (0.01, 0.02) s, N = 2, Z = 0.
    # n=1: R = (0.01, 0.02), X = 1/0.03 = 33.33, Q = (0.3333, 0.6667)
    # n=2: R = (0.01*1.3333, 0.02*1.6667) = (0.013333, 0.033333), sum 0.046667, X = 2/0.046667 = 42.857
    r = q.mva([0.01, 0.02], 2)
    assert r.throughput_per_s == pytest.approx(42.857, rel=1e-4)
    assert r.station_response_s == pytest.approx([0.013333, 0.033333], rel=1e-4)


@settings(max_examples=50, deadline=None)
@given(d=st.lists(st.floats(1e-4, 0.05), min_size=1, max_size=5), n=st.integers(1, 60), z=st.floats(0, 1),
       c=st.lists(st.integers(1, 8), min_size=5, max_size=5))
def test_mva_littles_law(d, n, z, c):
    r = q.mva(d, n, z, servers=c[: len(d)])
    assert r.little_population(z) == pytest.approx(n, rel=1e-9)  # N = X (R + Z)
    assert np.all(r.station_utilisation <= 1 + 1e-9)  # bottleneck bound X <= c / D


@pytest.mark.parametrize("u,expected", [(0.08, 0.20), (0.09, 0.56), (0.10, 1.18), (0.12, 2.94)])
def test_normal_excess_tracks_guide_binomial_table(u, expected):
    # guide §3.2 table: N = 352 vCPUs on C = 32, ready % per vCPU
    exact = q.binomial_expected_excess(352, u, 32) / 352 * 100
    approx = float(q.expected_excess(352 * u, 352 * u * (1 - u), 32)) / 352 * 100
    assert exact == pytest.approx(expected, abs=0.02)
    assert approx == pytest.approx(exact, abs=0.05)


def test_mmc_response_quantile_single_server():
    # M/M/1: R ~ Exp(mu - lambda); p99 = ln(100) / (mu - lambda) = 4.605 / 0.5
    assert q.mmc_response_quantile_s(0.5, 1.0, 1, 0.99) == pytest.approx(np.log(100) / 0.5, rel=1e-6)
