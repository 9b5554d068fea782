"""GPU checks made while resolving a scenario: every VM's GPU request can be met by some host's GPU model, and a
GPU host's power limit and power cap can be met. Arrivals, departures, failures with HA restarts, maintenance
evacuations and the balancer's moves place GPUs: they are events of the one placement loop
(:mod:`densim.placement.timeline`)."""

from __future__ import annotations


def _power_limit_issues(sc, h) -> list[tuple[str, str]]:
    """A GPU host group's ``gpus.power_limit`` (within the card's power_limit_min .. max_power) and its ``power_cap``:
    a fully busy host at the lowest P-state with every GPU at its lowest limit must fit the cap (the floor
    :mod:`densim.engine.plugins.power_cap` can reach), else no clock or GPU limit keeps it within."""
    from densim.models.cpu_power import pstate_scales
    from densim.models.power import as_table_w

    spec = sc.cluster.hosts[h.index]
    g, at = h.gpu, f"cluster.hosts[{h.index}].gpus.power_limit"
    own = spec.gpus.power_limit_w
    if own is not None:
        if g.power_limit_min_w is None:
            return [(at, f"the catalog gives {g.name} no power_limit_min, so densim cannot tell whether the card "
                         f"accepts {own:g} W (give power_limit_min in parts.gpus, or drop power_limit)")]
        if not g.power_limit_min_w <= own <= g.max_power_w:
            return [(at, f"{own:g} W is outside what {g.name} accepts: {g.power_limit_min_w:g} .. {g.max_power_w:g} W "
                         "(catalog power_limit_min .. max_power)")]
    cap = spec.power_cap_w
    base = float(h.cpu.base_mhz)
    if cap is None or sc.power.min_mhz > base:  # (a min_clock above the base clock: power_cap_issues says so)
        return []
    t = as_table_w(h.server.power)
    p0, p1 = float(t[0]), float(t[-1])
    s0 = float(pstate_scales(base, sc.power.min_mhz, sc.power.pstate_step_mhz)[0])
    top = min(g.max_power_w, own or g.max_power_w)
    low = min(g.power_limit_min_w or top, top)
    cpu = p0 + (p1 - p0) * s0**3
    if cpu + h.gpu_count * low <= cap * (1 + 1e-12):
        return []
    why = "its power_limit_min" if g.power_limit_min_w is not None else "its limit (the catalog gives no power_limit_min)"
    return [(f"cluster.hosts[{h.index}].power_cap",
             f"{cap:g} W is below what a fully busy {h.label} host draws at its lowest P-state with its GPUs at "
             f"their lowest power limit: {p0:g} W idle + ({p1:g} - {p0:g}) W x ({sc.power.min_mhz:g} / {base:g} MHz)^3 "
             f"+ {h.gpu_count} x {low:g} W ({g.name} at {why}) = {cpu + h.gpu_count * low:.1f} W; no clock or GPU "
             "limit keeps it within the cap (raise the cap, or lower power.min_clock)")]


def gpu_issues(sc, hosts) -> list[tuple[str, str]]:
    """Problems of the scenario's GPU requests against its host groups' GPUs (``hosts``: the plant's host groups)."""
    issues: list[tuple[str, str]] = []
    gpu_groups = [h for h in hosts if h.gpu is not None]
    for h in gpu_groups:
        issues += _power_limit_issues(sc, h)
    wants = [(i, g) for i, g in enumerate(sc.vms) if g.gpu is not None]
    if not wants:
        return issues
    from densim.placement.gpu import HOST_POLICIES

    if sc.placement.policy not in HOST_POLICIES and sc.placement.policy not in ("none", "given"):
        issues.append(("placement.policy", f"{sc.placement.policy!r} does not place GPU requests; with vms[].gpu use one "
                       f"of: {', '.join(HOST_POLICIES)}"))
    for i, g in wants:
        req = g.gpu
        at = f"vms[{i}].gpu"
        if not gpu_groups:
            issues.append((at, "no host has GPUs: give cluster.hosts[].gpus {model, count}"))
            continue
        if req.mode == "passthrough" and req.count is None:  # each VM's count from its trace (checked when it is read)
            if g.trace is None or g.trace.format != "opendc":
                issues.append((f"{at}.count", "needed: only an OpenDC trace gives each VM its own GPU count (gpu_count)"))
        elif req.mode == "passthrough":
            most = max(h.gpu_count for h in gpu_groups)
            if req.count > most:
                issues.append((f"{at}.count", f"{req.count} GPUs per VM, but the most GPUs in one host is {most}"))
        elif req.mode == "mig":
            if not any(h.gpu.mig(req.profile) is not None for h in gpu_groups):
                offered = sorted({f"{p.name} ({h.gpu.name})" for h in gpu_groups for p in h.gpu.mig_profiles})
                issues.append((f"{at}.profile", f"no host's GPU offers MIG profile {req.profile!r}; offered: "
                               f"{', '.join(offered) or 'none (no host GPU has MIG)'}"))
        else:
            if not any(h.gpu.vgpus_per_gpu(req.memory_bytes) > 0 for h in gpu_groups):
                offered = sorted({f"{s / 2**30:g} GiB ({h.gpu.name})" for h in gpu_groups for s in h.gpu.vgpu_profiles})
                issues.append((f"{at}.memory", f"no host's GPU offers a {req.memory_bytes / 2**30:g} GiB vGPU profile; "
                               f"offered: {', '.join(offered) or 'none (passthrough only)'}"))
    return issues
