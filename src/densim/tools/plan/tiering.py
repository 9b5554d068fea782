"""The planner's answer for NVMe memory tiering: the highest DRAM:NVMe ratio that keeps every workload's
slowdown within a bound (``densim tier-ratio``; docs/howto/memory-tiering.md).

For each ratio ``1:k`` tried (default 1:1, 1:1.5, 1:2, 1:3, 1:4; vSphere 9 goes to 1:4) the scenario runs
with ``memory.tiering.ratio = k`` and configured memory packed up to DRAM + tier
(``placement.memory_overcommit = 1 + k``, the density the ratio buys), unless ``keep_overcommit``
keeps the scenario's own over-commit (then only the tier's size changes). Per ratio: hosts used, VMs
placed, each VM group's worst memory slowdown (swap and tier faults, :mod:`densim.models.tiering`),
the hosts breaking the active-memory rule. The answer is the highest ratio at which every group is
within ``bound`` and every VM is placed; the **limiting factor** says what stops a higher one:

* ``tier ratio``: the next ratio tried slows a group beyond the bound (named with its slowdown);
* ``placement``: the next ratio leaves VMs unplaced;
* ``vSphere maximum``: 1:4 itself is within the bound.

``fewest_hosts_from`` is the lowest ratio that already packs the VMs on the answer's number of hosts
(above it CPU or another resource binds, and a higher ratio only adds tier faults).

Each ratio is one run of the engine (no Python loop over VMs or hosts here).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from densim.errors import InputError

DEFAULT_RATIOS = (1.0, 1.5, 2.0, 3.0, 4.0)


def _ratio_text(k: float) -> str:
    return f"1:{k:g}"


def tier_ratio_plan(scenario, *, bound: float = 1.10, ratios=DEFAULT_RATIOS, keep_overcommit: bool = False,
                    source: str | Path = "scenario") -> dict[str, Any]:
    """Run ``scenario`` (a :class:`densim.spec.scenario.Scenario` with ``memory.tiering``) at each ratio; the answer.

    Raises :class:`InputError` (one line, the field named) when the scenario has no tier or the bound is not above 1.
    """
    from densim.engine import simulate
    from densim.plant import resolve
    from densim.spec.memory import parse_tier_ratio

    src = str(source)
    if scenario.memory.model == "none" or scenario.memory.tiering is None:
        raise InputError(src, "memory.tiering", "the tier-ratio plan needs memory.model: vsphere-like and memory.tiering "
                                                "(its device) in the scenario")
    if not bound > 1.0:
        raise InputError(src, "--bound", f"the slowdown bound must be above 1 (1 = no slowdown), got {bound:g}")
    ks = []
    for r in ratios:
        try:
            ks.append(parse_tier_ratio(r))
        except ValueError as exc:
            raise InputError(src, "--ratios", str(exc)) from None
    ks = sorted(set(ks))
    names = [g.name for g in scenario.vms]
    rows = []
    for k in ks:
        tiering = scenario.memory.tiering.model_copy(update={"ratio": k})
        upd: dict[str, Any] = {"memory": scenario.memory.model_copy(update={"tiering": tiering})}
        if not keep_overcommit:
            upd["placement"] = scenario.placement.model_copy(update={"memory_overcommit": 1.0 + k})
        sc = scenario.model_copy(update=upd)
        try:
            r = simulate(resolve(sc, source=src))
        except InputError as exc:  # e.g. a tier beyond the host's devices: that ratio cannot be built
            rows.append({"ratio": _ratio_text(k), "k": k, "refused": exc.problem})
            continue
        vms = r.ctx.vms
        placed = vms.host >= 0
        worst = np.asarray(r.vm_acc.max.get("mem_slowdown", np.ones(vms.n)), dtype=float)
        worst = np.where(placed, np.maximum(worst, 1.0), 1.0)
        by_group = np.ones(len(names))
        np.maximum.at(by_group, np.asarray(vms.group), worst)
        t = r.summary["memory"].get("tiering", {})
        rows.append({
            "ratio": _ratio_text(k), "k": k,
            "memory_overcommit": float(sc.placement.memory_overcommit),
            "hosts_used": int(np.unique(vms.host[placed]).size),
            "vms_placed": int(placed.sum()), "vms": int(vms.n),
            "worst_slowdown_by_group": {n: float(s) for n, s in zip(names, by_group)},
            "worst_slowdown": float(by_group.max(initial=1.0)),
            "hosts_breaking_active_rule": len(t.get("hosts_breaking_active_rule", [])),
            "tier_device_util_peak": float(t.get("tier_device_util_peak", 0.0)),
        })
    return _answer(rows, bound, keep_overcommit)


def _ok(row: dict, bound: float) -> bool:
    return "refused" not in row and row["vms_placed"] == row["vms"] and row["worst_slowdown"] <= bound + 1e-12


def _answer(rows: list[dict], bound: float, keep_overcommit: bool) -> dict[str, Any]:
    best = None
    for i, row in enumerate(rows):
        if _ok(row, bound):
            best = i
        else:
            break  # a higher ratio only spills more: the answer is the last ratio before the first miss
    out: dict[str, Any] = {"bound": bound, "keep_overcommit": keep_overcommit, "ratios": rows}
    if best is None:
        first = rows[0]
        out.update(ratio=None, limiting="tier ratio" if "refused" not in first else "tier device",
                   reason=_why(first, bound))
        return out
    nxt = rows[best + 1] if best + 1 < len(rows) else None
    if nxt is None:
        limiting, reason = "vSphere maximum", f"{rows[best]['ratio']} is the highest ratio tried and within the bound"
    elif "refused" in nxt:
        limiting, reason = "tier device", _why(nxt, bound)
    elif nxt["vms_placed"] < nxt["vms"]:
        limiting, reason = "placement", _why(nxt, bound)
    else:
        limiting, reason = "tier ratio", _why(nxt, bound)
    # the lowest ratio that already packs the VMs on as few hosts: above it another resource (CPU) binds
    enough = next(r for r in rows[: best + 1] if r["hosts_used"] == rows[best]["hosts_used"])
    out.update(ratio=rows[best]["ratio"], k=rows[best]["k"], hosts_used=rows[best]["hosts_used"],
               worst_slowdown=rows[best]["worst_slowdown"], limiting=limiting, reason=reason,
               fewest_hosts_from=enough["ratio"])
    return out


def _why(row: dict, bound: float) -> str:
    if "refused" in row:
        return f"at {row['ratio']}: {row['refused']}"
    if row["vms_placed"] < row["vms"]:
        return f"at {row['ratio']} {row['vms'] - row['vms_placed']} VM(s) are not placed"
    g, s = max(row["worst_slowdown_by_group"].items(), key=lambda kv: kv[1])
    rule = f"; {row['hosts_breaking_active_rule']} host(s) break the active-memory rule" if row["hosts_breaking_active_rule"] else ""
    return f"at {row['ratio']} VM group {g!r} slows {s:.3f}x > {bound:g}x{rule}"


def headline_lines(ans: dict) -> list[str]:
    """The answer in plain sentences."""
    if ans["ratio"] is None:
        return [f"No tier ratio keeps every workload within {ans['bound']:g}x: {ans['reason']}. Limiting factor: {ans['limiting']}."]
    dens = "" if ans["keep_overcommit"] else f" (configured memory packed up to {1 + ans['k']:g} x DRAM)"
    return [f"Highest DRAM:NVMe ratio within {ans['bound']:g}x slowdown: {ans['ratio']}{dens}: "
            f"{ans['hosts_used']} host(s) used, worst workload {ans['worst_slowdown']:.3f}x.",
            f"Limiting factor: {ans['limiting']} ({ans['reason']})."] + (
        [f"{ans['fewest_hosts_from']} already packs the VMs on {ans['hosts_used']} host(s): a higher ratio buys no fewer "
         f"hosts here (another resource binds first)."] if ans["fewest_hosts_from"] != ans["ratio"] else [])
