"""The run report (``report.html`` of ``densim run``): data from a simulation result, drawn by
``run.html.j2`` through the one renderer in :mod:`densim.reports`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from densim.reports import write_report
from densim.saturation import THRESHOLD

MAX_HEAT_HOSTS = 120
MAX_HEAT_STEPS = 400
READY_FLOOR_PCT = 5.0  # the CPU Ready colour scale reaches at least the 5 % "healthy" line of the report's note


def render(template: str, out_path: str | Path, *, figures: dict[str, Any] | None = None, **ctx: Any) -> Path:
    """Deprecated spelling of :func:`densim.reports.write_report` (``densim.tools.studies.runner`` uses it)."""
    return write_report(out_path, template, figures=figures, **ctx)


def bin_time(series: np.ndarray, max_steps: int) -> tuple[np.ndarray, int]:
    """Mean over runs of ``f`` steps so that at most ``max_steps`` remain (the last bin padded with its last value)."""
    T = series.shape[0]
    f = int(np.ceil(T / max_steps)) if T > max_steps else 1
    if f == 1:
        return series, 1
    pad = (-T) % f
    s = np.concatenate([series, np.repeat(series[-1:], pad, axis=0)]) if pad else series
    return s.reshape(-1, f, s.shape[1]).mean(axis=1), f


def _heatmap(series: np.ndarray, host_names: np.ndarray, order: np.ndarray, step_s: float, title: str, zmax: float | None, unit: str,
             zmax_floor: float = 0.0):
    """Hosts x time; the colour scale runs from 0 to ``zmax`` (or to the highest value, at least
    ``zmax_floor``, so an all-zero series is drawn on 0..floor, not on plotly's -0.4..0.4 default)."""
    import plotly.graph_objects as go

    sel = order[:MAX_HEAT_HOSTS]
    binned, f = bin_time(series[:, sel], MAX_HEAT_STEPS)
    if zmax is None:
        zmax = max(float(np.nanmax(binned, initial=0.0)), zmax_floor)
    hours = np.arange(binned.shape[0]) * f * step_s / 3600.0
    fig = go.Figure(
        go.Heatmap(z=binned.T, x=hours, y=[str(h) for h in host_names[sel]], zmin=0, zmax=zmax, colorscale="Viridis",
                   colorbar={"title": unit})
    )
    # host names get room from the style's automargin (densim.reports.style)
    fig.update_layout(title=title, xaxis_title="hours from start", yaxis_title="host", height=max(300, 14 * len(sel) + 120))
    return fig


def _section(sec: dict[str, Any]) -> dict[str, Any]:
    """A stage's extra report section as data: ``{"title", "notes": [str], "table": {"columns", "rows"}}``.

    Stages hand over text and numbers only; the template escapes them (no HTML from stages).
    """
    table = sec.get("table")
    return {"title": str(sec["title"]), "notes": [str(n) for n in sec.get("notes") or []],
            "table": {"columns": list(table["columns"]), "rows": [list(r) for r in table["rows"]]} if table else None,
            "fig_id": None}


MAX_SATURATION_ROWS = 50  # rows shown in the run report (summary.json keeps up to 200)


def idle_hosts(result) -> dict[str, Any] | None:
    """Hosts powered on with no VM (``cluster.unused_hosts: idle``): how many, and the energy they draw.

    None when there are none, and for VMs that arrive and leave (a host empty at the end may have run tasks).
    """
    if result.summary.get("scheduling") is not None:
        return None
    on = np.asarray(result.host_on, dtype=bool)
    empty = on & (np.asarray(result.vms_per_host) == 0)
    n = int(empty.sum())
    if n == 0:
        return None
    energy = result.hosts["energy_j"].to_numpy()
    total = float(energy.sum())
    idle_j = float(energy[empty].sum())
    return {"hosts": n, "on": int(on.sum()), "kwh": idle_j / 3.6e6, "share": idle_j / total if total > 0 else 0.0}


def _card(key: str, label: str, value: Any, text: str) -> dict[str, Any]:
    return {"key": key, "label": label, "value": value, "text": text}


def headline_cards(s: dict[str, Any]) -> list[dict[str, Any]]:
    """The headline figures of a run summary (``summary.json``) as ``{key, label, value, text}``: the run
    report's cards and the ``densim serve`` page's headline (one formatting for both).

    ``value`` is the summary's number, unrounded; ``text`` is how it is shown. Sections the summary lacks
    (scheduling: VMs that arrive and leave; failures) give no cards."""
    t, q = s["totals"], s["qos"]
    delivered = 100 * t["cpu_delivered_mhz_s"] / max(t["cpu_demand_mhz_s"], 1e-9)
    out = [
        _card("vms_placed", "VMs placed", s["vms_placed"], f"{s['vms_placed']:,} / {s['vms_total']:,}"),
        _card("hosts_used", "hosts used", s["hosts_used"], f"{s['hosts_used']:,} / {s['hosts_total']:,}"),
        _card("energy_kwh", "energy", t["energy_kwh"], f"{t['energy_kwh']:,.1f} kWh"),
        _card("cpu_delivered_pct", "CPU delivered", delivered, f"{delivered:.2f} % of demand"),
        _card("cpu_ready_pct_mean", "mean CPU Ready", q["cpu_ready_pct_mean"], f"{q['cpu_ready_pct_mean']:.2f} %"),
        _card("vms_ready_over_5pct", "VMs ready > 5 %", q["vms_ready_over_5pct"], f"{q['vms_ready_over_5pct']:,}"),
    ]
    sch = s.get("scheduling")
    if sch is not None:  # VMs that arrive and leave
        out += [
            _card("tasks_completed", "tasks completed", sch["completed"], f"{sch['completed']:,} / {sch['tasks_total']:,}"
                  + (f" ({sch['failed']:,} failed, {sch['waiting_at_end']:,} waiting)" if sch['failed'] or sch['waiting_at_end'] else "")),
            _card("scheduling_delay_total_s", "scheduling delay", sch["scheduling_delay_total_s"],
                  f"{sch['scheduling_delay_total_s'] / 3600:,.1f} h total, {sch['scheduling_delay_max_s'] / 3600:,.2f} h max"),
            _card("peak_concurrent", "peak concurrent", sch["peak_concurrent"], f"{sch['peak_concurrent']:,}"),
            _card("simulated_end_s", "simulated end", sch["simulated_end_s"], f"{sch['simulated_end_s'] / 3600:,.1f} h"),
        ]
    return out + failure_cards(s)


def failure_cards(s: dict[str, Any]) -> list[dict[str, Any]]:
    """Cards of ``summary["failures"]`` (host failures and HA): VM-minutes down, restart delay, CPU Ready
    on busy hosts during the failures, and whether the HA reservation held (no restart waited for capacity)."""
    f = s.get("failures")
    if not f:
        return []
    ready = f.get("cpu_ready_pct_during_failures")
    outside = f.get("cpu_ready_pct_outside_failures")
    waited = f["waited_for_capacity"]
    return [
        _card("vm_minutes_down", "VM-minutes down", f["vm_minutes_down"],
              f"{f['vm_minutes_down']:,.1f} ({f['vms_interrupted']:,} VMs interrupted)"),
        _card("restart_delay_s_mean", "restart delay", f["restart_delay_s_mean"],
              f"{f['restart_delay_s_mean']:,.0f} s mean, {f['restart_delay_s_max']:,.0f} s max" if f["restarts"]
              else f"no restart by the end ({f['not_restarted_by_end']:,} VMs not restarted)"),
        _card("cpu_ready_pct_during_failures", "CPU Ready during failures", ready,
              "- (no busy host)" if ready is None else f"{ready:.2f} %" + ("" if outside is None else f" ({outside:.2f} % outside)")),
        _card("reservation_held", f"HA reservation held (admission {f['admission']})", int(bool(f["reservation_held"])),
              "yes" if f["reservation_held"] else f"no: {waited:,} restart(s) waited for capacity"),
    ]


def render_run_report(result, out_path: str | Path) -> Path:
    import plotly.graph_objects as go

    s = result.summary
    c = result.ctx
    hosts = result.hosts
    vms = result.vms
    step = c.grid.step_s
    used = np.flatnonzero(result.vms_per_host > 0)
    util_mean = hosts["utilisation_mean"].to_numpy()
    order = used[np.argsort(-util_mean[used], kind="stable")] if used.size else np.arange(min(c.hosts.n, MAX_HEAT_HOSTS))
    figures: dict[str, Any] = {}
    hs = result.host_acc.series
    if "utilisation" in hs:
        figures["fig-util"] = _heatmap(hs["utilisation"], c.hosts.names, order, step, "CPU utilisation", 1.0, "util")
        figures["fig-ready"] = _heatmap(hs["cpu_ready_pct"], c.hosts.names, order, step, "CPU Ready per vCPU (%)", None, "%",
                                        zmax_floor=READY_FLOOR_PCT)
        total_p, f = bin_time(hs["power_w"].sum(axis=1, keepdims=True), 2000)
        hours = np.arange(total_p.shape[0]) * f * step / 3600.0
        figures["fig-power"] = go.Figure(go.Scatter(x=hours, y=total_p[:, 0] / 1000.0, mode="lines", name="cluster power"))
        # from 0 kW: a constant draw would otherwise get plotly's symmetric -0.5..1 axis
        figures["fig-power"].update_layout(title="Cluster power", xaxis_title="hours from start", yaxis_title="kW", height=320,
                                           yaxis_rangemode="tozero")
    heat_note = (
        f"The {min(MAX_HEAT_HOSTS, len(order))} busiest of {len(used)} hosts with VMs"
        + (f"; time binned to at most {MAX_HEAT_STEPS} columns" if c.grid.n_steps > MAX_HEAT_STEPS else "")
        + "."
    )
    import polars as pl

    energy_rows = (
        hosts.group_by("server", maintain_order=True)
        .agg(pl.col("powered_on").sum().alias("on"), (pl.col("energy_j").sum() / 3.6e6).alias("kwh"), pl.col("utilisation_mean").mean().alias("util"))
        .to_dicts()
    )
    worst = (
        vms.filter(pl.col("placed"))
        .with_columns((pl.col("cpu_unserved_mhz_s") / pl.max_horizontal(pl.col("cpu_demand_mhz_s"), pl.lit(1e-9))).alias("unserved_share"))
        .sort(["cpu_ready_pct_mean", "vm"], descending=[True, False])
        .head(20)
        .to_dicts()
    )
    ready_max = float(np.nanmax(hs["cpu_ready_pct"], initial=0.0)) if "cpu_ready_pct" in hs else None
    idle = idle_hosts(result)
    cards = [(c["label"], c["text"]) for c in headline_cards(s)]
    sch = s.get("scheduling")
    if sch is not None:  # VMs that arrive and leave
        steps = result.schedule_steps()
        if steps is not None:
            hours = (steps["time_s"].to_numpy() - c.grid.start_s) / 3600.0
            fig = go.Figure()
            fig.add_trace(go.Scatter(x=hours, y=steps["running"].to_numpy(), mode="lines", name="running"))
            fig.add_trace(go.Scatter(x=hours, y=steps["waiting"].to_numpy(), mode="lines", name="waiting"))
            fig.update_layout(title="Tasks running and waiting", xaxis_title="hours from start", yaxis_title="tasks", height=320)
            figures["fig-tasks"] = fig
    extra = []
    for st in result.stages:
        fn = getattr(st, "report_section", None)
        if fn is not None:
            sec = fn(c, result)
            if sec:
                one = _section(sec)
                if sec.get("figure"):  # a plotly figure dict (the HCI datastore's latency during resyncs over time)
                    one["fig_id"] = f"fig-stage-{len(extra)}"
                    figures[one["fig_id"]] = go.Figure(sec["figure"])
                extra.append(one)
    return write_report(
        out_path, "run.html.j2", figures=figures, title=f"densim run: {s['scenario']}",
        subtitle=f"{c.grid.n_steps} steps of {step:g} s; placement {s['placement']['policy']}; CPU model {s['models']['cpu_contention']}",
        seed=s["seed"], cards=cards, unplaced=s["unplaced_vms"], unplaced_count=s["vms_unplaced"], ready_max=ready_max, idle=idle,
        heat_note=heat_note, energy_rows=energy_rows, worst=worst,
        extra_sections=extra, saturation=s.get("saturation", [])[:MAX_SATURATION_ROWS],
        saturation_total=len(s.get("saturation", [])), saturation_threshold=THRESHOLD,
    )
