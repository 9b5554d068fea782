"""Pre-copy live migration (densim.models.migration): closed forms with the arithmetic written out."""

from __future__ import annotations

import numpy as np
import pytest

from densim.models.migration import geometric_total_s, precopy


def test_zero_dirtying_is_memory_over_bandwidth():
    # 8 GiB over 1 Gbit/s, nothing dirtied: one round sends M; the stop-and-copy sends 0 bytes.
    # M/B = 8 x 2^30 B / 1.25e8 B/s = 8589934592 / 125000000 = 68.719476736 s; downtime = resume = 0.
    r = precopy(8 * 2**30, 1.25e8, 0.0)
    assert r.total_s == pytest.approx(68.719476736)
    assert r.downtime_s == 0.0
    assert r.bytes_sent == 8 * 2**30
    assert r.rounds == 1 and r.converged


def test_constant_dirty_rate_is_a_geometric_series():
    # M = 1e9 B, B = 1e8 B/s, D = 5e7 B/s: r = D/B = 0.5, V_i = M r^i, t_i = V_i/B = 10 x 0.5^i s:
    # 10, 5, 2.5, 1.25, 0.625, 0.3125, 0.15625 s (rounds 0..6); V_7 / B = 0.078125 s <= 0.1 s target,
    # so 7 live rounds, then stop-and-copy V_7 = 7.8125e6 B.
    # live time = (M/B)(1 - r^7)/(1 - r) = 10 x (1 - 1/128) / 0.5 = 19.84375 s
    # total = live + downtime = 19.84375 + 0.078125 = 19.921875 s = (M/B)(1 - r^8)/(1 - r)
    # bytes = M (1 - r^8)/(1 - r) = 1e9 x 255/128 = 1.9921875e9
    r = precopy(1e9, 1e8, 5e7, downtime_target_s=0.1)
    assert r.rounds == 7
    assert r.live_s == pytest.approx(19.84375)
    assert r.downtime_s == pytest.approx(0.078125)
    assert r.total_s == pytest.approx(19.921875)
    assert r.total_s == pytest.approx(geometric_total_s(1e9, 1e8, 5e7, 8))
    assert r.bytes_sent == pytest.approx(1.9921875e9)


def test_resume_time_adds_to_downtime_and_total():
    # as above with a 20 ms resume: downtime 0.078125 + 0.02 = 0.098125 s, total 19.941875 s
    r = precopy(1e9, 1e8, 5e7, downtime_target_s=0.1, resume_s=0.02)
    assert r.downtime_s == pytest.approx(0.098125)
    assert r.total_s == pytest.approx(19.941875)


def test_dirtying_faster_than_the_link_stops_after_one_round():
    # D = 2e8 > B = 1e8: after round 0 (10 s) the VM dirtied min(2e8 x 10, M) = M = 1e9 B, no progress,
    # so pre-copy stops: downtime = M/B = 10 s, total 20 s, 2 M sent; not converged.
    r = precopy(1e9, 1e8, 2e8)
    assert r.rounds == 1 and not r.converged
    assert r.downtime_s == pytest.approx(10.0)
    assert r.total_s == pytest.approx(20.0)
    assert r.bytes_sent == pytest.approx(2e9)


def test_writable_working_set_bounds_the_remainder():
    # M = 1e9, B = 1e8, D = 5e7, WWS = 2e7 B: V_1 = min(5e8, 2e7) = 2e7 (0.2 s > 0.1 s target);
    # V_2 = min(5e7 x 0.2, 2e7) = 1e7 (0.1 s <= 0.1 s): 2 live rounds (10 + 0.2 s), downtime 0.1 s.
    r = precopy(1e9, 1e8, 5e7, wws_bytes=2e7, downtime_target_s=0.1)
    assert r.rounds == 2
    assert r.live_s == pytest.approx(10.2)
    assert r.downtime_s == pytest.approx(0.1)


def test_working_set_above_target_stops_on_no_progress():
    # WWS 1e8 B = 1 s at B: V_1 = min(5e8, 1e8) = 1e8; V_2 = min(5e7 x 1, 1e8) = 5e7 (progress);
    # V_3 = min(5e7 x 0.5, 1e8) = 2.5e7 ... it is the rate, not the WWS, that limits here:
    # the series is geometric from V_1 on, 1 s, 0.5 s, 0.25 s, 0.125 s, then 0.0625 s <= 0.1 s.
    r = precopy(1e9, 1e8, 5e7, wws_bytes=1e8, downtime_target_s=0.1)
    assert r.rounds == 5
    assert r.live_s == pytest.approx(10 + 1 + 0.5 + 0.25 + 0.125)
    assert r.downtime_s == pytest.approx(0.0625)
    # D = B with a WWS: V_1 = WWS, V_2 = min(1e8 x 1, 1e8) = WWS again: no progress, stop after 2 rounds
    r = precopy(1e9, 1e8, 1e8, wws_bytes=1e8, downtime_target_s=0.1)
    assert r.rounds == 2 and not r.converged
    assert r.downtime_s == pytest.approx(1.0)


def test_round_limit():
    # r = 0.9 and a 1 ms target would take many rounds; max_rounds = 3 stops after t = 10, 9, 8.1 s
    # and sends V_3 = 1e9 x 0.9^3 = 7.29e8 B in the stop-and-copy (7.29 s).
    r = precopy(1e9, 1e8, 9e7, downtime_target_s=0.001, max_rounds=3)
    assert r.rounds == 3 and not r.converged
    assert r.live_s == pytest.approx(27.1)
    assert r.downtime_s == pytest.approx(7.29)


def test_per_round_rates_and_vectorised():
    # two migrations, per-round dirty rates: the first dirties 5e7 then 1e7 B/s: rounds 10 s, 5 s
    # (V_1 = 5e8), 0.5 s (V_2 = 1e7 x 5 = 5e7); V_3 = 1e7 x 0.5 = 5e6 (0.05 s <= 0.1): live 15.5 s.
    # The second dirties faster than the link: one round of 2e9/1e8 = 20 s and a 20 s stop-and-copy.
    r = precopy(np.array([1e9, 2e9]), 1e8, np.array([[5e7, 1e7], [2e8, 2e8]]), per_round=True, downtime_target_s=0.1)
    np.testing.assert_allclose(r.live_s, [15.5, 20.0])
    np.testing.assert_allclose(r.downtime_s, [0.05, 20.0])
    np.testing.assert_array_equal(r.rounds, [3, 1])
    # vectorised = one by one
    one = [precopy(m, b, d, wws_bytes=w) for m, b, d, w in [(4e9, 1.25e9, 3e8, 4e8), (1e9, 1.25e8, 1e7, 1e9)]]
    many = precopy(np.array([4e9, 1e9]), np.array([1.25e9, 1.25e8]), np.array([3e8, 1e7]), wws_bytes=np.array([4e8, 1e9]))
    np.testing.assert_allclose(many.total_s, [o.total_s for o in one])
    np.testing.assert_allclose(many.downtime_s, [o.downtime_s for o in one])


def test_bad_inputs():
    with pytest.raises(ValueError):
        precopy(1e9, 0.0, 0.0)
    with pytest.raises(ValueError):
        precopy(1e9, 1e8, -1.0)
    with pytest.raises(ValueError):
        precopy(1e9, 1e8, 0.0, max_rounds=0)
