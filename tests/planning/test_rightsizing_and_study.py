"""Right-sizing arithmetic and the boot-drive study against its published figure."""

from __future__ import annotations

import numpy as np
import pytest

from densim.tools.plan.rightsizing import rightsize
from densim.workloads.inventory import build_inventory

GIB = 2**30


def test_rightsizing_by_percentile_and_headroom():
    # VM a: 8 vCPUs at 2,000 MHz; its demand is 1,000..10,000 MHz in 10 equal steps -> P90 = 9,100 MHz
    # (numpy linear interpolation), x 1.2 = 10,920 MHz -> ceil(5.46) = 6 vCPUs. Memory in use 1..10 GiB,
    # P90 9.1 GiB x 1.2 = 10.92 GiB -> 11 GiB (256 MiB granules: 10.92/0.25 = 43.68 -> 44 x 0.25).
    # VM b: 2 vCPUs always 100 % busy -> stays 2 and is flagged under-sized (P90 x 1.2 > 4,000 MHz).
    t = np.arange(1, 11, dtype=float)
    inv = build_inventory(["a", "b"], [8, 2], [2000.0, 2000.0], [16 * GIB, 4 * GIB],
                          cpu_mhz=np.stack([t * 1000, np.full(10, 4000.0)], axis=1),
                          mem_used_bytes=np.stack([t * GIB, np.full(10, GIB)], axis=1))
    rs = rightsize(inv, percentile=90, headroom=0.2)
    assert rs.vcpus_rec.tolist() == [6, 2]
    assert rs.mem_rec_bytes[0] == 11 * GIB
    assert rs.undersized.tolist() == [False, True]
    assert rs.vcpus_reclaimed == 2
    assert rs.mem_reclaimed_bytes == pytest.approx((16 - 11) * GIB + (4 - 1.25) * GIB)


def test_rightsizing_never_sizes_below_one_vcpu_or_above_the_configuration():
    inv = build_inventory(["idle", "hot"], [4, 2], [2400.0] * 2, [GIB] * 2, cpu_mhz=np.array([[0.0, 1e6]] * 3))
    rs = rightsize(inv)
    assert rs.vcpus_rec.tolist() == [1, 2]
    assert rs.mem_rec_bytes.tolist() == [GIB, GIB]  # no memory series: configured memory kept


def test_boot_drive_study_reproduces_the_published_saving(tmp_path):
    from densim.tools.studies.boot_drive import STUDY, saving_pct

    out = STUDY.run(tmp_path, 0)
    h = out["headline"][0]
    assert h["published"] == 4.7
    assert h["passed"], h
    # the figure follows from the priced parts: (HDD pair + controller - SSD) / HDD-boot host
    pct, before, after = saving_pct()
    assert pct == pytest.approx(100 * (350 + 2 * 230 - 189) / before)
    assert out["sensitivity"]["ssd_price_+25%"] < pct < out["sensitivity"]["ssd_price_-25%"]
