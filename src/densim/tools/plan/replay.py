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

GPUs (the plan's ``gpu`` section, a candidate's ``gpus``): the hosts carry the candidate's ``gpus`` as they are
(model, count, scheduler, time slice, power limit), and each VM group the plan's GPU request of its VMs
(``gpu.requests[].gpu``: a vGPU size, a MIG profile or a passthrough count, with its utilisation): a
constant-profile group holds VMs of one request (the request is part of the group key), a trace group carries a
request only when every VM of the trace has the same one. The plan places the GPU VMs' GPUs apart from its
CPU/memory placement (:mod:`densim.tools.plan.gpu`), so its per-VM hosts need not leave each GPU VM a GPU: the
assignment is then the plan's GPU placement for the GPU VMs and its CPU/memory placement for the others
(:func:`_plan_placement`), checked with the engine's own capacity and GPU claim rules, else the engine places every
VM (first-fit-decreasing, GPU requests first). LLM services (``gpu.inference``) have no engine equivalent: their
hosts are in the scenario, their GPUs idle, and a ``dropped`` line says so.

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


def _gpu_requests(res, fmt: str) -> tuple[np.ndarray | None, list[str]]:
    """Per inventory VM the index into the plan's ``gpu.requests`` the replayed scenario carries (-1: none), or None
    when it carries none; and the lines naming what it cannot carry. A trace group is one VM group: it carries a
    request only when every VM of the trace has the same one."""
    spec = res.spec
    if spec.gpu is None or not spec.gpu.requests:
        return None, []
    from densim.tools.plan.gpu import request_of_vm

    req = request_of_vm(spec, np.asarray(res.inventory.names, dtype=object))
    if _replayed(res, fmt) and not (req == req[0]).all():
        asked = sorted({int(i) for i in req[req >= 0]})
        return None, [f"GPU requests gpu.requests[{', '.join(map(str, asked))}] ({int((req >= 0).sum())} of "
                      f"{req.size} VMs): the replayed trace is one VM group, which gives all its VMs one GPU request; "
                      "its VMs ask for no GPU (the hosts keep their GPUs, idle)"]
    return (None, []) if (req < 0).all() else (req, [])


def _gpu_problem(res, c, req: np.ndarray, n_hosts: int):
    """The engine's GPU state (:func:`densim.placement.gpu.build_problem`) of ``n_hosts`` hosts of candidate ``c``
    and the inventory's VMs asking ``req`` (index into the plan's ``gpu.requests``, -1: none); pack policy, the
    scenario's ``placement.gpu_policy`` default."""
    from types import SimpleNamespace

    from densim.placement.gpu import build_problem
    from densim.tools.plan.gpu import _gpu_of

    reqs = [q.gpu for q in res.spec.gpu.requests]
    hg = SimpleNamespace(gpu=_gpu_of(c), gpu_count=c.gpus.count)
    return build_problem([hg], np.zeros(n_hosts, np.int64), reqs + [None], np.where(req >= 0, req, len(reqs)), policy="pack")


