"""The study contract: a named, reproducible run that compares the model with published figures."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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


def headline(
    name: str,
    published: float,
    simulated: float,
    *,
    tolerance: float,
    source: str,
    relative: bool = False,
    unit: str = "",
    lower: float | None = None,
    upper: float | None = None,
) -> dict[str, Any]:
    """One published figure against the model's value.

    Passes when ``|simulated - published| <= tolerance`` (or ``<= tolerance * |published|`` with
    ``relative=True``), or, when ``lower``/``upper`` are given, when the value lies in that band.
    """
    if lower is not None or upper is not None:
        lo = -float("inf") if lower is None else lower
        hi = float("inf") if upper is None else upper
        passed = lo <= simulated <= hi
        tol_text = f"[{lower}, {upper}]"
    else:
        allowed = tolerance * abs(published) if relative else tolerance
        passed = abs(simulated - published) <= allowed + 1e-12
        tol_text = f"+/-{tolerance * 100:g} %" if relative else f"+/-{tolerance:g}"
    return {
        "name": name,
        "published": published,
        "simulated": float(simulated),
        "unit": unit,
        "tolerance": tol_text,
        "source": source,
        "passed": bool(passed),
    }


def all_studies() -> dict[str, Study]:
    """Every module in ``densim.studies`` that defines ``STUDY``, by study name."""
    import densim.studies as pkg

    found: dict[str, Study] = {}
    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.name in ("base",) or mod.name.startswith("_"):
            continue
        module = importlib.import_module(f"densim.studies.{mod.name}")
        study = getattr(module, "STUDY", None)
        if isinstance(study, Study):
            found[study.name] = study
    return dict(sorted(found.items()))
