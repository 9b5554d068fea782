"""Validation studies: they run, every headline is a prediction, and the arithmetic they rely on."""

from __future__ import annotations

import math

import numpy as np
import pytest

from densim.tools.studies.base import AREAS, all_studies
from densim.tools.studies.validation import SPECPOWER, area_summary, specpower_loo, specpower_prediction, validation_table

VAL = sorted(n for n in all_studies() if n.startswith("val-"))


def test_there_are_validation_studies():
    assert len(VAL) >= 5


@pytest.mark.parametrize("name", VAL)
def test_runs_and_every_headline_is_a_prediction_or_says_why_not(name, tmp_path):
    study = all_studies()[name]
    assert study.area in AREAS
    summary = study.run(tmp_path, 0)
    assert summary["headline"]
    for h in summary["headline"]:
        # a validation study's row is a prediction, or carries the reason it is not one (issue 30)
        assert h["role"] == "prediction" or (h["role"] in ("arithmetic", "calibration") and h["why"])
        assert h["source"]
        # only a declared gap (no model for the mechanism) or a part the model refuses (its one-line reason in
        # the summary's "refused") may have no model value, and then it is a miss
        if h["simulated"] is None or not math.isfinite(h["simulated"]):
            assert ("gap" in study.tags or summary.get("refused")) and not h["passed"]
    rows = validation_table({name: summary})
    assert len(rows) == sum(h["role"] == "prediction" for h in summary["headline"])
    assert all(r["area"] == study.area for r in rows)


def test_linear_power_at_half_load_is_the_midpoint():
    # X5670: idle 66 W, peak 247 W -> (66 + 247) / 2 = 156.5 W at 50 %
    assert specpower_prediction("ibm-x3550-2x-x5670")[5] == pytest.approx(156.5)
    # Fan curve at u = 0.5: 2u - u^1.4 = 1 - 0.5^1.4 = 0.6211
    assert specpower_prediction("ibm-x3550-2x-x5670", "fan")[5] == pytest.approx(66 + 181 * (1 - 0.5**1.4))


def test_loo_table_is_the_neighbour_midpoint():
    loo = specpower_loo("ibm-x3250-x3480")
    pts = SPECPOWER["ibm-x3250-x3480"]["points_w"]
    # leaving out 50 % (69.3 W): the table model gives (61.8 + 76.1) / 2 = 68.95 W
    row = loo[4]
    assert row["level"] == pytest.approx(0.5)
    assert row["table_error"] == pytest.approx(68.95 / 69.3 - 1)
    assert len(loo) == 9 and pts[5] == 69.3


def test_nvme_device_servers_by_littles_law():
    from densim.tools.studies.val_nvme_qd import closed

    # P4800X: 550 k IOPS x 10 us = 5.5 servers; at QD1 the closed network gives the QD1 latency
    q1 = closed("intel-optane-p4800x-375gb", 1)
    assert q1["servers"] == pytest.approx(5.5)
    assert q1["latency_us"] == pytest.approx(10.0, rel=1e-6)


def test_spdk_saturated_latency_is_littles_law():
    from densim.tools.studies.val_spdk_scaling import system

    r = system(16, 8)
    # closed network: latency = outstanding / throughput = 2048 / X
    assert r["latency_us"] == pytest.approx(2048 / r["iops"] * 1e6, rel=1e-6)
    # 4 cores: CPU bound at 4 x 13.85 M
    assert system(16, 4)["iops"] == pytest.approx(4 * 13.85e6, rel=1e-6)


def test_area_summary_mape_and_share_leave_out_bounds_and_missing_models():
    rows = [{"area": "memory", "error_pct": 20.0, "within": False},
            {"area": "memory", "error_pct": math.nan, "within": True},   # a bound
            {"area": "memory", "error_pct": math.nan, "within": False}]  # no model
    s = area_summary(rows)["memory"]
    assert s["predictions"] == 3 and s["with_error"] == 1
    assert s["mape_pct"] == pytest.approx(20.0)
    assert s["within"] == 1 and s["within_share"] == pytest.approx(1 / 3)


