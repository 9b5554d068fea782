"""The plan's chosen candidate as a runnable scenario (``chosen-scenario.yaml``), and its engine replay.

:func:`chosen_scenario` writes the answer of ``densim plan`` as a scenario for ``densim run``: the chosen
candidate's hosts (as many as planned, spares included, with the same CPU, memory, power and power cap), the
inventory's VMs (the same trace when the inventory's format is one the engine replays, else one constant-profile
group per distinct VM size and mean CPU use), and placement with the same over-commit rules:
``placement.cpu_overcommit`` = ``qos.vcpus_per_core`` (both count vCPUs per physical core) and a
``placement.memory_overcommit`` that gives each host the same configured-memory room as the plan
(``memory_overcommit x (memory - hypervisor_memory)``: a scenario host has no hypervisor memory field).
The placement is the plan's own: ``placement: {policy: given, assignment: chosen-assignment.csv}`` (each VM on the
host the plan chose, :mod:`densim.placement.given`), and with right-sizing a trace group reads the right-sized vCPUs
and memory from ``chosen-sizes.csv`` (``vms[].sizes``); :func:`chosen_files` writes both beside the scenario.
Whatever the scenario cannot express is named in a comment line at the top of the file, never dropped silently.

:func:`verify` resolves that scenario and runs it through the engine (:func:`densim.plant.resolve`,
:func:`densim.engine.simulate`) and sets the engine's QoS figures beside the plan's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

ENGINE_FALLBACK_POLICY = "first-fit-decreasing"


def _engine_policy(policy: str) -> tuple[str, str | None]:
    """The engine policy for the plan's ``policy`` and, if it differs, why (a comment line)."""
    from densim.placement import POLICIES

    pol = POLICIES.get(policy) if policy in POLICIES else None
    if pol is not None and pol.kernel is not None:
        extra = [f for f in (pol.recipe.filters if pol.recipe is not None else ()) if f != "capacity"]
        if not extra:
            return policy, None
        return policy, (f"placement: the plan's {policy!r} also checks {', '.join(extra)} (per-window demand within the "
                        f"host's MHz and the like); the engine's {policy!r} places by vCPUs and configured memory only, so "
                        "its hosts used may differ from the plan's")
    return ENGINE_FALLBACK_POLICY, (
        f"placement: the plan's policy {policy!r} is planner-only (it opens hosts as it places and weighs per-window "
        f"demand); the engine places onto the {ENGINE_FALLBACK_POLICY!s} rule by vCPUs and configured memory, so its "
        "hosts used may differ from the plan's")


def _chosen(res, candidate: str | None = None):
    """``(result, candidate spec)`` of the best feasible candidate, or of the feasible one named ``candidate``."""
    best = next((r for r in res.ranked() if r.feasible and (candidate is None or r.name == candidate)), None)
    if best is None:
        return None, None
    return best, next(c for c in res.spec.candidates if c.name == best.name)


ASSIGNMENT_FILE = "chosen-assignment.csv"
SIZES_FILE = "chosen-sizes.csv"
TRACE_GROUP = "vm"  # the inventory's own VM names for Bitbrains and OpenDC (read_via_foundation names its source "vm")


def _given(res, r) -> bool:
    """The plan's placement can be given to the engine: every VM has a host."""
    return r.host_of_vm is not None and bool((np.asarray(r.host_of_vm) >= 0).all())


def _replayed(res, fmt: str) -> bool:
    from densim.workloads.registry import FORMATS

    inv = res.inventory
    return inv.cpu_mhz is not None and fmt in FORMATS and FORMATS.get(fmt).replayable and fmt != "planetlab"


def _sizes(res) -> tuple[np.ndarray, np.ndarray]:
    inv = res.inventory
    vcpus = np.asarray(inv.vcpus if res.rightsizing is None else res.rightsizing.vcpus_rec, dtype=np.int64)
    mem = np.asarray(inv.mem_bytes if res.rightsizing is None else res.rightsizing.mem_rec_bytes, dtype=np.float64)
    return vcpus, mem


