"""Checks of a scenario that need more than one section at a time, made once in :func:`densim.plant.resolve`.

``densim run`` and ``densim validate`` both resolve the scenario, so every refusal here is made by
both with the same line. Each check returns ``(field path, problem)`` pairs; a problem located in
another file (a failure trace, a grid series) is raised as that file's :class:`InputError`.

What is checked here, and not by the schema of one section:

* settings of a model that is switched off (``memory``, ``storage``, ``migration`` with ``model: none``;
  ``arrivals`` with ``scheduling.lifetimes: off``): contradictory, refused rather than ignored;
* host groups: unique names, power that does not fall as load rises, NUMA pins to nodes the hosts have;
* VM groups: a trace format the engine replays, workload IOPS and read fraction;
* the time grid: a horizon when no VM group has a trace;
* failures (targets, overlaps, the trace file, rates per domain kind, HA settings), live migration
  (maintenance hosts, what it cannot yet be combined with) and carbon (embodied carbon per host
  group, the grid series against the run's start) and power caps (a P-state that meets each cap, a
  ``power`` section only with a cap): the checks the engine makes before its first step.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from densim.errors import InputError
from densim.spec.scenario import MAX_CORES, MAX_SOCKETS

if TYPE_CHECKING:
    from densim.plant.hosts import HostGroupPlant
    from densim.spec.scenario import Scenario

Issues = list[tuple[str, str]]


def _changed(settings: Any) -> list[str]:
    """Fields of a settings model the file sets to something else than the default (``model`` aside)."""
    out = []
    for name in sorted(settings.model_fields_set - {"model"}):
        field = type(settings).model_fields[name]
        default = field.get_default(call_default_factory=True)
        if getattr(settings, name) != default:
            out.append(field.alias or name)
    return out


def switched_off_issues(sc: Scenario) -> Issues:
    """Settings of a model that is off: the run would ignore them silently."""
    issues: Issues = []
    for section, on_value in (("memory", "vsphere-like"), ("storage", "queueing"), ("migration", "precopy")):
        settings = getattr(sc, section)
        if settings.model != "none":
            continue
        for name in _changed(settings):
            issues.append((f"{section}.{name}", f"has no effect with {section}.model: none (the {section} model is off); "
                           f"set {section}.model: {on_value}, or remove it"))
    if sc.storage.model == "none":
        for i, g in enumerate(sc.vms):
            if g.datastore is not None:
                issues.append((f"vms[{i}].datastore", "has no effect with storage.model: none; set storage.model: "
                               "queueing, or remove it"))
    if sc.scheduling.lifetimes == "off":
        for i, g in enumerate(sc.vms):
            if g.arrivals is not None:
                issues.append((f"vms[{i}].arrivals", "VMs that arrive and leave need lifetimes; scheduling.lifetimes is "
                               "off (every VM lives the whole run): set it to auto or on, or remove arrivals"))
    return issues


def host_names(groups: tuple[HostGroupPlant, ...]) -> list[str]:
    """Every host's name as the engine and hosts.parquet spell it: ``<group label>-<index over all hosts>``."""
    names: list[str] = []
    for hg in groups:
        names += [f"{hg.label}-{len(names) + k}" for k in range(hg.count)]
    return names


def host_group_issues(sc: Scenario, groups: tuple[HostGroupPlant, ...]) -> Issues:
    issues: Issues = []
    seen: dict[str, int] = {}
    for i, hg in enumerate(groups):
        g = sc.cluster.hosts[hg.index]
        if hg.label in seen:
            field = "name" if g.name is not None else "server"
            issues.append((f"cluster.hosts[{i}].{field}", f"host group name {hg.label!r} is also the name of "
                           f"cluster.hosts[{seen[hg.label]}]: give each host group its own name"))
        seen.setdefault(hg.label, i)
        sockets, cores = int(hg.server.cpu.sockets), int(hg.cpu.cores)
        if not (sockets <= MAX_SOCKETS and cores <= MAX_CORES):
            field, n, top = ("cpu.sockets", sockets, MAX_SOCKETS) if sockets > MAX_SOCKETS else ("cpu.cores_per_socket", cores, MAX_CORES)
            issues.append((f"cluster.hosts[{i}].{field}" if g.cpu is not None else f"cluster.hosts[{i}].server",
                           f"{n:,} is more than a host can have (at most {top:,})"))
            continue
        p = hg.server.power
        if p.model == "table" and p.points_w is not None:
            pts = np.asarray(p.points_w, dtype=np.float64)
            drop = np.flatnonzero(np.diff(pts) < 0)
            if drop.size:
                k = int(drop[0])
                field = "power.points" if g.power is not None else "server"
                issues.append((f"cluster.hosts[{i}].{field}", f"power falls from {pts[k]:g} W at {10 * k} % load to "
                               f"{pts[k + 1]:g} W at {10 * (k + 1)} %: power must not decrease as load rises"))
    numa = sc.virtualization.numa
    if numa.pinning:
        if numa.policy != "manual":
            issues.append(("virtualization.numa.pinning", f"pins VMs to nodes, but numa.policy is {numa.policy!r}: "
                           "set policy: manual, or remove the pinning"))
        nodes = min(int(hg.server.cpu.sockets) for hg in groups) if groups else 1
        for vm, node in numa.pinning.items():
            if not 0 <= node < nodes:
                issues.append((f"virtualization.numa.pinning.{vm}", f"node {node} does not exist: the hosts have NUMA "
                               f"nodes 0..{nodes - 1} (one per socket)"))
    return issues


