"""Migration waves: the move of every group of VMs (:mod:`densim.tools.plan.groups`) onto the plan's chosen candidate,
over calendar time.

**Moves.** Each VM moves by pre-copy live migration (:func:`densim.models.migration.precopy`): its configured memory
``M`` is copied at the link share ``B = link / max_concurrent`` (the programme's link shared equally by the moves
running at once, the timeline's rule for an evacuation) while the VM dirties ``D = dirty_rate x u`` bytes per
second (``u``: the VM's peak CPU use over the inventory's series, 1 without a CPU series: the safe side), bounded by
its writable working set ``wws_fraction x M``; a share ``zero_fraction`` of ``M`` never touched by the guest is sent as
zero-page flags in the first round (read, not sent: :mod:`densim.models.migration`). That gives each VM's move time and downtime. A VM whose pre-copy
never converges (it dirties its working set as fast as its share of the link sends it; the downtime would exceed
the target) is *reported* and its group held back: it needs a larger link share, a quieter hour or a cold move.

**Waves.** One maintenance window of ``window`` seconds every ``every`` seconds from ``start``. Groups are taken
largest configured memory first (ties by name); a wave takes, in that order, every pending group that

1. fits the landing cluster in service at the window's start (:class:`densim.spec.plan.LandingHosts`): the vCPUs and
   configured memory of every VM landed so far plus the group's within the hosts' room, ``qos.vcpus_per_core`` x
   cores and ``qos.memory_overcommit`` x usable memory per host (the plan's and the engine's admission rule);
2. finishes within the window: the group's moves, longest first, each on the earliest free of ``max_concurrent``
   slots after the moves already in the wave (LPT list scheduling), end by ``window``.

A group that can never fit (larger than the landing cluster, or its moves alone longer than a window) is held with
the reason. Windows in which no group fits are skipped (not counted as waves); when the landing cluster will not
grow again and nothing fits, the remaining groups are held ("no room").

**Landing run.** The landed VMs, each arriving at the end of its move, run through the engine on the chosen
candidate's hosts (:func:`densim.tools.plan.replay.chosen_scenario`: the same hosts, over-commit and memory model;
online first-fit placement at each arrival, ``waves.failures`` on the one timeline), with the inventory's demand
repeated over the programme: the landing cluster's CPU Ready and memory per wave.

**Source hosts freed.** A source host (the inventory's host column) is freed in the wave that moves its last VM;
a host with a held VM is never freed. Its cores (vHost) are what per-core licences and power are counted on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from densim.errors import InputError
from densim.models.migration import precopy
from densim.workloads.sources import DemandSource, VmSizes

GIB = 2.0**30


@dataclass
class MoveInputs:
    """Per VM: what moves and how fast it dirties memory; per group: why it is held (``""``: not held)."""

    names: list[str]
    group_of: np.ndarray  # (N,) int
    group_names: list[str]
    mem_bytes: np.ndarray  # (N,) configured memory: what pre-copy copies
    vcpus: np.ndarray  # (N,)
    dirty_bps: np.ndarray  # (N,)
    held: list[str]  # per group: a reason, or ""


def zero_shares(inv, spec) -> tuple[np.ndarray | float, str]:
    """Each VM's never-touched share for pre-copy and the rule, as the report states it: ``waves.zero_fraction``, or with
    ``consumed`` ``1 - Consumed / configured`` per VM (RVTools vMemory 'Consumed', host memory the VM has touched),
    clipped to ``[0, 1 - wws_fraction]``; a VM without the figure takes 0 (all its memory sent)."""
    if spec.zero_fraction != "consumed":
        return float(spec.zero_fraction), f"waves.zero_fraction {float(spec.zero_fraction):g} for every VM"
    mem = np.asarray(inv.mem_bytes, float)
    c = inv.consumed_bytes
    if c is None:
        from densim.errors import InputError

        raise InputError(None, "waves.zero_fraction", "'consumed' needs each VM's consumed memory, which only an RVTools "
                                                      "export's vMemory tab gives (column 'Consumed'); this inventory has "
                                                      "none: give a share instead")
    c = np.asarray(c, float)
    known = np.isfinite(c)
    z = np.where(known, np.clip(1.0 - np.divide(c, mem, out=np.ones_like(mem), where=mem > 0), 0.0,
                                1.0 - spec.wws_fraction), 0.0)
    return z, (f"1 - vMemory Consumed / configured memory per VM (at most 1 - wws_fraction = {1.0 - spec.wws_fraction:g}; "
               f"mean {float(z.mean()):.3f}); {int((~known).sum()):,} VMs without the figure send all their memory")


def move_times(mem_bytes, dirty_bps, spec, zero=None):
    """Pre-copy of each VM at the link share ``link / max_concurrent`` (its never-touched share, ``zero`` per VM or
    ``waves.zero_fraction``, sent as zero-page flags in round 0)."""
    share = spec.link_bps / spec.max_concurrent
    return precopy(mem_bytes, share, dirty_bps, wws_bytes=spec.wws_fraction * np.asarray(mem_bytes, float),
                   max_rounds=spec.max_rounds, downtime_target_s=spec.downtime_target_s, resume_s=spec.resume_s,
                   zero_fraction=spec.zero_fraction if zero is None else zero,
                   zero_scan_bps=spec.zero_scan_bps)


def _lpt(slots: list[float], times: list[float]) -> tuple[list[float], list[float]]:
    """Each time, in the order given (longest first), on the earliest-free slot: (slots after, as a heap; the start of
    each time). ``slots`` is a heap of the slots' free times (left unchanged)."""
    import heapq

    heap = list(slots)
    start = []
    for d in times:
        t = heapq.heappop(heap)
        start.append(t)
        heapq.heappush(heap, t + d)
    return heap, start


