"""Headline roles: every built-in figure says what it is worth; only predictions count as validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from densim.tools.studies.base import AREAS, ROLES, Study, all_studies, annotate, busy_check, headline, role_counts
from densim.tools.studies.runner import evaluate_study, run_study


@pytest.fixture(scope="module")
def summaries(tmp_path_factory) -> dict[str, dict]:
    base = tmp_path_factory.mktemp("studies")
    return {name: evaluate_study(st, base / name, 42) for name, st in all_studies().items()}


def test_every_headline_of_every_study_has_a_valid_role(summaries):
    assert summaries, "no built-in studies found"
    for name, s in summaries.items():
        assert s["area"] in AREAS, name
        assert s["headline"], f"{name} has no headline"
        for h in s["headline"]:
            where = f"{name}: {h['name']}"
            assert h["role"] in ROLES, where
            if h["role"] == "calibration":
                assert h["fitted"], f"{where}: a calibration must name the fitted parameter"
            else:
                assert not h["fitted"], f"{where}: only calibrations name a fitted parameter"
            assert h["validation"] is (h["role"] == "prediction"), where
            assert isinstance(h["saturated"], list), where


def test_role_counts_add_up(summaries):
    for name, s in summaries.items():
        assert sum(s["roles"].values()) == len(s["headline"]), name
        preds = [h for h in s["headline"] if h["role"] == "prediction"]
        assert s["predictions_total"] == len(preds), name
        assert s["predictions_passed"] == sum(h["passed"] for h in preds), name


def test_kvm_tuning_automatic_binding_is_a_target_not_a_published_figure(summaries):
    heads = {h["name"]: h for h in summaries["kvm-tuning"]["headline"]}
    auto = heads["automatic node binding: share of the manual binding gain"]
    assert auto["role"] == "target" and not auto["validation"]


def test_figures_resting_on_re_tuned_estimates_name_them(summaries):
    heads = {h["name"]: h for h in summaries["mail-server"]["headline"]}
    for key in ("total power and cooling, HDD configuration", "annual cost saving per user at 6,000 users"):
        assert heads[key]["role"] == "arithmetic"
        assert any("re-tuned" in e for e in heads[key]["estimated_inputs"]), key
    boot = summaries["boot-drive"]["headline"][0]
    assert boot["role"] == "arithmetic" and boot["estimated_inputs"]
    assert any("4.7 %" in n for n in summaries["boot-drive"]["notes"])


def test_studies_json_counts_match_the_study_summaries(summaries):
    from densim.cli.main import app

    res = CliRunner().invoke(app, ["studies", "--json"])
    assert res.exit_code == 0, res.output
    ov = json.loads(res.output)
    by = {r["name"]: r for r in ov["studies"]}
    assert set(by) == set(summaries)
    total = dict.fromkeys(ROLES, 0)
    for name, s in summaries.items():
        assert by[name]["area"] == all_studies()[name].area
        assert by[name]["roles"] == s["roles"], name
        assert by[name]["headlines"] == len(s["headline"])
        assert (by[name]["predictions_passed"], by[name]["predictions_total"]) == (s["predictions_passed"], s["predictions_total"])
        for r in ROLES:
            total[r] += s["roles"][r]
    assert ov["total"]["roles"] == total
    assert ov["total"]["headlines"] == sum(total.values())
    assert ov["total"]["predictions_passed"] == sum(s["predictions_passed"] for s in summaries.values())
    assert ov["total"]["predictions_total"] == total["prediction"]


def test_studies_table_shows_area_and_predictions_passing(traces):  # densim studies reads the shared traces
    from densim.cli.main import app

    res = CliRunner().invoke(app, ["studies"])
    assert res.exit_code == 0, res.output
    assert "kvm-tuning" in res.output and "cpu-virtualization" in res.output
    assert "headline figures:" in res.output and "calibration" in res.output


# --------------------------------------------------------------------------- the contract
def test_a_headline_needs_a_role():
    with pytest.raises(TypeError):
        headline("x", 1.0, 1.0, tolerance=0.1, source="s")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="role"):
        headline("x", 1.0, 1.0, tolerance=0.1, source="s", role=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="role"):
        headline("x", 1.0, 1.0, tolerance=0.1, source="s", role="validation")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fitted"):
        headline("x", 1.0, 1.0, tolerance=0.1, source="s", role="calibration")
    with pytest.raises(ValueError, match="no valid role"):
        annotate({"headline": [{"name": "hand-made", "passed": True}]})


def test_a_study_needs_an_area():
    with pytest.raises(ValueError, match="area"):
        Study(name="x", description="", run=lambda out, seed: {})
    with pytest.raises(ValueError, match="area"):
        Study(name="x", description="", run=lambda out, seed: {}, area="everything")


def test_a_passing_calibration_is_not_a_validation_pass():
    heads = [
        headline("fitted", 6.0, 6.0, tolerance=0.1, source="s", role="calibration", fitted="k"),
        headline("accounting", 2.0, 2.0, tolerance=0.1, source="s", role="arithmetic"),
        headline("bound", 0.8, 1.0, tolerance=0.0, lower=0.8, source="s", role="target"),
        headline("predicted, wrong", 1.0, 3.0, tolerance=0.1, source="s", role="prediction"),
    ]
    assert all(h["passed"] for h in heads[:3]) and not heads[3]["passed"]
    c = role_counts(heads)
    assert c["roles"] == {"calibration": 1, "arithmetic": 1, "prediction": 1, "target": 1}
    assert (c["predictions_passed"], c["predictions_total"]) == (0, 1)
    assert [h["validation"] for h in heads] == [False, False, False, True]


# --------------------------------------------------------------------------- saturation
def _tiny_study(tmp_path: Path) -> Study:
    def run(out_dir: Path, seed: int) -> dict:
        return {
            "headline": [
                headline("on the busy run", 1.0, 1.0, tolerance=0.1, source="s", role="prediction", rests_on=("busy run",)),
                headline("on the quiet run", 1.0, 1.0, tolerance=0.1, source="s", role="calibration", fitted="k",
                         rests_on=("quiet run",)),
            ],
            "busy": [
                busy_check("busy run", ["disk", "cpu"], [0.95, 0.5], kind="station"),
                busy_check("quiet run", ["disk", "cpu"], [0.2, 0.3], kind="station"),
                busy_check("series", ["link"], [[0.5], [0.92], [0.97], [0.1]], kind="link", step_s=60.0),
            ],
        }

    return Study(name="tiny", description="tiny saturation case", run=run, area="storage")


def test_saturation_rows_name_the_run_and_mark_the_headlines_resting_on_it(tmp_path):
    s = run_study(_tiny_study(tmp_path), tmp_path, 1)
    rows = {r["resource"]: r for r in s["saturation"]}
    assert set(rows) == {"busy run: disk", "series: link"}
    assert rows["busy run: disk"]["duration_s"] is None and rows["busy run: disk"]["peak"] == pytest.approx(0.95)
    assert rows["series: link"]["steps"] == 2 and rows["series: link"]["duration_s"] == pytest.approx(120.0)
    heads = {h["name"]: h for h in s["headline"]}
    assert heads["on the busy run"]["saturated"] == ["busy run: disk"]
    assert heads["on the quiet run"]["saturated"] == []
    assert [c["run"] for c in s["busy_checked"]] == ["busy run", "quiet run", "series"]
    assert s["busy_checked"][1]["busiest"] == "quiet run: cpu"
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert saved["saturation"] == s["saturation"] and "busy" not in saved
    html = (tmp_path / "report.html").read_text()
    assert 'id="saturation-table"' in html and "busy run: disk" in html
    assert "saturated: busy run: disk" in html  # the marker on the headline
    assert "(by construction)" in html  # the passing calibration is not shown as validation


def test_a_study_with_no_queueing_resource_has_an_empty_saturation_list(summaries):
    s = summaries["boot-drive"]
    assert s["saturation"] == [] and s["busy_checked"] == []


def test_study_saturation_rows_are_consistent_with_the_checked_runs(summaries):
    """Every saturation row belongs to a checked run whose busiest resource is >= 90 %, and a
    headline's ``saturated`` lists exactly the rows of the runs it rests on (no specific sizing)."""
    for name, s in summaries.items():
        checked = {c["run"]: c for c in s["busy_checked"]}
        from densim.tools.studies.base import all_studies

        # a bill of materials or a power curve queues nothing; a study whose part the model refuses runs nothing
        if "no-queueing" not in all_studies()[name].tags and not s.get("refused"):
            assert checked, f"{name} checks no resource for saturation"
        for r in s["saturation"]:
            assert r["peak"] >= 0.9 and r["resource"].startswith(r["run"] + ": "), (name, r)
            assert checked[r["run"]]["peak"] >= r["peak"] - 1e-12
        for h in s["headline"]:
            want = [r["resource"] for r in s["saturation"] if r["run"] in h["rests_on"]]
            assert h["saturated"] == want, (name, h["name"])
            for run in h["rests_on"]:
                assert run in checked, f"{name}: {h['name']} rests on unknown run {run!r}"


