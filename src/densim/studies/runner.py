"""Run a study: call it, write summary.json and a generic report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from densim.atomic import write_json_atomic
from densim.studies.base import Study


def run_study(study: Study, out_dir: str | Path, seed: int = 42) -> dict[str, Any]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").unlink(missing_ok=True)
    summary = dict(study.run(out, seed))
    summary.setdefault("study", study.name)
    summary.setdefault("seed", seed)
    figures = summary.pop("figures", []) or []
    from densim.reports.html import render

    render("study.html.j2", out / "report.html", figures={f"fig-{i}": f for i, f in enumerate(figures)},
           title=f"densim study: {study.name}", subtitle=study.description, seed=seed, summary=summary,
           n_figures=len(figures), source=study.source)
    write_json_atomic(out / "summary.json", summary)
    return summary
