"""Run a study: call it, add the generic fields (roles, saturation), write summary.json and a report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from densim.atomic import write_json_atomic
from densim.tools.studies.base import ROLES, Study, annotate

ROLE_TITLES = {
    "prediction": "Predictions (validation: no parameter was tuned to these figures)",
    "calibration": "Calibrations (a parameter was fitted to the figure: agreement by construction, not validation)",
    "arithmetic": "Arithmetic (accounting from inputs; estimated inputs named)",
    "target": "Targets (acceptance bounds we set, not published figures)",
}
ROLE_ORDER = ("prediction", "calibration", "arithmetic", "target")
assert set(ROLE_ORDER) == set(ROLES)


def evaluate_study(study: Study, out_dir: str | Path, seed: int = 42) -> dict[str, Any]:
    """The study's summary with the generic fields (:func:`densim.tools.studies.base.annotate`), no report."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = dict(study.run(out, seed))
    summary.setdefault("study", study.name)
    summary.setdefault("seed", seed)
    summary["area"] = study.area
    return annotate(summary)


def run_study(study: Study, out_dir: str | Path, seed: int = 42) -> dict[str, Any]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").unlink(missing_ok=True)
    summary = evaluate_study(study, out, seed)
    figures = summary.pop("figures", []) or []
    from densim.reports.html import render

    notes = summary.get("notes") or []
    if isinstance(notes, str):
        notes = [notes]
    groups = [(role, ROLE_TITLES[role], [h for h in summary["headline"] if h["role"] == role]) for role in ROLE_ORDER]
    render("study.html.j2", out / "report.html", figures={f"fig-{i}": f for i, f in enumerate(figures)},
           title=f"densim study: {study.name}", subtitle=study.description, seed=seed, summary=summary,
           n_figures=len(figures), source=study.source, groups=[g for g in groups if g[2]], notes=notes,
           roles=ROLE_ORDER)
    write_json_atomic(out / "summary.json", summary)
    return summary
