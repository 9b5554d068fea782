"""Pre-copy under each hypervisor's own stop rule (densim.models.migration.precopy_rule), by hand."""

from __future__ import annotations

import numpy as np
import pytest

from densim.models.migration import STOP_RULES, StopRule, precopy, precopy_rule

MB = 2.0**20


@pytest.mark.parametrize("mem, dirty, wws", [(800 * MB, 9e7, 80 * MB), (64 * MB, 2.5e7, 6.4 * MB), (4096 * MB, 2e8, None)])
def test_qemu_rule_is_precopy_bit_for_bit(mem, dirty, wws):
    a = precopy(mem, 1.25e8, dirty, wws_bytes=wws, resume_s=0.02)
    b = precopy_rule(mem, 1.25e8, dirty, "qemu", wws_bytes=wws, resume_s=0.02)
    assert b["downtime_s"] == float(a.downtime_s) and b["total_s"] == float(a.total_s)
    assert b["rounds"] == int(a.rounds) and b["bytes_sent"] == float(a.bytes_sent)


def test_xen_rule_stops_below_50_pages_by_hand():
    # M = 100 MiB, B = 100 MiB/s, D = 50 MiB/s, no WWS bound: V_i = 100 MiB / 2^i.
    # Xen (xc_linux_save.c) makes the next round the last when the round just sent was < 50 pages = 204,800 B:
    # 100 MiB / 2^i < 204800  <=>  2^i > 512  <=>  i = 10 (V_10 = 102,400 B sent live): 11 live rounds,
    # live time = sum_{i=0}^{10} 1 s / 2^i = 2 (1 - 2^-11) s; stop-and-copy V_11 = 51,200 B = 0.488 ms
    r = precopy_rule(100 * MB, 100 * MB, 50 * MB, "xen-2005")
    assert r["rounds"] == 11
    assert r["live_s"] == pytest.approx(2 * (1 - 2**-11))
    assert r["downtime_s"] == pytest.approx(51200 / (100 * MB))
    # QEMU's rule stops as soon as the remainder fits 300 ms: V_1 = 50 MB = 0.5 s, V_2 = 25 MB = 0.25 s -> 2 rounds
    q = precopy_rule(100 * MB, 100 * MB, 50 * MB, "qemu")
    assert q["rounds"] == 2 and q["downtime_s"] == pytest.approx(0.25)


def test_xen_rule_max_factor_and_stuck():
    # D = B with a WWS bound of M/2: rounds send 100, 50, 50, 50 ... MiB. Xen's "more than last round" never
    # holds (50 is not > 50), so DEF_MAX_FACTOR stops it: sent 100 + 50 k > 300 MiB first at k = 5 -> 6 rounds,
    # stop-and-copy 50 MiB = 0.5 s
    r = precopy_rule(100 * MB, 100 * MB, 100 * MB, "xen-2005", wws_bytes=50 * MB)
    assert r["rounds"] == 6 and r["downtime_s"] == pytest.approx(0.5)
    # QEMU tests the remainder: D = 2 B, W = M gives V_1 = min(200, 100) = 100 MiB >= V_0: stuck after round 0
    assert precopy_rule(100 * MB, 100 * MB, 200 * MB, "qemu")["rounds"] == 1
    # without a stuck test, max_factor 1.2 stops once 1.2 M is passed: 100 + 50 = 150 MiB > 120 MiB after round 2
    rule = StopRule("t", max_factor=1.2, stop_when_stuck=False, max_rounds=30)
    assert precopy_rule(100 * MB, 100 * MB, 100 * MB, rule, wws_bytes=50 * MB)["rounds"] == 2


def test_vmotion_sdps_throttles_a_vm_that_outruns_the_link():
    # D = 2 B: stuck after round 0 (V_1 = M); SDPS slows the VM to 0.5 B: V_1 = 0.5 M = 0.5 s at 1 GB/s... here
    # M = 1000 MB, B = 1000 MB/s: round 0 1 s, V_1 = 500 MB = 0.5 s <= 1 s switch-over target: stop, downtime 0.5 s
    r = precopy_rule(1000 * MB, 1000 * MB, 2000 * MB, "vmotion-5")
    assert r["rounds"] == 1 and r["downtime_s"] == pytest.approx(0.5) and r["converged"]
    # QEMU gives up (no progress) and stops the VM with all of M left: 1 s downtime
    assert precopy_rule(1000 * MB, 1000 * MB, 2000 * MB, "qemu")["downtime_s"] == pytest.approx(1.0)