def schedule_waves(mi: MoveInputs, total_s: np.ndarray, spec, capacity) -> dict:
    """The waves (module docstring). ``capacity``: list of ``(at_s, vcpus, memory bytes)`` in time order, the landing
    cluster's room from ``at_s`` (seconds from the programme's start) on. Returns per-VM arrays (wave index or -1,
    move start and landing offsets from the programme's start) and per-group records."""
    G = len(mi.group_names)
    gv = np.bincount(mi.group_of, weights=mi.vcpus, minlength=G)
    gm = np.bincount(mi.group_of, weights=mi.mem_bytes, minlength=G)
    members = _members(mi.group_of, G)
    held = list(mi.held)
    cap_at = np.array([c[0] for c in capacity], float)
    cap_v = np.array([c[1] for c in capacity], float)
    cap_m = np.array([c[2] for c in capacity], float)
    final_v, final_m = cap_v[-1], cap_m[-1]
    k = spec.max_concurrent
    # per group its VMs longest move first (LPT order; ties by VM order) and their move times, as Python floats
    members = [m[np.argsort(-total_s[m], kind="stable")] for m in members]
    times = [total_s[m].tolist() for m in members]
    for g in range(G):
        if held[g]:
            continue
        if gv[g] > cap_v.max() or gm[g] > cap_m.max():
            held[g] = (f"larger than the landing cluster at its largest ({gv[g]:,.0f} vCPUs, {gm[g] / GIB:,.1f} GiB against "
                       f"{cap_v.max():,.0f} vCPUs, {cap_m.max() / GIB:,.1f} GiB of room)")
            continue
        span = max(_lpt([0.0] * k, times[g])[0])
        if span > spec.window_s:
            held[g] = (f"its moves take {span / 3600:.2f} h with {k} at once, longer than one window "
                       f"({spec.window_s / 3600:.2f} h)")
    order = sorted((g for g in range(G) if not held[g]), key=lambda g: (-gm[g], mi.group_names[g]))
    gsum = np.bincount(mi.group_of, weights=total_s, minlength=G).tolist()
    gmax = [t[0] if t else 0.0 for t in times]
    gmin = [t[-1] if t else 0.0 for t in times]
    gv, gm = gv.tolist(), gm.tolist()
    wave_of_vm = np.full(mi.group_of.size, -1)
    start_off = np.full(mi.group_of.size, np.nan)
    land_off = np.full(mi.group_of.size, np.nan)
    group_wave = np.full(G, -1)
    waves: list[dict] = []
    landed_v = landed_m = 0.0
    pending = list(order)
    ran_out = False
    for j in range(spec.max_waves):
        if not pending:
            break
        t = j * spec.every_s
        c = int(np.searchsorted(cap_at, t, side="right") - 1)
        room_v, room_m = cap_v[c], cap_m[c]
        slots = [0.0] * k  # a heap of the move slots' free times, s from the window's start
        busy = 0.0  # their sum
        took = []
        shortest = min(gmin[g] for g in pending)
        win = spec.window_s + 1e-9
        for g in pending:
            if slots[0] + shortest > win:
                break  # no pending move fits in what is left of the window
            if landed_v + gv[g] > room_v + 1e-9 or landed_m + gm[g] > room_m * (1 + 1e-12):
                continue
            # bounds on the makespan after adding the group (the LPT result is at least each): skip LPT when one fails
            if slots[0] + gmax[g] > win or (busy + gsum[g]) / k > win:
                continue
            trial, st = _lpt(slots, times[g])
            if max(trial) > win:
                continue
            slots, busy = trial, busy + gsum[g]
            idx = members[g]
            took.append(g)
            landed_v += gv[g]
            landed_m += gm[g]
            w = len(waves)
            group_wave[g] = w
            wave_of_vm[idx] = w
            start_off[idx] = t + np.asarray(st)
            land_off[idx] = start_off[idx] + total_s[idx]
        if took:
            taken = set(took)
            pending = [g for g in pending if g not in taken]
            waves.append({"wave": len(waves) + 1, "window_start_s": t, "groups": [mi.group_names[g] for g in took],
                          "vms": int(sum(members[g].size for g in took)), "vcpus": float(sum(gv[g] for g in took)), "memory_bytes": float(sum(gm[g] for g in took)),
                          "moves_end_s": float(max(slots)), "landing_hosts": int(capacity[c][3]) if len(capacity[c]) > 3 else None,
                          "landed_vcpus": landed_v, "landed_memory_bytes": landed_m,
                          "room_vcpus": float(room_v), "room_memory_bytes": float(room_m)})
        elif cap_at[-1] <= t:  # nothing fits and the landing cluster will not grow again
            break
    else:
        ran_out = bool(pending)
    for g in pending:
        held[g] = (f"not scheduled within waves.max_waves = {spec.max_waves} windows" if ran_out else
                   f"no room: the landing cluster holds {landed_v:,.0f} of {final_v:,.0f} vCPUs and {landed_m / GIB:,.1f} of "
                   f"{final_m / GIB:,.1f} GiB after the last wave, and the group's {gv[g]:,.0f} vCPUs / {gm[g] / GIB:,.1f} GiB "
                   "do not fit beside them")
    return {"wave_of_vm": wave_of_vm, "start_off_s": start_off, "land_off_s": land_off, "group_wave": group_wave,
            "held": held, "waves": waves, "order": order}


