"""How far a plan's answer can be trusted: a data-quality rating with the facts it is computed from, and an
interval on the host count where the data supports one.

The facts (:func:`data_facts`): the kind of history (none, a single snapshot, or a time series with its days and
sample interval), the tabs read (RVTools) or series present, the share of VMs sized by a default rule (no CPU usage
exported: vCPUs x clock or the unknown CPU %; no memory in use: the configured size), VMs whose host is not in the
export's host list, and hosts whose CPU model, clock or cores were not exported.

The rating (:func:`rate`) is the worst of four grades, each with explicit thresholds (:data:`THRESHOLDS`):

* history: A = a time series of >= 28 days at <= 15-min samples; B = >= 7 days at <= 1-h samples; C = a shorter
  series or a single snapshot (one sample says nothing about peaks); D = no usage at all (sizes only);
* VMs sized by a default rule: A <= 5 %, B <= 20 %, C <= 50 %, D above;
* VMs on hosts missing from the host list: A 0 %, B <= 5 %, C <= 20 %, D above;
* hosts with an unknown CPU (model, clock or cores not exported): A 0 %, B <= 10 %, C <= 50 %, D above.

The interval (:func:`host_interval`): the chosen candidate is planned again on ``resamples`` bootstrap series,
each made of whole days of the demand drawn with replacement (the VMs' sizes kept), and the central ``level`` share
of the host counts is reported. It needs at least :data:`MIN_DAYS` whole days; with a single snapshot, or a series
shorter than that, it cannot be estimated and the summary says why.
"""

from __future__ import annotations

import numpy as np

from densim.workloads.quality import DAY_S, GRADES, THRESHOLDS, _grade, rate  # noqa: F401 - re-exported (the rule lives below the engine)

MIN_DAYS = 3  # whole days needed to resample days


def data_facts(inv) -> dict:
    """What the inventory holds, in the units of the rating."""
    n = max(inv.n_vms, 1)
    has_cpu, has_mem = inv.cpu_mhz is not None, inv.mem_used_bytes is not None
    steps = max((getattr(inv, k).shape[0] for k in ("cpu_mhz", "mem_used_bytes") if getattr(inv, k) is not None), default=0)
    kind = "none" if steps == 0 else ("snapshot" if steps == 1 else "series")
    f = inv.facts or {}
    cpu_def = int(f.get("cpu_default_vms", 0 if has_cpu else inv.n_vms))
    mem_def = int(f.get("mem_default_vms", 0 if has_mem else inv.n_vms))
    out = {
        "kind": kind,
        "steps": steps,
        "step_s": float(inv.step_s) if kind == "series" else None,
        "days": steps * float(inv.step_s) / DAY_S if kind == "series" else 0.0,
        "series": [k for k, ok in (("cpu", has_cpu), ("memory", has_mem), ("disk", inv.has_disk)) if ok],
        "tabs": f.get("tabs"),
        "usage_columns": f.get("usage_columns"),
        "vms": inv.n_vms,
        "cpu_default_vms": cpu_def,
        "mem_default_vms": mem_def,
        "defaulted_share": max(cpu_def, mem_def) / n,
        "missing_host_vms": int(inv.missing_host_vms),
        "missing_host_share": inv.missing_host_vms / n,
        "hosts_listed": f.get("hosts_listed"),
        "unknown_cpu_hosts": f.get("unknown_cpu_hosts"),
    }
    # RVTools: which columns tied VMs into move groups, the custom attributes carried, the vInfo columns not read
    out |= {k: f[k] for k in ("group_columns", "custom_attributes", "vinfo_columns_unread") if k in f}
    return out


def resample_days(inv, days: np.ndarray):
    """``inv`` with its series made of the whole days ``days`` (indexes), back to back."""
    from dataclasses import replace

    from densim.workloads.inventory import SERIES

    per_day = int(round(DAY_S / inv.step_s))
    rows = (days[:, None] * per_day + np.arange(per_day)[None, :]).ravel()
    return replace(inv, **{k: None if getattr(inv, k) is None else getattr(inv, k)[rows] for k in SERIES})


