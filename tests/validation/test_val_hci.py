"""val-hci-rebuild: the node-rebuild row is a prediction (the RF2 -> RF3 row arithmetic) and the engine's resync is the hand arithmetic."""

from __future__ import annotations

import pytest

from densim.tools.studies.base import all_studies


def test_roles_are_honest_and_the_node_rebuild_is_the_hand_figure():
    s = all_studies()["val-hci-rebuild"].run(None, 0)
    # the RF2 -> RF3 row was worked out by hand before its tolerance was written: arithmetic, not a prediction
    assert [h["role"] for h in s["headline"]] == ["arithmetic", "prediction"]
    # a node: 6 x S3700 (500 MB/s read, 460 MB/s write): 1 / (1/3.0e9 + 1/2.76e9) = 1.4375e9 B/s < 2.5e9 (2 x 10 GbE)
    assert s["runs"]["per_node_Bps"] == pytest.approx(1.4375e9)
    # RF3 node failure: 5 TB at 0.25 x 11 nodes x 1.4375e9 = 3.953e9 B/s = 1,264.8 s, + 60 s repair delay = 1,324.8 s
    assert s["runs"]["p3_minutes"] == pytest.approx((5e12 / (0.25 * 11 * 1.4375e9) + 60.0) / 60.0, rel=1e-6)
    # RF2 -> RF3: 25 TB at 0.25 x 12 x 1.4375e9 = 4.3125e9 B/s = 5,797 s = 1.61 h
    assert s["runs"]["p2_hours"] == pytest.approx(25e12 / (0.25 * 12 * 1.4375e9) / 3600.0)
