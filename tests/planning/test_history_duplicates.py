"""A forecast history with two rows for one date is refused naming both rows (issue 29); several
date-times a day are still one day each (reduced by forecast.statistic)."""

from __future__ import annotations

import numpy as np
import pytest

from densim.errors import InputError
from densim.tools.plan.forecast import read_cluster_history


def test_duplicate_date_names_both_rows(tmp_path):
    # rows 2-4 are 1, 2, 3 January; row 5 repeats 2 January with another figure (was: the max of 200 and 999 kept)
    p = tmp_path / "h.csv"
    p.write_text("date,vcpus,cpu_used_mhz\n2026-01-01,4,100\n2026-01-02,4,200\n2026-01-03,4,300\n2026-01-02,4,999\n")
    with pytest.raises(InputError) as exc:
        read_cluster_history(p)
    assert exc.value.one_line() == f"{p}:row 5, date: duplicate date '2026-01-02' (also in row 3): one row per date"


def test_same_instant_in_two_spellings_is_a_duplicate(tmp_path):
    p = tmp_path / "h.csv"
    p.write_text("date,vcpus,cpu_used_mhz\n2026-01-01T10:00:00+00:00,4,100\n2026-01-01T11:00:00+01:00,4,150\n")
    with pytest.raises(InputError) as exc:
        read_cluster_history(p)
    assert "row 3, date: duplicate date '2026-01-01T11:00:00+01:00' (also in row 2)" in exc.value.one_line()


def test_several_times_a_day_are_reduced_per_day(tmp_path):
    # two samples on 1 January (max 150 MHz), one on 2 January
    p = tmp_path / "h.csv"
    p.write_text("date,vcpus,cpu_used_mhz\n2026-01-01T08:00,4,100\n2026-01-01T20:00,4,150\n2026-01-02T08:00,4,120\n")
    h = read_cluster_history(p)
    assert list(h.dates) == [np.datetime64("2026-01-01"), np.datetime64("2026-01-02")]
    assert list(h.cpu_mhz) == [150.0, 120.0]


def test_utf16_history_reads(tmp_path):
    p = tmp_path / "h.csv"
    p.write_bytes("date,vcpus,cpu_used_mhz\n2026-01-01,4,100\n2026-01-02,4,120\n".encode("utf-16"))
    assert list(read_cluster_history(p).cpu_mhz) == [100.0, 120.0]