def vm_group_issues(sc: Scenario) -> Issues:
    from densim.workloads.registry import FORMATS

    issues: Issues = []
    replayable = [e.name for e in FORMATS if e.obj.replayable]
    for i, g in enumerate(sc.vms):
        if g.trace is not None and g.trace.format in FORMATS and not FORMATS.get(g.trace.format).replayable:
            issues.append((f"vms[{i}].trace.format", f"format {g.trace.format!r} is read by 'densim plan', not by the "
                           f"engine; a scenario replays {', '.join(replayable)}"))
        wl = g.workload or {}
        for key, lo, hi in (("iops", 0.0, math.inf), ("read_fraction", 0.0, 1.0)):
            if key not in wl:
                continue
            v = wl[key]
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and lo <= v <= hi
            if not ok:
                rng = "a number >= 0" if hi == math.inf else f"a number from {lo:g} to {hi:g}"
                issues.append((f"vms[{i}].workload.{key}", f"must be {rng}, got {v!r}"))
    # (VMs that arrive and leave end the run when the last one leaves)
    if sc.simulation.horizon_s is None and all(g.trace is None and g.arrivals is None for g in sc.vms):
        issues.append(("simulation.horizon", "required when no VM group is driven by a trace"))
    return issues


def _lifetimes_for_sure(sc: Scenario) -> bool:
    """The run has VMs that arrive and leave whatever its traces say."""
    mode = sc.scheduling.lifetimes
    return mode == "on" or (mode == "auto" and any(g.arrivals is not None for g in sc.vms))


def migration_issues(sc: Scenario, groups: tuple[HostGroupPlant, ...]) -> Issues:
    s = sc.migration
    if s.model == "none":
        return []
    # (maintenance and the balancer are events of the placement timeline and combine with every stage)
    names = set(host_names(groups))
    issues: Issues = []
    for i, m in enumerate(s.maintenance):
        if m.host not in names:
            listed = host_names(groups)
            shown = ", ".join(listed[:5]) + (", ..." if len(listed) > 5 else "")
            issues.append((f"migration.maintenance[{i}].host", f"no host named {m.host!r}; hosts: {shown}"))
    return issues


def failure_issues(sc: Scenario, groups: tuple[HostGroupPlant, ...], datastores: tuple[Any, ...],
                   src: str) -> Issues:
    """The failure section against the hosts, datastores and VM groups; a bad failure trace raises its own error."""
    from densim.placement.online import ONLINE_POLICIES
    from densim.workloads.failures import StorageParts, failure_events, targets_of

    fs = sc.failures
    if fs is None:
        return []
    ha = fs.ha
    issues: Issues = []
    if ha.restart_policy is not None and ha.restart_policy not in ONLINE_POLICIES:
        issues.append(("failures.ha.restart_policy", f"{ha.restart_policy!r} cannot restart VMs one at a time; set "
                       f"failures.ha.restart_policy to one of: {', '.join(ONLINE_POLICIES)}"))
    if ha.boot_read_Bps > 0 and sc.storage.model == "none":
        issues.append(("failures.ha.boot_read", "boot reads land on datastores: set storage: {model: queueing}"))
    unknown = sorted(set(ha.restart_priority) - {g.name for g in sc.vms})
    if unknown:
        issues.append((f"failures.ha.restart_priority.{unknown[0]}", "no VM group of that name"))
    names = np.array(host_names(groups), dtype=object)
    labels = [hg.label for hg in groups]
    group = np.repeat(np.arange(len(groups), dtype=np.int32), [hg.count for hg in groups])
    hci = sc.storage.hci if sc.storage.model != "none" else None  # its capacity disks are failure targets too
    parts = StorageParts.of(datastores, [str(h) for h in names], hci) if datastores or hci is not None else None
    try:
        # the events of the file and its trace, every target and overlap checked; random failures are drawn
        # over one second only (the draw is the engine's; here only the kinds they name matter)
        failure_events(fs, src, sc.base_dir, names, labels, group, 1.0, np.random.default_rng(0), parts)
        if ha.per_domain is not None:
            _, _, kinds = targets_of(fs, names, labels, group, src)
            if ha.per_domain not in kinds[len(names):]:
                issues.append(("failures.ha.per_domain", f"no failure domain of kind {ha.per_domain!r}"))
    except InputError as exc:
        if exc.source != src:
            raise  # located in the failure trace: that file's line
        where = f"failures.{exc.where}" if exc.where.startswith("events[") else exc.where
        issues.append((where, exc.problem))
    return issues


def _non_default(section) -> bool:
    """A section whose values differ from its defaults (a scenario dumped and loaded again sets every field)."""
    return any(getattr(section, name) != f.default for name, f in type(section).model_fields.items())