def _members(group_of: np.ndarray, G: int) -> list[np.ndarray]:
    order = np.argsort(group_of, kind="stable")
    bounds = np.searchsorted(group_of[order], np.arange(G + 1))
    return [order[bounds[g]:bounds[g + 1]] for g in range(G)]


# ------------------------------------------------------------------------------------ the landing run


class LandingSource(DemandSource):
    """The moved VMs on the landing cluster: each arrives at its landing time (``start_s``) and stays; its demand is the
    inventory's series repeated over the programme (step ``i`` of the run reads sample ``floor((t - t0) / step) mod
    T``), or without a series its configured size busy (CPU) and in use (memory)."""

    channels = ("cpu_mhz", "mem_used_bytes")
    group_name = "moved"
    fresh_windows = True

    def __init__(self, names, vcpus, vcpu_mhz, mem_bytes, cpu_series, mem_series, series_step_s, t0, start_s):
        self.sizes = VmSizes(names=np.asarray(names, dtype=object), vcpus=np.asarray(vcpus, dtype=np.int32),
                             vcpu_mhz=np.asarray(vcpu_mhz, dtype=np.float64), mem_bytes=np.asarray(mem_bytes, dtype=np.float64))
        self.cpu, self.mem = cpu_series, mem_series
        self.series_step_s = float(series_step_s)
        self.t0 = float(t0)
        self.start_s = np.asarray(start_s, dtype=np.float64)
        self.end_s = np.full(self.start_s.size, np.inf)

    def _rows(self, grid, t0, t1, n):
        mid = grid.start_s + grid.step_s * (np.arange(t0, t1) + 0.5)
        return (np.floor((mid - self.t0) / self.series_step_s).astype(np.int64)) % n

    def window(self, grid, t0, t1, channels):
        out = {}
        T = t1 - t0
        if "cpu_mhz" in channels:
            if self.cpu is None:
                out["cpu_mhz"] = np.broadcast_to((self.sizes.vcpus * self.sizes.vcpu_mhz).astype(np.float32), (T, self.n_vms)).copy()
            else:
                out["cpu_mhz"] = self.cpu[self._rows(grid, t0, t1, self.cpu.shape[0])].astype(np.float32)
        if "mem_used_bytes" in channels:
            if self.mem is None:
                out["mem_used_bytes"] = np.broadcast_to(self.sizes.mem_bytes.astype(np.float32), (T, self.n_vms)).copy()
            else:
                out["mem_used_bytes"] = self.mem[self._rows(grid, t0, t1, self.mem.shape[0])].astype(np.float32)
        return out