def _engine_vm_names(res, fmt: str) -> np.ndarray:
    """Each inventory VM's name in the engine run of the chosen scenario (its trace group, or its profile group)."""
    inv = res.inventory
    names = np.asarray(inv.names, dtype=object)
    if _replayed(res, fmt):
        # Bitbrains and OpenDC inventories name their VMs as a source group named "vm" does; Azure's are the VM ids
        return names if fmt in ("bitbrains", "opendc") else np.array([f"{TRACE_GROUP}-{n}" for n in names], dtype=object)
    key, _ = _profile_keys(res)
    _, inverse = np.unique(key, return_inverse=True)
    inverse = inverse.ravel()
    order = np.argsort(inverse, kind="stable")
    first = np.r_[0, np.flatnonzero(np.diff(inverse[order])) + 1]
    rank = np.empty(inverse.size, dtype=np.int64)
    rank[order] = np.arange(inverse.size) - np.repeat(first, np.diff(np.r_[first, inverse.size]))
    return np.array([f"g{g}-{k}" for g, k in zip(inverse, rank)], dtype=object)


def chosen_files(res, fmt: str, candidate: str | None = None) -> dict[str, str]:
    """The files :func:`chosen_scenario` names, as ``{file name: CSV text}``: the plan's placement (vm, host) and, for
    a trace group with right-sizing, the right-sized sizes (vm, vcpus, memory in bytes)."""
    import io

    import polars as pl

    r, c = _chosen(res, candidate)
    if r is None or not _given(res, r):
        return {}
    from densim.csvsafe import safe_cell

    names = np.array([safe_cell(str(n)) for n in _engine_vm_names(res, fmt)], dtype=object)  # read back by given.py
    out = {}
    buf = io.StringIO()
    pl.DataFrame({"vm": names.astype(str), "host": [safe_cell(f"{c.name}-{h}") for h in np.asarray(r.host_of_vm)]}).write_csv(buf)
    out[ASSIGNMENT_FILE] = buf.getvalue()
    if res.rightsizing is not None and _replayed(res, fmt):
        vcpus, mem = _sizes(res)
        buf = io.StringIO()
        pl.DataFrame({"vm": names.astype(str), "vcpus": vcpus, "memory": mem.round().astype(np.int64)}).write_csv(buf)
        out[SIZES_FILE] = buf.getvalue()
    return out


