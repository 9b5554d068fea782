"""A run's result as plain data for the page: the headline (from ``summary.json``'s figures), the
plots and the tables of the run report, binned as the report bins them.

:func:`headline` is the one formatting function for the headline; it reads only the summary dict
(``Result.summary``, the same figures ``densim run`` writes to ``summary.json``) and shares its
formatting with the run report's cards.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from densim.reports.html import READY_FLOOR_PCT, bin_time
from densim.reports.style import styled

MAX_HEAT_HOSTS = 120  # as the run report
MAX_HEAT_STEPS = 400
MAX_LINE_POINTS = 2000
WORST_VMS = 20


def headline(s: dict[str, Any]) -> list[dict[str, Any]]:
    """The headline figures of a run summary: ``{key, label, value, text}`` per figure.

    The run report's cards (:func:`densim.reports.html.headline_cards`: one formatting for the report
    and the page, failures and HA figures included), with the page's extras: VMs unplaced, the worst
    VM's CPU Ready and, with the memory model, its slowdown. ``value`` is the summary's number
    (unrounded); ``text`` is how the page shows it. Figures the summary does not carry (memory slowdown
    without the memory model, failures without a ``failures:`` section, cost: the run summary has no
    prices) are left out rather than shown as zero."""
    from densim.reports.html import headline_cards

    q = s["qos"]
    cards = {c["key"]: c for c in headline_cards(s)}
    first = ["energy_kwh", "hosts_used", "vms_placed"]
    out = [cards.pop(k) for k in first]
    out.append({"key": "vms_unplaced", "label": "VMs unplaced", "value": s["vms_unplaced"], "text": f"{s['vms_unplaced']:,}"})
    out += [cards.pop(k) for k in ("cpu_ready_pct_mean",)]
    out.append({"key": "cpu_ready_pct_worst_vm_mean", "label": "CPU Ready worst VM", "value": q["cpu_ready_pct_worst_vm_mean"],
                "text": f"{q['cpu_ready_pct_worst_vm_mean']:.2f} %"})
    out += list(cards.values())  # VMs ready > 5 %, CPU delivered, scheduling and failures figures, in the report's order
    mem = s.get("memory")
    if mem is not None:
        out.append({"key": "worst_vm_slowdown", "label": "memory slowdown worst VM", "value": mem["worst_vm_slowdown"],
                    "text": f"{mem['worst_vm_slowdown']:.3f} x"})
        out.append({"key": "vms_slowed", "label": "VMs slowed by memory", "value": mem["vms_slowed"], "text": f"{mem['vms_slowed']:,}"})
    gpu = s.get("gpu")
    if gpu is not None:  # GPU hosts (densim.engine.plugins.gpu)
        out.append({"key": "gpu_energy_kwh", "label": "GPU energy", "value": gpu["energy_kwh"],
                    "text": f"{gpu['energy_kwh']:,.2f} kWh"})
        out.append({"key": "vms_with_gpu_unplaced", "label": "GPU requests unplaced", "value": gpu["vms_with_gpu_unplaced"],
                    "text": f"{gpu['vms_with_gpu_unplaced']:,}"})
        out.append({"key": "vgpu_slowdown_worst", "label": "vGPU slowdown worst", "value": gpu["vgpu_slowdown_worst"],
                    "text": f"{gpu['vgpu_slowdown_worst']:.2f} x"})
    return out


def _round(a: np.ndarray, digits: int = 4) -> list:
    return np.round(np.asarray(a, dtype=float), digits).tolist()


def _heat(series: np.ndarray, names: np.ndarray, order: np.ndarray, step_s: float, title: str, zmax: float | None, unit: str,
          zmax_floor: float = 0.0) -> dict:
    sel = order[:MAX_HEAT_HOSTS]
    binned, f = bin_time(series[:, sel], MAX_HEAT_STEPS)
    if zmax is None and zmax_floor > 0:  # as the run report: an all-zero CPU Ready drawn on 0..5 %, not a -0.5..0.5 scale
        zmax = max(float(np.nanmax(binned, initial=0.0)), zmax_floor)
    hours = np.arange(binned.shape[0]) * f * step_s / 3600.0
    trace = {"type": "heatmap", "z": _round(binned.T), "x": _round(hours, 3), "y": [str(h) for h in names[sel]], "zmin": 0,
             "colorscale": "Viridis", "colorbar": {"title": {"text": unit}}}
    if zmax is not None:
        trace["zmax"] = zmax
    return {"data": [trace], "layout": {"title": {"text": title}, "xaxis": {"title": {"text": "hours from start"}},
                                        "yaxis": {"title": {"text": "host"}}, "height": max(300, 6 * len(sel) + 140)}}


def view(res) -> dict[str, Any]:
    """Headline, plots (plotly figure dicts) and tables of a :class:`~densim.engine.result.Result`."""
    import polars as pl

    s = res.summary.to_dict()
    c = res.ctx
    step = c.grid.step_s
    hosts, vms = res.hosts, res.vms
    used = np.flatnonzero(res.vms_per_host > 0)
    util_mean = hosts["utilisation_mean"].to_numpy()
    order = used[np.argsort(-util_mean[used], kind="stable")] if used.size else np.arange(min(c.hosts.n, MAX_HEAT_HOSTS))
    plots: list[dict[str, Any]] = []
    hs = res.host_acc.series
    if "power_w" in hs:
        total, f = bin_time(hs["power_w"].sum(axis=1, keepdims=True), MAX_LINE_POINTS)
        hours = np.arange(total.shape[0]) * f * step / 3600.0
        plots.append({"id": "power", "data": [{"type": "scatter", "mode": "lines", "x": _round(hours, 3), "y": _round(total[:, 0] / 1000.0),
                                                "name": "cluster power"}],
                      "layout": {"title": {"text": "Cluster power"}, "xaxis": {"title": {"text": "hours from start"}},
                                 "yaxis": {"title": {"text": "kW"}}, "height": 300}})
    if "utilisation" in hs:
        plots.append({"id": "util", **_heat(hs["utilisation"], c.hosts.names, order, step, "Host CPU utilisation", 1.0, "util")})
        plots.append({"id": "ready", **_heat(hs["cpu_ready_pct"], c.hosts.names, order, step, "CPU Ready per vCPU (%)", None, "%",
                                             zmax_floor=READY_FLOOR_PCT)})
    energy = (hosts.group_by("server", maintain_order=True)
              .agg(pl.col("powered_on").sum().alias("on"), (pl.col("energy_j").sum() / 3.6e6).alias("kwh"),
                   pl.col("utilisation_mean").mean().alias("util")).to_dicts())
    # lazy, so polars fuses the sort with the head into a top-k (100k VMs: 7 ms instead of 50 ms; same rows)
    worst = (vms.lazy().filter(pl.col("placed"))
             .with_columns((pl.col("cpu_unserved_mhz_s") / pl.max_horizontal(pl.col("cpu_demand_mhz_s"), pl.lit(1e-9))).alias("unserved"))
             .sort(["cpu_ready_pct_mean", "vm"], descending=[True, False]).head(WORST_VMS).collect().to_dicts())
    tables = [
        {"id": "energy", "title": "Power and energy by host group", "columns": ["host group", "hosts on", "energy (kWh)", "mean utilisation"],
         "rows": [[r["server"], f"{r['on']:,}", f"{r['kwh']:,.2f}", f"{100 * r['util']:.1f} %"] for r in energy]},
        {"id": "worst", "title": "VMs with the worst CPU Ready", "columns": ["VM", "host", "vCPUs", "mean ready %", "worst step ready %", "unserved share"],
         "rows": [[str(r["vm"]), str(r["host"]), f"{r['vcpus']}", f"{r['cpu_ready_pct_mean']:.2f}", f"{r['cpu_ready_pct_max']:.2f}",
                   f"{100 * r['unserved']:.2f} %"] for r in worst]},
    ]
    sat = s.get("saturation") or []
    if sat:
        tables.append({"id": "saturation", "title": "Saturated resources", "columns": ["resource", "kind", "peak busy", "steps", "share of time"],
                       "rows": [[str(r["resource"]), str(r["kind"]), f"{100 * r['peak']:.1f} %", f"{r['steps']}", f"{100 * r['share_of_time']:.1f} %"]
                                for r in sat[:50]]})
    return {"scenario": s["scenario"], "headline": headline(s), "unplaced": s["unplaced_vms"][:50],
            "subtitle": f"{c.grid.n_steps} steps of {step:g} s; placement {s['placement']['policy']}; CPU model {s['models']['cpu_contention']}",
            "plots": [{**p, "layout": styled(p["layout"])} for p in plots], "tables": tables}


def compare(view_a: dict[str, Any], view_b: dict[str, Any]) -> dict[str, Any]:
    """The headline figures of two runs side by side, B - A, for the page's comparison.

    A run that leaves VMs unplaced is not comparable figure for figure: its energy, hosts and CPU
    figures cover fewer VMs, so a lower energy is what it left out, not an improvement. Then
    ``warning`` says which run leaves how many VMs out and every row is ``comparable: False`` (the
    page shows it without the bold of a change), except the VMs-unplaced row itself.
    Rows: ``{key, label, a, b, delta, comparable}``; ``delta`` None for a figure one run lacks."""
    hb = {h["key"]: h for h in view_b["headline"]}
    ua = next((h["value"] for h in view_a["headline"] if h["key"] == "vms_unplaced"), None)
    ub = hb.get("vms_unplaced", {}).get("value")
    if ua is None or ub is None:  # every view's headline carries it (see headline); a missing one is a bug, not 0
        raise KeyError("vms_unplaced missing from a run's headline")
    left_out = [f"{name} leaves {n:,} VM{'s' if n != 1 else ''} unplaced" for name, n in (("A", ua), ("B", ub)) if n]
    warning = None
    if left_out:
        warning = (" and ".join(left_out) + ": infeasible, so B - A is not a like-for-like comparison "
                   "(energy, hosts and CPU figures cover only the VMs each run placed).")
    rows = []
    for h in view_a["headline"]:
        if h["key"] in hb:
            va, vb = h["value"], hb[h["key"]]["value"]
            rows.append({"key": h["key"], "label": h["label"], "a": h["text"], "b": hb[h["key"]]["text"],
                         "delta": None if va is None or vb is None else vb - va,
                         "comparable": warning is None or h["key"] == "vms_unplaced"})
    return {"headline": rows, "warning": warning}