def test_area_summary_mape_and_share():
    rows = [{"area": "power", "error_pct": 10.0, "within": True}, {"area": "power", "error_pct": -30.0, "within": False}]
    s = area_summary(rows)
    assert s["power"]["mape_pct"] == pytest.approx(20.0)
    assert s["power"]["within_share"] == pytest.approx(0.5)
    assert np.isclose(s["all"]["predictions"], 2)


# The rows issue 30 found were not predictions: (study, figure start) -> role they carry now. Each was
# counted as a prediction before; the validation table must leave them out and the docs page list them.
RELABELLED = {
    ("val-spdk-scaling", "2021, 16 drives"): "arithmetic",   # Little's law on the same post's 80 M IOPS
    ("val-spdk-scaling", "2023, 24 drives"): "arithmetic",   # 24 x (80 M / 16)
    ("val-optane-p4800x", "Optane P4800X 375 GB: 4 kB random read mean latency"): "arithmetic",  # Intel's "< 10 us"
    ("val-optane-p4800x", "Optane P4800X 375 GB: 4 kB random read IOPS at QD16"): "arithmetic",  # rated at QD16
    ("val-live-migration", "live-migration downtime, SPECweb"): "calibration",
    ("val-live-migration", "live-migration downtime, Quake 3"): "calibration",
}


def test_relabelled_rows_are_not_in_the_table_and_are_listed_with_their_reason(tmp_path):
    from densim.tools.studies.validation import docs_page, not_predictions

    names = sorted({s for s, _ in RELABELLED})
    sums = {n: all_studies()[n].run(tmp_path, 0) for n in names}
    rows = validation_table(sums)
    listed = not_predictions(sums)
    for (study, start), role in RELABELLED.items():
        heads = [h for h in sums[study]["headline"] if h["name"].startswith(start)]
        assert len(heads) == 1, (study, start)
        assert heads[0]["role"] == role and heads[0]["why"]
        assert not any(r["study"] == study and r["figure"] == heads[0]["name"] for r in rows)
        assert any(r["study"] == study and r["figure"] == heads[0]["name"] and r["role"] == role for r in listed)
    # the P3700 rows of the same study code stay predictions (nothing of Intel's restated: they miss)
    p3700 = all_studies()["val-nvme-p3700"].run(tmp_path, 0)
    assert [h["role"] for h in p3700["headline"]] == ["prediction", "prediction"]
    # issue 30 item 4: the P3700 as its datasheet prints it (only a sequential latency) is refused by the device
    # model, so both rows are misses with no model value, the refusal line in the notes (not a borrowed 20 us)
    assert [h["simulated"] for h in p3700["headline"]] == [None, None]
    assert not any(h["passed"] for h in p3700["headline"])
    assert p3700["refused"].startswith("device 'intel-dc-p3700-800gb': read_latency (random 4 KiB read at QD1) is "
                                       "required; seq_read_latency 20 us is a sequential figure")
    p3_rows = [r for r in validation_table({"val-nvme-p3700": p3700})]
    assert len(p3_rows) == 2 and all(r["no_model"] and not r["within"] for r in p3_rows)
    assert area_summary(p3_rows)["storage"]["with_error"] == 0  # out of the MAPE, in the within-tolerance count
    page = docs_page({"rows": rows, "areas": area_summary(rows), "loo": {}, "loo_fits": {}, "not_predictions": listed})
    assert "## Figures that are not predictions, and why" in page
    assert "Little's law" in page


def test_a_prediction_cannot_carry_a_why():
    from densim.tools.studies.base import headline

    with pytest.raises(ValueError, match="not a prediction"):
        headline("x", 1.0, 1.0, tolerance=0.1, source="s", role="prediction", why="because")