def chosen_scenario(res, inventory_path: str | Path, fmt: str, given: bool = True,
                    candidate: str | None = None) -> tuple[dict[str, Any], list[str]] | None:
    """``(scenario as a dict, comment lines)`` for the best feasible candidate; None when none is feasible.

    ``given``: the plan's placement and right-sized sizes are read from :func:`chosen_files` (written beside the
    scenario); False: the engine places with the plan's policy where it has one (else first-fit-decreasing) and a trace
    group keeps the trace's sizes (densim plan's landing runs, which place VMs as they land)."""
    from densim.tools.plan.hosts import host_type_of

    r, c = _chosen(res, candidate)
    if r is None:
        return None
    inv, spec = res.inventory, res.spec
    q = spec.qos
    dropped: list[str] = []
    host = host_type_of(c)
    hg: dict[str, Any] = {"name": c.name, "count": int(r.n_hosts),
                          "cpu": c.cpu.model_dump(by_alias=True, exclude_none=True, mode="json"),
                          "memory": float(c.memory_bytes), "power": c.power.model_dump(by_alias=True, exclude_none=True, mode="json"),
                          "rack_units": float(c.rack_units)}
    if c.power_cap_w is not None:
        hg["power_cap"] = float(c.power_cap_w)
    if c.gpus is not None or spec.gpu is not None:
        dropped.append("GPUs (candidate gpus, the plan's gpu section): the replayed scenario has no GPU hosts or GPU "
                       "requests, so its hosts are the CPU/memory part of the plan's answer")
    if c.storage is not None:
        dropped.append(f"candidate storage ({c.storage.device} x {c.storage.drives}, {c.storage.raid}): the I/O latency "
                       "check is not replayed (no datastore written)")
    # the same configured-memory room per host: the plan allows memory_overcommit x usable memory
    mem_oc_plan = r.memory_overcommit_used or q.memory_overcommit
    mem_oc = mem_oc_plan * host.usable_mem_bytes / float(c.memory_bytes)
    given = given and _given(res, r)
    if given:
        policy = "given"
    else:
        policy, why = _engine_policy(spec.policy)
        if why:
            dropped.append(why)
        if q.max_cpu_utilisation < 1.0:
            dropped.append(f"qos.max_cpu_utilisation = {q.max_cpu_utilisation:g}: the engine places by vCPUs, not by demand")
        for tag in ("anti_affinity", "affinity"):
            if tag in inv.tags and any(str(g) for g in inv.tags[tag]):
                dropped.append(f"{tag} groups: a scenario places VM groups without them")
    sc: dict[str, Any] = {
        "name": f"plan-{c.name}",
        "description": f"densim plan's chosen candidate, {r.n_hosts} x {c.name}, for {inv.n_vms} VMs of {inv.source}",
        "cluster": {"hosts": [hg]},
        "vms": [],
        "placement": {"policy": policy, **({"assignment": ASSIGNMENT_FILE} if given else {}),
                      "cpu_overcommit": float(q.vcpus_per_core), "memory_overcommit": float(mem_oc)},
        "simulation": {"step": float(inv.step_s), "horizon": float(max(inv.n_steps, 1) * inv.step_s)},
    }
    if c.power_cap_w is not None and (c.min_mhz, c.pstate_step_mhz) != (800.0, 100.0):
        sc["power"] = {"min_clock": float(c.min_mhz), "pstate_step": float(c.pstate_step_mhz)}
    if spec.memory is not None and spec.memory.model != "none":
        sc["memory"] = spec.memory.model_dump(by_alias=True, exclude_none=True, mode="json")
    if _replayed(res, fmt):
        sc["vms"].append({"name": TRACE_GROUP, "trace": {"format": fmt, "path": str(Path(inventory_path).resolve())}})
        sc["simulation"]["start"] = float(inv.start_s)
        if inv.vm_start_s is not None:
            sc["scheduling"] = {"lifetimes": "off"}  # the plan places every VM at once for the whole series
        if res.rightsizing is not None:
            if given:
                sc["vms"][0]["sizes"] = SIZES_FILE
            else:
                dropped.append("right-sizing: the trace's VMs keep their sizes from the trace (a trace group has one size rule)")
    else:
        sc["vms"] = _profile_groups(res, dropped)
    return sc, dropped


def _profile_keys(res) -> tuple[np.ndarray, np.ndarray]:
    """Per VM the constant-profile group key (vCPUs, MHz, memory, mean CPU use) and the measured (unclipped) use."""
    inv = res.inventory
    vcpus, mem = _sizes(res)
    cap = vcpus * np.asarray(inv.vcpu_mhz, dtype=np.float64)
    util = np.ones(inv.n_vms) if inv.cpu_mhz is None else np.asarray(inv.cpu_mhz, dtype=np.float64).mean(axis=0) / cap
    key = np.rec.fromarrays([vcpus, np.asarray(inv.vcpu_mhz, float), mem, np.round(np.clip(util, 0.0, 1.0), 4)])
    return key, util


def _profile_groups(res, dropped: list[str]) -> list[dict[str, Any]]:
    """One constant-profile group per distinct (vCPUs, MHz, memory, mean CPU use) of the planned VMs."""
    inv = res.inventory
    key, util = _profile_keys(res)
    if inv.cpu_mhz is None:
        dropped.append("CPU demand: the inventory has none; VMs run busy on every vCPU (the plan's energy rule; the plan "
                       "did not check CPU Ready)")
    else:
        if inv.n_steps > 1:
            dropped.append(f"CPU demand series: the {inv.fmt or 'inventory'} format is not replayed by the engine; each VM "
                           "runs a constant profile at its mean CPU use over the series (peaks are not replayed)")
        else:
            dropped.append("CPU demand: each VM runs a constant profile at its measured (snapshot) CPU use")
        if (util > 1.0).any():
            dropped.append(f"{int((util > 1).sum())} VM(s) measured above 100 % of vCPUs x MHz: profile held at 100 %")
    if inv.mem_used_bytes is not None:
        dropped.append("memory in use series: profiles use their active_memory_fraction default")
    uniq, counts = np.unique(key, return_counts=True)
    return [{"name": f"g{i}", "count": int(n), "vcpus": int(k[0]), "vcpu_speed": float(k[1]), "memory": float(k[2]),
             "profile": {"kind": "constant", "mean": float(k[3])}} for i, (k, n) in enumerate(zip(uniq, counts))]


