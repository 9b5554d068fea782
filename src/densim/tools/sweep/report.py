"""Comparison report across the axes of a sweep: tables (mean +/- 95 % CI over replications)
and plotly figures, one self-contained HTML file with plotly.js embedded once."""

from __future__ import annotations

import json
import math
import re
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

# readable names of summary fields and sweep axes (field path -> label with its unit)
_LABELS = {
    "totals.energy_kwh": "energy (kWh)",
    "totals.energy_j": "energy (J)",
    "totals.cpu_demand_mhz_s": "CPU demand (MHz·s)",
    "totals.cpu_delivered_mhz_s": "CPU delivered (MHz·s)",
    "totals.cpu_unserved_mhz_s": "CPU unserved (MHz·s)",
    "totals.cpu_ready_s": "CPU Ready (s)",
    "hosts_total": "hosts",
    "hosts_used": "hosts used",
    "hosts_powered_on": "hosts powered on",
    "vms_total": "VMs",
    "vms_placed": "VMs placed",
    "vms_unplaced": "VMs unplaced",
    "rack_units_powered_on": "rack units powered on (U)",
    "qos.cpu_ready_pct_mean": "mean CPU Ready (%)",
    "qos.cpu_ready_pct_worst_vm_mean": "CPU Ready of the worst VM (%)",
    "qos.cpu_ready_pct_worst_step": "CPU Ready in the worst step (%)",
    "qos.vms_ready_over_5pct": "VMs with CPU Ready > 5 %",
    "qos.vms_ready_over_10pct": "VMs with CPU Ready > 10 %",
    "placement.cpu_overcommit": "CPU over-commit",
    "placement.memory_overcommit": "memory over-commit",
    "placement.policy": "placement policy",
    "simulation.step": "simulation step",
    "simulation.horizon": "simulation horizon",
}
# unit suffixes of field names, longest first
_UNITS = (("_mhz_s", "MHz·s"), ("_kwh", "kWh"), ("_pct", "%"), ("_usd", "USD"), ("_ms", "ms"), ("_mhz", "MHz"),
          ("_gib", "GiB"), ("_w", "W"), ("_j", "J"), ("_s", "s"))
_GROUP = re.compile(r"^(cluster\.hosts|vms|cluster\.datastores|datastores)\[(\d+)\]\.(.+)$")
_GROUP_NAME = {"cluster.hosts": "host group", "vms": "VM group", "cluster.datastores": "datastore", "datastores": "datastore"}


def _words(name: str) -> str:
    """``cpu_ready_pct_worst`` -> 'cpu ready worst (%)': underscores to spaces, a unit suffix to '(unit)'."""
    for suffix, unit in _UNITS:
        if name.endswith(suffix) and len(name) > len(suffix):
            return f"{name[: -len(suffix)].replace('_', ' ')} ({unit})"
        if f"{suffix}_" in name:  # a unit inside the name: cpu_ready_pct_mean -> cpu ready mean (%)
            head, _, tail = name.partition(f"{suffix}_")
            return f"{head.replace('_', ' ')} {tail.replace('_', ' ')} ({unit})"
    return name.replace("_", " ")


def field_label(path: str) -> str:
    """A human label (with its unit) for a summary field or axis path: ``totals.energy_kwh`` -> 'energy (kWh)',
    ``cluster.hosts[0].count`` -> 'hosts (group 0)'; an unknown path is made readable
    (``memory.worst_vm_slowdown`` -> 'worst vm slowdown (memory)')."""
    if path in _LABELS:
        return _LABELS[path]
    g = _GROUP.match(path)
    if g:
        base, idx, rest = g.groups()
        if rest == "count":
            return f"{'hosts' if base == 'cluster.hosts' else 'VMs' if base == 'vms' else 'datastores'} (group {idx})"
        inner = field_label(rest)
        where = f"{_GROUP_NAME[base]} {idx}"
        return f"{inner[:-1]}, {where})" if inner.endswith(")") else f"{inner} ({where})"
    parts = [q for q in re.split(r"[.\[\]]+", path) if q]
    if not parts:
        return path
    last = _words(parts[-1])
    context = " ".join(q.replace("_", " ") for q in parts[:-1] if q not in ("totals", "qos"))
    return f"{last} ({context})" if context else last


# metrics where a higher value is the better one (every other compared metric: lower is better)
HIGHER_IS_BETTER = frozenset({"vms_placed", "totals.cpu_delivered_mhz_s"})


def t95(df: int) -> float:
    """Two-sided 95 % Student t quantile for ``df`` degrees of freedom (``scipy.stats.t.ppf(0.975, df)``:
    2.021 at df 40, not the normal 1.96 a hand-typed table falls back to)."""
    from densim._distributions import t_ppf

    return float(t_ppf(0.975, df))


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