def test_rules_are_sourced_and_refuse_bad_input():
    assert all(r.source for r in STOP_RULES.values())
    with pytest.raises(ValueError, match="bandwidth"):
        precopy_rule(MB, 0.0, 0.0, "xen-2005")
    with pytest.raises(ValueError, match="unknown pre-copy stop rule 'hyper-v'; known: qemu, xen-2005, vmotion-5"):
        precopy_rule(MB, 1.0, 0.0, "hyper-v")
    assert np.isfinite(precopy_rule(0.0, 1.0, 0.0, "xen-2005")["total_s"])


def test_stop_rule_study_rows_are_calibration_and_miss_low():
    from densim.tools.studies.val_migration_stop_rules import STUDY

    s = STUDY.run(None, 0)
    assert [h["role"] for h in s["headline"]] == ["calibration", "calibration"]
    # under Xen's own rule the geometric remainder falls below 50 pages: downtime ~ the 20 ms resume
    assert all(h["simulated"] < 0.5 * h["published"] for h in s["headline"])


def test_qemu_nfv_rows_by_hand():
    from densim.tools.studies.val_migration_qemu_nfv import STUDY
    from densim.tools.studies.validation import MISS_NOTES, validation_table

    s = STUDY.run(None, 0)
    by = {h["name"]: h for h in s["headline"]}
    # idle: z = 1942431 / (8389384 / 4) = 0.92614 of 8 GiB (M = 8589934592 B) is zero. Round 0: the non-zero
    # (1 - z) M = 6.3446e8 B plus the flags z M x 9/4096 = 1.7481e7 B at 1.25e9 B/s = 0.52156 s, plus reading the
    # zero pages z M / 19.9e9 = 0.39977 s: 0.92133 s + resume 20 ms = 941.3 ms; nothing dirtied: downtime 20 ms
    z, m = 1942431 / (8389384 / 4), 8 * 2**30
    t0 = ((1 - z) * m + z * m * 9 / 4096) / 1.25e9 + z * m / 19.9e9
    assert by["QEMU migration total time, idle 8 GiB guest (ms)"]["simulated"] == pytest.approx((t0 + 0.020) * 1e3, rel=1e-9)
    assert by["QEMU migration total time, idle 8 GiB guest (ms)"]["simulated"] == pytest.approx(941.3, abs=0.1)
    assert by["QEMU migration downtime, idle 8 GiB guest (ms)"]["simulated"] == pytest.approx(20.0)
    # DPDK: round 0 dirties min(2.516e8 x 0.921 s, 16 MiB) = 16 MiB = 13.42 ms > 10 ms -> round 1 (13.42 ms)
    # dirties 2.516e8 x 0.013422 = 3.377e6 B = 2.70 ms <= 10 ms: downtime 2.70 + 20 = 22.70 ms; total 957.5 ms
    r1 = 16 * 2**20 / 1.25e9
    assert by["QEMU migration downtime, 8 GiB guest, DPDK L2 forwarding at 2013 Mbps (ms)"]["simulated"] == pytest.approx(
        (2013e6 / 8 * r1 / 1.25e9 + 0.020) * 1e3, rel=1e-9)
    assert by["QEMU migration total time, 8 GiB guest, DPDK L2 forwarding at 2013 Mbps (ms)"]["simulated"] == pytest.approx(
        (t0 + r1 + 2013e6 / 8 * r1 / 1.25e9 + 0.020) * 1e3, rel=1e-9)
    rows = validation_table({"val-migration-qemu-nfv": s})
    assert len(rows) == 4 and [r["within"] for r in rows] == [False, True, False, True]
    assert "val-migration-qemu-nfv" in MISS_NOTES