def test_study_report_shows_roles_and_predictions_apart_from_calibrations(tmp_path):
    s = run_study(all_studies()["swap-device-sql"], tmp_path, 42)
    html = (tmp_path / "report.html").read_text()
    assert 'id="role-prediction"' in html and 'id="role-calibration"' in html
    assert html.index('id="role-prediction"') < html.index('id="role-calibration"')
    pred_section = html[html.index('id="role-prediction"'):html.index('id="role-calibration"')]
    for h in s["headline"]:
        assert (h["name"] in pred_section) is (h["role"] == "prediction"), h["name"]
        assert f'role-row-{h["role"]}' in html
    assert f'{s["predictions_passed"]}/{s["predictions_total"]}' in html


def test_study_cli_prints_roles(tmp_path):
    from densim.cli.main import app

    res = CliRunner().invoke(app, ["study", "boot-drive", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "arithmetic" in res.output and "predictions: 0/0" in res.output


@pytest.mark.browser
def test_study_report_opens_without_errors(tmp_path):
    from ..browser import open_report

    run_study(all_studies()["kvm-tuning"], tmp_path, 42)
    page = open_report(tmp_path / "report.html", "#fig-0 .main-svg")
    assert page.errors == []
    assert "Saturated resources" in page.text and "target &gt;= 0.8" in page.text
