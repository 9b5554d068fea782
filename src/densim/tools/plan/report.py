"""Outputs of ``densim plan``: summary.json, ranking.csv, placement.csv and a self-contained report.html.

Every file is written to a temporary name and renamed, so an interrupted run leaves no
complete-looking partial output. plotly.js is embedded once per report (offline, no CDN).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

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
        "notes": list(res.notes),
    }
    near = res.closest()
    if near is not None:
        out["closest"] = {"candidate": near.name, "failed": near.failed, "reason": near.reason}
    if inv.skipped_readings:
        out["inventory"]["skipped_readings"] = inv.skipped_readings
    if inv.hosts is not None:
        out["hosts_today"] = inv.hosts.by_model()
    if res.time_remaining is not None:
        out["time_remaining"] = res.time_remaining
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


def _finite(x: float) -> float:
    """Not checked (NaN: no CPU demand series) plotted as 0."""
    return float(x) if x == x else 0.0


def figures(res: PlanResult) -> list[dict]:
    ok = [r for r in res.ranked() if r.feasible]
    figs = []
    if ok:
        figs.append({
            "data": [{
                "type": "scatter", "mode": "markers+text", "x": [r.vms_per_host for r in ok],
                "y": [r.tco["per_vm_usd"] for r in ok], "text": [r.name for r in ok], "textposition": "top center",
                "marker": {"size": [12 + 2 * _finite(r.ready_pct_worst) for r in ok], "color": [_finite(r.ready_pct_worst) for r in ok],
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


RANKING_COLUMNS = ["candidate", "feasible", "hosts", "lower_bound_hosts", "vms_per_host", "ready_pct_worst",
                   "mem_slowdown_worst", "memory_overcommit_used", "io_latency_worst_ms", "io_budget_iops",
                   "cpu_util_mean", "host_capex_usd", "tco_per_year_usd", "tco_per_vm_year_usd", "optimiser_status",
                   "optimiser_gap", "reason", "notes"]


def report_context(summary: dict, figure_ids: list[str]) -> dict:
    """Plain data for ``plan.html.j2``: the answer first, then inputs, ranking and figures."""
    ranking = summary["ranking"]
    feasible = [r for r in ranking if r["feasible"]]
    answer = None
    if feasible:
        best = feasible[0]
        answer = {k: best[k] for k in ("candidate", "hosts", "vms_per_host", "ready_pct_worst", "host_capex_usd",
                                       "tco_per_year_usd", "tco_per_vm_year_usd")}
        answer |= {"ha_spare_hosts": summary["qos"]["ha_spare_hosts"], "years": summary["cost_inputs"]["years"],
                   "vms": summary["inventory"]["vms"], "feasible": len(feasible), "candidates": len(ranking)}
    mem = summary.get("memory")
    return {
        "title": "Capacity plan",
        "seed": summary.get("seed"),
        "answer": answer,
        "infeasible": [{"candidate": r["candidate"], "reason": r["reason"]} for r in ranking if not r["feasible"]],
        "inventory": summary["inventory"],
        "qos": summary["qos"],
        "memory": {"model": str(mem.get("model")), "swap_device": str(mem.get("swap_device"))} if mem else None,
        "storage": bool(summary.get("storage")),
        "policy": summary["policy"],
        "windows": summary["windows"],
        "rightsizing": summary.get("rightsizing"),
        "notes": summary.get("notes") or [],
        "closest": summary.get("closest"),
        "hosts_today": summary.get("hosts_today"),
        "columns": RANKING_COLUMNS,
        "text_columns": ["reason", "notes"],
        "rows": [[(c, r[c]) for c in RANKING_COLUMNS] for r in ranking],
        "figure_ids": figure_ids,
    }


def write_report(res: PlanResult, summary: dict, path: str | Path) -> Path:
    """``report.html``: the plan's answer, its inputs, the ranking and the trade-off figures."""
    from densim.reports import write_report as write

    figs = {f"fig{i}": f for i, f in enumerate(figures(res))}
    return write(path, "plan.html.j2", figures=figs, **report_context(summary, list(figs)))


def write_outputs(res: PlanResult, out_dir: str | Path, seed: int | None = None) -> dict:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summary_dict(res, seed)
    write_text_atomic(out / "placement.csv", placement_csv(res))
    write_text_atomic(out / "ranking.csv", ranking_csv(res))
    if res.rightsizing is not None:
        write_text_atomic(out / "rightsizing.csv", rightsizing_csv(res))
    write_report(res, summary, out / "report.html")
    write_json_atomic(out / "summary.json", summary)
    return summary
