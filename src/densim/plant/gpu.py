"""GPU checks made while resolving a scenario: every VM's GPU request can be met by some host's GPU model,
and GPU placement is not asked of the parts that place VMs over time (not built yet)."""

from __future__ import annotations

#: the one line that refuses GPU requests in a run whose VMs are placed over time (pinned in tests)
OVER_TIME = ("GPU placement over time is not built yet: VMs that ask for a GPU are placed once at the start; "
             "remove {what} or the vms[].gpu requests")


#: the one line that refuses a power cap on hosts with GPUs (pinned in tests)
POWER_CAP = ("a host power cap is met by lowering the CPU clock, but {n} x {gpu} draw up to {w:g} W set by the GPUs' "
             "own power limits, which densim does not lower: give hosts with GPUs no power_cap")


def over_time_reasons(sc) -> list[tuple[str, str]]:
    """``(field, what)`` for every setting that would place or move VMs during the run."""
    out = []
    if sc.failures is not None:
        out.append(("failures", "failures"))
    if sc.migration.model != "none":
        out.append(("migration.model", "migration (maintenance evacuations and the balancer move VMs)"))
    if sc.scheduling.lifetimes == "on":
        out.append(("scheduling.lifetimes", "scheduling.lifetimes: on"))
    for i, g in enumerate(sc.vms):
        if g.arrivals is not None:
            out.append((f"vms[{i}].arrivals", "arrivals"))
    return out


def gpu_issues(sc, hosts) -> list[tuple[str, str]]:
    """Problems of the scenario's GPU requests against its host groups' GPUs (``hosts``: the plant's host groups)."""
    issues: list[tuple[str, str]] = []
    gpu_groups = [h for h in hosts if h.gpu is not None]
    for h in gpu_groups:  # the cap is met by CPU P-states; the GPUs' own power limit is their max_power
        spec = sc.cluster.hosts[h.index]
        if spec.power_cap_w is not None:
            issues.append((f"cluster.hosts[{h.index}].power_cap", POWER_CAP.format(
                n=h.gpu_count, gpu=h.gpu.name, w=h.gpu_count * h.gpu.max_power_w)))
    wants = [(i, g) for i, g in enumerate(sc.vms) if g.gpu is not None]
    if not wants:
        return issues
    for where, what in over_time_reasons(sc):
        issues.append((where, OVER_TIME.format(what=what)))
    from densim.placement.gpu import HOST_POLICIES

    if sc.placement.policy not in HOST_POLICIES and sc.placement.policy != "none":
        issues.append(("placement.policy", f"{sc.placement.policy!r} does not place GPU requests; with vms[].gpu use one "
                       f"of: {', '.join(HOST_POLICIES)}"))
    for i, g in wants:
        req = g.gpu
        at = f"vms[{i}].gpu"
        if not gpu_groups:
            issues.append((at, "no host has GPUs: give cluster.hosts[].gpus {model, count}"))
            continue
        if req.mode == "passthrough":
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