def landing_run(res, landed: np.ndarray, land_s: np.ndarray, vcpus, mem_bytes, spec, t0: float, horizon_s: float,
                hosts: int):
    """The engine run of the landed VMs (``landed``: inventory indexes) on ``hosts`` of the chosen candidate."""
    from densim.engine import simulate
    from densim.plant import resolve
    from densim.spec.loader import scenario_from_dict
    from densim.tools.plan import replay

    sc, dropped = replay.chosen_scenario(res, res.inventory.source or "inventory", res.inventory.fmt or "", given=False)
    # what the chosen scenario drops about the hosts and QoS holds here; its lines about VM groups do not (the landing
    # run's VMs are the inventory's, with its demand series)
    dropped = [d for d in dropped if d.startswith(("candidate storage", "qos.", "anti_affinity", "affinity"))]
    dropped.append(f"placement: online first-fit by vCPUs and configured memory as each VM lands (the plan's "
                   f"{res.spec.policy!r} places every VM at once)")
    inv = res.inventory
    sc = dict(sc)
    sc["cluster"] = {"hosts": [dict(sc["cluster"]["hosts"][0], count=int(hosts))]}
    sc["vms"] = [{"name": "moved", "count": 1, "vcpus": 1, "memory": 2**30, "profile": {"kind": "constant", "mean": 0.1}}]
    sc["placement"] = dict(sc["placement"], policy="first-fit")  # online placement as each VM lands
    sc["scheduling"] = {"lifetimes": "on"}
    sc["simulation"] = {"step": float(spec.step_s), "horizon": float(horizon_s), "start": float(t0)}
    sc["output"] = {"host_timeseries": "on"}
    if spec.failures is not None:
        sc["failures"] = spec.failures

    def source_of(rows):
        return LandingSource([inv.names[i] for i in rows], vcpus[rows], inv.vcpu_mhz[rows], mem_bytes[rows],
                             None if inv.cpu_mhz is None else np.asarray(inv.cpu_mhz)[:, rows],
                             None if inv.mem_used_bytes is None else np.asarray(inv.mem_used_bytes)[:, rows],
                             inv.step_s, inv.start_s, land_s[rows])

    req = replay._gpu_requests(res, inv.fmt or "")[0] if sc["cluster"]["hosts"][0].get("gpus") else None
    images = replay._images(res)
    if req is None and images is None:
        src = source_of(landed)
    else:  # the landing VMs keep their GPU request and guest image: one VM group per (request, image)
        src, sc["vms"] = _landing_groups(res, landed, req, images, source_of, sc["vms"][0])
    try:
        scenario = scenario_from_dict(sc, source="waves landing run")
    except Exception as exc:  # noqa: BLE001 - the scenario validator's message names the field
        raise InputError(None, "waves.failures", str(exc).splitlines()[0][:300]) from None
    try:
        return simulate(resolve(scenario, source="waves landing run"), source=src), dropped
    except InputError as exc:  # a failures target not among the landing hosts, say: name the candidates file's field
        if exc.source != "waves landing run":
            raise
        raise InputError(None, f"waves.{exc.where}", exc.problem + f" (landing hosts: {sc['cluster']['hosts'][0]['name']}-0 .."
                         f" -{int(hosts) - 1})") from None


