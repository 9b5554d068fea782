"""Outputs of ``densim plan``: summary.json, ranking.csv, placement.csv and a self-contained report.html.

Every file is written to a temporary name and renamed, so an interrupted run leaves no
complete-looking partial output. plotly.js is embedded once per report (offline, no CDN).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from densim.tools.plan.capacity import CandidateResult, PlanResult
from densim.atomic import write_json_atomic, write_text_atomic
from densim.csvsafe import safe_cell, safe_row


def summary_dict(res: PlanResult, seed: int | None = None) -> dict:
    inv = res.inventory
    ranked = res.ranked()
    out = {
        "inventory": {"source": inv.source, "format": inv.fmt, "vms": inv.n_vms, "vcpus": int(inv.vcpus.sum()),
                      "memory_gib": float(inv.mem_bytes.sum() / 2**30), "steps": inv.n_steps, "step_s": inv.step_s,
                      "demand_rule": inv.demand_rule},
        "qos": res.spec.qos.model_dump(),
        "memory": _memory_dump(res.spec.memory),
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
    from densim.tools.plan.licensing_carbon import carbon_summary, licensing_summary

    out |= {k: v for k, v in (("licensing", licensing_summary(res)), ("carbon", carbon_summary(res))) if v is not None}
    near = res.closest()
    if near is not None:
        out["closest"] = {"candidate": near.name, "failed": near.failed, "reason": near.reason}
    if inv.skipped_readings:
        out["inventory"]["skipped_readings"] = inv.skipped_readings
    if inv.missing_host_vms:
        out["inventory"]["missing_host_vms"] = inv.missing_host_vms
    if inv.ready_pct is not None and np.isfinite(inv.ready_pct).any():
        r = inv.ready_pct[np.isfinite(inv.ready_pct)]
        out["inventory"]["measured_ready_pct"] = {"vms": int(r.size), "mean": float(r.mean()), "max": float(r.max())}
    if inv.hosts is not None:
        out["hosts_today"] = inv.hosts.by_model()
    out["answer"] = answer_dict(res)
    from densim.tools.plan.readiness import readiness_summary

    out["readiness"] = readiness_summary(inv, res.spec.candidates)
    ready_check = ready_check_summary(res)
    if ready_check is not None:
        out["ready_check"] = ready_check
    if res.confidence is not None:
        out["confidence"] = res.confidence
    if res.time_remaining is not None:
        out["time_remaining"] = res.time_remaining
    if res.waves is not None:
        out["waves"] = {k: v for k, v in res.waves.items() if not k.startswith("_")}
    if res.rightsizing is not None:
        rs = res.rightsizing
        out["rightsizing"] = {"percentile": rs.percentile, "headroom": rs.headroom,
                              "vcpus_reclaimed": rs.vcpus_reclaimed,
                              "memory_reclaimed_gib": rs.mem_reclaimed_bytes / 2**30,
                              "undersized_vms": int(rs.undersized.sum())}
    return out


# ---------------------------------------------------------------------------------------------
# measured CPU Ready against the model's, today's cluster (RVTools readiness; densim.tools.plan.ready_check)


def ready_check_of(res: PlanResult):
    """The per-VM comparison for today's hosts and placement, None without measured readiness, demand or vHost
    (worked out once per plan: summary.json, the report and ready-check.csv all read it)."""
    from densim.tools.plan import ready_check

    key = (id(res.inventory), res.spec.qos.cpu_ready_pct)
    cached = res.__dict__.get("_ready_check")
    if cached is None or cached[0] != key:
        cached = (key, ready_check.check(res.inventory, bound_pct=res.spec.qos.cpu_ready_pct))
        res.__dict__["_ready_check"] = cached
    return cached[1]


def ready_check_summary(res: PlanResult) -> dict | None:
    from densim.tools.plan import ready_check

    return ready_check.summary(ready_check_of(res))


def ready_check_report(summary: dict, res: PlanResult) -> tuple[dict | None, dict[str, dict]]:
    """The report's section (table rows and figures) from ``summary['ready_check']``; nothing without it."""
    from densim.tools.plan import ready_check

    s = summary.get("ready_check")
    if not s:
        return None, {}
    rc = ready_check_of(res)
    section = s | {"rows": ready_check.table_rows(s) if "measured" in s else []}
    return section, ({"fig-ready-check": ready_check.figure(rc)} if rc is not None and rc.names.size else {})


