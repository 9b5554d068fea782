"""The golden test is a real guard: a 1 % change to one catalog figure makes it fail, readably."""

from __future__ import annotations

import pytest

from tests.golden.cases import CASES, diff, format_diff, load_snapshot


@pytest.fixture
def nudged_catalog():
    """The built-in catalog with the DC S3700's read latency raised by 1 % (50 us -> 50.5 us)."""
    from densim.catalog.core import builtin_catalog

    entry = builtin_catalog().raw("devices", "intel-dc-s3700-400gb")
    before = entry["read_latency"]
    assert before == "50 us"
    entry["read_latency"] = "50.5 us"
    try:
        yield
    finally:
        entry["read_latency"] = before


def test_one_percent_catalog_change_fails_the_golden_comparison(nudged_catalog, tmp_path):
    # the mail-server study's SSD configuration is 16 DC S3700s: its latencies must move
    rows = diff(load_snapshot("study-mail-server"), CASES["study-mail-server"](tmp_path), "study-mail-server")
    moved = {r[0] for r in rows}
    assert any(k.startswith("configs.ssd_6000.") and "latency" in k for k in moved), moved
    # the hard-disk configuration does not use the part: none of its figures may move
    assert not any(k.startswith("configs.hdd_6000.") for k in moved), moved
    table = format_diff("study-mail-server", rows)
    assert "outside their tolerance" in table and "golden" in table and "%" in table
    assert "rel 1e-09 (default)" in table and "rule default:" in table  # the tolerance and its reason
    print(table)


def test_unchanged_catalog_reproduces_the_snapshot(tmp_path):
    assert diff(load_snapshot("study-mail-server"), CASES["study-mail-server"](tmp_path), "study-mail-server") == []
