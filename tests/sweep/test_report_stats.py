"""The report's statistics: mean and 95 % confidence half-width over replications."""

import math

from densim.tools.sweep.report import mean_ci
from densim.tools.sweep.runners import flatten


def test_mean_ci_closed_form():
    # values 1, 2, 3: mean 2, sample sd 1, n 3 -> half-width t(0.975, 2) x 1 / sqrt(3) = 4.303 / 1.732 = 2.4843
    m, ci, n = mean_ci([1.0, 2.0, 3.0])
    assert (m, n) == (2.0, 3)
    assert math.isclose(ci, 4.303 / math.sqrt(3), rel_tol=1e-4)  # t = 4.30265 (scipy), 4.303 to 3 decimals
    assert mean_ci([5.0]) == (5.0, 0.0, 1)  # one replication: no interval
    assert mean_ci([None, 4.0, 6.0])[0] == 5.0  # missing values are skipped


def test_flatten_summary_for_parquet():
    flat = flatten({"a": 1, "b": {"c": 2.5, "d": {"e": "x"}}, "l": [1, 2]})
    assert flat == {"a": 1, "b.c": 2.5, "b.d.e": "x", "l": "[1, 2]"}
