"""The tolerance table (tests/golden/tolerances.py) is sane, and holds what issue 29 reported.

No golden case runs here: the rules are checked against the snapshots' figures and against the
figures an AMD EPYC gave for the forecast case (statsmodels' ETS fit stopped elsewhere)."""

from __future__ import annotations

import json
import math

import pytest

from tests.golden.cases import CASES, SNAPSHOTS, diff, format_diff, load_snapshot
from tests.golden.tolerances import ABS_TOL, DEFAULT, LOOSE, RULES, Rule, rule_for


def _figures():
    for case in CASES:
        for key, value in (load_snapshot(case) or {}).items():
            yield case, key, value


def test_every_rule_names_a_reason_and_the_names_are_unique():
    names = [r.name for r in RULES]
    assert len(set(names)) == len(names), names
    for r in RULES:
        assert len(r.reason) >= 40, f"{r.name}: say why, with the figure's computation and its tolerance"
        assert r.rel >= 0 and r.abs >= 0 and r.days >= 0


def test_every_case_has_a_snapshot_and_the_default_covers_every_figure():
    assert RULES[-1] is DEFAULT
    assert sorted(p.stem for p in SNAPSHOTS.glob("*.json")) == sorted(CASES)
    for case, key, _v in _figures():
        assert DEFAULT.matches(case, key), (case, key)


def test_every_rule_decides_at_least_one_figure():
    # a rule no figure reaches is a typo in its pattern, or is shadowed by a rule above it
    used = {rule_for(case, key).name for case, key, _v in _figures()}
    assert {r.name for r in RULES} - used == set()


def test_no_rule_allows_more_than_five_percent_without_saying_why():
    for r in RULES:
        if r.rel > LOOSE or r.days > 7:
            assert r.loose, f"{r.name}: rel {r.rel} / {r.days} days needs a 'loose' reason"
    # an absolute tolerance (above the 1e-9 floor every rule has, for figures that are 0 up to
    # rounding) is loose where it is large against the figure it is applied to
    for case, key, v in _figures():
        r = rule_for(case, key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v != 0 and math.isfinite(v) and r.abs > ABS_TOL \
                and r.abs / abs(v) > LOOSE:
            assert r.loose, f"{r.name}: abs {r.abs} is {r.abs / abs(v):.0%} of {case} {key} = {v}"


def test_tolerances_stay_within_what_the_computation_gives():
    # closed-form figures at 1e-9; nothing but the ETS fit and the tiles' tolerance-stopped
    # fixed point looser than 1e-6 relative
    assert DEFAULT.rel == 1e-9 and DEFAULT.days == 0
    for r in RULES:
        if r.rel > 1e-6 or r.days or r.abs > 1e-6:
            assert r.cases in ("forecast-.*", "tiles-.*"), r.name


# ------------------------------------------------------------------ the comparison


def test_dates_in_text_within_the_days_and_nothing_else_changed():
    r = Rule("t", ".*", ".*", "dates in a sentence, for this test only: three days either way", days=3)
    a = "CPU Ready crosses 5 % on cluster-a between 2027-09-01 and 2027-10-08 (80 % interval"
    assert r.same(a, a.replace("2027-09-01", "2027-09-03"))  # 2 days
    assert r.same(a, a.replace("2027-10-08", "2027-10-05"))  # 3 days
    assert not r.same(a, a.replace("2027-09-01", "2027-08-28"))  # 4 days
    assert not r.same(a, a.replace("crosses", "stays below"))
    assert not r.same(a, a.replace("80 %", "90 %"))
    assert r.same("2027-09-01", "2027-08-30") and not r.same("2027-09-01", "2027-09-05")


def test_numbers_bools_and_strings():
    r = Rule("t", ".*", ".*", "one relative tolerance, for this test only: one in a million", rel=1e-6)
    assert r.same(1.0, 1.0 + 9e-7) and not r.same(1.0, 1.0 + 2e-6)
    assert r.same(0.0, 1e-10)  # below the absolute floor (1e-9)
    assert r.same(float("nan"), float("nan")) and r.same("nan", "nan")
    assert not r.same(True, 1) and not r.same(None, 0) and not r.same("AAN", "AAA")


def _epyc(golden: dict) -> dict:
    """The forecast figures as issue 29 reported them (and as OpenBLAS's SkylakeX kernels give them here):
    smoothing_trend -7.8 %, the vCPU fit's AICc +0.3 % and sigma +11 %, the level +3.8e-5, the
    simulated path bands up to ±4e-5, everything else the same."""
    now = dict(golden)
    for key, v in golden.items():
        if key == "fits.cpu_mhz.params.smoothing_trend":
            now[key] = v * (1 - 0.078)
        elif key == "fits.vcpus.aicc":
            now[key] = v * (1 - 0.003)  # AICc is negative: +0.3 % in size
        elif key == "fits.vcpus.params.sigma":
            now[key] = v * 1.11
        elif key == "fits.cpu_mhz.level":
            now[key] = v * (1 + 3.8e-5)
        elif ".path_" in key and key.endswith((".sum", ".min", ".max")):
            now[key] = v * (1 + (4e-5 if len(key) % 2 else -4e-5))
    return now


def test_the_epyc_forecast_passes_and_a_real_change_does_not():
    golden = load_snapshot("forecast-cluster-history")
    now = _epyc(golden)
    moved = diff(golden, now, rel=1e-6)  # the old single tolerance: the 16 figures of the report fail
    assert len(moved) >= 16, len(moved)
    assert diff(golden, now, "forecast-cluster-history") == []
    # a fit that changes what is identifiable still fails: the level 1 % lower, another model, a month later
    for key, value in (("fits.cpu_mhz.level", golden["fits.cpu_mhz.level"] * 0.99), ("fits.mem_bytes.model", "AAA"),
                       ("clusters[0].cpu_ready.date_median", "2027-10-21"),
                       ("clusters[0].memory.path_frac.median[*].max", golden["clusters[0].memory.path_frac.median[*].max"] * 1.02)):
        rows = diff(golden, now | {key: value}, "forecast-cluster-history")
        assert [r[0] for r in rows] == [key], rows


def test_the_diff_table_shows_each_figure_s_tolerance_and_the_reason():
    golden = load_snapshot("forecast-cluster-history")
    now = golden | {"fits.cpu_mhz.aicc": golden["fits.cpu_mhz.aicc"] * 1.05, "history.periods": 183}
    table = format_diff("forecast-cluster-history", diff(golden, now, "forecast-cluster-history"))
    assert "2 figure(s) outside their tolerance" in table
    assert "rel 1e-03 (ets-aicc)" in table and "rel 1e-09 (default)" in table
    assert "rule ets-aicc: rel 1e-03: AICc at the optimiser's stopping point" in table


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_golden_figure_depends_on_a_cp_sat_time_limit(case):
    # CP-SAT runs single-threaded (workers=1) with a deterministic-time limit, so it is reproducible;
    # but its wall-clock limit (optimise.max_time_s) can stop it first on a slow or loaded machine,
    # and then its answer (status FEASIBLE) depends on the machine. No golden case may record one.
    text = json.dumps(load_snapshot(case))
    assert '"FEASIBLE"' not in text and "WARM_START" not in text