def _landing_groups(res, landed: np.ndarray, req: np.ndarray | None, images, source_of, placeholder: dict):
    """The landing run's source and VM groups when the plan's VMs ask for GPUs (``req``: per inventory VM the index into
    ``gpu.requests``, -1 none) or boot named guest images (``images``: :func:`densim.tools.plan.memcheck.plan_images`):
    the landed VMs split by (request, image), a :class:`LandingSource` each, side by side. Each scenario VM group
    carries its GPU (:func:`densim.tools.plan.replay._gpu_dump`) and its ``workload.guest_image``, so the engine
    places a GPU VM only where a GPU is free, by the same claim rule as every run, and shares pages by image as the
    plan's memory check did."""
    from densim.tools.plan import replay
    from densim.workloads.sources import CompositeSource

    n = res.inventory.n_vms
    r = (np.full(n, -1, np.int64) if req is None else np.asarray(req, np.int64))[landed]
    m = (np.full(n, -1, np.int64) if images is None else images.of_vm)[landed]
    kinds, of = np.unique(np.stack([r, m], axis=1), axis=0, return_inverse=True)
    of = of.ravel()
    rows = [landed[of == k] for k in range(len(kinds))]
    src = CompositeSource([source_of(x) for x in rows])
    names = ["moved" + (f"-gpu-{int(k)}" if k >= 0 else "") + (f"-image-{int(i)}" if i >= 0 else "") for k, i in kinds]
    src.group_names = names
    src.group_of_vm = np.repeat(np.arange(len(kinds), dtype=np.int32), [x.size for x in rows])
    groups = [dict(placeholder, name=nm) for nm in names]
    for g, (k, i) in zip(groups, kinds):
        if k >= 0:
            g["gpu"] = replay._gpu_dump(res.spec.gpu.requests[int(k)].gpu)
        if i >= 0:
            g["workload"] = {"guest_image": images.names[int(i)]}
    return src, groups


def _per_wave_engine(result, waves: list[dict], t0: float, mem_room_per_host: float) -> None:
    """Add to each wave the landing cluster's CPU Ready (worst host-step, and the mean over the hosts with VMs, over
    the steps from its window's start to the next one's; the last: to the end of the run) and the configured memory
    placed, in all and on the fullest host against its room, just before the next window (the last: at the run's
    end): the VMs (or, after a failure, their restarted instances) alive at that instant."""
    ctx = result.ctx
    edges = ctx.grid.edges_s()
    t = edges[:-1]
    ready = result.host_acc.series.get("cpu_ready_pct")
    sch = ctx.schedule
    starts = np.where(np.isnan(sch.start_s), np.inf, sch.start_s)
    for i, w in enumerate(waves):
        lo = t0 + w["window_start_s"]
        hi = t0 + waves[i + 1]["window_start_s"] if i + 1 < len(waves) else float(edges[-1])
        sel = (t >= lo) & (t < hi)
        snap = hi - 1e-6
        alive = (starts <= snap) & (sch.end_s > snap) & (sch.host >= 0)
        hosts_busy = np.unique(sch.host[alive])
        mem = np.bincount(sch.host[alive], weights=ctx.vms.mem_bytes[alive], minlength=ctx.hosts.n)
        if ready is not None and sel.any() and hosts_busy.size:
            r = ready[sel][:, hosts_busy]
            w["cpu_ready_pct_worst"] = float(r.max())
            w["cpu_ready_pct_mean"] = float(r.mean())
        else:
            w["cpu_ready_pct_worst"] = w["cpu_ready_pct_mean"] = None
        # with the memory model on: the landing hosts' swap in use and their steps swapping over the interval
        for key, name in (("host_mem_swapped_gib", "landing_memory_swapped_gib_worst"),
                          ("mem_swapping", "landing_host_steps_swapping")):
            arr = result.host_acc.series.get(key)
            if arr is not None:
                x = np.asarray(arr)[sel]
                w[name] = (int((x > 0).sum()) if key == "mem_swapping" else float(x.max(initial=0.0))) if sel.any() else None
        w["landing_hosts_used"] = int(hosts_busy.size)
        w["landing_memory_placed_bytes"] = float(mem.sum())
        w["landing_memory_worst_host_share"] = float(mem.max(initial=0.0) / mem_room_per_host) if mem_room_per_host > 0 else None