def _plan_placement(res, r, c, fmt: str) -> tuple[np.ndarray | None, np.ndarray | None, str | None]:
    """``(host per VM, assignment row order, why)`` of the placement given to the engine; host None: the engine places.

    Without GPU requests: the plan's placement in inventory order (row order None). With them the placement must
    also leave each GPU VM its GPU on its host, as the engine's ``given`` policy claims them in the file's row order
    (:func:`densim.placement.gpu.place_given_gpu`): the rows go GPU VMs first, largest share of a GPU first. The plan's
    own placement is kept when it does; else the GPU VMs go to the hosts of the plan's GPU placement (the same
    first-fit-decreasing with their vCPUs and configured memory as :func:`densim.tools.plan.gpu.gpu_hosts`) and the
    others stay, if every host's vCPUs and configured memory still fit; else None (the engine places)."""
    if not _given(res, r):
        return None, None, None
    host_of = np.asarray(r.host_of_vm, dtype=np.int64)
    req, _ = _gpu_requests(res, fmt)
    if req is None or c.gpus is None:
        return host_of, None, None
    from densim.placement.capacity import within
    from densim.placement.gpu import claim_on_hosts, gpu_share_of_vm, place_gpu
    from densim.tools.plan.hosts import host_type_of, vcpu_capacity

    n = int(r.n_hosts)
    p = _gpu_problem(res, c, req, n)
    order = np.argsort(-gpu_share_of_vm(p), kind="stable").astype(np.int64)

    def claims(h: np.ndarray) -> bool:
        p.reset(n)
        return claim_on_hosts(h, order, p.state()) < 0

    if claims(host_of):
        return host_of, order, None
    host = host_type_of(c)
    vcpus, mem = _sizes(res)
    vcpus = vcpus.astype(np.float64)
    cpu_cap = vcpu_capacity(host, res.spec.qos)
    mem_cap = float(c.memory_bytes) * _scenario_mem_oc(res, r, c)
    gv = np.flatnonzero(req >= 0)
    pg = _gpu_problem(res, c, req[gv], gv.size)
    on = place_gpu("first-fit-decreasing", vcpus[gv], mem[gv], np.full(gv.size, cpu_cap), np.full(gv.size, mem_cap), pg)
    merged = host_of.copy()
    merged[gv] = on
    load = np.stack([np.bincount(merged, weights=vcpus, minlength=n), np.bincount(merged, weights=mem, minlength=n)], 1)
    moved = int((merged[gv] != host_of[gv]).sum())
    if (on >= 0).all() and on.max() < n and within(np.array([cpu_cap, mem_cap]), load).all() and claims(merged):
        return merged, order, (f"the plan's host of {moved} GPU VM(s): its CPU/memory placement does not leave every GPU VM "
                               "a GPU (the plan places GPUs apart, tools/plan/gpu.py); chosen-assignment.csv puts each GPU "
                               "VM on the host of the plan's GPU placement and every other VM where the plan put it, so "
                               "CPU Ready per host may differ from the plan's")
    return None, None, (f"placement: the plan's CPU/memory placement leaves GPU VMs no GPU, and its GPU placement beside "
                        f"the other VMs overfills a host; the engine places every VM ({ENGINE_FALLBACK_POLICY}, GPU "
                        "requests first), so its hosts used may differ from the plan's")


