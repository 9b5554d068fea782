"""The study contract: a named, reproducible run that compares the model with published figures."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Role = Literal["calibration", "arithmetic", "prediction", "target"]
ROLES: tuple[str, ...] = ("calibration", "arithmetic", "prediction", "target")
AREAS: tuple[str, ...] = ("memory", "storage", "cpu-virtualization", "power", "cluster", "cost")


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
    role: Role | None = None,
    fitted: str | None = None,
    estimated_inputs: tuple[str, ...] | list[str] = (),
) -> dict[str, Any]:
    """One published figure against the model's value.

    Passes when ``|simulated - published| <= tolerance`` (or ``<= tolerance * |published|`` with
    ``relative=True``), or, when ``lower``/``upper`` are given, when the value lies in that band.

    ``role`` says what the comparison is worth:

    * ``calibration``: a parameter was fitted to this figure (``fitted`` names it); agreement is by
      construction and never counts as a validation pass;
    * ``arithmetic``: accounting from inputs (``estimated_inputs`` names the inputs that are
      estimates rather than cited figures);
    * ``prediction``: no parameter was tuned to this figure; only these count as validation;
    * ``target``: an acceptance bound set by us, not a published measurement.
    """
    if role is not None and role not in ROLES:
        raise ValueError(f"headline {name!r}: role must be one of {', '.join(ROLES)}, got {role!r}")
    if role == "calibration" and not fitted:
        raise ValueError(f"headline {name!r}: a calibration figure must name the parameter fitted to it")
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
        "role": role,
        "fitted": fitted,
        "estimated_inputs": list(estimated_inputs),
        "validation": role == "prediction",
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
