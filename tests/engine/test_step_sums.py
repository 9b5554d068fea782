"""``stages.step_sums``: each column added step by step in time order, whatever the other columns are, so that a part
of a split run holding one host gives that host the whole run's bits."""

from __future__ import annotations

import numpy as np

from densim.engine.stages import step_sums


def test_time_order_by_hand():
    # 1e16 + 1 rounds back to 1e16 in float64, so in time order the column sums to 1e16 - 1e16 + 1 ... = 1.0
    # only if the 1 comes last: [1e16, 1, -1e16, 1] -> ((1e16 + 1) - 1e16) + 1 = 0 + 1 = 1
    x = np.array([[1e16], [1.0], [-1e16], [1.0]])
    assert step_sums(x)[0] == 1.0
    # the same column beside another gives the same bits
    assert step_sums(np.hstack([x, x * 3]))[0] == 1.0


def test_equals_the_running_sum_for_float32_and_float64_inputs():
    rng = np.random.default_rng(3)
    for dt in (np.float32, np.float64):
        for shape in [(1, 5), (7, 1), (159, 200), (0, 3)]:
            x = (rng.standard_normal(shape) * 1e6).astype(dt)
            want = np.cumsum(np.asarray(x, np.float64), axis=0)[-1] if shape[0] else np.zeros(shape[1])
            got = step_sums(x)
            assert got.dtype == np.float64 and np.array_equal(got, want)