# ------------------------------------------------------------------------------------ the programme


def _held_by_readiness(inv, group_of, G, mode: str) -> list[str]:
    held = [""] * G
    rd = inv.readiness
    if rd is None or mode == "move":
        return held
    st = rd.status()
    for i in np.flatnonzero(st == "blocked"):
        g = int(group_of[i])
        if not held[g]:
            why = [c.label for c in rd.checks if c.known and c.effect == "blocks" and c.flagged[i]]
            held[g] = f"VM {inv.names[i]} is blocked by the readiness checks ({', '.join(why)}; waves.blocked: move plans it anyway)"
    return held


def plan_waves(res, spec, groups_file=None) -> dict:
    """The migration programme of ``res`` (a :class:`~densim.tools.plan.capacity.PlanResult`) by ``spec``
    (:class:`~densim.spec.plan.WavesSpec`); ``groups_file`` (``--groups``) overrides ``spec.groups.file``."""
    from densim.tools.plan.hosts import host_type_of, vcpu_capacity
    from densim.tools.plan.groups import infer_groups

    inv = res.inventory
    best = next((r for r in res.ranked() if r.feasible), None)
    if best is None:
        return {"planned": False, "why": "no feasible candidate: nothing to land on"}
    cand = next(c for c in res.spec.candidates if c.name == best.name)
    gs = spec.groups
    grp = infer_groups(inv, gs.by, gs.max_shared, groups_file if groups_file is not None else gs.file)
    vcpus = np.asarray(inv.vcpus if res.rightsizing is None else res.rightsizing.vcpus_rec, dtype=np.float64)
    mem = np.asarray(inv.mem_bytes if res.rightsizing is None else res.rightsizing.mem_rec_bytes, dtype=np.float64)
    if inv.cpu_mhz is not None:
        cap = np.asarray(inv.vcpus, float) * np.asarray(inv.vcpu_mhz, float)
        util = np.clip(np.asarray(inv.cpu_mhz, float).max(axis=0) / np.maximum(cap, 1e-9), 0.0, 1.0)
        util_rule = "the VM's peak CPU use over the inventory's series"
    else:
        util = np.ones(inv.n_vms)
        util_rule = "no CPU series: every VM at 100 % CPU (the safe side)"
    dirty = spec.dirty_rate_bps * util
    # pre-copy copies the configured memory the VM has today
    zero, zero_rule = zero_shares(inv, spec)
    pc = move_times(np.asarray(inv.mem_bytes, float), dirty, spec, zero)
    held = _held_by_readiness(inv, grp.group_of, grp.n, spec.blocked)
    stuck = np.flatnonzero(~pc.converged)
    share = spec.link_bps / spec.max_concurrent
    not_conv = []
    for i in stuck:
        g = int(grp.group_of[i])
        how = ("never converges" if pc.rounds[i] < spec.max_rounds else
               f"does not converge within waves.max_rounds = {spec.max_rounds} rounds")
        why = (f"VM {inv.names[i]} {how}: it dirties {dirty[i] / 1e6:,.1f} MB/s of a {spec.wws_fraction * inv.mem_bytes[i] / GIB:,.2f} "
               f"GiB working set against a link share of {share / 1e6:,.1f} MB/s (downtime {pc.downtime_s[i]:,.2f} s > target "
               f"{spec.downtime_target_s:g} s)")
        not_conv.append({"vm": str(inv.names[i]), "group": grp.names[g], "dirty_rate_MBps": float(dirty[i] / 1e6),
                         "link_share_MBps": float(share / 1e6), "memory_bytes": float(inv.mem_bytes[i]),
                         "downtime_s": float(pc.downtime_s[i]), "rounds": int(pc.rounds[i])})
        if not held[g]:
            held[g] = why
    host = host_type_of(cand)
    q = res.spec.qos
    per_v = float(np.floor(vcpu_capacity(host, q) + 1e-9))
    mem_oc = best.memory_overcommit_used or q.memory_overcommit
    per_m = float(mem_oc * host.usable_mem_bytes)
    landing = spec.landing or None
    steps = [(0.0, int(best.n_hosts))] if landing is None else [(float(x.at_s), int(x.hosts)) for x in landing]
    capacity = [(a, n * per_v, n * per_m, n) for a, n in steps]
    mi = MoveInputs([str(n) for n in inv.names], grp.group_of, grp.names, mem, vcpus, dirty, held)
    out = schedule_waves(mi, pc.total_s, spec, capacity)
    t0 = float(spec.start) if spec.start is not None else float(inv.start_s)
    land_abs = t0 + out["land_off_s"]
    moved = np.flatnonzero(out["wave_of_vm"] >= 0)
    waves = out["waves"]
    # source hosts freed: the wave moving a host's last VM (a host with a VM held is never freed)
    src_host = np.asarray(inv.tags.get("host", np.full(inv.n_vms, "", dtype=object)), dtype=object).astype(str)
    freed_per_wave = [[] for _ in waves]
    known = src_host != ""
    hosts_u, h_of = np.unique(src_host[known], return_inverse=True)
    wv = out["wave_of_vm"][known]
    last = np.full(hosts_u.size, -1)
    np.maximum.at(last, h_of, wv)
    held_on = np.bincount(h_of, weights=(wv < 0).astype(float), minlength=hosts_u.size) > 0
    never = [str(h) for h in hosts_u[held_on]]
    for h, w in zip(hosts_u[~held_on], last[~held_on]):
        freed_per_wave[int(w)].append(str(h))
    cores_of: dict[str, int] = {}
    if inv.hosts is not None:
        cores_of = {str(n): int(c) for n, c in zip(inv.hosts.names, inv.hosts.cores)}
    hosts_known = bool(known.any())  # an inventory without a host column (a trace) cannot say which hosts empty
    for w, freed in zip(waves, freed_per_wave):
        w["window_start"] = _iso(t0 + w["window_start_s"])
        w["source_hosts_freed"] = freed if hosts_known else None
        w["source_cores_freed"] = int(sum(cores_of.get(h, 0) for h in freed)) if cores_of and hosts_known else None
        d = pc.downtime_s[np.flatnonzero(out["wave_of_vm"] == w["wave"] - 1)]
        w["downtime_s_max"] = float(d.max(initial=0.0))
    result = None
    dropped: list[str] = []
    if moved.size:
        horizon = float(np.nanmax(out["land_off_s"])) + spec.every_s
        result, dropped = landing_run(res, moved, land_abs, vcpus, mem, spec, t0, horizon, max(n for _, n in steps))
        _per_wave_engine(result, waves, t0, per_m)
    eng = None
    if result is not None:
        s = result.summary.to_dict()
        eng = {"hosts": int(max(n for _, n in steps)), "hosts_used": s["hosts_used"], "vms_placed": s["vms_placed"],
               "vms_unplaced": s["vms_unplaced"], "cpu_ready_pct_mean": s["qos"]["cpu_ready_pct_mean"],
               "cpu_ready_pct_worst_step": s["qos"]["cpu_ready_pct_worst_step"], "step_s": float(spec.step_s),
               "dropped": dropped}
        if "memory" in s:
            eng["memory"] = {k: s["memory"][k] for k in ("hosts_swapping", "slowdown_worst") if k in s["memory"]}
        if "failures" in s:
            eng["failures"] = {k: v for k, v in s["failures"].items() if isinstance(v, (int, float, str))}
        if landing is not None and len(steps) > 1:
            eng["note"] = ("the landing run places onto the largest host count from the start (online first-fit fills the "
                           "first hosts first); the waves' room check follows waves.landing over time")
    held_groups = [{"group": grp.names[g], "vms": int((grp.group_of == g).sum()), "why": out["held"][g]}
                   for g in range(grp.n) if out["held"][g]]
    vm_rows = {"vm": [str(n) for n in inv.names], "group": [grp.names[g] for g in grp.group_of],
               "wave": [int(w) + 1 if w >= 0 else None for w in out["wave_of_vm"]],
               "move_start": [_iso(t0 + x) if np.isfinite(x) else "" for x in out["start_off_s"]],
               "landing": [_iso(x) if np.isfinite(x) else "" for x in land_abs],
               "move_s": pc.total_s, "downtime_s": pc.downtime_s, "rounds": pc.rounds, "converged": pc.converged,
               "dirty_rate_MBps": dirty / 1e6, "source_host": src_host, "landing_s": land_abs}
    return {
        "planned": True, "candidate": best.name, "start": _iso(t0), "waves": len(waves), "calendar": waves,
        "vms_moved": int(moved.size), "vms_held": int(inv.n_vms - moved.size), "held_groups": held_groups,
        "not_converging": not_conv, "groups": grp.summary(),
        "downtime_s": {"max": float(pc.downtime_s[moved].max(initial=0.0)), "mean": float(pc.downtime_s[moved].mean()) if moved.size else None},
        "source_hosts_never_freed": never,
        "landing": {"capacity": [{"at_s": a, "hosts": n, "vcpus": v, "memory_bytes": m} for a, v, m, n in capacity],
                    "engine": eng},
        "rules": {"link_share_bps": share, "dirty_rate": f"waves.dirty_rate x {util_rule}", "zero_pages": zero_rule,
                  "order": "largest configured memory first; a group joins the first window with room on the landing "
                           "cluster whose moves (longest first on the earliest free slot) end within the window"},
        "_vm_rows": vm_rows,
        "_landing_result": result,  # the engine run (not written)
    }


