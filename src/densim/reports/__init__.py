"""Reports: one renderer for every densim HTML report (run, plan, sweep, study).

Every report is a jinja2 template in ``densim/reports/templates`` that extends ``base.html.j2``,
which carries the one style sheet, the header and footer, and loads plotly.js the same way
everywhere: embedded once in ``<head>`` (offline, no CDN) when the report has figures, with
one ``Plotly.newPlot`` call per figure. Every figure gets the one plotly template of
:mod:`densim.reports.style` (font, colours, margins, gridlines, axis titles, hover). Autoescape
is on; callers pass plain data (dicts, lists, numbers, strings) and plotly figures, never HTML.

    from densim.reports import write_report
    write_report(out / "report.html", "plan.html.j2", title="Capacity plan", figures={"fig0": fig}, rows=rows)

This package sits below the tools: it imports only foundation modules (``densim.atomic``) and
stdlib at import time; jinja2 and plotly are imported when a report is rendered.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from densim.atomic import write_text_atomic

__all__ = ["render", "write_report"]

#: the value of ``<meta name="generator">`` starts with this in every report
GENERATOR = "densim"


@lru_cache(maxsize=1)
def _env():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("densim", "reports/templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = fmt_num
    env.filters["cell"] = fmt_cell
    env.filters["fixed"] = fmt_fixed
    return env


@lru_cache(maxsize=1)
def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _figure_dict(fig: Any) -> dict[str, Any]:
    """A plotly Figure (or a ``{"data", "layout"}`` dict) as plain data for ``Plotly.newPlot``, in the
    one densim style (:mod:`densim.reports.style`; it replaces plotly's default template)."""
    from densim.reports.style import styled

    if hasattr(fig, "to_json"):
        import json

        fig = json.loads(fig.to_json())
    return {"data": fig.get("data", []), "layout": styled(fig.get("layout", {}))}


def render(template_name: str, /, *, figures: Mapping[str, Any] | None = None, **context: Any) -> str:
    """Render ``template_name`` with ``context``; ``figures`` maps an element id to a plotly figure.

    The template places an empty element with that id for each figure; the base template draws them.
    """
    import densim

    figs = {fid: _figure_dict(f) for fid, f in (figures or {}).items()}
    context.setdefault("seed", None)
    context.setdefault("subtitle", "")
    return _env().get_template(template_name).render(
        figures=figs,
        plotly_js=_plotly_js() if figs else "",
        version=densim.__version__,
        generator=f"{GENERATOR} {densim.__version__}",
        report_kind=template_name.split(".", 1)[0],
        **context,
    )


def write_report(path: str | Path, template_name: str, /, *, figures: Mapping[str, Any] | None = None,
                 **context: Any) -> Path:
    """Render ``template_name`` (see :func:`render`) and write it to ``path`` atomically."""
    return write_text_atomic(path, render(template_name, figures=figures, **context))


def fmt_num(x: Any) -> str:
    """Four significant figures, thousands separated; "–" for a missing or NaN value."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    ax = abs(x)
    if ax != 0 and (ax >= 1e6 or ax < 1e-3):
        return f"{x:.4g}"
    return f"{x:,.4g}" if ax < 1000 else f"{x:,.0f}"


def fmt_cell(x: Any) -> str:
    """A table cell: floats with two decimals and thousands separated, "-" for missing or not finite."""
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:,.2f}" if math.isfinite(x) else "-"
    return str(x)


def fmt_fixed(x: Any, digits: int = 0) -> str:
    """Fixed decimals with thousands separated (``2,808``); "-" for missing or not finite."""
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:,.{digits}f}"
