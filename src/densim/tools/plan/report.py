"""Outputs of ``densim plan``: summary.json, ranking.csv, placement.csv and a self-contained report.html.

Every file is written to a temporary name and renamed, so an interrupted run leaves no
complete-looking partial output. plotly.js is embedded once per report (offline, no CDN).
"""

from __future__ import annotations

import csv
import html
import io
import json
from pathlib import Path

import numpy as np

from densim.tools.plan.capacity import PlanResult
from densim.atomic import write_json_atomic, write_text_atomic


def summary_dict(res: PlanResult, seed: int | None = None) -> dict:
    inv = res.inventory
    ranked = res.ranked()
    out = {
        "inventory": {"source": inv.source, "format": inv.fmt, "vms": inv.n_vms, "vcpus": int(inv.vcpus.sum()),
                      "memory_gib": float(inv.mem_bytes.sum() / 2**30), "steps": inv.n_steps, "step_s": inv.step_s,
                      "demand_rule": inv.demand_rule},
        "qos": res.spec.qos.model_dump(),
        "memory": res.spec.memory.model_dump(by_alias=True) if res.spec.memory is not None else None,
        "storage": {c.name: c.storage.model_dump(by_alias=True) for c in res.spec.candidates if c.storage is not None},
        "policy": res.spec.policy,
        "windows": res.spec.windows,
        "cost_inputs": res.spec.cost.model_dump(),
        "ranking": [r.row() | {"tco": r.tco, "optimiser": r.optimiser} for r in ranked],
        "best": ranked[0].name if ranked and ranked[0].feasible else None,
        "seed": seed,
        "wall_s": res.wall_s,
    }
    if res.rightsizing is not None:
        rs = res.rightsizing
        out["rightsizing"] = {"percentile": rs.percentile, "headroom": rs.headroom,
                              "vcpus_reclaimed": rs.vcpus_reclaimed,
                              "memory_reclaimed_gib": rs.mem_reclaimed_bytes / 2**30,
                              "undersized_vms": int(rs.undersized.sum())}
    return out


def placement_csv(res: PlanResult) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["candidate", "vm", "host", "vcpus", "memory_gib"])
    inv = res.inventory
    for r in res.ranked():
        if r.host_of_vm is None:
            continue
        for name, h, v, m in zip(inv.names, r.host_of_vm, inv.vcpus, inv.mem_bytes):
            w.writerow([r.name, name, f"{r.name}-{int(h) + 1:03d}", int(v), f"{m / 2**30:.3f}"])
    return buf.getvalue()


def _dict_rows_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def rightsizing_csv(res: PlanResult) -> str:
    return _dict_rows_csv(res.rightsizing.table())


def ranking_csv(res: PlanResult) -> str:
    return _dict_rows_csv([r.row() for r in res.ranked()])


def figures(res: PlanResult) -> list[dict]:
    ok = [r for r in res.ranked() if r.feasible]
    figs = []
    if ok:
        figs.append({
            "data": [{
                "type": "scatter", "mode": "markers+text", "x": [r.vms_per_host for r in ok],
                "y": [r.tco["per_vm_usd"] for r in ok], "text": [r.name for r in ok], "textposition": "top center",
                "marker": {"size": [12 + 2 * r.ready_pct_worst for r in ok], "color": [r.ready_pct_worst for r in ok],
                           "colorscale": "Viridis", "showscale": True, "colorbar": {"title": {"text": "worst ready %"}}},
                "hovertemplate": "%{text}<br>%{x:.1f} VMs/host<br>$%{y:.0f} per VM-year<extra></extra>",
            }],
            "layout": {"title": {"text": "Density, quality of service and cost per candidate"},
                       "xaxis": {"title": {"text": "VMs per host (density)"}},
                       "yaxis": {"title": {"text": "TCO per VM-year (USD)"}}, "height": 460},
        })
        parts = ["hardware_usd", "maintenance_usd", "energy_usd", "space_usd", "licences_usd"]
        figs.append({
            "data": [{"type": "bar", "name": p.replace("_usd", ""), "x": [r.name for r in ok],
                      "y": [r.tco[p] / max(res.inventory.n_vms, 1) for r in ok]} for p in parts],
            "layout": {"barmode": "stack", "title": {"text": "TCO per VM-year by component"},
                       "yaxis": {"title": {"text": "USD per VM-year"}}, "height": 420},
        })
        best = ok[0]
        n = len(best.per_host["vms"])
        figs.append({
            "data": [
                {"type": "bar", "name": "mean CPU utilisation", "x": list(range(1, n + 1)), "y": best.per_host["cpu_util_mean"]},
                {"type": "bar", "name": "peak CPU utilisation", "x": list(range(1, n + 1)), "y": best.per_host["cpu_util_peak"]},
                {"type": "scatter", "mode": "lines+markers", "name": "worst ready %", "yaxis": "y2",
                 "x": list(range(1, n + 1)), "y": best.per_host["ready_pct_worst"]},
            ],
            "layout": {"title": {"text": f"Hosts of {best.name}: utilisation and worst CPU Ready"},
                       "xaxis": {"title": {"text": "host"}}, "yaxis": {"title": {"text": "utilisation"}},
                       "yaxis2": {"title": {"text": "ready %"}, "overlaying": "y", "side": "right"}, "height": 420},
        })
    return figs


