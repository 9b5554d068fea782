"""The data-quality rating: the grades of :mod:`densim.tools.plan.confidence` (the plan) and of a run's summary
(:func:`densim.engine.summary.data_quality`), with their thresholds. Kept here, below the engine and the tools, so
both give one rating by one rule.

:func:`rate` takes facts: ``kind`` ("none", "snapshot", "series"), ``days`` and ``step_s`` of a series, the share of
VMs sized or driven by a default rule (``defaulted_share``, ``cpu_default_vms``, ``mem_default_vms``) and, when the
source lists hosts (``hosts_listed`` not None), ``missing_host_share`` / ``missing_host_vms`` and
``unknown_cpu_hosts``.
"""

from __future__ import annotations

DAY_S = 86_400.0
GRADES = "ABCD"
THRESHOLDS = {
    "history": "A: time series >= 28 days at <= 15-min samples; B: >= 7 days at <= 1-h samples; C: a shorter series or a "
               "single snapshot; D: no usage series (sizes only)",
    "defaulted": "share of VMs sized by a default rule: A <= 5 %, B <= 20 %, C <= 50 %, D above",
    "missing_hosts": "share of VMs whose host is not in the export's host list: A 0 %, B <= 5 %, C <= 20 %, D above",
    "unknown_cpus": "share of listed hosts whose CPU model, clock or cores were not exported: A 0 %, B <= 10 %, C <= 50 %, D above",
}


def _grade(x: float, limits: tuple[float, float, float]) -> str:
    """'A' when x <= limits[0], 'B' <= limits[1], 'C' <= limits[2], else 'D'."""
    for g, lim in zip("ABC", limits):
        if x <= lim + 1e-12:
            return g
    return "D"


def rate(facts: dict) -> dict:
    """The rating (worst grade), each fact's grade, and the reasons (every fact graded below A)."""
    grades: dict[str, str] = {}
    reasons: list[str] = []
    kind = facts["kind"]
    if kind == "synthetic":
        grades["history"] = "D"
        reasons.append("synthetic demand (profiles or a synthetic trace): no measured usage; the figures hold for the "
                       "profiles as given, not for measured VMs")
    elif kind == "none":
        grades["history"] = "D"
        reasons.append("no usage exported: VMs sized by vCPUs and configured memory, CPU Ready not checked")
    elif kind == "snapshot":
        grades["history"] = "C"
        reasons.append("a single snapshot (one sample per VM): nothing about peaks or how often they coincide")
    elif facts.get("step_s") is None:
        grades["history"] = "C"
        reasons.append(f"{facts['days']:.1f} days of history at an unknown sample interval")
    else:
        d, s = facts["days"], facts["step_s"]
        grades["history"] = "A" if d >= 28 and s <= 900 else ("B" if d >= 7 and s <= 3600 else "C")
        if grades["history"] != "A":
            reasons.append(f"{d:.1f} days of history at {s / 60:g}-min samples (A needs >= 28 days at <= 15 min)")
    share = facts["defaulted_share"]
    grades["defaulted"] = _grade(share, (0.05, 0.20, 0.50))
    if grades["defaulted"] != "A":
        if "synthetic_vms_share" in facts:  # a run: VMs driven by a synthetic profile have no measured demand
            reasons.append(f"{100 * share:.0f} % of VMs driven by a synthetic profile (no measured demand)")
        else:
            reasons.append(f"{100 * share:.0f} % of VMs sized by a default rule ({facts['cpu_default_vms']:,} without CPU "
                           f"usage, {facts['mem_default_vms']:,} without memory in use)")
    if facts.get("hosts_listed") is not None:
        ms = facts["missing_host_share"]
        grades["missing_hosts"] = _grade(ms, (0.0, 0.05, 0.20))
        if grades["missing_hosts"] != "A":
            reasons.append(f"{facts['missing_host_vms']:,} VMs ({100 * ms:.0f} %) run on hosts not in the host list (default clock)")
        listed = max(int(facts["hosts_listed"]), 1)
        us = (facts.get("unknown_cpu_hosts") or 0) / listed
        grades["unknown_cpus"] = _grade(us, (0.0, 0.10, 0.50))
        if grades["unknown_cpus"] != "A":
            reasons.append(f"{facts['unknown_cpu_hosts']:,} of {facts['hosts_listed']:,} hosts without CPU model, clock or cores")
    rating = max(grades.values(), key=GRADES.index)
    return {"rating": rating, "grades": grades, "reasons": reasons or ["every graded fact is A"],
            "thresholds": {k: THRESHOLDS[k] for k in grades}}