UNPLACED = "vms_unplaced"  # the summary's count of VMs the placement left out (engine runner)


def collect(store: str | Path, metrics: list[str] | None = None) -> dict[str, Any]:
    """Per-point statistics of each metric: {metric: [{values, mean, ci, n}, ...]}, and each point's
    feasibility: ``unplaced`` (the most VMs any of its replications left unplaced) and ``feasible``
    (no VM left out; None when the runner's summary has no ``vms_unplaced``, so it cannot be checked)."""
    man = manifest(store)
    axes = list(man["axes"])
    con = connect(store)
    views = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if "summary" not in views:
        con.close()
        return {"axes": axes, "points": [], "metrics": [], "checked": False}
    cols = {r[0]: r[1] for r in con.execute("DESCRIBE summary").fetchall()}
    numeric = [c for c, t in cols.items() if any(k in t for k in ("DOUBLE", "INT", "FLOAT", "DECIMAL")) and c != "seed"]
    wanted = metrics or [m for m in DEFAULT_METRICS if m in numeric] or numeric[:6]
    missing = [m for m in wanted if m not in cols]
    if missing:
        from densim.errors import InputError

        raise InputError(store, "metrics", f"not in the summary: {', '.join(missing)}; known: {', '.join(numeric)}")
    checked = UNPLACED in numeric
    read = wanted + ([UNPLACED] if checked else [])
    sel = ", ".join(ident(m) for m in read)  # column names of the store's files: quoted, never spliced raw
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
        unplaced = None
        if checked:
            counts = [int(v[-1]) for v in vals if v[-1] is not None]
            unplaced = (min(counts), max(counts)) if counts else None
        feasible = None if unplaced is None else unplaced[1] == 0
        points.append({"id": s["id"], "values": s["values"], "stats": stats, "replications": len(vals),
                       "unplaced": unplaced, "feasible": feasible})
    return {"axes": axes, "points": points, "metrics": wanted, "checked": checked}


def infeasible_mark(p: dict[str, Any]) -> str:
    """'infeasible: 54 VMs unplaced' ('2 to 54' when replications differ); '' for a feasible or unchecked point."""
    if p.get("feasible") is not False:
        return ""
    lo, hi = p["unplaced"]
    n = f"{hi:,}" if lo == hi else f"{lo:,} to {hi:,}"
    return f"infeasible: {n} VM{'s' if hi != 1 else ''} unplaced"