def placement_csv(res: PlanResult) -> str:
    """One row per VM and feasible candidate; text cells made safe for spreadsheets (:mod:`densim.csvsafe`).
    With measured readiness in the inventory (RVTools 'Overall Cpu Readiness'), ``measured_ready_pct`` (and
    ``measured_costop_pct``) follow, blank for a VM that has none."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    inv = res.inventory
    measured = [(k, a) for k, a in (("measured_ready_pct", inv.ready_pct), ("measured_costop_pct", inv.costop_pct)) if a is not None]
    w.writerow(["candidate", "vm", "host", "vcpus", "memory_gib"] + [k for k, _ in measured])
    extra = [[("" if x != x else f"{x:g}") for x in a.tolist()] for _, a in measured]
    for r in res.ranked():
        if r.host_of_vm is None:
            continue
        for i, (name, h, v, m) in enumerate(zip(inv.names, r.host_of_vm, inv.vcpus, inv.mem_bytes)):
            w.writerow(safe_row([r.name, name, f"{r.name}-{int(h) + 1:03d}", int(v), f"{m / 2**30:.3f}"] + [e[i] for e in extra]))
    return buf.getvalue()


def _dict_rows_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows({k: safe_cell(v) for k, v in r.items()} for r in rows)
    return buf.getvalue()


def rightsizing_csv(res: PlanResult) -> str:
    return _dict_rows_csv(res.rightsizing.table())


def ranking_csv(res: PlanResult) -> str:
    return _dict_rows_csv([r.row() for r in res.ranked()])


def _memory_dump(m) -> dict | None:
    """The plan's memory settings for summary.json; ``tiering`` only when the plan has a tier."""
    if m is None:
        return None
    d = m.model_dump(by_alias=True)
    if d.get("tiering") is None:
        d.pop("tiering", None)
    return d


def _finite(x: float | None) -> float:
    """Not checked (NaN or None: no CPU demand series) plotted as 0."""
    return float(x) if x is not None and x == x else 0.0


# ---------------------------------------------------------------------------------------------
# the answer: bounds held, limiting resource, today against proposed


def _placed_sizes(res: PlanResult) -> tuple[np.ndarray, np.ndarray]:
    """vCPUs and configured memory per VM as placed (right-sized when right-sizing is on)."""
    rs = res.rightsizing
    if rs is not None:
        return np.asarray(rs.vcpus_rec), np.asarray(rs.mem_rec_bytes, dtype=float)
    return np.asarray(res.inventory.vcpus), np.asarray(res.inventory.mem_bytes, dtype=float)


def _candidate(res: PlanResult, name: str):
    return next(c for c in res.spec.candidates if c.name == name)


def bounds_held(res: PlanResult, r: CandidateResult) -> list[dict]:
    """Every bound a feasible candidate meets, with how near its tightest host comes to it.

    ``share`` is value / limit (for the memory slowdown, (value - 1) / (limit - 1): 1 is no slowdown);
    ``headroom`` = 1 - share. Each value is the worst over the hosts with VMs (and over every step
    for the series-based ones), as the plan checked it.
    """
    from densim.tools.plan.capacity import host_type_of

    q, inv = res.spec.qos, res.inventory
    host = host_type_of(_candidate(res, r.name))
    vcpus, mem = _placed_sizes(res)
    n = max(r.n_hosts_packed, 1)
    host_vcpus = np.bincount(r.host_of_vm, weights=vcpus.astype(float), minlength=n)
    host_mem = np.bincount(r.host_of_vm, weights=mem, minlength=n)
    out: list[dict] = []

    short = {"cpu_ready": "CPU Ready", "cpu_demand": "CPU demand", "vcpus": "vCPUs per physical core", "memory_configured":
             "configured memory", "memory_in_use": "memory in use", "memory_slowdown": "memory slowdown", "io_latency": "I/O latency",
             "tier_ratio": "tier ratio"}

    def add(key: str, label: str, value: float, limit: float, unit: str, share: float | None = None) -> None:
        sh = value / limit if share is None else share
        out.append({"key": key, "short": short[key], "label": label, "value": float(value), "limit": float(limit), "unit": unit,
                    "value_text": _fmt(value, unit), "limit_text": _fmt(limit, unit),
                    "share": float(sh), "headroom": float(1.0 - sh)})

    if np.isfinite(r.ready_pct_worst):
        add("cpu_ready", "CPU Ready of the worst VM at its worst step", r.ready_pct_worst, q.cpu_ready_pct, "%")
        add("cpu_demand", "CPU demand of the busiest host at its busiest step", 100 * r.cpu_util_peak,
            100 * q.max_cpu_utilisation, "%")
    add("vcpus", "vCPUs per physical core on the fullest host", float(host_vcpus.max()) / host.cores,
        q.vcpus_per_core, ":1")
    add("memory_configured", "configured memory per byte of usable host memory on the fullest host",
        float(host_mem.max()) / host.usable_mem_bytes, r.memory_overcommit_used, "x")
    if inv.mem_used_bytes is not None:
        tiered = res.spec.memory is not None and res.spec.memory.tiering is not None
        add("memory_in_use", "memory in use on the fullest host at its peak" + (" (of DRAM + NVMe tier)" if tiered else ""),
            100 * r.mem_peak_frac, 100.0, "%")
    tier = res.spec.memory.tiering if res.spec.memory is not None else None
    if tier is not None:  # the memory slowdown comes from the NVMe tier's faults (and swap beyond it): the ratio binds
        add("tier_ratio", f"memory slowdown of the worst VM at its worst step with the 1:{tier.ratio:g} NVMe memory tier",
            r.mem_slowdown_worst, q.memory_slowdown, "x", (r.mem_slowdown_worst - 1.0) / max(q.memory_slowdown - 1.0, 1e-12))
    elif res.spec.memory is not None:
        add("memory_slowdown", "memory slowdown of the worst VM at its worst step", r.mem_slowdown_worst, q.memory_slowdown,
            "x", (r.mem_slowdown_worst - 1.0) / max(q.memory_slowdown - 1.0, 1e-12))
    if np.isfinite(r.io_latency_worst_ms):
        add("io_latency", "mean I/O latency of the worst host at its worst step", r.io_latency_worst_ms, q.io_latency_ms, "ms")
    return out


