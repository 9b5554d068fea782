"""The plan's readiness outputs: what blocks or slows a live move of each VM (the checks are read from the RVTools
export by :mod:`densim.workloads.readers.rvtools_readiness`): a summary for summary.json and the report, and
readiness.csv with one row per VM."""

from __future__ import annotations

import csv
import io

import numpy as np

from densim.csvsafe import safe_row

NOT_READ = "this inventory format has no migration details (readiness is read from RVTools exports only)"


def cross_vendor(inv, candidates) -> list[dict]:
    """Per candidate with a catalog CPU (its vendor known): VMs whose CPU features come from the other vendor. vMotion
    never crosses Intel and AMD (vSphere API ``EVCAdmissionFailedCPUVendor``): such a VM moves to that candidate only
    powered off. Candidates given by cores and clock alone have no vendor and are left out (said in ``why``)."""
    from densim.catalog.core import builtin_catalog
    from densim.plant import resolve_cpu

    rd = inv.readiness
    out = []
    for c in candidates:
        vendor = (resolve_cpu(c.cpu, builtin_catalog()).vendor or "").strip().lower()
        known = rd.cpu_vendor != ""
        row = {"candidate": c.name, "vendor": vendor or None, "vms_unknown_vendor": int((~known).sum())}
        if vendor in ("intel", "amd"):
            row["vms"] = int((known & (rd.cpu_vendor != vendor)).sum())
        else:
            row["vms"] = None
            row["why"] = "the candidate's CPU is not a catalog model: its vendor is unknown"
        out.append(row)
    return out


def readiness_summary(inv, candidates=()) -> dict:
    """Counts per check and in total; a check whose tab or column is not in the export is 'unknown' with the reason.
    ``candidates``: the plan's, for the cross-vendor count (:func:`cross_vendor`)."""
    rd = inv.readiness
    if rd is None:
        return {"read": False, "why": NOT_READ}
    from densim.workloads.readers.rvtools_readiness import SOURCES

    status = rd.status()
    checks = []
    for c in rd.checks:
        checks.append({
            "key": c.key, "label": c.label, "tab": c.tab, "columns": list(c.columns), "effect": c.effect,
            "known": c.known, "missing": c.missing or None, "reason": c.reason, "source": SOURCES[c.key],
            "vms": int(c.flagged.sum()) if c.known else None, "vms_unknown": int(c.unknown.sum()), "items": c.items if c.known else None,
        })
    vendors = {v or "unknown": int(n) for v, n in zip(*np.unique(rd.cpu_vendor.astype(str), return_counts=True))}
    return {
        "read": True, "vms": inv.n_vms, "checks": checks,
        "blocked": int((status == "blocked").sum()), "slowed": int((status == "slowed").sum()),
        "unknown": int((status == "unknown").sum()), "ready": int((status == "ready").sum()),
        "unknown_checks": [c["key"] for c in checks if not c["known"]],
        "cpu_vendors": vendors,
        "cross_vendor": cross_vendor(inv, candidates),
        "rule": ("blocked: a BLOCKS check flags the VM; slowed: only SLOWS checks flag it; unknown: nothing flags it but "
                 "some check could not be read for it (a tab or column not in the export); ready: every check read, none flags it"),
    }


def readiness_csv(inv) -> str:
    """One row per VM: its status, then per check 'yes', 'no' or 'unknown' and what was found."""
    rd = inv.readiness
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    head = ["vm", "status"]
    for c in rd.checks:
        head += [f"{c.key} ({c.effect})", f"{c.key}_detail"]
    w.writerow(head + ["cpu_vendor", "evc_mode"])
    status = rd.status()
    cells = [np.where(c.unknown, "unknown", np.where(c.flagged, "yes", "no")) for c in rd.checks]
    for i, name in enumerate(inv.names):
        row = [name, status[i]]
        for c, cell in zip(rd.checks, cells):
            row += [cell[i], c.detail[i]]
        w.writerow(safe_row(row + [rd.cpu_vendor[i] or "unknown", rd.evc_mode[i]]))
    return buf.getvalue()


def readiness_lines(summary: dict) -> list[str]:
    """The readiness counts as one sentence (report headline and terminal)."""
    r = summary.get("readiness")
    if not r or not r.get("read"):
        return []
    parts = []
    for c in r["checks"]:
        parts.append(f"{c['label']} {c['vms']:,} ({c['effect']})" if c["known"] else f"{c['label']} unknown ({c['missing']})")
    return [f"Move readiness of {r['vms']:,} VMs: {r['blocked']:,} blocked, {r['slowed']:,} slowed, {r['unknown']:,} unknown, "
            f"{r['ready']:,} ready. " + "; ".join(parts) + "."]
