"""Comparison report across the axes of a sweep: tables (mean +/- 95 % CI over replications)
and plotly figures, one self-contained HTML file with plotly.js embedded once."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from densim.tools.sweep.query import connect, ident, manifest

DEFAULT_METRICS = (
    "totals.energy_kwh",
    "hosts_used",
    "vms_unplaced",
    "totals.cpu_unserved_mhz_s",
    "qos.cpu_ready_pct_mean",
    "qos.cpu_ready_pct_worst_vm_mean",
)

# two-sided 95 % Student t quantiles for 1..30 degrees of freedom
_T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t95(df: int) -> float:
    return _T95[df - 1] if 1 <= df <= 30 else 1.96


def mean_ci(values: list[float]) -> tuple[float, float, int]:
    """Mean and the half-width of its 95 % confidence interval (Student t; 0 for one value)."""
    xs = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    n = len(xs)
    if n == 0:
        return float("nan"), float("nan"), 0
    m = sum(xs) / n
    if n == 1:
        return m, 0.0, 1
    var = sum((x - m) ** 2 for x in xs) / (n - 1)
    return m, t95(n - 1) * math.sqrt(var / n), n


def collect(store: str | Path, metrics: list[str] | None = None) -> dict[str, Any]:
    """Per-point statistics of each metric: {metric: [{values, mean, ci, n}, ...]}."""
    man = manifest(store)
    axes = list(man["axes"])
    con = connect(store)
    views = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if "summary" not in views:
        con.close()
        return {"axes": axes, "points": [], "metrics": []}
    cols = {r[0]: r[1] for r in con.execute("DESCRIBE summary").fetchall()}
    numeric = [c for c, t in cols.items() if any(k in t for k in ("DOUBLE", "INT", "FLOAT", "DECIMAL")) and c != "seed"]
    wanted = metrics or [m for m in DEFAULT_METRICS if m in numeric] or numeric[:6]
    missing = [m for m in wanted if m not in cols]
    if missing:
        from densim.errors import InputError

        raise InputError(store, "metrics", f"not in the summary: {', '.join(missing)}; known: {', '.join(numeric)}")
    sel = ", ".join(ident(m) for m in wanted)  # column names of the store's files: quoted, never spliced raw
    rows = con.execute(f"SELECT scenario, {sel} FROM summary ORDER BY scenario, seed").fetchall()
    con.close()
    by_point: dict[str, list[tuple]] = {}
    for r in rows:
        by_point.setdefault(r[0], []).append(r[1:])
    points = []
    for s in man["scenarios"]:
        vals = by_point.get(s["id"], [])
        stats = {}
        for i, m in enumerate(wanted):
            stats[m] = mean_ci([float(v[i]) if v[i] is not None else None for v in vals])
        points.append({"id": s["id"], "values": s["values"], "stats": stats, "replications": len(vals)})
    return {"axes": axes, "points": points, "metrics": wanted}


def _label(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


def figures(data: dict[str, Any]) -> list[dict[str, Any]]:
    """One figure per metric: x = first axis, one line per combination of the other axes."""
    import plotly.graph_objects as go

    axes, points = data["axes"], data["points"]
    figs = []
    for m in data["metrics"]:
        fig = go.Figure()
        if axes:
            x_axis, others = axes[0], axes[1:]
            groups: dict[str, list[dict]] = {}
            for p in points:
                key = ", ".join(f"{a}={_label(p['values'][a])}" for a in others) or m
                groups.setdefault(key, []).append(p)
            for key, ps in groups.items():
                xs = [_label(p["values"][x_axis]) for p in ps]
                ys = [p["stats"][m][0] for p in ps]
                es = [p["stats"][m][1] for p in ps]
                fig.add_trace(go.Scatter(x=xs, y=ys, name=key, mode="lines+markers",
                                         error_y={"type": "data", "array": es, "visible": True}))
            fig.update_layout(xaxis_title=x_axis, xaxis_type="category")
        else:
            p = points[0]
            fig.add_trace(go.Bar(x=["base"], y=[p["stats"][m][0]], error_y={"type": "data", "array": [p["stats"][m][1]]}))
        # style (font, margins, gridlines, y from 0) from densim.reports.style, applied when the report renders
        fig.update_layout(title=f"{m} (mean, 95 % CI over replications)", yaxis_title=m, height=420,
                          legend={"orientation": "h", "y": -0.25})
        figs.append(fig)
    return figs


def report_context(man: dict[str, Any], data: dict[str, Any], figure_ids: list[str]) -> dict[str, Any]:
    """Plain data for ``sweep.html.j2``: one row per scenario and the marginal means by axis."""
    axes, metrics = data["axes"], data["metrics"]
    points = [
        {"id": p["id"], "replications": p["replications"], "labels": [_label(p["values"][a]) for a in axes],
         "stats": [dict(zip(("mean", "ci", "n"), p["stats"][m])) for m in metrics]}
        for p in data["points"]
    ]
    marginals = []
    for a in axes:
        levels: dict[str, list[dict]] = {}
        for p in data["points"]:
            levels.setdefault(_label(p["values"][a]), []).append(p)
        marginals.append({"axis": a, "levels": [
            {"label": lvl, "means": [sum(p["stats"][m][0] for p in ps) / len(ps) for m in metrics]}
            for lvl, ps in levels.items()
        ]})
    return {
        "title": f"Sweep {man['study']}",
        "subtitle": man.get("description", ""),
        "seed": man["root_seed"],
        "n_scenarios": len(man["scenarios"]),
        "replications": man["replications"],
        "n_tasks": len(man["tasks"]),
        "done": sum(1 for t in man["tasks"] if t["done"]),
        "root_seed": man["root_seed"],
        "seeds": str(man["seeds"]),
        "axes": axes,
        "metrics": metrics,
        "points": points,
        "marginals": marginals,
        "figure_ids": figure_ids,
    }


def render(store: str | Path, *, metrics: list[str] | None = None, out: str | Path | None = None) -> Path:
    """Write ``report.html`` into the store (or ``out``) and return its path."""
    from densim.reports import write_report

    store = Path(store)
    man = manifest(store)
    data = collect(store, metrics)
    figs = {f"fig-{i}": f for i, f in enumerate(figures(data) if data["points"] else [])}
    target = Path(out) if out is not None else store / "report.html"
    return write_report(target, "sweep.html.j2", figures=figs, **report_context(man, data, list(figs)))