def ordered(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Feasible (or unchecked) points first, in the sweep's order, then the infeasible ones."""
    return sorted(points, key=lambda p: p.get("feasible") is False)


def _label(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


def _setting(p: dict[str, Any], axes: list[str]) -> str:
    return ", ".join(f"{field_label(a)} = {_label(p['values'][a])}" for a in axes)


def answer(data: dict[str, Any]) -> dict[str, Any]:
    """The report's first section: the setting with the best value of the study's first metric among the
    points that place every VM (lowest, or highest for :data:`HIGHER_IS_BETTER`); points that leave VMs
    unplaced are never the answer. ``{"text", "best", "metric", "excluded"}``."""
    axes, points, metrics = data["axes"], data["points"], data["metrics"]
    if not points or not metrics:
        return {"text": "No results yet: run the sweep first.", "best": None, "metric": None, "excluded": []}
    m = metrics[0]
    higher = m in HIGHER_IS_BETTER
    ok = [p for p in points if p.get("feasible") is not False and p["stats"][m][2] > 0]
    bad = [p for p in points if p.get("feasible") is False]
    excluded = [{"id": p["id"], "setting": _setting(p, axes) or "base", "mark": infeasible_mark(p)} for p in bad]
    label = field_label(m)
    if not ok:
        near = min(bad, key=lambda p: p["unplaced"][1]) if bad else None
        text = (f"No setting places every VM. The nearest, {_setting(near, axes) or 'the base scenario'} "
                f"(scenario {near['id']}), is {infeasible_mark(near)}." if near else "No point has a value of " + label + ".")
        return {"text": text, "best": None, "metric": label, "excluded": excluded}
    best = (max if higher else min)(ok, key=lambda p: p["stats"][m][0])
    mean, ci, n = best["stats"][m]
    value = f"{mean:,.4g}" + (f" ± {ci:,.2g}" if n > 1 and ci > 0 else "")
    which = "Highest" if higher else "Lowest"
    scope = "among the settings that place every VM" if data.get("checked") else \
        "(not checked for unplaced VMs: the runner's summary has no vms_unplaced)"
    text = f"{which} {label} {scope}: {value} at {_setting(best, axes) or 'the base scenario'} (scenario {best['id']})."
    others = [f"{field_label(o)} {best['stats'][o][0]:,.4g}" for o in metrics[1:] if o != UNPLACED and best["stats"][o][2] > 0]
    if others:  # a sweep states no QoS bounds: the answer's other figures, to check before choosing it
        text += f" There: {'; '.join(others)}. The study sets no QoS bounds: check these before choosing it."
    return {"text": text, "best": best["id"], "metric": label, "excluded": excluded}


def figures(data: dict[str, Any]) -> list[dict[str, Any]]:
    """One figure per metric: x = first axis, one line per combination of the other axes. A point that
    leaves VMs unplaced is not on its line (a gap: the line never dips to it); it is drawn as a red cross
    labelled 'infeasible', its hover text says how many VMs it left out, and the legend names the mark."""
    import plotly.graph_objects as go

    axes, points = data["axes"], data["points"]
    figs = []
    for m in data["metrics"]:
        fig = go.Figure()
        mlabel = field_label(m)
        if axes:
            x_axis, others = axes[0], axes[1:]
            groups: dict[str, list[dict]] = {}
            for p in points:
                key = ", ".join(f"{field_label(a)} = {_label(p['values'][a])}" for a in others) or mlabel
                groups.setdefault(key, []).append(p)
            for key, ps in groups.items():
                ok = [p.get("feasible") is not False for p in ps]
                fig.add_trace(go.Scatter(
                    x=[_label(p["values"][x_axis]) for p in ps], y=[p["stats"][m][0] if f else None for p, f in zip(ps, ok)],
                    name=key, mode="lines+markers", connectgaps=False,
                    error_y={"type": "data", "array": [p["stats"][m][1] if f else None for p, f in zip(ps, ok)], "visible": True},
                    hovertext=["places every VM" if data.get("checked") else "" for _ in ps]))
            bad = [p for p in points if p.get("feasible") is False]
            if bad:
                fig.add_trace(go.Scatter(
                    x=[_label(p["values"][x_axis]) for p in bad], y=[p["stats"][m][0] for p in bad],
                    name="✕ infeasible: leaves VMs unplaced", mode="markers+text", text=["infeasible"] * len(bad),
                    textposition="bottom center", textfont={"color": "#c0392b", "size": 11},
                    marker={"symbol": "x", "size": 12, "color": "#c0392b"},
                    error_y={"type": "data", "array": [p["stats"][m][1] for p in bad], "visible": True, "color": "#c0392b"},
                    hovertext=[f"{_setting(p, others) + ': ' if others else ''}{infeasible_mark(p)}" for p in bad]))
            fig.update_layout(xaxis_title=field_label(x_axis), xaxis_type="category")
        else:
            p = points[0]
            fig.add_trace(go.Bar(x=[infeasible_mark(p) or "base"], y=[p["stats"][m][0]],
                                 error_y={"type": "data", "array": [p["stats"][m][1]]}))
        # style (font, margins, gridlines, y from 0) from densim.reports.style, applied when the report renders
        fig.update_layout(title=f"{mlabel} (mean, 95 % CI over replications)", yaxis_title=mlabel, height=420,
                          legend={"orientation": "h", "y": -0.25})
        figs.append(fig)
    return figs


def report_context(man: dict[str, Any], data: dict[str, Any], figure_ids: list[str]) -> dict[str, Any]:
    """Plain data for ``sweep.html.j2``: the answer, one row per scenario (those that leave VMs unplaced
    last, marked) and the marginal means by axis over the points that place every VM."""
    axes, metrics = data["axes"], data["metrics"]
    points = [
        {"id": p["id"], "replications": p["replications"], "labels": [_label(p["values"][a]) for a in axes],
         "stats": [dict(zip(("mean", "ci", "n"), p["stats"][m])) for m in metrics],
         "feasible": p.get("feasible") is not False, "mark": infeasible_mark(p)}
        for p in ordered(data["points"])
    ]
    marginals = []
    for a in axes:
        levels: dict[str, list[dict]] = {}
        for p in data["points"]:
            levels.setdefault(_label(p["values"][a]), []).append(p)
        rows = []
        for lvl, ps in levels.items():
            ok = [p for p in ps if p.get("feasible") is not False]
            rows.append({"label": lvl, "feasible": bool(ok), "excluded": len(ps) - len(ok),
                         "mark": "" if ok else f"infeasible: all {len(ps)} point(s) leave VMs unplaced",
                         "means": [sum(p["stats"][m][0] for p in ok) / len(ok) if ok else None for m in metrics]})
        marginals.append({"axis": a, "axis_label": field_label(a), "levels": sorted(rows, key=lambda r: not r["feasible"])})
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
        "axis_labels": [field_label(a) for a in axes],
        "metrics": metrics,
        "metric_labels": [field_label(m) for m in metrics],
        "answer": answer(data),
        "checked": data.get("checked", False),
        "n_infeasible": sum(1 for p in data["points"] if p.get("feasible") is False),
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
