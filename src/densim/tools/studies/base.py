"""The study contract: a named, reproducible run that compares the model with published figures."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

Role = Literal["calibration", "arithmetic", "prediction", "target"]
ROLES: tuple[str, ...] = ("calibration", "arithmetic", "prediction", "target")
AREAS: tuple[str, ...] = ("memory", "storage", "cpu-virtualization", "power", "cluster", "cost", "gpu")


@dataclass(frozen=True)
class Study:
    """A built-in study.

    ``run(out_dir, seed)`` returns the summary dict. It must contain ``headline`` (a list made with
    :func:`headline`) and may contain ``figures`` (plotly figure dicts) for the report.
    """

    name: str
    description: str
    run: Callable[[Path, int], dict[str, Any]]
    source: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)
    area: str = ""  # one of AREAS: where its figures count in the validation table

    def __post_init__(self) -> None:
        if self.area not in AREAS:
            raise ValueError(f"study {self.name!r}: area must be one of {', '.join(AREAS)}, got {self.area!r}")


def headline(
    name: str,
    published: float,
    simulated: float | None,
    *,
    tolerance: float,
    source: str,
    relative: bool = False,
    unit: str = "",
    lower: float | None = None,
    upper: float | None = None,
    role: Role,
    fitted: str | None = None,
    estimated_inputs: Sequence[str] = (),
    rests_on: Sequence[str] = (),
    why: str | None = None,
) -> dict[str, Any]:
    """One published figure against the model's value.

    Passes when ``|simulated - published| <= tolerance`` (or ``<= tolerance * |published|`` with
    ``relative=True``), or, when ``lower``/``upper`` are given, when the value lies in that band.
    ``simulated=None``: the model refuses the case (its inputs say too little); the figure never
    passes and the validation table keeps it as a miss with no model value.

    ``role`` says what the comparison is worth:

    * ``calibration``: a parameter was fitted to this figure (``fitted`` names it); agreement is by
      construction and never counts as a validation pass;
    * ``arithmetic``: accounting from inputs (``estimated_inputs`` names the inputs that are
      estimates rather than cited figures);
    * ``prediction``: no parameter was tuned to this figure; only these count as validation;
    * ``target``: an acceptance bound set by us, not a published measurement (``published`` holds
      the bound; reports show it as a target, never as a published figure).

    ``role`` is required. ``why`` says, for a figure that is not a prediction, why it is not (e.g.
    "Little's law on the same post's IOPS"); the validation page lists every such figure with it.
    ``rests_on`` names the runs/configurations of the study the figure is
    computed from (the ``run`` of the rows made with :func:`busy_check`); :func:`annotate` lists
    the saturated resources of those runs in the headline's ``saturated`` field.
    """
    if role not in ROLES:
        raise ValueError(f"headline {name!r}: role must be one of {', '.join(ROLES)}, got {role!r}")
    if why is not None and role == "prediction":
        raise ValueError(f"headline {name!r}: 'why' explains a figure that is not a prediction; this one is")
    if role == "calibration" and not fitted:
        raise ValueError(f"headline {name!r}: a calibration figure must name the parameter fitted to it")
    if lower is not None or upper is not None:
        lo = -float("inf") if lower is None else lower
        hi = float("inf") if upper is None else upper
        passed = simulated is not None and lo <= simulated <= hi
        tol_text = f">= {lower:g}" if upper is None else f"<= {upper:g}" if lower is None else f"[{lower:g}, {upper:g}]"
    else:
        allowed = tolerance * abs(published) if relative else tolerance
        passed = simulated is not None and abs(simulated - published) <= allowed + 1e-12
        tol_text = f"+/-{tolerance * 100:g} %" if relative else f"+/-{tolerance:g}"
    return {
        "name": name,
        "published": published,
        "simulated": None if simulated is None else float(simulated),
        "unit": unit,
        "tolerance": tol_text,
        "source": source,
        "passed": bool(passed),
        "role": role,
        "fitted": fitted,
        "estimated_inputs": list(estimated_inputs),
        "validation": role == "prediction",
        "rests_on": list(rests_on),
        "saturated": [],
        **({"why": why} if why else {}),
    }


# --------------------------------------------------------------------------- roles and saturation
def role_counts(heads: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Headline counts by role, and how many predictions (the only validation figures) pass.

    Raises ``ValueError`` when a headline has no valid role. Calibration, arithmetic and target
    figures never count as validation passes, whatever their ``passed``.
    """
    counts = dict.fromkeys(ROLES, 0)
    passed = total = 0
    for h in heads:
        role = h.get("role")
        if role not in ROLES:
            raise ValueError(f"headline {h.get('name')!r} has no valid role ({role!r}); one of {', '.join(ROLES)}")
        counts[role] += 1
        if role == "prediction":
            total += 1
            passed += bool(h.get("passed"))
    return {"roles": counts, "predictions_passed": passed, "predictions_total": total}