def power_cap_issues(sc: Scenario, groups: tuple[HostGroupPlant, ...]) -> Issues:
    """Power caps (``cluster.hosts[].power_cap``, the engine stage ``power_cap``): the P-states run from
    ``power.min_clock`` up to the base clock, and a fully busy host at the lowest of them must fit the cap
    (``P(0) + (P(1) - P(0)) (f_min / f_base)^3 <= cap``), else no clock keeps it within; a ``power`` section
    without any cap is refused (it would be ignored)."""
    from densim.models.cpu_power import full_load_capped_scale, pstate_scales
    from densim.models.power import as_table_w

    ps = sc.power
    capped = [(gi, g.power_cap_w, hg) for gi, (g, hg) in enumerate(zip(sc.cluster.hosts, groups)) if g.power_cap_w is not None]
    if not capped:
        return [("power", "sets the P-states of power-capped hosts, but no cluster.hosts[] entry has a power_cap (give "
                 "one, or drop the section)")] if _non_default(ps) else []
    issues: Issues = []
    for gi, cap, hg in capped:
        base = float(hg.cpu.base_mhz)
        if ps.min_mhz > base:
            issues.append(("power.min_clock", f"{ps.min_mhz:g} MHz is above host group {hg.label!r}'s base clock of "
                           f"{base:g} MHz: the P-states run from min_clock up to the base clock"))
            continue
        scales = pstate_scales(base, ps.min_mhz, ps.pstate_step_mhz)
        t = as_table_w(hg.server.power)
        p0, p1 = float(t[0]), float(t[-1])
        if full_load_capped_scale(p0, p1, float(cap), scales) is None:
            issues.append((f"cluster.hosts[{gi}].power_cap", f"{cap:g} W is below what a fully busy {hg.label} host "
                           f"draws at its lowest P-state: {p0:g} W idle + ({p1:g} - {p0:g}) W x ({ps.min_mhz:g} / {base:g} "
                           f"MHz)^3 = {p0 + (p1 - p0) * scales[0] ** 3:.1f} W; no clock keeps it within the cap (raise the "
                           "cap or lower power.min_clock)"))
    return issues


def carbon_issues(sc: Scenario, groups: tuple[HostGroupPlant, ...], src: str) -> Issues:
    cb = sc.carbon
    if cb is None:
        return []
    issues: Issues = []
    if cb.embodied:
        labels = [hg.label for hg in groups]
        if cb.lifetime_years is None:
            issues.append(("carbon.lifetime_years", "required with carbon.embodied (years a server's embodied carbon "
                           "is spread over)"))
        unknown = sorted(set(cb.embodied) - set(labels))
        if unknown:
            issues.append((f"carbon.embodied.{unknown[0]}", "no host group of that name; host groups: " + ", ".join(labels)))
        missing = [lb for lb in labels if lb not in cb.embodied]
        if missing and not unknown:
            issues.append(("carbon.embodied", f"no embodied carbon for host group {missing[0]!r}: give kgCO2e per "
                           "server or a catalog name (server_embodied_carbon) for every host group"))
    if cb.grid_series is not None:
        from densim.models.carbon import read_grid_series

        times, _ = read_grid_series(cb.grid_series, "carbon.grid_series")  # a bad file raises its own line
        start = run_start(sc)
        if start is not None and times[0] > start:
            issues.append(("carbon.grid_series", f"the grid series {cb.grid_series.file} starts at t = {times[0]:g} s, "
                           f"after the run's first step at t = {start:g} s"))
    return issues


def run_start(sc: Scenario) -> float | None:
    """The run's first step when the file fixes it (``simulation.start``, or 0 when no VM group has a trace)."""
    if sc.simulation.start_s is not None:
        return float(sc.simulation.start_s)
    if all(g.trace is None for g in sc.vms) and not any(g.arrivals is not None for g in sc.vms):
        return 0.0
    return None


def placement_issues(sc: Scenario) -> Issues:
    from densim.placement import POLICIES
    from densim.placement.online import ONLINE_POLICIES

    pol = sc.placement.policy
    if _lifetimes_for_sure(sc) and pol in POLICIES and pol not in ONLINE_POLICIES:
        return [("placement.policy", f"{pol!r} cannot place VMs as they arrive; with lifetimes use one of: "
                 f"{', '.join(ONLINE_POLICIES)}")]
    return []


def scenario_issues(sc: Scenario, groups: tuple[HostGroupPlant, ...] | None, datastores: tuple[Any, ...],
                    src: str) -> Issues:
    """Every check of this module (those that need the host groups only when they resolved)."""
    issues = switched_off_issues(sc) + vm_group_issues(sc) + placement_issues(sc)
    if groups is not None:
        issues += host_group_issues(sc, groups)
        if not issues:  # the checks below name hosts and groups: only when those are sound
            issues += migration_issues(sc, groups)
            issues += failure_issues(sc, groups, datastores, src)
            issues += carbon_issues(sc, groups, src)
            issues += power_cap_issues(sc, groups)
    return issues
