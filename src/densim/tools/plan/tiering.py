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
* ``active-memory rule`` (with ``active_rule``): the next ratio keeps the bound but some host's active
  memory no longer fits its DRAM (VMware's sizing rule for tiering, docs/background/tiering.md);
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
                    active_rule: bool = False, source: str | Path = "scenario", progress=None) -> dict[str, Any]:
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
    if not ks:
        raise InputError(src, "--ratios", "no ratio to try: give at least one, e.g. '1:1,1:2'")
    names = [g.name for g in scenario.vms]
    rows = []
    for k in ks:
        if progress is not None:
            progress(f"ratio {_ratio_text(k)}")
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
        worst = np.asarray(r.vm_acc.max["mem_slowdown"], dtype=float)  # the memory stage always declares it
        worst = np.where(placed, np.maximum(worst, 1.0), 1.0)
        by_group = np.ones(len(names))
        np.maximum.at(by_group, np.asarray(vms.group), worst)
        t = r.summary["memory"]["tiering"]  # the memory stage reports it whenever a tier is configured
        rows.append({
            "ratio": _ratio_text(k), "k": k, "seed": r.summary.get("seed"),
            "memory_overcommit": float(sc.placement.memory_overcommit),
            "hosts_used": int(np.unique(vms.host[placed]).size),
            "vms_placed": int(placed.sum()), "vms": int(vms.n),
            "worst_slowdown_by_group": {n: float(s) for n, s in zip(names, by_group)},
            "worst_slowdown": float(by_group.max(initial=1.0)),
            "hosts_breaking_active_rule": len(t["hosts_breaking_active_rule"]),
            "tier_device_util_peak": float(t["tier_device_util_peak"]),
        })
    return _answer(rows, bound, keep_overcommit, active_rule)


def _ok(row: dict, bound: float, active_rule: bool = False) -> bool:
    return ("refused" not in row and row["vms_placed"] == row["vms"] and row["worst_slowdown"] <= bound + 1e-12
            and not (active_rule and row["hosts_breaking_active_rule"]))


def _answer(rows: list[dict], bound: float, keep_overcommit: bool, active_rule: bool = False) -> dict[str, Any]:
    best = None
    for i, row in enumerate(rows):
        if _ok(row, bound, active_rule):
            best = i
        else:
            break  # a higher ratio only spills more: the answer is the last ratio before the first miss
    out: dict[str, Any] = {"bound": bound, "keep_overcommit": keep_overcommit, "active_rule": active_rule, "ratios": rows,
                           "seed": rows[0].get("seed") if rows else None}
    if best is None:
        first = rows[0]
        out.update(ratio=None, limiting=_limit(first, bound, active_rule), reason=_why(first, bound))
        return out
    nxt = rows[best + 1] if best + 1 < len(rows) else None
    if nxt is None:
        limiting, reason = "vSphere maximum", f"{rows[best]['ratio']} is the highest ratio tried and within the bound"
    else:
        limiting, reason = _limit(nxt, bound, active_rule), _why(nxt, bound)
    # the lowest ratio that already packs the VMs on as few hosts: above it another resource (CPU) binds
    enough = next(r for r in rows[: best + 1] if r["hosts_used"] == rows[best]["hosts_used"])
    out.update(ratio=rows[best]["ratio"], k=rows[best]["k"], hosts_used=rows[best]["hosts_used"],
               worst_slowdown=rows[best]["worst_slowdown"], limiting=limiting, reason=reason,
               fewest_hosts_from=enough["ratio"])
    return out


def _limit(row: dict, bound: float, active_rule: bool) -> str:
    """What stops ``row`` (the first ratio that fails)."""
    if "refused" in row:
        return "tier device"
    if row["vms_placed"] < row["vms"]:
        return "placement"
    if row["worst_slowdown"] > bound + 1e-12:
        return "tier ratio"
    return "active-memory rule" if active_rule and row["hosts_breaking_active_rule"] else "tier ratio"