def _scenario_mem_oc(res, r, c) -> float:
    """The scenario's ``placement.memory_overcommit``: the plan's configured-memory room per host over its memory."""
    from densim.tools.plan.hosts import host_type_of

    mem_oc_plan = r.memory_overcommit_used or res.spec.qos.memory_overcommit
    return mem_oc_plan * host_type_of(c).usable_mem_bytes / float(c.memory_bytes)


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
    key, _ = _profile_keys(res, _gpu_requests(res, fmt)[0], _images(res))
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
    if r is None:
        return {}
    host_of, order, _ = _plan_placement(res, r, c, fmt)
    if host_of is None:
        return {}
    from densim.csvsafe import safe_cell

    names = np.array([safe_cell(str(n)) for n in _engine_vm_names(res, fmt)], dtype=object)  # read back by given.py
    out = {}
    buf = io.StringIO()
    rows = slice(None) if order is None else order  # GPU VMs first: the engine claims their GPUs in row order
    pl.DataFrame({"vm": names[rows].astype(str), "host": [safe_cell(f"{c.name}-{h}") for h in host_of[rows]]}).write_csv(buf)
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

    r, c = _chosen(res, candidate)
    if r is None:
        return None
    inv, spec = res.inventory, res.spec
    q = spec.qos
    dropped: list[str] = []
    hg: dict[str, Any] = {"name": c.name, "count": int(r.n_hosts),
                          "cpu": c.cpu.model_dump(by_alias=True, exclude_none=True, mode="json"),
                          "memory": float(c.memory_bytes), "power": c.power.model_dump(by_alias=True, exclude_none=True, mode="json"),
                          "rack_units": float(c.rack_units)}
    if c.power_cap_w is not None:
        hg["power_cap"] = float(c.power_cap_w)
    if c.gpus is not None:
        hg["gpus"] = _gpu_dump(c.gpus)
        dropped += _gpu_dropped(res, r, c, fmt)
    if c.storage is not None:
        dropped.append(f"candidate storage ({c.storage.device} x {c.storage.drives}, {c.storage.raid}): the I/O latency "
                       "check is not replayed (no datastore written)")
    # the same configured-memory room per host: the plan allows memory_overcommit x usable memory
    mem_oc = _scenario_mem_oc(res, r, c)
    gpu_req, _ = _gpu_requests(res, fmt)
    gpu_fallback = False
    if given:
        host_of, _, why = _plan_placement(res, r, c, fmt)
        given, gpu_fallback = host_of is not None, host_of is None and why is not None
        if why:
            dropped.append(why)
    if given:
        policy = "given"
    elif gpu_fallback:  # the plan's placements of CPU/memory and of GPUs do not fit together (_plan_placement says why)
        policy = ENGINE_FALLBACK_POLICY
    else:
        from densim.placement.gpu import HOST_POLICIES

        policy, why = _engine_policy(spec.policy)
        if gpu_req is not None and policy not in HOST_POLICIES:
            policy, why = ENGINE_FALLBACK_POLICY, (
                f"placement: the plan's policy {spec.policy!r} does not place GPU requests in the engine; the engine "
                f"places onto the {ENGINE_FALLBACK_POLICY} rule by vCPUs, configured memory and GPUs (GPU requests "
                "first), so its hosts used may differ from the plan's")
        if why:
            dropped.append(why)
    if not given:
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
        if gpu_req is not None:  # every VM of the trace asks for the same GPU (_gpu_requests)
            sc["vms"][0]["gpu"] = _gpu_dump(spec.gpu.requests[int(gpu_req[0])].gpu)
        img = _images(res)
        if img is not None:  # a trace group has one image: the plan's, when every VM of the trace has the same
            if (img.of_vm == img.of_vm[0]).all() and img.of_vm[0] >= 0:
                sc["vms"][0]["workload"] = {"guest_image": img.names[int(img.of_vm[0])]}
            else:
                dropped.append("guest_images: the replayed trace is one VM group, which takes one guest image; its VMs "
                               "boot different ones (or some none) in the plan, so the engine shares with "
                               "memory.zero_page_fraction alone")
    else:
        sc["vms"] = _profile_groups(res, dropped, gpu_req, _images(res))
    return sc, dropped


def _images(res):
    """The plan's guest images per VM (:func:`densim.tools.plan.memcheck.plan_images`), or None without them."""
    from densim.catalog.core import builtin_catalog
    from densim.tools.plan.memcheck import plan_images

    return plan_images(res.spec, res.inventory.names, builtin_catalog(), res.inventory.tags)


def _gpu_dump(g) -> dict[str, Any]:
    return g.model_dump(by_alias=True, exclude_none=True, mode="json")


def _gpu_dropped(res, r, c, fmt: str) -> list[str]:
    """The lines naming what of the plan's GPU description the replayed scenario does not carry, or carries otherwise."""
    g = res.spec.gpu
    if g is None:
        return [f"GPU power in the plan: without a gpu section the plan counts no power for the candidate's "
                f"{c.gpus.count} x {c.gpus.model} per host; the replayed hosts carry them, idle, and the engine counts "
                "their idle power"]
    _, out = _gpu_requests(res, fmt)
    for i, rq in enumerate(g.requests):
        if rq.gpu.utilisation is None:
            out.append(f"gpu.requests[{i}] ({rq.vms!r}) gives no utilisation: the plan counts those GPUs fully busy (an "
                       "upper bound); the engine takes each VM's CPU use in the step as its GPU busy share")
    sized = {x["name"]: x for x in (r.gpu or {}).get("inference", [])}  # densim.tools.plan.gpu.gpu_hosts
    for i, s in enumerate(g.inference):
        a = sized.get(s.name)
        where = (f": {a['replicas']} replica(s) of {a['tp']} GPU(s) on {a['hosts']} host(s), {a['slot_utilisation']:.0%} "
                 "busy in the plan") if a else ""
        out.append(f"gpu.inference[{i}] ({s.name}, {s.model}{where}): the engine serves no LLM tokens; the hosts the "
                   "plan adds for it are in the scenario with their GPUs idle, so the engine's GPU power is below the "
                   "plan's by the replicas' busy share")
    return out