def _table_html(rows: list[dict]) -> str:
    cols = ["candidate", "feasible", "hosts", "lower_bound_hosts", "vms_per_host", "ready_pct_worst",
            "mem_slowdown_worst", "memory_overcommit_used", "io_latency_worst_ms", "io_budget_iops",
            "cpu_util_mean", "host_capex_usd", "tco_per_year_usd", "tco_per_vm_year_usd", "optimiser_status",
            "optimiser_gap", "reason", "notes"]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = []
    for r in rows:
        cells = []
        for c in cols:
            v = r[c]
            if v is None:
                v = "-"
            elif isinstance(v, float):
                v = f"{v:,.2f}" if np.isfinite(v) else "-"
            cells.append(f"<td>{html.escape(str(v))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def report_html(res: PlanResult, summary: dict) -> str:
    from plotly.offline import get_plotlyjs

    figs = figures(res)
    divs = "".join(f'<div id="fig{i}" class="fig"></div>' for i in range(len(figs)))
    calls = "".join(
        f"Plotly.newPlot('fig{i}', {json.dumps(f['data'])}, {json.dumps(f['layout'])}, {{responsive: true}});"
        for i, f in enumerate(figs)
    )
    inv = summary["inventory"]
    q = summary["qos"]
    rs = summary.get("rightsizing")
    rs_html = (f"<p>Right-sizing on: P{rs['percentile']:g} + {rs['headroom'] * 100:g} % headroom reclaimed "
               f"{rs['vcpus_reclaimed']} vCPUs and {rs['memory_reclaimed_gib']:.1f} GiB; {rs['undersized_vms']} VMs are under-sized.</p>"
               if rs else "<p>Right-sizing off: VMs keep their configured sizes.</p>")
    qos_extra = ""
    if summary.get("memory"):
        mem = summary["memory"]
        qos_extra += (f" Memory model <code>{html.escape(str(mem.get('model')))}</code> (swap to "
                      f"<code>{html.escape(str(mem.get('swap_device')))}</code>): every VM's memory slowdown &le; "
                      f"{q['memory_slowdown']:g} at every step; the over-commit actually used is in the table.")
    if summary.get("storage"):
        qos_extra += (f" Local storage: every host's mean I/O latency &le; {q['io_latency_ms']:g} ms at every step "
                      "(open queueing over the host's drives; per-host IOPS budget in the table).")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>densim capacity plan</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1100px}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:3px 6px;font-size:13px}}th{{background:#eee}}.fig{{margin:1em 0}}</style>
<script>{get_plotlyjs()}</script></head><body>
<h1>Capacity plan</h1>
<p>Inventory <code>{html.escape(inv['source'])}</code> ({html.escape(inv['format'])}): {inv['vms']} VMs, {inv['vcpus']} vCPUs,
{inv['memory_gib']:.1f} GiB; {inv['steps']} steps of {inv['step_s']:g} s.</p>
<p><b>Demand rule:</b> {html.escape(inv['demand_rule'])}</p>
<p><b>Quality of service:</b> worst VM's CPU Ready &le; {q['cpu_ready_pct']:g} % per vCPU at every step (binomial occupancy of
runnable vCPUs vs cores x SMT gain, normal approximation); vCPU:logical CPU &le; {q['cpu_overcommit']:g};
configured memory &le; {q['memory_overcommit']:g} x host memory; memory in use &le; host memory; {q['ha_spare_hosts']} spare host(s) for HA.{qos_extra}
Placement policy <code>{html.escape(summary['policy'])}</code> over {summary['windows']} time windows, re-checked at full resolution.</p>
{rs_html}
<h2>Ranking (cheapest per VM first)</h2>
{_table_html(summary['ranking'])}
<h2>Trade-off</h2>
{divs}
<script>{calls}</script>
</body></html>
"""


def write_outputs(res: PlanResult, out_dir: str | Path, seed: int | None = None) -> dict:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summary_dict(res, seed)
    write_text_atomic(out / "placement.csv", placement_csv(res))
    write_text_atomic(out / "ranking.csv", ranking_csv(res))
    if res.rightsizing is not None:
        write_text_atomic(out / "rightsizing.csv", rightsizing_csv(res))
    write_text_atomic(out / "report.html", report_html(res, summary))
    write_json_atomic(out / "summary.json", summary)
    return summary