def _today_groups(res: PlanResult) -> tuple[list[dict], str] | tuple[None, None]:
    """Today's hosts: the candidates file's ``current`` section, else the inventory's vHost tab."""
    from densim.catalog.core import builtin_catalog
    from densim.plant import resolve_cpu

    if res.spec.current:
        groups = []
        for g in res.spec.current:
            cpu = resolve_cpu(g.cpu, builtin_catalog())
            groups.append({"name": g.name, "count": g.count, "sockets": g.cpu.sockets, "cores": g.cpu.sockets * cpu.cores,
                           "core_mhz": float(cpu.base_mhz), "memory_gib": g.memory_bytes / 2**30, "power": g.power,
                           "rack_units": g.rack_units})
        return groups, "candidates file, section current"
    hosts = res.inventory.hosts
    if hosts is None or hosts.n_hosts == 0:
        return None, None
    return ([{"name": h["model"] or h["cpu_model"] or "host", "count": h["count"], "sockets": h["sockets"], "cores": h["cores"],
              "core_mhz": h["core_mhz"], "memory_gib": h["memory_gib"], "power": None, "rack_units": None}
             for h in hosts.by_model()], "RVTools vHost tab")


def _totals(groups: list[dict], n_vms: int, vcpus: float, demand_mhz: float | None) -> dict:
    """Estate totals; None where a group lacks the figure. ``cpu_use_pct``: mean demand / (cores x base clock)."""
    hosts = sum(g["count"] for g in groups)
    cores = sum(g["count"] * g["cores"] for g in groups)
    mhz_known = all(g["core_mhz"] is not None for g in groups)
    cap_mhz = sum(g["count"] * g["cores"] * g["core_mhz"] for g in groups) if mhz_known else None
    power = [g.get("power_w") for g in groups]
    ru = [g.get("rack_units") for g in groups]
    return {
        "hosts": hosts, "cores": cores, "capacity_ghz": cap_mhz / 1000 if cap_mhz else None,
        "memory_tib": sum(g["count"] * g["memory_gib"] for g in groups) / 1024,
        "vms_per_host": n_vms / hosts if hosts else None, "vcpus_per_core": vcpus / cores if cores else None,
        "cpu_use_pct": 100 * demand_mhz / cap_mhz if cap_mhz and demand_mhz is not None else None,
        "power_kw": sum(g["count"] * p for g, p in zip(groups, power)) / 1000 if all(p is not None for p in power) else None,
        "rack_units": sum(g["count"] * u for g, u in zip(groups, ru)) if all(u is not None for u in ru) else None,
    }


def today_vs_proposed(res: PlanResult, r: CandidateResult) -> dict | None:
    """Today's estate (``current`` or vHost) against the proposal, as arithmetic on the same inventory.

    Both sides: hosts, cores, cores x base clock, memory, VMs per host, vCPUs per core and the mean CPU
    demand of the whole series over cores x base clock (no SMT gain, so the two sides compare). Mean
    power today is an estimate from the ``current`` power model at that utilisation on every host (the
    demand spread evenly); proposed: the plan's power model per host (spare hosts idle), IT load only.
    """
    from densim.models.cost import power_w
    from densim.tools.plan.capacity import host_type_of

    groups, source = _today_groups(res)
    if groups is None:
        return None
    inv = res.inventory
    demand = float(inv.cpu_mhz.sum(axis=1, dtype=np.float64).mean()) if inv.cpu_mhz is not None else None
    cap_today = sum(g["count"] * g["cores"] * (g["core_mhz"] or np.nan) for g in groups)
    for g in groups:
        p = g.pop("power")
        g["power_w"] = (float(power_w(p, np.array([min(demand / cap_today, 1.0)]))[0])
                        if p is not None and demand is not None and np.isfinite(cap_today) else None)
    c = _candidate(res, r.name)
    host = host_type_of(c)
    vcpus, _mem = _placed_sizes(res)
    prop = {"name": r.name, "count": r.n_hosts, "sockets": host.sockets, "cores": host.cores, "core_mhz": host.core_mhz,
            "memory_gib": host.mem_bytes / 2**30, "rack_units": c.rack_units}
    proposed = _totals([prop], inv.n_vms, float(vcpus.sum()), demand)
    proposed["power_kw"] = float(np.sum(r.per_host["power_w"])) / 1000
    return {"source": source, "groups": groups,
            "today": _totals(groups, inv.n_vms, float(np.sum(inv.vcpus)), demand), "proposed": proposed}


