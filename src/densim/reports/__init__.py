"""Reports: one renderer for every densim HTML report (run, plan, sweep, study).

Every report is a jinja2 template in ``densim/reports/templates`` that extends ``base.html.j2``,
which carries the one style sheet, the header and footer, and loads plotly.js the same way
everywhere when the report has figures: :func:`write_report` puts plotly's own ``plotly.min.js``
(about 4.6 MB) beside the report once and loads it with a relative ``<script src>`` (offline, no
CDN; works from ``file://``), so a report is its data only; :func:`render` alone, which has no
folder, embeds it in ``<head>``. One ``Plotly.newPlot`` call per figure. Every figure gets the one plotly template of
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

from densim.atomic import write_atomic, write_text_atomic

__all__ = ["PLOTLY_JS", "render", "write_plotly_js", "write_report"]

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


#: the file name of plotly.js beside a report written by :func:`write_report`
PLOTLY_JS = "plotly.min.js"


@lru_cache(maxsize=1)
def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _plotly_js_path() -> Path:
    """plotly's own minified plotly.js, shipped in the plotly package (the file ``get_plotlyjs`` reads)."""
    import plotly

    return Path(plotly.__file__).resolve().parent / "package_data" / PLOTLY_JS


def write_plotly_js(folder: str | Path) -> Path:
    """Put plotly.js in ``folder`` as ``plotly.min.js`` unless the same file is there already; returns its path.

    Copied atomically (a reader never sees half a library); a different file of that name (another
    plotly version's) is replaced, so a report always gets the plotly.js it was rendered for."""
    import filecmp
    import shutil

    src = _plotly_js_path()
    dst = Path(folder) / PLOTLY_JS
    if dst.is_file() and filecmp.cmp(src, dst, shallow=False):
        return dst
    return write_atomic(dst, lambda p: shutil.copyfile(src, p))


def _figure_dict(fig: Any) -> dict[str, Any]:
    """A plotly Figure (or a ``{"data", "layout"}`` dict) as plain data for ``Plotly.newPlot``, in the
    one densim style (:mod:`densim.reports.style`; it replaces plotly's default template)."""
    from densim.reports.style import styled

    if hasattr(fig, "to_json"):
        import json

        fig = json.loads(fig.to_json())
    return {"data": fig.get("data", []), "layout": styled(fig.get("layout", {}))}


def render(template_name: str, /, *, figures: Mapping[str, Any] | None = None, plotly_src: str | None = None,
           **context: Any) -> str:
    """Render ``template_name`` with ``context``; ``figures`` maps an element id to a plotly figure.

    The template places an empty element with that id for each figure; the base template draws them.
    plotly.js is loaded from ``plotly_src`` (a URL relative to the report, e.g. ``plotly.min.js``) when
    given, else embedded (a self-contained page of about 4.7 MB).
    """
    import densim

    figs = {fid: _figure_dict(f) for fid, f in (figures or {}).items()}
    context.setdefault("seed", None)
    context.setdefault("subtitle", "")
    return _env().get_template(template_name).render(
        figures=figs,
        plotly_js=_plotly_js() if figs and not plotly_src else "",
        plotly_src=plotly_src if figs else None,
        version=densim.__version__,
        generator=f"{GENERATOR} {densim.__version__}",
        report_kind=template_name.split(".", 1)[0],
        **context,
    )


def write_report(path: str | Path, template_name: str, /, *, figures: Mapping[str, Any] | None = None,
                 **context: Any) -> Path:
    """Render ``template_name`` (see :func:`render`) and write it to ``path`` atomically.

    A report with figures loads ``plotly.min.js`` from its own folder (:func:`write_plotly_js` puts it
    there first), so the report itself stays well under 1 MB and still opens offline from disk."""
    path = Path(path)
    src = None
    if figures:
        write_plotly_js(path.parent)
        src = PLOTLY_JS
    return write_text_atomic(path, render(template_name, figures=figures, plotly_src=src, **context))


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