def _iso(t: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(float(t), tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def waves_csv(w: dict) -> str:
    """One row per VM: group, wave, move start, landing, move time, downtime, pre-copy rounds, converged."""
    import csv
    import io

    from densim.csvsafe import safe_row

    r = w["_vm_rows"]
    buf = io.StringIO()
    wr = csv.writer(buf, lineterminator="\n")
    wr.writerow(["vm", "group", "wave", "move_start", "landing", "move_s", "downtime_s", "rounds", "converged",
                 "dirty_rate_MBps", "source_host"])
    for i in range(len(r["vm"])):
        wr.writerow(safe_row([r["vm"][i], r["group"][i], "" if r["wave"][i] is None else r["wave"][i], r["move_start"][i],
                              r["landing"][i], f"{r['move_s'][i]:.3f}", f"{r['downtime_s'][i]:.4f}", int(r["rounds"][i]),
                              bool(r["converged"][i]), f"{r['dirty_rate_MBps'][i]:.3f}", r["source_host"][i]]))
    return buf.getvalue()


def waves_lines(w: dict | None) -> list[str]:
    """The programme as sentences (report and terminal)."""
    if not w:
        return []
    if not w.get("planned"):
        return [f"Migration waves not planned: {w['why']}."]
    lines = [f"Migration onto {w['candidate']}: {w['waves']} wave(s) from {w['start']} UTC; {w['vms_moved']:,} VMs moved, "
             f"{w['vms_held']:,} held; worst downtime {w['downtime_s']['max']:.2f} s."]
    for c in w["calendar"]:
        ready = "" if c.get("cpu_ready_pct_worst") is None else f", landing CPU Ready worst {c['cpu_ready_pct_worst']:.2f} %"
        freed = ("source hosts not in the inventory" if c["source_hosts_freed"] is None
                 else f"source hosts freed {len(c['source_hosts_freed'])}")
        lines.append(f"Wave {c['wave']} ({c['window_start']}): {len(c['groups'])} group(s), {c['vms']} VMs, moves end "
                     f"after {c['moves_end_s'] / 3600:.2f} h; {freed}{ready}.")
    g = w["groups"]
    n_vms = w["vms_moved"] + w["vms_held"]
    if n_vms >= 20 and g["largest"] > 0.25 * n_vms:
        lines.append(f"The largest move group holds {g['largest']:,} of {n_vms:,} VMs: ties chain through shared values "
                     f"({', '.join(g['keys_used'])}); lower waves.groups.max_shared or drop a key to split it.")
    if w["not_converging"]:
        lines.append(f"{len(w['not_converging'])} VM(s) never converge at the link share: "
                     + ", ".join(x["vm"] for x in w["not_converging"][:5]) + ".")
    for h in w["held_groups"][:5]:
        lines.append(f"Held: group {h['group']} ({h['vms']} VMs): {h['why']}.")
    return lines