def _why(row: dict, bound: float) -> str:
    if "refused" in row:
        return f"at {row['ratio']}: {row['refused']}"
    if row["vms_placed"] < row["vms"]:
        return f"at {row['ratio']} {row['vms'] - row['vms_placed']} VM(s) are not placed"
    g, s = max(row["worst_slowdown_by_group"].items(), key=lambda kv: kv[1])
    rule = f"{row['hosts_breaking_active_rule']} host(s) break the active-memory rule" if row["hosts_breaking_active_rule"] else ""
    if s <= bound + 1e-12:  # within the bound: the active-memory rule is what fails
        return f"at {row['ratio']} {rule} (active memory beyond DRAM; worst slowdown {s:.3f}x)"
    return f"at {row['ratio']} VM group {g!r} slows {s:.3f}x > {bound:g}x" + (f"; {rule}" if rule else "")


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


# ---------------------------------------------------------------------------------------------
# densim plan: the memory check of a plan file whose memory section has a tier


def memory_check_tiered(host_of, n_hosts: int, host_mem_bytes: float, mem_bytes, capacity_mhz, cpu_mhz, mem_used_bytes,
                        settings, catalog, *, block_elements: int = 2_000_000, images=None, sockets: int = 1):
    """:func:`densim.tools.plan.qos.memory_check` for a plan whose ``memory.tiering`` gives every candidate host an
    NVMe tier of ``ratio x`` its memory: reclamation starts beyond DRAM + tier, the spill beyond DRAM lives on the
    tier (idle pages first, :func:`densim.models.tiering.place_pages`), tier faults queue at the host's tier
    device; a VM's slowdown is 1 + its swap stretch + its tier stretch (as in the engine's memory stage)."""
    from densim.catalog.core import CatalogError
    from densim.models import memory as M
    from densim.models import tiering as TI
    from densim.models.devices import DeviceSpec
    from densim.models.workload_memory import MemoryWorkload
    from densim.plant.memory import memory_params
    from densim.tools.plan.memcheck import MemoryCheck, step_blocks

    t = settings.tiering
    if t.hosts is not None:
        raise InputError(None, "memory.tiering.hosts", "a plan's candidates have no host groups: give the tier to every "
                                                       "candidate (leave hosts out)")
    try:
        dev = catalog.get("devices", t.device, DeviceSpec)
    except CatalogError as exc:
        raise InputError(None, "memory.tiering.device", str(exc.args[0]).strip("'\"")) from None
    if dev.kind != "nvme_ssd" or dev.capacity_bytes is None:
        raise InputError(None, "memory.tiering.device", f"device {t.device!r} must be an NVMe SSD with a capacity")
    tier = t.ratio * float(host_mem_bytes)
    if tier > t.devices_per_host * float(dev.capacity_bytes) * (1 + 1e-9):
        raise InputError(None, "memory.tiering.ratio", f"a 1:{t.ratio:g} tier of {host_mem_bytes / 2**30:.0f} GiB needs "
                                                       f"{tier / 2**30:.0f} GiB of NVMe but {t.devices_per_host} x "
                                                       f"{t.device} hold {t.devices_per_host * dev.capacity_bytes / 2**30:.0f} GiB")
    params = memory_params(settings, catalog)
    prof = catalog.get("memory_workloads", settings.workload, MemoryWorkload)
    mem_bytes = np.asarray(mem_bytes, float)
    n = mem_bytes.shape[0]
    cfg_h = np.bincount(host_of, weights=mem_bytes, minlength=n_hosts)
    n_h = np.bincount(host_of, minlength=n_hosts).astype(float)
    dram_h = M.guest_capacity_bytes(float(host_mem_bytes), n_h, params)
    short = cfg_h > dram_h  # hosts whose memory spills past DRAM (to the tier, and beyond it to swap)
    out = MemoryCheck(np.ones(n_hosts), np.ones(n), int((cfg_h > dram_h + tier).sum()), np.zeros(n_hosts))
    idx = np.flatnonzero(short[host_of])
    if idx.size == 0:
        return out
    store = M.DeviceArrays.from_spec(catalog.get("devices", settings.swap_device, DeviceSpec))
    cache = (M.DeviceArrays.from_spec(catalog.get("devices", settings.swap_cache_device, DeviceSpec))
             if settings.swap_cache_device else None)
    tdev = TI.tier_device_arrays(dev, t.devices_per_host)
    tcost = TI.tier_costs(params.software_s if t.software_s is None else t.software_s,
                          params.writes_per_fault if t.writes_per_fault is None else t.writes_per_fault, params.costs())
    cfg = mem_bytes[idx]
    for steps, act, util, seg in step_blocks(idx, cfg, np.asarray(host_of)[idx], np.asarray(capacity_mhz, float)[idx],
                                             cpu_mhz, mem_used_bytes, prof.active_fraction, n_hosts, block_elements):
        dram = np.broadcast_to(dram_h, (steps, n_hosts)).ravel()
        zf, isf = ((params.zero_page_fraction, params.inter_vm_sharing_fraction) if images is None else
                   images.fractions(idx, steps, cfg, np.minimum(act, cfg), seg, sockets, settings, params))
        rec = M.reclaim(np.tile(cfg, steps), np.ascontiguousarray(act).ravel(), seg, steps * n_hosts, dram + tier,
                        zero_page_fraction=zf, inter_vm_sharing_fraction=isf,
                        balloon_limit=params.balloon_limit, balloon_active_share=prof.balloon_active_share,
                        compression_cache_fraction=params.compression_cache_fraction if params.compression else 0.0,
                        compression_ratio=params.compression_ratio,
                        compressible_fraction=prof.compressible_fraction if params.compression else 0.0,
                        swap_cache_bytes=settings.swap_cache_bytes if cache is not None else 0.0)
        rate = (prof.total_access_rate_per_s * util).ravel()
        f = M.fault_rates(rec, rate, miss_model=prof.miss_model, miss_params=prof.miss_params())
        sw = M.solve_throughput(f, seg, steps * n_hosts, store=store, cache=cache, costs=params.costs(), overlap=prof.overlap,
                                background_store_iops=settings.background_swap_iops)
        pl = TI.place_pages(rec.resident_bytes, rec.active_bytes * rec.resident_active_fraction, rec.resident_active_fraction,
                            seg, steps * n_hosts, dram)
        m_dram = M.miss_ratio(prof.miss_model, pl.dram_active_fraction, **prof.miss_params())
        tf = TI.tier_faults(rate, TI.tier_access_ratio(m_dram, f.miss_ratio))
        tp = TI.solve_tier(tf, seg, steps * n_hosts, device=tdev, costs=tcost, overlap=prof.overlap)
        sl = (sw.slowdown + tp.slowdown - 1.0).reshape(steps, idx.size)
        np.maximum.at(out.vm_slowdown_max, idx, sl.max(axis=0))
        swapped = M.seg_sum(rec.swapped_bytes, seg, steps * n_hosts).reshape(steps, n_hosts)
        np.maximum(out.swapped_gib_peak, swapped.max(axis=0) / M.GIB, out=out.swapped_gib_peak)
    np.maximum.at(out.slowdown_worst, host_of, out.vm_slowdown_max)
    return out


def in_use_for_capacity(inv, spec):
    """The inventory's memory-in-use series as the plan's placement counts it against a host's usable memory:
    with a ``1:k`` NVMe tier the host holds ``(1 + k)`` x that in use (the tier takes what DRAM cannot, and the
    memory check then measures what it costs), so the series is divided by ``1 + k``; unchanged without a tier."""
    used = inv.mem_used_bytes
    t = spec.memory.tiering if spec.memory is not None else None
    if used is None or t is None:
        return used
    return used / np.float32(1.0 + t.ratio)
