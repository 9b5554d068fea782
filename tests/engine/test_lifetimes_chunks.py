"""Chunks of a run whose VMs arrive and leave (issue 34, 10 million VMs): alive shares, chunk length, sums."""

from __future__ import annotations

import numpy as np
from types import SimpleNamespace

from densim.engine.lifetimes import Liveness
from densim.engine.run import Accumulator
from densim.placement.online import Schedule
from densim.workloads.tasks import alive_fraction


def _numpy_alive(start_s, end_s, edges):
    """The numpy expression the numba kernel replaced (the reference it must equal bit for bit)."""
    lo, hi = edges[:-1, None], edges[1:, None]
    s = np.where(np.isnan(start_s), np.inf, start_s)[None, :]
    e = np.where(np.isnan(end_s), -np.inf, end_s)[None, :]
    over = np.minimum(e, hi) - np.maximum(s, lo)
    np.maximum(over, 0.0, out=over)
    return (over / (hi - lo)).astype(np.float32)


def test_alive_fraction_by_hand():
    # steps [0, 300) and [300, 600):
    #   VM 0 lives [150, 450): half of each step; VM 1 never started (NaN): 0;
    #   VM 2 starts at 300 and never ends (inf): 0 then 1; VM 3 ends at NaN (never ends known): 0
    edges = np.array([0.0, 300.0, 600.0])
    start = np.array([150.0, np.nan, 300.0, 0.0])
    end = np.array([450.0, np.nan, np.inf, np.nan])
    got = alive_fraction(start, end, edges)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [[0.5, 0.0, 0.0, 0.0], [0.5, 0.0, 1.0, 0.0]])


def test_alive_fraction_same_bits_as_numpy():
    rng = np.random.default_rng(3)
    m = 5000
    start = rng.uniform(0, 3e4, m)
    end = start + rng.lognormal(8, 1, m)
    start[::7], end[::11], end[::13], start[::17] = np.nan, np.inf, np.nan, -np.inf
    start[::19], end[::23] = 1.7 + 300.0 * 5, 1.7 + 300.0 * 9  # exactly on step edges
    edges = 1.7 + 300.0 * np.arange(120)
    ref = _numpy_alive(start, end, edges)
    assert np.array_equal(alive_fraction(start, end, edges).view(np.uint32), ref.view(np.uint32))


def test_add_reduced_at_equals_full_rows():
    # two chunks stepping rows {1, 3} then {0, 3} of 4: the same sums and maxima as adding (4,) arrays
    a, b = Accumulator(10, 4, keep_series=False), Accumulator(10, 4, keep_series=False)
    for ids, s, m in ((np.array([1, 3]), np.array([2.0, 5.0]), np.array([1.0, 4.0])),
                      (np.array([0, 3]), np.array([7.0, 1.5]), np.array([3.0, 2.0]))):
        full_s, full_m = np.zeros(4), np.zeros(4)
        full_s[ids], full_m[ids] = s, m
        a.add_reduced("x", full_s, full_m)
        b.add_reduced_at("x", ids, s, m)
    np.testing.assert_array_equal(b.sum["x"], a.sum["x"])  # [7, 2, 0, 6.5]
    np.testing.assert_array_equal(b.max["x"], a.max["x"])  # [3, 1, 0, 4]
    np.testing.assert_array_equal(b.sum["x"], [7.0, 2.0, 0.0, 6.5])


def _liveness(start, end):
    sch = Schedule(host=np.zeros(start.size, np.int64), start_s=start, end_s=end,
                   arrival_s=start.copy(), status=np.zeros(start.size, np.int8), until=np.inf)
    sc = SimpleNamespace(scheduling=SimpleNamespace(idle_hosts="on", off_after_s=0.0, boot_energy_j=None))
    hosts = SimpleNamespace(n=1, power_peak_w=np.array([200.0]))
    return Liveness(sc, sch, hosts, np.ones(start.size, np.int32))


def test_chunk_steps_keeps_dead_cells_at_most_the_live_ones():
    # 10,000 VMs, one every 60 s, each living 600 s (10 steps of 60 s): at most 10-11 alive at once,
    # rate 1 start a step over 10,000 steps. The element budget (1e6) alone would allow k with
    # (11 + k) k <= 1e6, k ~ 994 steps, of which ~99 % of a chunk's cells are VMs not alive;
    # capped at max(peak / rate, 16) = 16 steps.
    start = 60.0 * np.arange(10_000)
    live = _liveness(start, start + 600.0)
    assert live.chunk_steps(10_000, 60.0, 1_000_000) == 16


def test_chunk_steps_one_chunk_when_the_run_fits():
    # the same VMs over 10,000 steps with a budget of 1e9 cells: (11 + k) k <= 1e9 for every k <= 10,000,
    # so the run stays one chunk (its results do not move at all)
    start = 60.0 * np.arange(10_000)
    live = _liveness(start, start + 600.0)
    assert live.chunk_steps(10_000, 60.0, 1_000_000_000) == 10_000