def answer_dict(res: PlanResult) -> dict | None:
    """The plan's answer for summary.json and the report's headline: None when no candidate is feasible."""
    ok = [r for r in res.ranked() if r.feasible]
    if not ok:
        return None
    r = ok[0]
    bounds = bounds_held(res, r)
    limiting = max(bounds, key=lambda b: b["share"])["key"]
    capped = r.power.get("capped")
    # the CPU bounds are held on the capacity of the clock the power cap leaves a fully busy host: when one of
    # them binds and the cap lowered that clock, the answer is power-bound, not CPU-bound
    power_bound = bool(capped and capped["binds"] and limiting in ("cpu_ready", "cpu_demand"))
    storage_bound = bool(r.hci and r.hci["binds"])  # the HCI datastore needs more hosts than compute
    return {
        "candidate": r.name, "hosts": r.n_hosts, "hosts_packed": r.n_hosts_packed, "ha_spare_hosts": res.spec.qos.ha_spare_hosts,
        "vms": res.inventory.n_vms, "vms_per_host": r.vms_per_host, "host_capex_usd": r.host_capex_usd,
        "tco_per_year_usd": r.tco["total_usd"], "tco_per_vm_year_usd": r.tco["per_vm_usd"], "years": res.spec.cost.years,
        "ready_pct_worst": _finite_or_none(r.ready_pct_worst),
        "feasible": len(ok), "candidates": len(res.results),
        "bounds": bounds, "limiting": "storage" if storage_bound else "power" if power_bound else limiting,
        "limiting_through": limiting if power_bound and not storage_bound else None,
        "power": r.power,
        **({"hci": r.hci} if r.hci else {}),  # an hci section in the candidates file
        "comparison": today_vs_proposed(res, r),
    } | ({"gpu": r.gpu} if r.gpu else {})  # GPU candidates (tools/plan/gpu.py): hosts for GPU demand, limiting factor


