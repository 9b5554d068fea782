"""Saturation rows: hand-checked counts, durations and peaks."""

import numpy as np
import pytest

from densim.saturation import saturation_rows, summarise


def test_time_series_rows_count_steps_at_or_above_90_percent():
    # two resources over 4 steps of 300 s: 'a' is >= 0.9 in steps 1 and 2 (600 s, half the time,
    # peak 0.95); 'b' never reaches 0.9 and gets no row
    busy = np.array([[0.5, 0.1], [0.9, 0.2], [0.95, 0.89], [0.3, 0.0]])
    rows = saturation_rows(["a", "b"], busy, kind="datastore", step_s=300.0)
    assert rows == [{"resource": "a", "kind": "datastore", "peak": 0.95, "steps": 2, "duration_s": 600.0,
                     "share_of_time": 0.5}]


def test_steady_state_rows_have_no_duration():
    rows = saturation_rows(["hba", "drives"], np.array([0.99, 0.4]), kind="controller")
    assert rows == [{"resource": "hba", "kind": "controller", "peak": 0.99, "steps": 1, "duration_s": None,
                     "share_of_time": 1.0}]


def test_shape_mismatch_is_an_error_and_summary_sorts_by_peak():
    with pytest.raises(ValueError):
        saturation_rows(["a"], np.zeros((3, 2)), kind="x")
    rows = [{"resource": "x", "peak": 0.91}, {"resource": "y", "peak": 1.2}]
    assert [r["resource"] for r in summarise(rows)] == ["y", "x"]