# ------------------------------------------------------------------ study-roles.md's generated table (issue 30)
def _head(study, name, role, passed, published=1.0, simulated=1.0, **kw):
    return {"study": study, "area": "memory", "figure": name, "published": published, "simulated": simulated,
            "unit": "x", "tolerance": "+/-10 %", "role": role, "passed": passed, "fitted": kw.get("fitted", ""),
            "estimated_inputs": kw.get("estimated_inputs", []), "why": kw.get("why", "")}


def test_roles_markdown_counts_and_lists_by_hand():
    from densim.tools.studies.validation import ROLES_BEGIN, ROLES_END, roles_markdown

    heads = [_head("a", "fit", "calibration", True, fitted="rate"),
             _head("a", "pred ok", "prediction", True),
             _head("a", "pred miss", "prediction", False, simulated=2.0),
             _head("b", "sum | of prices", "arithmetic", False, estimated_inputs=["price (E)"], why="set with it known"),
             _head("b", "bound", "target", True)]
    md = roles_markdown(heads, seed=7)
    assert md.startswith(ROLES_BEGIN) and md.endswith(ROLES_END)
    assert "## Every headline (seed 7)" in md
    # 2 studies, 5 figures: 1 calibration, 1 arithmetic, 2 predictions (1 within), 1 target
    assert ("**Count across the 2 studies (5 headline figures): 1 calibration, 1 arithmetic, 2 prediction, 1 target. "
            "Predictions within tolerance: 1 of 2.**") in md
    assert "| a | memory | 1 | 0 | 2 | 0 | 1 of 2 |" in md
    assert "| a | pred miss | 1 x | 2 x | +/-10 % | prediction | – | **MISS** |" in md
    # a figure that is not a prediction and misses is "off", never a MISS; a target shows its bound as published
    assert "| b | sum | of prices | 1 x | 1 x | +/-10 % | arithmetic | estimated: price (E). why not a prediction: " \
           "set with it known | off |" in md
    assert "| b | bound | target +/-10 % |" in md
    assert "fitted: rate" in md


def test_roles_page_without_markers_is_refused_and_left_alone(tmp_path):
    from densim.tools.studies.validation import write_roles_docs

    page = tmp_path / "roles.md"
    page.write_text("# no markers\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no generated section"):
        write_roles_docs(page, [_head("a", "x", "prediction", True)])
    assert page.read_text(encoding="utf-8") == "# no markers\n"


def test_roles_page_is_current_with_the_reviewed_study_snapshots():
    # docs/background/study-roles.md lists every headline of every study with its role; the golden snapshots are the
    # reviewed outputs, so a role changed in a study without regenerating the page (--roles-docs) fails here
    import json
    import re
    from pathlib import Path

    from densim.tools.studies.validation import ROLES_LIST_MAX

    root = Path(__file__).resolve().parents[2]
    page = (root / "docs/background/study-roles.md").read_text(encoding="utf-8")
    snaps = sorted((root / "tests/golden/snapshots").glob("study-*.json"))
    assert len(snaps) >= 20
    for snap in snaps:
        study = snap.stem.removeprefix("study-")
        d = json.loads(snap.read_text(encoding="utf-8"))
        counts = [d[f"roles.{r}"] for r in ("calibration", "arithmetic", "prediction", "target")]
        within = d["predictions_passed"]
        cells = r" \| ".join(map(str, counts))
        assert re.search(rf"^\| {re.escape(study)} \| [a-z-]* \| {cells} \| {within} of {counts[2]} \|$", page, re.M), study
        if sum(counts) > ROLES_LIST_MAX:
            continue
        i = 0
        while f"headline[{i}].role" in d:
            name, role = d[f"headline[{i}].name"], d[f"headline[{i}].role"]
            name = name[:-3] if name.endswith("...") else name  # the snapshot shortens long strings
            assert re.search(rf"^\| {re.escape(study)} \| {re.escape(name)}.* \| {role} \| ", page, re.M), (study, name)
            i += 1
        assert i == sum(counts), study