def scenario_text(sc: dict[str, Any], dropped: list[str]) -> str:
    import yaml

    head = ["# densim plan's chosen candidate as a scenario: densim run chosen-scenario.yaml"]
    if sc.get("placement", {}).get("policy") == "given":
        head.append(f"# placement: the plan's own, each VM on the host {sc['placement']['assignment']} names (policy given)"
                    + (f"; right-sized vCPUs and memory per VM from {sc['vms'][0]['sizes']}" if sc["vms"] and "sizes" in sc["vms"][0] else ""))
    head += [
            "# placement.cpu_overcommit = the plan's qos.vcpus_per_core (vCPUs per physical core); memory_overcommit gives",
            "# each host the plan's configured-memory room (qos.memory_overcommit x (memory - hypervisor_memory)) / memory",
            "# (units: memory in bytes, clocks in MHz, times in seconds, power in W)"]
    head += [f"# dropped: {d}" for d in dropped] or ["# dropped: nothing"]
    return "\n".join(head) + "\n" + yaml.safe_dump(sc, sort_keys=False, allow_unicode=True)


def engine_figures(result) -> dict[str, Any]:
    """The engine run's QoS figures: CPU Ready mean / p95 / max (per vCPU, %), hosts used, VMs placed and unplaced,
    and with the memory model hosts swapping."""
    s = result.summary.to_dict()
    vm = result.vm_steps() if callable(getattr(result, "vm_steps", None)) else None
    out: dict[str, Any] = {
        "hosts_total": s["hosts_total"], "hosts_used": s["hosts_used"], "vms_placed": s["vms_placed"],
        "vms_unplaced": s["vms_unplaced"],
        "cpu_ready_pct_mean": s["qos"]["cpu_ready_pct_mean"],
        "cpu_ready_pct_worst_vm_mean": s["qos"]["cpu_ready_pct_worst_vm_mean"],
        "cpu_ready_pct_max": s["qos"]["cpu_ready_pct_worst_step"],
    }
    out["cpu_ready_pct_p95"] = _ready_p95(vm)
    if "memory" in s:
        m = s["memory"]
        out["memory_hosts_swapping"] = len(m.get("hosts_swapping", []))
    return out


def _ready_p95(vm) -> float | None:
    if vm is None:
        return None
    try:
        col = np.asarray(vm["cpu_ready_pct"], dtype=np.float64)
    except (KeyError, TypeError, ValueError):
        return None
    return float(np.percentile(col, 95)) if col.size else None


def plan_ready_stats(res, r, c, chunk: int = 2048) -> tuple[float | None, float | None, float | None]:
    """The plan's own CPU Ready per vCPU over every VM and step of its placement: (mean, p95, max), None without a CPU
    series.

    The same rule as the plan's full-resolution check (:func:`densim.placement.tspack.host_metrics`): a VM's ready is
    its utilisation x its host's share ``100 E[(K - C)+] / E[K]`` (:func:`densim.placement.filters.ready_pct_worst`),
    with the variance of ``K`` summed over the VMs, ``sum v_j u_j (1 - u_j)``: the engine's ``binomial`` model's rule
    too (:func:`densim.models.cpu.ready_binomial`, the CPU kernel), so on the same placement the two agree."""
    from densim.placement.filters import ready_pct_worst
    from densim.tools.plan.hosts import host_type_of

    inv = res.inventory
    if inv.cpu_mhz is None or r.host_of_vm is None:
        return None, None, None
    host = host_type_of(c)
    v = np.asarray(inv.vcpus if res.rightsizing is None else res.rightsizing.vcpus_rec, dtype=np.float64)
    host_of = np.asarray(r.host_of_vm)
    h = int(host_of.max()) + 1
    onehot = np.zeros((v.size, h))
    onehot[np.arange(v.size), host_of] = 1.0
    host_vcpus = v @ onehot
    parts = []
    for t0 in range(0, inv.cpu_mhz.shape[0], chunk):
        u = np.clip(inv.cpu_mhz[t0:t0 + chunk].astype(np.float64) / (v[None, :] * host.core_mhz), 0.0, 1.0)
        mean, var = (v[None, :] * u) @ onehot, (v[None, :] * u * (1 - u)) @ onehot
        share = ready_pct_worst(mean, var, np.ones_like(mean), host.logical_capacity, host_vcpus[None, :])
        parts.append((u * share[:, host_of]).ravel())
    allr = np.concatenate(parts)
    return float(allr.mean()), float(np.percentile(allr, 95)), float(allr.max())


