"""Validation: the three memory studies against the published figures, with the issue's tolerances."""

import numpy as np
import pytest

from densim.tools.studies import host_swap_cache, ssd_as_memory, swap_device_sql


def by_name(summary):
    return {h["name"]: h for h in summary["headline"]}


def test_host_swap_cache_intel_it_2016():
    s = host_swap_cache.run(None, 42)
    c = s["curves"]
    r = np.array(c["R"])
    t_san, t_ssd = np.array(c["completion_time_san"]), np.array(c["completion_time_ssd"])
    div = lambda x: np.interp(x, r, t_san) / np.interp(x, r, t_ssd) - 1  # noqa: E731
    assert abs(div(1.0)) < 0.05  # no divergence while memory fits
    assert div(1.25) >= 0.10  # significant from 125 %
    ratio = np.interp(1.5, r, 1 / t_ssd) / np.interp(1.5, r, 1 / t_san)
    assert ratio == pytest.approx(2.3, rel=0.20)  # ~2.3x more transactions with the SSD
    heads = by_name(s)
    tolerated = [h for n, h in heads.items() if n.startswith("oversubscription the SSD host tolerates")][0]
    assert tolerated["simulated"] == pytest.approx(1.5, abs=0.10)  # SSD ~150 % = SAN ~125 %
    assert all(h["passed"] for h in s["headline"])
    # completion time never falls as oversubscription grows
    assert (np.diff(t_san) >= -1e-9).all() and (np.diff(t_ssd) >= -1e-9).all()


def test_swap_device_sql_vmware_2009():
    s = swap_device_sql.run(None, 42)
    got = {k: 100 * v["throughput_fraction"] for k, v in s["runs"].items()}
    assert got["local SSD"] == pytest.approx(88, abs=5)
    assert got["FC SAN"] == pytest.approx(31, abs=5)
    assert got["local SATA"] == pytest.approx(17, abs=5)
    assert all(h["passed"] for h in s["headline"])


def test_ssd_as_memory_silicon_design():
    s = ssd_as_memory.run(None, 42)
    heads = by_name(s)
    perf = heads["performance with SSD swap, % of all-DRAM"]["simulated"]
    assert perf == pytest.approx(88, abs=5)
    adv = heads["performance-normalised cost advantage"]["simulated"]
    assert adv == pytest.approx(1.63, rel=0.20)
    for p in s["prices"].values():
        assert p["price_date"] and p["source"]


def test_studies_are_registered():
    from densim.tools.studies.base import all_studies

    names = all_studies()
    assert {"host-swap-cache", "swap-device-sql", "ssd-as-memory"} <= set(names)
