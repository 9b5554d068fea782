"""Validation: the mail-server study (seed 001) against Intel IT's Table 1, from catalog parts."""

from __future__ import annotations

import pytest

from densim.tools.studies.mail_server import HDD, SSD, STUDY, evaluate


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    return STUDY.run(tmp_path_factory.mktemp("mail"), 42)


def test_every_headline_passes(summary):
    failed = [h["name"] for h in summary["headline"] if not h["passed"]]
    assert not failed, failed


def test_power_and_rack_within_ten_percent(summary):
    h = {x["name"]: x for x in summary["headline"]}
    for name, published in (("total power and cooling, HDD configuration", 1780), ("total power and cooling, SSD configuration", 370),
                            ("rack units, HDD configuration", 6), ("rack units, SSD configuration", 2)):
        assert h[name]["published"] == published
        assert abs(h[name]["simulated"] - published) <= 0.10 * published


def test_power_is_built_from_parts(summary):
    for cfg in summary["configs"].values():
        it = cfg["server_w"] + cfg["drives_controllers_w"] + cfg["enclosures_w"]
        assert cfg["it_w"] == pytest.approx(it)
        # cooling at 1.25 W per W of IT
        assert cfg["total_power_cooling_w"] == pytest.approx(2.25 * it)
    # two MSA60 shelves of 2U each on a 2U server = 6U
    assert summary["configs"]["hdd_6000"]["rack_units"] == 6


def test_storage_dominates_hdd_submission_time():
    # the modelling guide (§4.6.2) derives that a 6x speed-up needs storage ~84-85 % of the baseline time
    h = evaluate(HDD, 6000)
    s = evaluate(SSD, 6000)
    # Amdahl with k -> infinity: the share of baseline time removed ~ the storage share of it
    removed = 1 - s["submit_s"] / h["submit_s"]
    assert 0.75 < removed < 0.9
    # HDD mailbox database is the busiest component; SSDs run nearly idle
    assert max(a["utilisation"] for a in h["arrays"]) > 0.3
    assert max(a["utilisation"] for a in s["arrays"]) < 0.1


def test_more_users_slow_hdds_much_more_than_ssds():
    # 4,000 -> 12,000 users: the HDD database shelves go from ~25 % to ~76 % busy and queueing grows;
    # the SSDs stay below 10 % busy, so their submission time hardly moves
    h1, h2 = evaluate(HDD, 4000), evaluate(HDD, 12000)
    s1, s2 = evaluate(SSD, 4000), evaluate(SSD, 12000)
    assert h2["submit_s"] / h1["submit_s"] > 1.5
    assert s2["submit_s"] / s1["submit_s"] < 1.01


def test_fitted_parameters_reproduce_their_fit():
    # the two (F) parameters are the closed-form fit to 6x and 2x, rounded to 3 significant digits
    from densim.tools.studies.mail_server import WORKLOAD, fit_calibrations

    fit = fit_calibrations()
    for name, value in fit.items():
        assert WORKLOAD[name][0] == pytest.approx(value, rel=5e-3), name