def host_interval(inv, spec, candidate, vcpus, mem_bytes, hosts: int, *, resamples: int, level: float, seed: int,
                  plan_one) -> dict:
    """Host count on ``resamples`` day-bootstrap series of ``inv`` for ``candidate`` (sizes ``vcpus``/``mem_bytes`` kept);
    ``plan_one`` is :func:`densim.tools.plan.capacity.plan_candidate` (passed in: that module calls this one)."""
    base = {"hosts": hosts, "resamples": resamples, "level": level, "low": None, "high": None}
    if inv.cpu_mhz is None and inv.mem_used_bytes is None:
        return base | {"estimated": False, "why": "no usage series: nothing to resample (the plan sized VMs by their configured size)"}
    if inv.n_steps <= 1 and (inv.mem_used_bytes is None or inv.mem_used_bytes.shape[0] <= 1):
        return base | {"estimated": False, "why": "a single snapshot: one sample per VM has no spread over time to resample"}
    if resamples == 0:
        return base | {"estimated": False, "why": "confidence.resamples is 0 (turned off)"}
    per_day = DAY_S / inv.step_s
    if abs(per_day - round(per_day)) > 1e-9:
        return base | {"estimated": False, "why": f"the sample interval ({inv.step_s:g} s) does not divide a day"}
    steps = max(inv.n_steps, 0 if inv.mem_used_bytes is None else inv.mem_used_bytes.shape[0])
    n_days = int(steps // round(per_day))
    if n_days < MIN_DAYS:
        return base | {"estimated": False, "why": f"{steps * inv.step_s / DAY_S:.2f} days of history: at least {MIN_DAYS} whole "
                                                  "days are needed to resample days"}
    rng = np.random.default_rng(seed)
    counts = np.full(resamples, np.nan)
    for b in range(resamples):
        r = plan_one(resample_days(inv, rng.integers(0, n_days, n_days)), spec, candidate, vcpus=vcpus, mem_bytes=mem_bytes)
        if r.feasible:
            counts[b] = r.n_hosts
    ok = counts[np.isfinite(counts)]
    tail = (1 - level) / 2
    infeasible = int(resamples - ok.size)
    low = int(np.quantile(ok, tail, method="lower")) if ok.size else None
    # infeasible resamples count as "more hosts than any feasible one": the upper end is open when they reach the tail
    high = None if infeasible > tail * resamples or not ok.size else int(np.quantile(
        np.concatenate([ok, np.full(infeasible, np.inf)]), 1 - tail, method="higher"))
    values, freq = np.unique(ok, return_counts=True)
    return base | {"estimated": True, "low": low, "high": high, "days": n_days, "infeasible_resamples": infeasible,
                   "counts": {str(int(v)): int(c) for v, c in zip(values, freq)},
                   "why": f"{resamples} resamples of {n_days} whole days drawn with replacement (seed {seed}); sizes kept"}


def confidence(res, plan_one, seed: int = 42) -> dict:
    """The rating, its facts and reasons, and the host-count interval of the chosen candidate (``plan_one``: see
    :func:`host_interval`)."""
    inv = res.inventory
    facts = data_facts(inv)
    out = {"facts": facts} | rate(facts)
    ok = [r for r in res.ranked() if r.feasible]
    if not ok:
        out["interval"] = {"estimated": False, "why": "no feasible candidate"}
        return out
    best = ok[0]
    cand = next(c for c in res.spec.candidates if c.name == best.name)
    if res.rightsizing is not None:
        vcpus, mem = res.rightsizing.vcpus_rec, res.rightsizing.mem_rec_bytes
    else:
        vcpus, mem = inv.vcpus, inv.mem_bytes
    cs = res.spec.confidence
    out["interval"] = {"candidate": best.name} | host_interval(inv, res.spec, cand, vcpus, mem, best.n_hosts,
                                                              resamples=cs.resamples, level=cs.level, seed=seed,
                                                              plan_one=plan_one)
    return out


def confidence_lines(conf: dict) -> list[str]:
    """The rating and interval as sentences (report and terminal)."""
    iv = conf["interval"]
    lines = [f"Data quality {conf['rating']}: " + "; ".join(conf["reasons"]) + "."]
    if iv.get("estimated"):
        hi = "more (some resamples fit no count of this candidate)" if iv["high"] is None else str(iv["high"])
        lines.append(f"Host count {iv['hosts']} x {iv['candidate']}: {100 * iv['level']:.0f} % interval {iv['low']} to {hi} "
                     f"({iv['why']}).")
    else:
        lines.append(f"Host count interval not estimated: {iv['why']}.")
    return lines