def busy_check(
    run: str,
    names: Sequence[str],
    busy: Any,
    *,
    kind: str,
    step_s: float | None = None,
) -> dict[str, Any]:
    """The busy shares of the resources one run/configuration of a study models.

    ``busy`` is ``(len(names),)`` for a steady-state operating point or ``(steps, len(names))`` for
    a time series (fractions, 1.0 = 100 %). Returns the run's busiest resource and its saturation
    rows (:func:`densim.saturation.saturation_rows`, resource names prefixed with the run); a study
    returns a list of these under ``busy`` and :func:`annotate` turns them into ``saturation``.
    """
    from densim.saturation import saturation_rows

    b = np.asarray(busy, dtype=float)
    labels = [f"{run}: {n}" for n in names]
    rows = saturation_rows(labels, b, kind=kind, step_s=step_s)
    for r in rows:
        r["run"] = run
    peaks = (b if b.ndim == 1 else np.nanmax(b, axis=0)) if b.size else np.zeros(0)
    j = int(np.nanargmax(peaks)) if peaks.size and np.isfinite(peaks).any() else None
    return {
        "run": run,
        "kind": kind,
        "resources": len(labels),
        "busiest": labels[j] if j is not None else None,
        "peak": float(peaks[j]) if j is not None else None,
        "rows": rows,
    }


def annotate(summary: dict[str, Any]) -> dict[str, Any]:
    """Add the generic study fields to a study's summary (in place; returns it).

    * ``roles`` (headline counts by role), ``predictions_passed``, ``predictions_total``;
    * ``saturation``: every resource at or above 90 % busy in any run the study evaluates (from the
      study's ``busy`` checks, which are replaced by the compact ``busy_checked`` list: run, kind,
      resources checked, busiest resource and its peak);
    * each headline's ``saturated``: the saturated resources of the runs it ``rests_on``.
    """
    from densim.saturation import summarise

    heads = summary.setdefault("headline", [])
    summary.update(role_counts(heads))
    checks = summary.pop("busy", None) or []
    rows = summarise([r for c in checks for r in c["rows"]], limit=500)
    summary["saturation"] = rows
    summary["busy_checked"] = [{k: v for k, v in c.items() if k != "rows"} for c in checks]
    for h in heads:
        runs = set(h.get("rests_on") or ())
        h["saturated"] = [r["resource"] for r in rows if r.get("run") in runs]
    return summary


def all_studies() -> dict[str, Study]:
    """Every module in ``densim.tools.studies`` that defines ``STUDY``, by study name."""
    import densim.tools.studies as pkg

    found: dict[str, Study] = {}
    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.name in ("base",) or mod.name.startswith("_"):
            continue
        module = importlib.import_module(f"densim.tools.studies.{mod.name}")
        study = getattr(module, "STUDY", None)
        if isinstance(study, Study):
            found[study.name] = study
    return dict(sorted(found.items()))