def _finite_or_none(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def _fmt(x: float, unit: str) -> str:
    """Three significant figures and the unit (``0.0255 %``, ``88.9 %``, ``0.98:1``, ``1.1 x``)."""
    return f"{x:.3g}:1" if unit == ":1" else f"{x:.3g} {unit}"


def _change(label: str, new: float | None, old: float | None, digits: int = 0, unit: str = "") -> str | None:
    if new is None or old is None:
        return None
    d = new - old
    return f"{new:,.{digits}f}{unit} {label} instead of {old:,.{digits}f}{unit} ({'+' if d >= 0 else '-'}{abs(d):,.{digits}f})"


def headline_lines(summary: dict) -> list[str]:
    """The plan's answer in plain sentences (the report's headline; ``densim plan`` can print them)."""
    a = summary.get("answer")
    if not a:
        near = summary.get("closest")
        return ["No candidate meets every bound." + (f" The closest, {near['candidate']}, fails: {near['reason']}" if near else "")]
    spare = a["ha_spare_hosts"]
    extra = a["hosts"] - a["hosts_packed"] - spare if a["limiting"] == "storage" else 0  # hosts only the HCI datastore needs
    parts = ([f"{a['hosts_packed']} for the VMs"] + ([f"{spare} spare for HA"] if spare else [])
             + ([f"{extra} more for the HCI datastore"] if extra > 0 else []))
    lines = [f"Buy {a['hosts']} x {a['candidate']}" + (f" ({' + '.join(parts)})" if len(parts) > 1 else "")
             + f": {a['vms_per_host']:.1f} VMs per host for {a['vms']:,} VMs.",
             f"Cost: {a['tco_per_vm_year_usd']:,.0f} USD per VM-year, {a['tco_per_year_usd']:,.0f} USD per year "
             f"({a['years']:g}-year amortisation); the cheapest of {a['feasible']} feasible candidate(s) of {a['candidates']}."]
    through = a.get("limiting_through")
    hci = a.get("hci")
    lim = next((b for b in a["bounds"] if b["key"] == (through or a["limiting"])), None)
    lines.append("Bounds held (worst host, worst step): " + "; ".join(f"{b['short']} {_fmt(b['value'], b['unit'])} <= {_fmt(b['limit'], b['unit'])}"
                                             for b in a["bounds"]) + ".")
    pw = a.get("power") or {}
    if a["limiting"] == "storage":
        why = (f"its minimum of {hci['min_hosts']} hosts plus {hci['hosts_for_policy'] - hci['min_hosts']} to rebuild on"
               if hci["storage_limit"].startswith("policy") else
               f"{hci['data_tib']:,.1f} TiB of data at {hci['used_raw_tib'] / max(hci['data_tib'], 1e-12):.2f} raw per byte")
        lines.append(f"Limiting resource: storage policy {hci['policy']} (FTT={hci['ftt']}): the HCI datastore needs "
                     f"{hci['hosts_needed']} hosts ({why}); compute alone needs {hci['compute_hosts']}.")
    elif through:
        cc = pw["capped"]
        lines.append(f"Limiting resource: power. The {cc['cap_w']:,.0f} W cap per host leaves a fully busy host "
                     f"{cc['clock_mhz']:,.0f} MHz of its {cc['base_mhz']:,.0f} MHz base clock ({cc['clock_power_w']:,.0f} W; "
                     f"{cc['capacity_loss_pct']:.0f} % of its CPU capacity), and "
                     f"on that capacity {lim['short']} binds ({lim['label']}), {_fmt(lim['value'], lim['unit'])} of "
                     f"{_fmt(lim['limit'], lim['unit'])}: {100 * lim['headroom']:.0f} % headroom.")
    elif (a.get("gpu") or {}).get("limiting_factor") == "gpu":
        g = a["gpu"]
        inf = f" + {g['hosts_inference']} for LLM inference" if g["hosts_inference"] else ""
        lines.append(f"Limiting resource: GPU. {g['gpus_per_host']} x {g['model']} per host: the GPU demand needs "
                     f"{g['hosts_gpu_vms']} host(s) for the VMs' GPUs{inf}, the CPU and memory bounds "
                     f"{g['hosts_cpu_memory']}; {g['gpus']} GPUs before spares.")
    else:
        lines.append(f"Limiting resource: {lim['short']} ({lim['label']}), {_fmt(lim['value'], lim['unit'])} of "
                     f"{_fmt(lim['limit'], lim['unit'])}: {100 * lim['headroom']:.0f} % headroom; every other bound has more.")
    if hci:
        net = (f"; storage network at the busiest step {100 * hci['network_peak_util']:.1f} % of each host's adapter"
               if hci.get("network_peak_util") is not None else "")
        lic = hci.get("vsan_licence")
        lic_t = (f"; the licence includes {lic['included_tib']:,.0f} TiB of vSAN ({lic['addon_tib']:,} add-on TiB)" if lic else "")
        lines.append(f"HCI storage ({hci['policy']}): {hci['usable_tib']:,.1f} TiB usable of {hci['raw_tib']:,.1f} TiB raw, "
                     f"{hci['used_raw_tib']:,.1f} TiB raw used; write amplification {hci['write_amplification']:.2f}, "
                     f"{hci['network_transfers_per_write']:.2f} network copies per write{net}; re-protecting a host's "
                     f"{hci['host_share_tib']:,.2f} TiB takes {hci['resync_s_one_host'] / 60:,.0f} min at a "
                     f"{hci['rebuild_share']:g} rebuild share{lic_t}.")
    if pw.get("hosts_per_rack") is not None:
        bind = {"power": f"power-bound: {pw['rack_usable_w'] / 1000:,.1f} kW usable ({pw['rack_usable_bound']}) / "
                         f"{pw['host_budget_w']:,.0f} W per host ({pw['basis']})",
                "space": "space-bound: rack units"}[pw["rack_bound"]]
        feeds = (f"; each A/B feed carries {pw['feed_load_w'] / 1000:,.1f} kW, {pw['feed_load_failover_w'] / 1000:,.1f} kW "
                 f"when the other fails (of {pw['feed_w'] / 1000:,.1f} kW continuous)" if pw["feeds"] == "a/b" else "")
        lines.append(f"Racks: {pw['racks']} of {pw['hosts_per_rack']} hosts ({bind}){feeds}; "
                     f"{pw['vms_per_kw']:,.1f} VMs per budgeted kW.")
    cmp_ = a.get("comparison")
    if cmp_:
        t, p = cmp_["today"], cmp_["proposed"]
        parts = [_change("hosts", p["hosts"], t["hosts"]), _change("cores", p["cores"], t["cores"]),
                 (_change("TiB of memory", p["memory_tib"], t["memory_tib"], 1) if max(p["memory_tib"], t["memory_tib"]) >= 10
                  else _change("GiB of memory", 1024 * p["memory_tib"], 1024 * t["memory_tib"])),
                 _change("kW mean IT power (today: estimate)", p["power_kw"], t["power_kw"], 1)]
        lines.append(f"Against today ({cmp_['source']}): " + ", ".join(x for x in parts if x) + ".")
    return lines


def headline(summary: dict) -> str:
    """:func:`headline_lines` as one text block for a terminal."""
    return "\n".join(headline_lines(summary))


# ---------------------------------------------------------------------------------------------
# figures


def chosen_series(res: PlanResult, max_points: int = 480):
    """CPU utilisation and CPU Ready over time for the best feasible candidate (None: no candidate, or no
    CPU demand series or a single sample)."""
    from densim.tools.plan.capacity import host_type_of
    from densim.tools.plan.qos import step_series

    ok = [r for r in res.ranked() if r.feasible]
    inv = res.inventory
    if not ok or inv.cpu_mhz is None or inv.n_steps < 2:
        return None
    r = ok[0]
    vcpus, _mem = _placed_sizes(res)
    return step_series(r.host_of_vm, r.n_hosts_packed, host_type_of(_candidate(res, r.name)), vcpus, inv.cpu_mhz,
                       inv.mem_used_bytes, inv.step_s, max_points)


def _layout(title: str, height: int, **kw) -> dict:
    """Font, colours, gridlines and hover come from the one report style (:mod:`densim.reports.style`);
    here only what these figures add: the legend above the plot, under the title, and room for it."""
    return {"title": {"text": title, "y": 0.98, "yanchor": "top"}, "height": height,
            "margin": {"l": 70, "r": 70, "t": 90, "b": 50}, "legend": {"orientation": "h", "x": 0, "y": 1.0, "yanchor": "bottom"},
            **kw}


def _ready_axis(top: float) -> dict:
    """The CPU Ready axis (right): from 0 to 1.2 x the larger of the bound and the highest value, so an
    all-zero series still shows the bound and never a -0.002..0.002 scale."""
    return {"title": {"text": "CPU Ready per vCPU (%)"}, "overlaying": "y", "side": "right", "range": [0, 1.2 * top],
            "ticksuffix": " %", "showgrid": False, "tickmode": "auto", "nticks": 6}


def figures(res: PlanResult) -> dict[str, dict]:
    """The report's plotly figures by element id: over time, per host, trade-off, TCO breakdown."""
    ok = [r for r in res.ranked() if r.feasible]
    figs: dict[str, dict] = {}
    if not ok:
        return figs
    best = ok[0]
    bound = res.spec.qos.cpu_ready_pct
    checked = np.isfinite(best.ready_pct_worst)
    ser = chosen_series(res)
    if ser is not None:
        data = [
            {"type": "scatter", "mode": "lines", "name": "mean of the hosts with VMs", "x": ser.hours.tolist(),
             "y": (100 * ser.util_mean).tolist(), "line": {"color": "#3b6ea8"}},
            {"type": "scatter", "mode": "lines", "name": "busiest host", "x": ser.hours.tolist(),
             "y": (100 * ser.util_max).tolist(), "line": {"color": "#9ab7d8"}},
            {"type": "scatter", "mode": "lines", "name": "worst VM's CPU Ready (right axis)", "yaxis": "y2",
             "x": ser.hours.tolist(), "y": ser.ready_worst.tolist(), "line": {"color": "#c0504d"}},
            {"type": "scatter", "mode": "lines", "name": f"CPU Ready bound {bound:g} %", "yaxis": "y2",
             "x": [float(ser.hours[0]), float(ser.hours[-1])], "y": [bound, bound],
             "line": {"color": "#c0504d", "dash": "dash", "width": 1}},
        ]
        if ser.mem_used_max is not None:
            data.insert(2, {"type": "scatter", "mode": "lines", "name": "fullest host's memory in use", "x": ser.hours.tolist(),
                            "y": (100 * ser.mem_used_max).tolist(), "line": {"color": "#6a9a58", "dash": "dot"}})
        step_note = f" (each point: {int(ser.steps[0])} steps)" if ser.steps[0] > 1 else ""
        figs["fig-time"] = {"data": data, "layout": _layout(
            f"{best.name}: CPU use and CPU Ready over time{step_note}", 460,
            xaxis={"title": {"text": "hours from the start of the demand series"}},
            yaxis={"title": {"text": "CPU use (% of cores x clock x SMT gain)"}, "range": [0, 105], "ticksuffix": " %"},
            yaxis2=_ready_axis(max(bound, float(ser.ready_worst.max(initial=0.0)))))}
    n = len(best.per_host["vms"])
    hosts = [f"{i}" for i in range(1, n + 1)]
    ph = best.per_host
    host_data = [
        {"type": "bar", "name": "mean CPU use", "x": hosts, "y": [100 * _finite(v) for v in ph["cpu_util_mean"]], "marker": {"color": "#3b6ea8"}},
        {"type": "bar", "name": "peak CPU use", "x": hosts, "y": [100 * _finite(v) for v in ph["cpu_util_peak"]], "marker": {"color": "#9ab7d8"}},
    ]
    if checked:
        host_data.append({"type": "scatter", "mode": "markers", "name": "worst VM's CPU Ready (right axis)", "yaxis": "y2",
                          "x": hosts, "y": [_finite(v) for v in ph["ready_pct_worst"]], "marker": {"color": "#c0504d", "size": 8}})
    figs["fig-hosts"] = {"data": host_data, "layout": _layout(
        f"{best.name}: each host with VMs ({best.n_hosts_packed}; spare hosts carry none)", 400, barmode="group",
        xaxis={"title": {"text": "host"}, "type": "category"},
        yaxis={"title": {"text": "CPU use (%)"}, "range": [0, 105], "ticksuffix": " %"},
        yaxis2=_ready_axis(max(bound, max((_finite(v) for v in ph["ready_pct_worst"]), default=0.0))))}
    x = [r.vms_per_host for r in ok]
    y = [r.tco["per_vm_usd"] for r in ok]
    ready = [_finite(r.ready_pct_worst) for r in ok]
    marker: dict = {"size": 14, "color": "#3b6ea8"}
    if checked:
        marker = {"size": 14, "color": ready, "colorscale": "Viridis", "cmin": 0.0, "cmax": max(bound, max(ready)),
                  "showscale": True, "colorbar": {"title": {"text": "worst CPU<br>Ready %"}}}
    pad_x = 0.15 * (max(x) - min(x) or max(x))
    pad_y = 0.15 * (max(y) - min(y) or max(y))
    figs["fig-tradeoff"] = {"data": [{
        "type": "scatter", "mode": "markers+text", "x": x, "y": y, "text": [r.name for r in ok], "textposition": "top center",
        "cliponaxis": False, "marker": marker,
        "hovertemplate": "%{text}<br>%{x:.1f} VMs per host<br>%{y:,.0f} USD per VM-year<extra></extra>",
    }], "layout": _layout("Feasible candidates: density against cost" + ("" if checked else " (CPU Ready not checked)"), 440,
                          showlegend=False,
                          xaxis={"title": {"text": "VMs per host"}, "range": [max(0.0, min(x) - pad_x), max(x) + pad_x]},
                          yaxis={"title": {"text": "TCO per VM-year (USD)"}, "range": [max(0.0, min(y) - pad_y), max(y) + pad_y],
                                 "tickformat": ",.0f"})}
    parts = [("hardware_usd", "hardware"), ("maintenance_usd", "maintenance"), ("energy_usd", "energy"), ("space_usd", "space"),
             ("licences_usd", "licences")]
    nv = max(res.inventory.n_vms, 1)
    figs["fig-tco"] = {
        "data": [{"type": "bar", "name": label, "x": [r.name for r in ok], "y": [r.tco[p] / nv for r in ok]} for p, label in parts],
        "layout": _layout("TCO per VM-year by component", 400, barmode="stack",
                          yaxis={"title": {"text": "USD per VM-year"}, "tickformat": ",.0f"}, xaxis={"automargin": True}),
    }
    return figs


# ---------------------------------------------------------------------------------------------
# the ranking table: readable headers, units, only the columns that apply


def ranking_columns(summary: dict) -> list[tuple[str, str, str, str]]:
    """``(key, header, unit, format)`` of the report's ranking table (ranking.csv keeps every column)."""
    rows = summary["ranking"]

    def any_value(k: str) -> bool:
        return any(r.get(k) is not None and r.get(k) == r.get(k) for r in rows)

    cols = [("candidate", "Candidate", "", "text"), ("feasible", "Meets every bound", "", "yes"),
            ("hosts", "Hosts", "incl. spares", "int"), ("lower_bound_hosts", "Lower bound", "hosts", "int"),
            ("vms_per_host", "VMs per host", "", "1")]
    if any_value("ready_pct_worst"):
        cols += [("ready_pct_worst", "Worst CPU Ready", "%", "2"), ("cpu_util_mean", "Mean CPU use", "%", "pct"),
                 ("cpu_util_peak", "Peak CPU use", "busiest host, %", "pct")]
    if any(r.get("mem_peak_frac") for r in rows):  # 0 everywhere: no memory-in-use series
        cols.append(("mem_peak_frac", "Peak memory in use", "fullest host, %", "pct"))
    cols.append(("memory_overcommit_used", "Memory over-commit", "limit used, x", "2"))
    if summary.get("memory"):
        cols.append(("mem_slowdown_worst", "Worst memory slowdown", "x", "3"))
    if any_value("io_latency_worst_ms"):
        cols += [("io_latency_worst_ms", "Worst I/O latency", "ms", "1"), ("io_budget_iops", "I/O budget per host", "IOPS", "0")]
    cols += [("host_capex_usd", "Capex per host", "USD", "0"), ("tco_per_year_usd", "TCO per year", "USD", "0"),
             ("tco_per_vm_year_usd", "TCO per VM-year", "USD", "0")]
    if any(r.get("optimiser_status") for r in rows):
        cols.append(("optimiser_status", "Optimiser", "CP-SAT", "text"))
    return cols


def feasibility_mark(row: dict, unplaced: int = 0) -> str:
    """The ranking's "Meets every bound" cell: 'yes', or why not: 'infeasible: 54 VMs unplaced' for a
    candidate on which VMs fit no host, else 'infeasible: ' and the reason (a QoS bound it breaks)."""
    if row["feasible"]:
        return "yes"
    if unplaced:
        return f"infeasible: {unplaced:,} VM{'s' if unplaced != 1 else ''} unplaced"
    return f"infeasible: {row['reason']}" if row.get("reason") else "infeasible"


def _cell(v, fmt: str, feasible: bool) -> str:
    if fmt == "text":
        return "" if v is None else str(v)
    if fmt == "yes":
        return "yes" if v else "no"
    if not feasible or v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "–"
    if fmt == "int":
        return f"{int(v):,}"
    if fmt == "pct":
        return f"{100 * v:,.1f}"
    return f"{v:,.{int(fmt)}f}"


def report_context(summary: dict, figure_ids: list[str], unplaced: dict[str, int] | None = None) -> dict:
    """Plain data for ``plan.html.j2``: the answer first, then today against proposed, the chosen
    candidate over time, the ranking, the trade-off, and the inputs. ``unplaced``: candidate name ->
    VMs that fit none of its hosts (the ranking marks such a candidate 'infeasible: N VMs unplaced';
    infeasible candidates rank after every feasible one and are never the answer)."""
    unplaced = unplaced or {}
    ranking = summary["ranking"]
    mem = summary.get("memory")
    cols = ranking_columns(summary)
    return {
        "title": "Capacity plan",
        "seed": summary.get("seed"),
        "answer": summary.get("answer"),
        "headline": headline_lines(summary),
        "confidence": summary.get("confidence"),
        "confidence_lines": _confidence_lines(summary),
        "readiness": summary.get("readiness"),
        "waves": summary.get("waves"),
        "waves_lines": _waves_lines(summary),
        "time_remaining": summary.get("time_remaining"),
        "licensing": summary.get("licensing"),
        "carbon": summary.get("carbon"),
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
        "columns": [(h, u) for _k, h, u, _f in cols],
        "rows": [{"feasible": r["feasible"], "best": r["candidate"] == summary.get("best"),
                  "cells": [(f, feasibility_mark(r, unplaced.get(r["candidate"], 0)) if k == "feasible" else
                             _cell(r.get(k), f, r["feasible"] or k in ("candidate", "host_capex_usd")))
                            for k, _h, _u, f in cols],
                  "notes": r.get("notes") or ""} for r in ranking],
        "figure_ids": figure_ids,
        "verify": verify_rows(summary.get("verify")),
        "verify_all": [verify_rows(v) for v in summary.get("verify_all") or []],
    }


def _confidence_lines(summary: dict) -> list[str]:
    from densim.tools.plan.confidence import confidence_lines

    return confidence_lines(summary["confidence"]) if summary.get("confidence") else []


def _waves_lines(summary: dict) -> list[str]:
    from densim.tools.plan.waves import waves_lines

    return waves_lines(summary.get("waves"))


def write_report(res: PlanResult, summary: dict, path: str | Path) -> Path:
    """``report.html``: the plan's answer, its inputs, the ranking and the trade-off figures."""
    from densim.reports import write_report as write

    figs = figures(res)
    rc_section, rc_figs = ready_check_report(summary, res)
    figs |= rc_figs
    unplaced = {r.name: r.unplaced_vms for r in res.results if not r.feasible}
    return write(path, "plan.html.j2", figures=figs, ready_check=rc_section, **report_context(summary, list(figs), unplaced))


def verify_rows(v: dict | None) -> dict | None:
    """The report's plan-vs-engine table (``densim plan --verify``): label, plan, engine, engine - plan."""
    if not v:
        return None
    p, e = v["plan"], v["engine"]

    def row(label, pv, ev):
        d = ev - pv if pv is not None and ev is not None else None
        return {"label": label, "plan": pv, "engine": ev, "difference": d}

    rows = [row("hosts (plan: packed, before HA spares; engine: used)", p["hosts_packed"], e["hosts_used"]),
            row("VMs placed", p["vms_placed"], e["vms_placed"]),
            row("VMs unplaced", 0, e["vms_unplaced"]),
            row("CPU Ready % per vCPU, worst VM at its worst step", p["cpu_ready_pct_max"], e["cpu_ready_pct_max"]),
            row("CPU Ready % per vCPU, mean over VMs and steps", p.get("cpu_ready_pct_mean"), e["cpu_ready_pct_mean"]),
            row("CPU Ready % per vCPU, p95 of VM-steps", p.get("cpu_ready_pct_p95"), e["cpu_ready_pct_p95"])]
    if "memory_hosts_swapping" in e:
        rows.append(row("hosts short of memory (plan) / swapping (engine)", p["memory_hosts_short"], e["memory_hosts_swapping"]))
    return {"candidate": v["candidate"], "scenario": v["scenario"], "dropped": v.get("dropped", []), "rows": rows}


def write_outputs(res: PlanResult, out_dir: str | Path, seed: int | None = None, *, scenario: str | None = None,
                  verify: dict | None = None, scenario_files: dict[str, str] | None = None,
                  verify_all: list[dict] | None = None) -> dict:
    """summary.json, ranking.csv, placement.csv, rightsizing.csv (with right-sizing), readiness.csv (RVTools) and report.html,
    replacing ``out_dir`` whole (:func:`densim.atomic.output_folder`: no file of an older plan stays). ``scenario``: the
    text of ``chosen-scenario.yaml`` (:mod:`densim.tools.plan.replay`); ``verify``: its engine run's figures beside the
    plan's (summary.json ``verify``); ``scenario_files``: the files it names, ``{name: text}`` (the plan's placement and
    right-sized sizes, :func:`densim.tools.plan.replay.chosen_files`), written beside it."""
    from densim.atomic import output_folder

    summary = summary_dict(res, seed)
    if scenario is not None:
        summary["chosen_scenario"] = "chosen-scenario.yaml"
        if scenario_files:
            summary["chosen_scenario_files"] = sorted(scenario_files)
    if verify is not None:
        summary["verify"] = verify
    if verify_all is not None:
        summary["verify_all"] = verify_all  # densim plan --verify-all: every feasible candidate through the engine
    with output_folder(out_dir) as out:
        if scenario is not None:
            write_text_atomic(out / "chosen-scenario.yaml", scenario)
            for name, body in (scenario_files or {}).items():
                write_text_atomic(out / name, body)
        write_text_atomic(out / "placement.csv", placement_csv(res))
        write_text_atomic(out / "ranking.csv", ranking_csv(res))
        if res.rightsizing is not None:
            write_text_atomic(out / "rightsizing.csv", rightsizing_csv(res))
        rc = ready_check_of(res) if "ready_check" in summary else None
        if rc is not None:
            from densim.tools.plan.ready_check import per_vm_csv

            write_text_atomic(out / "ready-check.csv", per_vm_csv(rc))
        if res.inventory.readiness is not None:
            from densim.tools.plan.readiness import readiness_csv

            write_text_atomic(out / "readiness.csv", readiness_csv(res.inventory))
        if res.waves is not None and res.waves.get("planned"):
            from densim.tools.plan.waves import waves_csv

            write_text_atomic(out / "waves.csv", waves_csv(res.waves))
        write_report(res, summary, out / "report.html")
        write_json_atomic(out / "summary.json", summary)
    return summary
