"""One look for every densim figure: a plotly layout template shared by the run, plan, study, sweep
and forecast reports (and the ``densim serve`` page).

:func:`styled` puts :data:`TEMPLATE` into a figure's layout; :func:`densim.reports.render` calls it for
every figure it draws, so a report never shows plotly's default look. A figure keeps whatever it sets
itself (an explicit range, margin or colour wins over the template), so the template carries only the
shared style: font (the report's CSS font), colours, margins, gridlines, axis titles, hover labels.

Y axes start at 0 (``rangemode: tozero``): the reports plot quantities (kW, %, IOPS, USD, hosts),
where an axis cut near the data exaggerates differences, and an all-zero series would otherwise get
plotly's symmetric -1..1 axis. A figure that needs another range sets ``range`` itself.

For plotly.py users (notebooks): ``import plotly.io as pio; pio.templates["densim"] = plotly_template()``.

This module imports nothing at import time but the standard library (the reports package sits low
in the layers); plotly is imported only by :func:`plotly_template`.
"""

from __future__ import annotations

import copy
from typing import Any

#: the font stack of the reports' style sheet (``base.html.j2``)
FONT_FAMILY = 'system-ui, -apple-system, "Segoe UI", sans-serif'
INK = "#1d2733"  # text, as the CSS body colour
MUTED = "#5b6b7c"  # secondary text, as the CSS .note colour
GRID = "#e6ebf0"  # as the CSS table rules
LINE = "#c9d2dc"  # axis lines, as the CSS .role border

#: trace colours in order: blue, red, green, amber, purple, teal, light blue, grey (the plan report's
#: blue/red/green first, so the reports agree on what a colour means where they set none)
COLORWAY = ["#3b6ea8", "#c0504d", "#6a9a58", "#d99a2b", "#7b5ea7", "#3a9ca6", "#9ab7d8", "#7a8693"]

_AXIS: dict[str, Any] = {
    "showgrid": True, "gridcolor": GRID, "gridwidth": 1,
    "zeroline": True, "zerolinecolor": LINE, "zerolinewidth": 1,
    "showline": True, "linecolor": LINE, "linewidth": 1, "mirror": False,
    "ticks": "outside", "tickcolor": LINE, "ticklen": 4,
    "tickfont": {"size": 12, "color": MUTED},
    "title": {"font": {"size": 13, "color": MUTED}, "standoff": 8},
    "automargin": True,
}

#: the template as plain data (``layout.template`` of a figure dict; plotly.js applies it)
TEMPLATE: dict[str, Any] = {
    "layout": {
        "font": {"family": FONT_FAMILY, "size": 13, "color": INK},
        "colorway": COLORWAY,
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "title": {"x": 0, "xanchor": "left", "pad": {"l": 12}, "font": {"size": 15, "color": INK}},
        "margin": {"l": 60, "r": 30, "t": 60, "b": 50, "pad": 0},
        "xaxis": _AXIS,
        "yaxis": {**_AXIS, "rangemode": "tozero"},
        "legend": {"font": {"size": 12}, "bgcolor": "rgba(255,255,255,0)"},
        "hoverlabel": {"bgcolor": "#ffffff", "bordercolor": LINE, "font": {"family": FONT_FAMILY, "size": 12, "color": INK},
                       "align": "left"},
        "hovermode": "closest",
        "colorscale": {"sequential": "Viridis"},
        "bargap": 0.25,
    },
    "data": {
        "scatter": [{"line": {"width": 2}, "marker": {"size": 7}}],
        "bar": [{"marker": {"line": {"width": 0}}}],
        "heatmap": [{"colorscale": "Viridis"}],
    },
}


def styled(layout: dict[str, Any] | None) -> dict[str, Any]:
    """``layout`` with the densim template (replacing any other, e.g. the ``plotly`` default template
    that ``plotly.graph_objects`` figures carry). The figure's own settings still win over the template."""
    out = dict(layout or {})
    out["template"] = copy.deepcopy(TEMPLATE)
    return out


def style_figure(fig: dict[str, Any]) -> dict[str, Any]:
    """A ``{"data", "layout"}`` figure dict with :func:`styled` applied to its layout (a new dict)."""
    return {**fig, "layout": styled(fig.get("layout"))}


def plotly_template():
    """:data:`TEMPLATE` as a ``plotly.graph_objects.layout.Template`` (to register in ``plotly.io.templates``)."""
    import plotly.graph_objects as go

    return go.layout.Template(copy.deepcopy(TEMPLATE))