def plan_figures(r, ready_mean: float | None = None, ready_p95: float | None = None) -> dict[str, Any]:
    def fin(x):
        return float(x) if x is not None and np.isfinite(x) else None

    return {"hosts": int(r.n_hosts), "cpu_ready_pct_mean": ready_mean, "cpu_ready_pct_p95": ready_p95, "hosts_packed": int(r.n_hosts_packed), "vms_placed": int(np.sum(r.host_of_vm >= 0))
            if r.host_of_vm is not None else None, "cpu_ready_pct_max": fin(r.ready_pct_worst),
            "cpu_ready_pct_p99_of_hosts": fin(r.ready_pct_p99), "memory_hosts_short": int(r.mem_hosts_short),
            "memory_slowdown_worst": fin(r.mem_slowdown_worst)}


def verify(res, scenario_path: Path, candidate: str | None = None) -> dict[str, Any]:
    """Run ``scenario_path`` (with the files :func:`chosen_files` wrote beside it) through the engine; the engine's
    figures beside the plan's, with the differences."""
    import time

    from densim.engine import simulate
    from densim.plant import resolve
    from densim.spec.loader import load_scenario

    r, c = _chosen(res, candidate)
    t0 = time.perf_counter()
    sc = load_scenario(scenario_path)
    result = simulate(resolve(sc, source=scenario_path))
    eng = engine_figures(result)
    mean, p95, _ = plan_ready_stats(res, r, c)
    pl = plan_figures(r, mean, p95)
    diff = {"hosts_used_minus_plan_hosts_packed": eng["hosts_used"] - pl["hosts_packed"],
            "vms_placed_minus_plan": (eng["vms_placed"] - pl["vms_placed"]) if pl["vms_placed"] is not None else None,
            "cpu_ready_pct_max_minus_plan": (eng["cpu_ready_pct_max"] - pl["cpu_ready_pct_max"])
            if pl["cpu_ready_pct_max"] is not None else None}
    for k in ("mean", "p95"):
        a, b = pl[f"cpu_ready_pct_{k}"], eng[f"cpu_ready_pct_{k}"]
        diff[f"cpu_ready_pct_{k}_minus_plan"] = b - a if a is not None and b is not None else None
    return {"candidate": r.name, "scenario": scenario_path.name, "plan": pl, "engine": eng, "difference": diff,
            "wall_s": time.perf_counter() - t0}


def verify_candidates(res, inventory_path: str | Path, fmt: str, progress=None) -> list[dict[str, Any]]:
    """``densim plan --verify-all``: every feasible candidate, in ranking order, written as its scenario (with its
    placement and sizes files, in a temporary folder) and run through the engine; per candidate the plan's and the
    engine's figures (:func:`verify`) and the scenario's dropped lines."""
    import tempfile

    out = []
    for r in res.ranked():
        if not r.feasible:
            continue
        if progress is not None:
            progress(r.name)
        sc, dropped = chosen_scenario(res, inventory_path, fmt, candidate=r.name)
        with tempfile.TemporaryDirectory(prefix="densim-plan-verify-") as d:
            path = Path(d) / "scenario.yaml"
            path.write_text(scenario_text(sc, dropped), encoding="utf-8")
            for name, body in chosen_files(res, fmt, candidate=r.name).items():
                (Path(d) / name).write_text(body, encoding="utf-8")
            v = verify(res, path, candidate=r.name)
        v["scenario"] = None  # written to a temporary folder; chosen-scenario.yaml is the chosen candidate's
        v["dropped"] = dropped
        out.append(v)
    return out