def _profile_keys(res, gpu_req: np.ndarray | None = None, images=None) -> tuple[np.ndarray, np.ndarray]:
    """Per VM the constant-profile group key (vCPUs, MHz, memory, mean CPU use, with GPU requests the index of
    the VM's request, -1 for none, and with guest images the index of its image, -1 for none) and the measured
    (unclipped) use."""
    inv = res.inventory
    vcpus, mem = _sizes(res)
    cap = vcpus * np.asarray(inv.vcpu_mhz, dtype=np.float64)
    util = np.ones(inv.n_vms) if inv.cpu_mhz is None else np.asarray(inv.cpu_mhz, dtype=np.float64).mean(axis=0) / cap
    cols = [vcpus, np.asarray(inv.vcpu_mhz, float), mem, np.round(np.clip(util, 0.0, 1.0), 4)]
    cols.append(np.full(inv.n_vms, -1, np.int64) if gpu_req is None else np.asarray(gpu_req, np.int64))
    if images is not None:
        cols.append(np.asarray(images.of_vm, np.int64))
    return np.rec.fromarrays(cols), util


def _profile_groups(res, dropped: list[str], gpu_req: np.ndarray | None = None, images=None) -> list[dict[str, Any]]:
    """One constant-profile group per distinct (vCPUs, MHz, memory, mean CPU use, GPU request, guest image) of the
    planned VMs."""
    inv = res.inventory
    key, util = _profile_keys(res, gpu_req, images)
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
    groups = [{"name": f"g{i}", "count": int(n), "vcpus": int(k[0]), "vcpu_speed": float(k[1]), "memory": float(k[2]),
               "profile": {"kind": "constant", "mean": float(k[3])}} for i, (k, n) in enumerate(zip(uniq, counts))]
    for g, k in zip(groups, uniq):
        if int(k[4]) >= 0:
            g["gpu"] = _gpu_dump(res.spec.gpu.requests[int(k[4])].gpu)
        if images is not None and int(k[5]) >= 0:
            g["workload"] = {"guest_image": images.names[int(k[5])]}
    return groups


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
    if "gpu" in s:  # GPU hosts: the GPUs, those holding a tenant, GPU VMs placed nowhere and the GPUs' mean power
        g = s["gpu"]
        out |= {"gpus": g["gpus"], "gpus_with_tenants": g["gpus_with_tenants"], "vms_with_gpu_unplaced": g["vms_with_gpu_unplaced"],
                "gpu_energy_kwh": g["energy_kwh"]}
        grid = getattr(getattr(result, "ctx", None), "grid", None)
        dur = float(grid.n_steps * grid.step_s) if grid is not None else 0.0
        out["gpu_power_w_mean"] = g["energy_kwh"] * 3.6e6 / dur if dur > 0 else None
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

    gpu = {}
    if r.gpu and not r.gpu.get("reason"):  # spares included: their GPUs idle (densim.tools.plan.gpu.gpu_watts_per_host)
        from densim.tools.plan.gpu import gpu_watts_per_host

        gpu = {"gpus": int(r.n_hosts) * int(r.gpu["gpus_per_host"]), "gpus_used_by_vms": r.gpu.get("gpus_used_by_vms", 0),
               "gpu_power_w": float(gpu_watts_per_host(r.gpu, int(r.n_hosts)).sum())}
    return gpu | {"hosts": int(r.n_hosts), "cpu_ready_pct_mean": ready_mean, "cpu_ready_pct_p95": ready_p95, "hosts_packed": int(r.n_hosts_packed), "vms_placed": int(np.sum(r.host_of_vm >= 0))
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
    if "gpu_power_w" in pl and eng.get("gpu_power_w_mean") is not None:
        diff["gpu_power_w_minus_plan"] = eng["gpu_power_w_mean"] - pl["gpu_power_w"]
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
