"""The one event loop of placement: arrivals, departures, host failures and repairs, HA restarts,
maintenance evacuations and the landings of their live migrations.

Every placement that changes over time is this loop (numba), with deterministic priorities at one
instant, as SimPy's ``(time, priority, id)`` heap:

1. hosts repaired, 2. departures (a VM's lifetime ends), 3. migration landings, 4. host failures,
5. hosts entering maintenance, 5b. balance checks (the DRS-style balancer, :func:`_balance`),
6. restarts released (detection delay over) and the restart queue,
7. the arrival queue (when capacity freed), then 8. arrivals, one at a time, in arrival order.

Within a kind, ties go by VM (or migration, or interval) index. Static placement is "every VM
arrives at the start, placed where ``initial`` says"; online placement (:func:`densim.placement.online.schedule`)
is this loop with no failures and no maintenance; failover (:func:`densim.placement.failover.failover`)
is it with host-down intervals.

**Room.** A host's room is its capacity (vCPUs against cores x CPU over-commit, configured memory
against memory x memory over-commit: :func:`densim.placement.capacity.host_capacity`) less what its
VMs reserve; a host that is down or in maintenance has room -1 (no policy picks it). One fit test:
:func:`densim.placement.capacity.fits`, the static kernels' too.

**Maintenance.** At ``maint_at_s[e]`` host ``maint_host[e]`` enters maintenance: it takes no VM
from then on (nor after a repair) and its capacity leaves the admission-control pool; every VM
on it is live-migrated, largest memory first, to the host with the most room left (worst-fit: the
placement's reservations, not measured load), its room reserved on the destination from the
decision. At most ``max_concurrent`` migrations leave the host at once, in waves (a wave starts when
the previous one's longest migration lands); the ``k`` migrations of a wave share the host's link
equally, so each copies at ``link / k`` with :func:`densim.models.migration.precopy_one` (dirty
rate = ``dirty_rate x`` the VM's CPU utilisation given for that evacuation). A VM that fits nowhere
stays (*stranded*). At its landing the VM's run on the source ends and a new run (instance) starts
on the destination: the VM is on one host in each instance. A VM landing on a host put into
maintenance meanwhile is migrated on at once.

**Cancellations.** A VM whose lifetime ends during its migration leaves (the destination's room
is freed); a source failing during a migration stops the VM (HA restarts it; the destination's
room is freed); a destination failing cancels the migration, and the VM (still running on the
source, in maintenance) is migrated elsewhere at once.

Outputs are arrays of records: *instances* (one run of a VM on one host), *outages* (a VM stopped
by a host failure) and *migrations*; :mod:`densim.placement.failover` names them.
"""

from __future__ import annotations

import numpy as np

from densim._jit import njit
from densim.models.migration import precopy_one
from densim.placement.capacity import fits  # the one fit test (placement/capacity.py)
from densim.placement.gpu import G_VG, gpu_claim, gpu_ever_fits, gpu_find, gpu_fits_on, gpu_release, wants_gpu
from densim.placement.heuristics import _tree_find_in
from densim.placement.heuristics import _tree_update as _set_leaf


# instance record columns (I_GPUS, I_MIG only when some VM asks for a GPU: the bit mask of the host's GPUs
# the instance holds and its MIG start, densim.placement.gpu)
I_VM, I_HOST, I_PLACE, I_START, I_END, I_GPUS, I_MIG = range(7)
# outage record columns
O_VM, O_INTERVAL, O_FAIL, O_PLACE, O_HOST = range(5)
# migration record columns and status codes
M_VM, M_SRC, M_DST, M_START, M_END, M_SHARE, M_STATUS, M_EVENT, M_LIVE, M_INST_SRC, M_INST_DST, M_DIRTY = range(12)
M_FLIGHT, M_LANDED, M_CANCELLED = 0, 1, 2
# VM status codes (online.STATUS_NAMES); 5 = down, waiting for its restart
DONE, RUNNING, WAITING, FAILED, NOT_ARRIVED, DOWN = 0, 1, 2, 3, 4, 5
# scalar state slots: capacity reserved by running VMs and capacity of the hosts up (admission control)
USED_CPU, USED_MEM, UP_CPU, UP_MEM = range(4)
# counters: records written, heap sizes, queue pointers
N_INST, N_OUT, N_MIG, N_DEP, N_LAND, Q_HEAD, Q_TAIL, R_HEAD, R_TAIL, N_RQ = range(10)


@njit(inline="always")
def _heap_push(ht, hv, n, t, v):
    i = n
    ht[i] = t
    hv[i] = v
    while i > 0:
        p = (i - 1) // 2
        if ht[p] < ht[i] or (ht[p] == ht[i] and hv[p] <= hv[i]):
            break
        ht[p], ht[i] = ht[i], ht[p]
        hv[p], hv[i] = hv[i], hv[p]
        i = p
    return n + 1


@njit(inline="always")
def _heap_pop(ht, hv, n):
    n -= 1
    ht[0] = ht[n]
    hv[0] = hv[n]
    i = 0
    while True:
        a = 2 * i + 1
        b = a + 1
        s = i
        if a < n and (ht[a] < ht[s] or (ht[a] == ht[s] and hv[a] < hv[s])):
            s = a
        if b < n and (ht[b] < ht[s] or (ht[b] == ht[s] and hv[b] < hv[s])):
            s = b
        if s == i:
            break
        ht[s], ht[i] = ht[i], ht[s]
        hv[s], hv[i] = hv[i], hv[s]
        i = s
    return n


@njit(inline="always")
def _grow(a, n):
    """``a`` with room for at least ``n + 1`` rows (first axis)."""
    if n < a.shape[0]:
        return a
    shape = (max(2 * a.shape[0], n + 16),) + a.shape[1:]
    b = np.empty(shape, dtype=a.dtype)
    b[: a.shape[0]] = a
    return b


@njit(inline="always")
def _find(policy, c, m, cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size, stack, v, gp):
    """The host the policy picks for ``c`` vCPUs and ``m`` bytes (-1: none has room).
    0 first-fit (leftmost leaf of the segment tree with room), 1 best-fit, 2 worst-fit (least /
    most room left, summed over both resources as shares of capacity). A VM ``v`` that asks for a GPU
    (``gp``, :mod:`densim.placement.gpu`) goes to :func:`densim.placement.gpu.gpu_find`: the same policies
    with the GPU column in the fit test and the score."""
    if wants_gpu(gp, v):
        return gpu_find(policy, v, c, m, cpu_free, mem_free, cpu_cap, mem_cap, gp)
    if policy == 0:
        return _tree_find_in(tc, tm, size, c, m, stack)  # the static first-fit's segment-tree search
    chosen = -1
    best = 0.0
    for h in range(cpu_free.size):
        if fits(cpu_free[h], mem_free[h], c, m):
            s = (cpu_free[h] - c) / cpu_cap[h] + (mem_free[h] - m) / mem_cap[h]
            if chosen < 0 or (policy == 1 and s < best) or (policy == 2 and s > best):
                chosen = h
                best = s
    return chosen


@njit(inline="always")
def _room(h, d, cpu_free, mem_free, tc, tm, size, c, m):
    """Host ``h``'s room changes by ``d`` x (``c``, ``m``) (d = +1 frees, -1 takes); the tree follows."""
    cpu_free[h] += d * c
    mem_free[h] += d * m
    _set_leaf(tc, tm, size, h, cpu_free[h], mem_free[h])


@njit(inline="always")
def _link(head, nxt, prv, h, v):
    nxt[v] = head[h]
    prv[v] = -1
    if head[h] >= 0:
        prv[head[h]] = v
    head[h] = v


@njit(inline="always")
def _unlink(head, nxt, prv, h, v):
    if prv[v] >= 0:
        nxt[prv[v]] = nxt[v]
    else:
        head[h] = nxt[v]
    if nxt[v] >= 0:
        prv[nxt[v]] = prv[v]
    nxt[v] = -1
    prv[v] = -1


@njit(inline="always")
def _add_instance(inst, cnt, v, h, place, start, end):
    """Instance row ``cnt[N_INST]`` (the caller made room: ``inst = _grow(inst, cnt[N_INST])``); returns it."""
    k = cnt[N_INST]
    inst[k, I_VM] = v
    inst[k, I_HOST] = h
    inst[k, I_PLACE] = place
    inst[k, I_START] = start
    inst[k, I_END] = end
    if inst.shape[1] > I_GPUS:  # no GPU held unless the caller writes the VM's (a run with GPU requests)
        inst[k, I_GPUS] = 0.0
        inst[k, I_MIG] = -1.0
    cnt[N_INST] = k + 1
    return k


@njit(inline="always")
def _admits(admission, sc, c, m, res):
    """Admission control: ``used + vm <= up - reserve`` in vCPUs and memory (res: fixed cpu, fixed mem, share)."""
    if not admission:
        return True
    res_c = max(res[0], res[2] * sc[UP_CPU])
    res_m = max(res[1], res[2] * sc[UP_MEM])
    return fits(sc[UP_CPU] - res_c - sc[USED_CPU], sc[UP_MEM] - res_m - sc[USED_MEM], c, m)


@njit(inline="always")
def _run_on(v, h, t, start, vi, st, vf, inst, cnt, cpu_free, mem_free, tc, tm, size, head, nxt, prv, sc, vm_cpu, vm_mem, gp, claim):
    """VM ``v`` runs on host ``h`` from ``t`` (up from ``start``): room taken, listed on the host, an instance
    (the caller made room for one more). With ``claim`` the VM takes its GPU request on ``h`` (a static
    placement's VMs hold theirs from the start: ``claim`` False)."""
    vi[v, 0] = h
    st[v] = RUNNING
    _room(h, -1.0, cpu_free, mem_free, tc, tm, size, vm_cpu[v], vm_mem[v])
    if head.size:  # the host's list of VMs, kept when a failure or an evacuation will need it (_event_loop)
        _link(head, nxt, prv, h, v)
    sc[USED_CPU] += vm_cpu[v]
    sc[USED_MEM] += vm_mem[v]
    end = vf[v, 1] if vf[v, 1] == vf[v, 1] else np.inf
    vi[v, 1] = _add_instance(inst, cnt, v, h, t, start, end)
    if wants_gpu(gp, v):
        vg = gp[G_VG]
        if claim:
            vg[v, 0], vg[v, 1] = gpu_claim(v, h, gp)
        inst[vi[v, 1], I_GPUS] = vg[v, 0]
        inst[vi[v, 1], I_MIG] = vg[v, 1]


@njit(inline="always")
def _drop_gpu(v, h, gp, j):
    """VM ``v`` gives back the GPUs it holds on ``h`` (``j`` = 0) or has reserved there as its migration's
    destination (``j`` = 2)."""
    if wants_gpu(gp, v):
        vg = gp[G_VG]
        gpu_release(v, h, vg[v, j], vg[v, j + 1], gp)
        vg[v, j] = 0
        vg[v, j + 1] = -1


@njit(inline="always")
def _leave(v, h, vi, cpu_free, mem_free, tc, tm, size, head, nxt, prv, sc, vm_cpu, vm_mem, blocked, gp):
    """VM ``v`` leaves host ``h`` (not down): off its list, its room back unless the host takes no VM."""
    if head.size:
        _unlink(head, nxt, prv, h, v)
    if not blocked[h]:
        _room(h, 1.0, cpu_free, mem_free, tc, tm, size, vm_cpu[v], vm_mem[v])
    _drop_gpu(v, h, gp, 0)  # GPUs are given back exactly, also on a host that takes no VM
    sc[USED_CPU] -= vm_cpu[v]
    sc[USED_MEM] -= vm_mem[v]
    vi[v, 0] = -1


@njit(inline="always")
def _cancel(v, t, vi, migs, cpu_free, mem_free, tc, tm, size, vm_cpu, vm_mem, blocked, gp):
    """Cancel VM ``v``'s migration in flight (if any) at ``t``: its destination's room back."""
    r = vi[v, 3]
    if r < 0:
        return
    d = int(migs[r, M_DST])
    if not blocked[d]:
        _room(d, 1.0, cpu_free, mem_free, tc, tm, size, vm_cpu[v], vm_mem[v])
    _drop_gpu(v, d, gp, 2)
    migs[r, M_STATUS] = M_CANCELLED
    migs[r, M_END] = t
    vi[v, 3] = -1


@njit(inline="always")
def _flight(migs, cnt, lt, lv, vi, v, src, dst, start, total, share, event, live, dirty):
    """VM ``v``'s migration ``src`` -> ``dst`` from ``start`` for ``total`` s (link shared by ``share``; ``event``: the
    maintenance event, or -1 - k for the k-th balance check) is in flight: its record, and its landing on the heap
    (the caller made room on ``lt``/``lv``). Returns the records."""
    migs = _grow(migs, cnt[N_MIG])
    r = cnt[N_MIG]
    cnt[N_MIG] = r + 1
    migs[r, M_VM] = v
    migs[r, M_SRC] = src
    migs[r, M_DST] = dst
    migs[r, M_START] = start
    migs[r, M_END] = start + total
    migs[r, M_SHARE] = share
    migs[r, M_STATUS] = M_FLIGHT
    migs[r, M_EVENT] = event
    migs[r, M_LIVE] = live
    migs[r, M_INST_SRC] = vi[v, 1]
    migs[r, M_INST_DST] = -1
    migs[r, M_DIRTY] = dirty
    vi[v, 3] = r
    cnt[N_LAND] = _heap_push(lt, lv, cnt[N_LAND], start + total, r)
    return migs


@njit
def _migrate(vs, nv, src, t, e, vi, migs, cnt, lt, lv, cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size,
             vm_cpu, vm_mem, util, core_mhz, mig_par, evac, stack, gp):
    """Migrate VMs ``vs[:nv]`` (largest memory first) off ``src`` from ``t`` for evacuation ``e``: destinations
    by worst-fit, room reserved there now; waves of ``max_concurrent`` sharing the link. Returns records."""
    link, dirty, wws, target, resume, max_rounds, kmax = (mig_par[0], mig_par[1], mig_par[2], mig_par[3],
                                                         mig_par[4], int(mig_par[5]), int(mig_par[6]))
    order = np.argsort(-vm_mem[vs[:nv]], kind="mergesort")
    chosen_v = np.empty(nv, dtype=np.int64)
    chosen_d = np.empty(nv, dtype=np.int64)
    nc = 0
    for j in range(nv):
        v = vs[order[j]]
        d = _find(2, vm_cpu[v], vm_mem[v], cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size, stack, v, gp)
        if d < 0:
            evac[e, 1] += 1  # stranded
            continue
        _room(d, -1.0, cpu_free, mem_free, tc, tm, size, vm_cpu[v], vm_mem[v])
        if wants_gpu(gp, v):  # its GPU on the destination is reserved from the decision too
            vg = gp[G_VG]
            vg[v, 2], vg[v, 3] = gpu_claim(v, d, gp)
        chosen_v[nc] = v
        chosen_d[nc] = d
        nc += 1
    evac[e, 0] += nc
    bw = np.empty(1)
    dr = np.empty(1)
    start = t
    w = 0
    while w < nc:
        k = min(kmax, nc - w)
        bw[0] = link / k
        wave_end = start
        for j in range(w, w + k):
            v = chosen_v[j]
            u = min(max(util[e, v] / max(vm_cpu[v] * core_mhz[src], 1e-9), 0.0), 1.0)
            dr[0] = dirty * u
            total, down, sent, rounds, conv, live = precopy_one(vm_mem[v], bw, dr, wws * vm_mem[v], target, resume,
                                                                -1.0, max_rounds, mig_par[7], mig_par[8])
            migs = _flight(migs, cnt, lt, lv, vi, v, src, chosen_d[j], start, total, k, e, live, dr[0])
            wave_end = max(wave_end, start + total)
        start = wave_end
        w += k
    evac[e, 2] = max(evac[e, 2], start)
    return migs


@njit
def _land(r, t, vi, st, vf, migs, inst, cnt, head, nxt, prv, cpu_free, mem_free, tc, tm, size, vm_cpu, vm_mem, blocked, gp):
    """Migration ``r`` lands at ``t``: the VM's run on the source ends, one on the destination starts."""
    v = int(migs[r, M_VM])
    src = int(migs[r, M_SRC])
    d = int(migs[r, M_DST])
    _unlink(head, nxt, prv, src, v)
    if not blocked[src]:
        _room(src, 1.0, cpu_free, mem_free, tc, tm, size, vm_cpu[v], vm_mem[v])
    _drop_gpu(v, src, gp, 0)
    k = vi[v, 1]
    inst[k, I_END] = t
    if inst[k, I_START] > t:
        inst[k, I_START] = t
    _link(head, nxt, prv, d, v)
    vi[v, 0] = d
    end = vf[v, 1] if vf[v, 1] == vf[v, 1] else np.inf
    inst = _grow(inst, cnt[N_INST])
    k2 = _add_instance(inst, cnt, v, d, t, t, end)
    if wants_gpu(gp, v):  # the GPUs reserved on the destination are now held there
        vg = gp[G_VG]
        vg[v, 0], vg[v, 1], vg[v, 2], vg[v, 3] = vg[v, 2], vg[v, 3], 0, -1
        inst[k2, I_GPUS] = vg[v, 0]
        inst[k2, I_MIG] = vg[v, 1]
    vi[v, 1] = k2
    vi[v, 3] = -1
    migs[r, M_STATUS] = M_LANDED
    migs[r, M_INST_DST] = k2
    return inst


@njit
def _fail(h, t, di, detect_s, vi, st, inst, outs, migs, cnt, rel_t, rel_v, head, nxt, prv, cpu_free, mem_free, tc, tm,
          size, vm_cpu, vm_mem, sc, blocked, gp):
    """Host ``h`` fails at ``t`` (interval ``di``): its VMs stop and are released for restart after the
    detection delay; their migrations are cancelled. Returns the records and release queue."""
    v = head[h]
    while v >= 0:
        w = nxt[v]
        _cancel(v, t, vi, migs, cpu_free, mem_free, tc, tm, size, vm_cpu, vm_mem, blocked, gp)
        _drop_gpu(v, h, gp, 0)  # its GPUs are free when the host is repaired
        sc[USED_CPU] -= vm_cpu[v]
        sc[USED_MEM] -= vm_mem[v]
        nxt[v] = -1
        prv[v] = -1
        k = vi[v, 1]
        if inst[k, I_END] > t:
            inst[k, I_END] = t
        if inst[k, I_START] > t:
            inst[k, I_START] = t
        vi[v, 0] = -1
        st[v] = DOWN
        outs = _grow(outs, cnt[N_OUT])
        o = cnt[N_OUT]
        cnt[N_OUT] = o + 1
        outs[o, O_VM] = v
        outs[o, O_INTERVAL] = di
        outs[o, O_FAIL] = t
        outs[o, O_PLACE] = np.nan
        outs[o, O_HOST] = -1
        vi[v, 2] = o
        rel_t = _grow(rel_t, cnt[R_TAIL])
        rel_v = _grow(rel_v, cnt[R_TAIL])
        rel_t[cnt[R_TAIL]] = t + detect_s
        rel_v[cnt[R_TAIL]] = v
        cnt[R_TAIL] += 1
        v = w
    head[h] = -1
    cpu_free[h] = -1.0  # down: no policy picks it (every VM on it left: room = capacity at repair)
    mem_free[h] = -1.0
    _set_leaf(tc, tm, size, h, -1.0, -1.0)
    return outs, rel_t, rel_v


@njit
def _inbound(h, migs, cnt):
    """Migrations in flight to host ``h``."""
    out = np.empty(cnt[N_MIG], dtype=np.int64)
    n = 0
    for r in range(cnt[N_MIG]):
        if migs[r, M_STATUS] == M_FLIGHT and int(migs[r, M_DST]) == h:
            out[n] = r
            n += 1
    return out[:n]


@njit
def _release(t, prio, st, rel_t, rel_v, rq, rq_t, cnt):
    """Restarts released at ``t`` join the restart queue in priority order; returns whether any did."""
    released = False
    while cnt[R_HEAD] < cnt[R_TAIL] and rel_t[cnt[R_HEAD]] == t:
        v = rel_v[cnt[R_HEAD]]
        cnt[R_HEAD] += 1
        if st[v] != DOWN:
            continue
        rq = _grow(rq, cnt[N_RQ])
        rq_t = _grow(rq_t, cnt[N_RQ])
        j = cnt[N_RQ]
        while j > 0 and (prio[rq[j - 1]] < prio[v] or (prio[rq[j - 1]] == prio[v] and rq_t[j - 1] == t and rq[j - 1] > v)):
            rq[j] = rq[j - 1]
            rq_t[j] = rq_t[j - 1]
            j -= 1
        rq[j] = v
        rq_t[j] = t
        cnt[N_RQ] += 1
        released = True
    return released, rq, rq_t


@njit(inline="always")
def _start_static(initial, arrival, run, admission, res, sc, st, refused, vi, vf, inst, cnt, ht, hv, cpu_free, mem_free,
                  tc, tm, size, head, nxt, prv, vm_cpu, vm_mem, gp):
    """VMs placed at the start (``initial`` >= -1: a run without lifetimes): power-on in VM order,
    admission permitting. Returns the instances and whether the run is static."""
    static = False
    for v in range(initial.size):
        if initial[v] == -2:
            continue
        static = True
        h = initial[v]
        if h < 0:
            st[v] = FAILED
            continue
        if not _admits(admission, sc, vm_cpu[v], vm_mem[v], res):
            st[v] = FAILED
            refused[v] = True
            _drop_gpu(v, h, gp, 0)  # the static placement's GPU, not powered on
            continue
        vf[v, 0] = arrival[v]
        vf[v, 1] = arrival[v] + run[v]
        inst = _grow(inst, cnt[N_INST])
        _run_on(v, h, arrival[v], arrival[v], vi, st, vf, inst, cnt, cpu_free, mem_free, tc, tm, size, head, nxt, prv, sc,
                vm_cpu, vm_mem, gp, False)
        if run[v] < np.inf:
            cnt[N_DEP] = _heap_push(ht, hv, cnt[N_DEP], vf[v, 1], v)
    return inst, static


@njit(refcount=False)
def _next_time(cnt, ht, lt, rel_t, d_end, up_order, ui, d_start, di, m_at, mi, b_at, bi):
    """The next instant some event other than an arrival happens (inf: none)."""
    t = ht[0] if cnt[N_DEP] > 0 else np.inf
    if cnt[N_LAND] > 0:
        t = min(t, lt[0])
    if ui < d_end.size:
        t = min(t, d_end[up_order[ui]])
    if di < d_start.size:
        t = min(t, d_start[di])
    if mi < m_at.size:
        t = min(t, m_at[mi])
    if bi < b_at.size:
        t = min(t, b_at[bi])
    if cnt[R_HEAD] < cnt[R_TAIL]:
        t = min(t, rel_t[cnt[R_HEAD]])
    return t


@njit(refcount=False)
def _repairs(t, ui, up_order, d_host, d_end, down, maint, blocked, cpu_free, mem_free, cpu_cap, mem_cap, sc, tc, tm, size):
    """1. Hosts repaired at ``t`` (not in maintenance) take VMs again. Returns the next repair and whether room freed."""
    freed = False
    while ui < d_end.size and d_end[up_order[ui]] == t:
        h = d_host[up_order[ui]]
        ui += 1
        down[h] -= 1
        if down[h] == 0 and not maint[h]:
            blocked[h] = False
            cpu_free[h] = cpu_cap[h]
            mem_free[h] = mem_cap[h]
            sc[UP_CPU] += cpu_cap[h]
            sc[UP_MEM] += mem_cap[h]
            _set_leaf(tc, tm, size, h, cpu_free[h], mem_free[h])
            freed = True
    return ui, freed


@njit(refcount=False)
def _departures(t, ht, hv, cnt, st, vi, migs, cpu_free, mem_free, tc, tm, size, head, nxt, prv, sc, vm_cpu, vm_mem,
                blocked, gp):
    """2. VMs whose lifetime ends at ``t`` leave (a migration in flight is cancelled). Returns whether room freed."""
    freed = False
    while cnt[N_DEP] > 0 and ht[0] == t:
        v = hv[0]
        cnt[N_DEP] = _heap_pop(ht, hv, cnt[N_DEP])
        if st[v] == RUNNING:
            if vi[v, 3] >= 0:
                _cancel(v, t, vi, migs, cpu_free, mem_free, tc, tm, size, vm_cpu, vm_mem, blocked, gp)
            _leave(v, vi[v, 0], vi, cpu_free, mem_free, tc, tm, size, head, nxt, prv, sc, vm_cpu, vm_mem, blocked, gp)
            freed = True
        st[v] = DONE  # done (also a VM down at its end: it is not restarted)
        vi[v, 2] = -1
    return freed


@njit
def _landings(t, lt, lv, cnt, migs, vi, st, vf, inst, head, nxt, prv, cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size,
              vm_cpu, vm_mem, blocked, maint, evac_of, vs, util, core_mhz, mig_par, evac, stack, gp):
    """3. Migrations landing at ``t``; a VM landing on a host put into maintenance meanwhile moves on at once."""
    landed = False
    while cnt[N_LAND] > 0 and lt[0] == t:
        r = lv[0]
        cnt[N_LAND] = _heap_pop(lt, lv, cnt[N_LAND])
        if migs[r, M_STATUS] != M_FLIGHT:
            continue
        inst = _land(r, t, vi, st, vf, migs, inst, cnt, head, nxt, prv, cpu_free, mem_free, tc, tm, size, vm_cpu, vm_mem,
                     blocked, gp)
        d = int(migs[r, M_DST])
        if maint[d]:
            vs[0] = int(migs[r, M_VM])
            lt, lv = _grow(lt, cnt[N_LAND] + 1), _grow(lv, cnt[N_LAND] + 1)
            migs = _migrate(vs, 1, d, t, evac_of[d], vi, migs, cnt, lt, lv, cpu_free, mem_free, cpu_cap, mem_cap, tc, tm,
                            size, vm_cpu, vm_mem, util, core_mhz, mig_par, evac, stack, gp)
        landed = True
    return inst, migs, lt, lv, landed


@njit
def _failures(t, di, d_host, d_start, down, maint, blocked, sc, cpu_cap, mem_cap, detect_s, vi, st, inst, outs, migs, cnt,
              rel_t, rel_v, lt, lv, head, nxt, prv, cpu_free, mem_free, tc, tm, size, vm_cpu, vm_mem, evac_of, vs, util,
              core_mhz, mig_par, evac, stack, gp):
    """4. Hosts failing at ``t``: their VMs stop (:func:`_fail`); migrations to them are cancelled and
    their VMs, still on a source in maintenance, sent elsewhere at once."""
    while di < d_start.size and d_start[di] == t:
        h = d_host[di]
        down[h] += 1
        if down[h] == 1:
            if not maint[h]:
                sc[UP_CPU] -= cpu_cap[h]
                sc[UP_MEM] -= mem_cap[h]
            blocked[h] = True
            outs, rel_t, rel_v = _fail(h, t, di, detect_s, vi, st, inst, outs, migs, cnt, rel_t, rel_v, head, nxt, prv,
                                       cpu_free, mem_free, tc, tm, size, vm_cpu, vm_mem, sc, blocked, gp)
            for r in _inbound(h, migs, cnt):
                v = int(migs[r, M_VM])
                src = int(migs[r, M_SRC])
                _cancel(v, t, vi, migs, cpu_free, mem_free, tc, tm, size, vm_cpu, vm_mem, blocked, gp)
                if maint[src] and vi[v, 0] == src:
                    vs[0] = v
                    lt, lv = _grow(lt, cnt[N_LAND] + 1), _grow(lv, cnt[N_LAND] + 1)
                    migs = _migrate(vs, 1, src, t, evac_of[src], vi, migs, cnt, lt, lv, cpu_free, mem_free, cpu_cap,
                                    mem_cap, tc, tm, size, vm_cpu, vm_mem, util, core_mhz, mig_par, evac, stack, gp)
        di += 1
    return di, outs, rel_t, rel_v, migs, lt, lv

# balance-check record columns: the imbalance seen (NaN: fewer than 2 hosts to balance), whether it triggered, moves
# refused by the cost-benefit test, moves started
B_SIGMA, B_TRIGGERED, B_REJECTED, B_MOVES = range(4)
# balancer parameters (bpar)
P_THRESHOLD, P_BUDGET, P_MIN_GAIN, P_HORIZON, P_CORES, P_SLOWDOWN, P_IDLE_ON = range(7)


@njit
def _host_demand(k, bdem, vm_cpu, core_mhz, head, nxt, vi, migs, cnt):
    """(demand MHz, VMs) per host at balance check ``k``: each running VM's demand over the last interval (at most
    its vCPUs at its host's core speed); a VM migrating counts on its destination."""
    H = core_mhz.size
    dem = np.zeros(H)
    nv = np.zeros(H, dtype=np.int64)
    for h in range(head.size):
        v = head[h]
        while v >= 0:
            if vi[v, 3] < 0:
                dem[h] += min(bdem[k, v], vm_cpu[v] * core_mhz[h])
                nv[h] += 1
            v = nxt[v]
    for r in range(cnt[N_MIG]):
        if migs[r, M_STATUS] == M_FLIGHT:
            v = int(migs[r, M_VM])
            d = int(migs[r, M_DST])
            dem[d] += min(bdem[k, v], vm_cpu[v] * core_mhz[d])
            nv[d] += 1
    return dem, nv


@njit
def _best_move(src, cs, k, bdem, u, s1, s2, n, elig, cap_mhz, core_mhz, cpu_free, mem_free, vm_cpu, vm_mem, gp):
    """The (VM of ``cs``, destination) pair from host ``src`` that leaves the lowest standard deviation of ``u`` over
    the ``n`` hosts to balance (sums ``s1``, ``s2``): ``(deviation, vm, host)``, (inf, -1, -1) when none has room.
    Ties go to the lowest VM, then the lowest host."""
    best = np.inf
    bv = -1
    bd = -1
    for i in range(cs.size):
        v = cs[i]
        dv = min(bdem[k, v], vm_cpu[v] * core_mhz[src])
        us = u[src] - dv / cap_mhz[src]
        for d in range(u.size):
            if d == src or not elig[d] or not fits(cpu_free[d], mem_free[d], vm_cpu[v], vm_mem[v]):
                continue
            if not gpu_fits_on(v, d, gp):  # a VM with a GPU request goes only where a GPU can take it
                continue
            ud = u[d] + dv / cap_mhz[d]
            a1 = s1 - u[src] + us - u[d] + ud
            a2 = s2 - u[src] ** 2 + us * us - u[d] ** 2 + ud * ud
            ns = np.sqrt(max(a2 / n - (a1 / n) ** 2, 0.0))
            if ns < best:
                best = ns
                bv = v
                bd = d
    return best, bv, bd


@njit
def _pays(src, d, dv, mem, u, us, ud, s1, n, elig, cap_mhz, core_mhz, bpar, cpu_of_v, mig_par):
    """The balancer's cost-benefit test of moving a VM (demand ``dv`` MHz, ``mem`` bytes, ``cpu_of_v`` vCPUs) from
    ``src`` to ``d``: the drop of the demand above the mean utilisation over the horizon against the migration's CPU
    on both hosts and the VM's lost work (pre-copy at the link's full bandwidth)."""
    mean_u = s1 / n
    above = 0.0
    above_new = 0.0
    for h in range(u.size):
        if elig[h]:
            above += max(0.0, (u[h] - mean_u) * cap_mhz[h])
            un = us if h == src else (ud if h == d else u[h])
            above_new += max(0.0, (un - mean_u) * cap_mhz[h])
    benefit = (above - above_new) * bpar[P_HORIZON]
    util = min(max(dv / max(cpu_of_v * core_mhz[src], 1e-9), 0.0), 1.0)
    total, down, sent, rounds, conv, live = precopy_one(mem, np.array([mig_par[0]]), np.array([mig_par[1] * util]),
                                                        mig_par[2] * mem, mig_par[3], mig_par[4], -1.0, int(mig_par[5]),
                                                        mig_par[7], mig_par[8])
    cost = 2.0 * bpar[P_CORES] * 0.5 * (core_mhz[src] + core_mhz[d]) * total + dv * (bpar[P_SLOWDOWN] * live + down)
    return benefit > cost


@njit
def _start_moves(t, k, nc, ch_v, ch_s, ch_d, ch_m, vi, migs, cnt, lt, lv, core_mhz, vm_cpu, vm_mem, mig_par):
    """The ``nc`` moves of balance check ``k`` start together at ``t``: each shares its source's and destination's
    link with the others there; migration records and landing events. Returns the records and landing heap."""
    lt, lv = _grow(lt, cnt[N_LAND] + nc), _grow(lv, cnt[N_LAND] + nc)
    bw = np.empty(1)
    dr = np.empty(1)
    for j in range(nc):
        n_out = 0
        n_in = 0
        for i in range(nc):
            n_out += ch_s[i] == ch_s[j]
            n_in += ch_d[i] == ch_d[j]
        share = max(n_out, n_in)
        v, src, d = ch_v[j], ch_s[j], ch_d[j]
        bw[0] = mig_par[0] / share
        dr[0] = mig_par[1] * min(max(ch_m[j] / max(vm_cpu[v] * core_mhz[src], 1e-9), 0.0), 1.0)
        total, down, sent, rounds, conv, live = precopy_one(vm_mem[v], bw, dr, mig_par[2] * vm_mem[v], mig_par[3],
                                                            mig_par[4], -1.0, int(mig_par[5]), mig_par[7], mig_par[8])
        migs = _flight(migs, cnt, lt, lv, vi, v, src, d, t, total, share, -1 - k, live, dr[0])  # event < 0: balance
    return migs, lt, lv


@njit
def _balance(t, k, bdem, bpar, bstat, cap_mhz, core_mhz, blocked, head, nxt, vi, migs, cnt, lt, lv, cpu_free, mem_free,
             tc, tm, size, vm_cpu, vm_mem, mig_par, gp):
    """5b. A balance check at ``t`` (the ``k``-th): the DRS-style balancer of :mod:`densim.engine.migration` as an event.

    Each running VM's CPU demand is its mean over the last interval (``bdem[k]``, from the trace; at most its vCPUs
    at its host's core speed); a VM migrating counts on its destination. The hosts to balance are those up, not in
    maintenance, and holding a VM (or every such host under ``unused_hosts: idle``); the imbalance is the
    standard deviation of their CPU utilisation (demand / capacity). Above the threshold, up to ``budget`` times,
    the (VM of the busiest host, destination with room) pair that lowers the deviation most (:func:`_best_move`) is
    moved, if the gain exceeds ``min_gain`` and it pays (:func:`_pays`); its room (and GPU) is reserved on the
    destination from the decision. The moves of one check start together (:func:`_start_moves`)."""
    H = cap_mhz.size
    dem, nv = _host_demand(k, bdem, vm_cpu, core_mhz, head, nxt, vi, migs, cnt)
    elig = np.zeros(H, dtype=np.bool_)
    u = np.zeros(H)
    n = 0
    s1 = 0.0
    s2 = 0.0
    for h in range(H):
        elig[h] = (not blocked[h]) and (nv[h] > 0 or bpar[P_IDLE_ON] > 0)
        if elig[h]:
            n += 1
            u[h] = dem[h] / cap_mhz[h]
            s1 += u[h]
            s2 += u[h] * u[h]
    bstat[k, B_SIGMA] = np.nan
    if n < 2:
        return migs, lt, lv
    sigma = np.sqrt(max(s2 / n - (s1 / n) ** 2, 0.0))
    bstat[k, B_SIGMA] = sigma
    if sigma <= bpar[P_THRESHOLD]:
        return migs, lt, lv
    bstat[k, B_TRIGGERED] = 1.0
    budget = int(bpar[P_BUDGET])
    ch_v = np.empty(budget, dtype=np.int64)
    ch_s = np.empty(budget, dtype=np.int64)
    ch_d = np.empty(budget, dtype=np.int64)
    ch_m = np.empty(budget)
    nc = 0
    cand = np.empty(vi.shape[0], dtype=np.int64)
    for _ in range(budget):
        src = np.argmax(np.where(elig, u, -np.inf))
        nca = 0
        v = head[src]
        while v >= 0:
            if vi[v, 3] < 0 and not np.any(ch_v[:nc] == v):  # not migrating, not moved by this check
                cand[nca] = v
                nca += 1
            v = nxt[v]
        best, v, d = _best_move(src, np.sort(cand[:nca]), k, bdem, u, s1, s2, n, elig, cap_mhz, core_mhz, cpu_free,
                                mem_free, vm_cpu, vm_mem, gp)
        if v < 0 or sigma - best <= max(bpar[P_MIN_GAIN], 0.0):
            break
        dv = min(bdem[k, v], vm_cpu[v] * core_mhz[src])
        us, ud = u[src] - dv / cap_mhz[src], u[d] + dv / cap_mhz[d]
        if not _pays(src, d, dv, vm_mem[v], u, us, ud, s1, n, elig, cap_mhz, core_mhz, bpar, vm_cpu[v], mig_par):
            bstat[k, B_REJECTED] += 1.0
            break
        ch_v[nc], ch_s[nc], ch_d[nc], ch_m[nc] = v, src, d, dv
        nc += 1
        s1 += us - u[src] + ud - u[d]
        s2 += us * us - u[src] ** 2 + ud * ud - u[d] ** 2
        u[src], u[d] = us, ud
        sigma = best
        _room(d, -1.0, cpu_free, mem_free, tc, tm, size, vm_cpu[v], vm_mem[v])
        if wants_gpu(gp, v):  # its GPU on the destination is reserved from the decision
            vg = gp[G_VG]
            vg[v, 2], vg[v, 3] = gpu_claim(v, d, gp)
    bstat[k, B_MOVES] = nc
    return _start_moves(t, k, nc, ch_v, ch_s, ch_d, ch_m, vi, migs, cnt, lt, lv, core_mhz, vm_cpu, vm_mem, mig_par)


@njit
def _maintenance(t, mi, m_host, m_at, maint, evac_of, blocked, sc, cpu_cap, mem_cap, cpu_free, mem_free, tc, tm, size,
                 head, nxt, vi, vs, migs, cnt, lt, lv, vm_cpu, vm_mem, util, core_mhz, mig_par, evac, stack, gp):
    """5. Hosts entering maintenance at ``t``: all of this instant first (no destination for each other),
    then their evacuations in event order."""
    m0 = mi
    while mi < m_at.size and m_at[mi] == t:
        h = m_host[mi]
        if not maint[h]:
            maint[h] = True
            evac_of[h] = mi
            if not blocked[h]:
                sc[UP_CPU] -= cpu_cap[h]
                sc[UP_MEM] -= mem_cap[h]
                blocked[h] = True
                cpu_free[h] = -1.0
                mem_free[h] = -1.0
                _set_leaf(tc, tm, size, h, -1.0, -1.0)
        mi += 1
    for mj in range(m0, mi):
        h = m_host[mj]
        if evac_of[h] != mj:
            continue
        nv = 0
        v = head[h]
        while v >= 0:
            if vi[v, 3] < 0:
                vs[nv] = v
                nv += 1
            v = nxt[v]
        lt, lv = _grow(lt, cnt[N_LAND] + nv), _grow(lv, cnt[N_LAND] + nv)
        migs = _migrate(vs, nv, h, t, mj, vi, migs, cnt, lt, lv, cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size,
                        vm_cpu, vm_mem, util, core_mhz, mig_par, evac, stack, gp)
    return mi, migs, lt, lv


@njit(refcount=False)
def _common(i, order, arrival, until, cnt, ht, hv, lt, rel_t, d_end, up_order, ui, d_start, di, m_at, mi, b_at, bi, st,
            refused,
            vi, vf, inst, queue, policy, discipline, admission, res, sc, run, vm_cpu, vm_mem, cpu_free, mem_free, cpu_cap,
            mem_cap, tc, tm, size, head, nxt, prv, migs, blocked, stack, gp):
    """The common events in a loop of their own: arrivals (8.), and instants at which only departures happen (2.,
    then the arrival queue, 7.), each exactly as :func:`_event_loop` does it. Returns the next arrival's index as
    soon as anything else is due (a repair, landing, failure, maintenance, restart), the instance table would have
    to grow, or the run ends: the event loop takes that event and calls this again.

    Why a loop apart: numba counts a reference at every pass of a loop for each array the loop may re-bind (the
    tables that grow), which cost the event loop a third of its time; this loop borrows every array and re-binds
    none (it allocates and returns none)."""
    n = arrival.size
    while True:
        next_arr = arrival[order[i]] if i < n else np.inf
        t = _next_time(cnt, ht, lt, rel_t, d_end, up_order, ui, d_start, di, m_at, mi, b_at, bi)
        if t > next_arr:  # one arrival
            if next_arr > until or cnt[N_INST] >= inst.shape[0]:
                return i
            v = order[i]
            i += 1
            _arrive(v, next_arr, st, refused, vi, vf, inst, cnt, queue, ht, hv, policy, discipline, admission, res, sc,
                    run, vm_cpu, vm_mem, cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size, head, nxt, prv, stack, gp)
            continue
        if t == np.inf or t > until or cnt[N_RQ] > 0 or cnt[N_INST] + cnt[Q_TAIL] - cnt[Q_HEAD] >= inst.shape[0]:
            return i
        if ((ui < d_end.size and d_end[up_order[ui]] == t) or (cnt[N_LAND] > 0 and lt[0] == t)
                or (di < d_start.size and d_start[di] == t) or (mi < m_at.size and m_at[mi] == t)
                or (bi < b_at.size and b_at[bi] == t)
                or (cnt[R_HEAD] < cnt[R_TAIL] and rel_t[cnt[R_HEAD]] == t)):
            return i
        freed = _departures(t, ht, hv, cnt, st, vi, migs, cpu_free, mem_free, tc, tm, size, head, nxt, prv, sc, vm_cpu,
                            vm_mem, blocked, gp)
        if freed and cnt[Q_TAIL] > cnt[Q_HEAD]:
            _serve_queue(t, queue, cnt, st, vi, vf, inst, ht, hv, policy, discipline, admission, res, sc, run, vm_cpu,
                         vm_mem, cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size, head, nxt, prv, stack, gp)


@njit
def _event_loop(arrival, run, vm_cpu, vm_mem, prio, initial, cpu_cap, mem_cap, d_host, d_start, d_end, policy,
                discipline, until, detect_s, boot_s, admission, res, m_host, m_at, util, core_mhz, mig_par, gp, b_at, bdem, bpar,
                cap_mhz):
    n = arrival.size
    H = cpu_cap.size
    E = m_host.size
    vi = np.full((n, 4), -1, dtype=np.int64)  # host, current instance, current outage, migration in flight
    st = np.full(n, NOT_ARRIVED, dtype=np.int8)
    refused = np.zeros(n, dtype=np.bool_)
    vf = np.full((n, 2), np.nan)  # first start, end (first start + run)
    cpu_free = cpu_cap.copy()
    mem_free = mem_cap.copy()
    down = np.zeros(H, dtype=np.int64)
    maint = np.zeros(H, dtype=np.bool_)
    blocked = np.zeros(H, dtype=np.bool_)  # down or in maintenance: takes no VM
    evac_of = np.full(H, -1, dtype=np.int64)
    evac = np.zeros((max(E, 1), 3))  # per maintenance event: VMs migrated, stranded, last landing planned
    sc = np.array([0.0, 0.0, cpu_cap.sum(), mem_cap.sum()])
    # per-host lists of running VMs (a failure or an evacuation walks its host's): only when one can happen,
    # since unlinking a VM touches its neighbours (cache misses) at every departure
    track = d_host.size > 0 or m_host.size > 0 or b_at.size > 0
    head = np.full(H if track else 0, -1, dtype=np.int64)
    nxt = np.full(n if track else 0, -1, dtype=np.int64)
    prv = np.full(n if track else 0, -1, dtype=np.int64)
    size = 1
    while size < max(H, 1):
        size *= 2
    tc = np.full(2 * size, -1.0)
    tm = np.full(2 * size, -1.0)
    for h in range(H):
        _set_leaf(tc, tm, size, h, cpu_free[h], mem_free[h])
    cnt = np.zeros(10, dtype=np.int64)
    inst = np.empty((n + 16, 7 if gp[0].size > 0 else 5))
    outs = np.empty((16, 5))
    migs = np.empty((16, 12))
    ht = np.empty(n + 1)  # departures
    hv = np.empty(n + 1, dtype=np.int64)
    lt = np.empty(16)  # landings (migration rows)
    lv = np.empty(16, dtype=np.int64)
    queue = np.empty(n, dtype=np.int64)
    rel_t = np.empty(16)
    rel_v = np.empty(16, dtype=np.int64)
    rq = np.empty(16, dtype=np.int64)
    rq_t = np.empty(16)
    vs = np.empty(n, dtype=np.int64)
    stack = np.empty(2 * 64 + 2, dtype=np.int64)  # the first-fit tree search's scratch (depth <= 63)
    up_order = np.argsort(d_end, kind="mergesort")
    di = 0
    ui = 0
    mi = 0
    bi = 0
    bstat = np.zeros((b_at.size, 4))

    inst, static = _start_static(initial, arrival, run, admission, res, sc, st, refused, vi, vf, inst, cnt, ht, hv,
                                 cpu_free, mem_free, tc, tm, size, head, nxt, prv, vm_cpu, vm_mem, gp)
    order = np.argsort(arrival, kind="mergesort")
    i = n if static else 0  # a static run has no arrivals: every VM was placed (or not) at the start
    while True:
        i = _common(i, order, arrival, until, cnt, ht, hv, lt, rel_t, d_end, up_order, ui, d_start, di, m_at, mi, b_at, bi,
                    st,
                    refused, vi, vf, inst, queue, policy, discipline, admission, res, sc, run, vm_cpu, vm_mem, cpu_free,
                    mem_free, cpu_cap, mem_cap, tc, tm, size, head, nxt, prv, migs, blocked, stack, gp)
        next_arr = arrival[order[i]] if i < n else np.inf
        t = _next_time(cnt, ht, lt, rel_t, d_end, up_order, ui, d_start, di, m_at, mi, b_at, bi)
        if t == np.inf and next_arr == np.inf:
            break
        if t > next_arr:  # one arrival
            if next_arr > until:
                break
            v = order[i]
            i += 1
            if cnt[N_INST] >= inst.shape[0]:  # room for the one instance an arrival can start
                inst = _grow(inst, cnt[N_INST])
            _arrive(v, next_arr, st, refused, vi, vf, inst, cnt, queue, ht, hv, policy, discipline, admission, res,
                           sc, run, vm_cpu, vm_mem, cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size, head, nxt, prv, stack, gp)
            continue
        if t > until:
            break
        ui, freed = _repairs(t, ui, up_order, d_host, d_end, down, maint, blocked, cpu_free, mem_free, cpu_cap, mem_cap,
                             sc, tc, tm, size)
        freed |= _departures(t, ht, hv, cnt, st, vi, migs, cpu_free, mem_free, tc, tm, size, head, nxt, prv, sc, vm_cpu,
                             vm_mem, blocked, gp)
        # the rarer kinds are called only when one is due (a call with this many arrays costs per event)
        if cnt[N_LAND] > 0 and lt[0] == t:
            inst, migs, lt, lv, landed = _landings(t, lt, lv, cnt, migs, vi, st, vf, inst, head, nxt, prv, cpu_free,
                                                   mem_free, cpu_cap, mem_cap, tc, tm, size, vm_cpu, vm_mem, blocked, maint,
                                                   evac_of, vs, util, core_mhz, mig_par, evac, stack, gp)
            freed |= landed
        if di < d_start.size and d_start[di] == t:
            di, outs, rel_t, rel_v, migs, lt, lv = _failures(t, di, d_host, d_start, down, maint, blocked, sc, cpu_cap,
                                                            mem_cap, detect_s, vi, st, inst, outs, migs, cnt, rel_t, rel_v,
                                                            lt, lv, head, nxt, prv, cpu_free, mem_free, tc, tm, size,
                                                            vm_cpu, vm_mem, evac_of, vs, util, core_mhz, mig_par, evac, stack, gp)
        if mi < m_at.size and m_at[mi] == t:
            mi, migs, lt, lv = _maintenance(t, mi, m_host, m_at, maint, evac_of, blocked, sc, cpu_cap, mem_cap, cpu_free,
                                            mem_free, tc, tm, size, head, nxt, vi, vs, migs, cnt, lt, lv, vm_cpu, vm_mem,
                                            util, core_mhz, mig_par, evac, stack, gp)
        while bi < b_at.size and b_at[bi] == t:  # 5b. balance checks
            migs, lt, lv = _balance(t, bi, bdem, bpar, bstat, cap_mhz, core_mhz, blocked, head, nxt, vi, migs, cnt, lt, lv,
                                    cpu_free, mem_free, tc, tm, size, vm_cpu, vm_mem, mig_par, gp)
            bi += 1
        released = False
        if cnt[R_HEAD] < cnt[R_TAIL] and rel_t[cnt[R_HEAD]] == t:  # 6. restarts
            released, rq, rq_t = _release(t, prio, st, rel_t, rel_v, rq, rq_t, cnt)
        if (released or freed) and cnt[N_RQ] > 0:
            inst, outs = _serve_restarts(t, boot_s, policy, rq, rq_t, cnt, st, vi, vf, inst, outs, cpu_free, mem_free,
                                         cpu_cap, mem_cap, tc, tm, size, head, nxt, prv, sc, vm_cpu, vm_mem, stack, gp)
        if freed and cnt[Q_TAIL] > cnt[Q_HEAD]:  # 7. the arrival queue
            inst = _grow(inst, cnt[N_INST] + cnt[Q_TAIL] - cnt[Q_HEAD])  # room for every VM waiting
            _serve_queue(t, queue, cnt, st, vi, vf, inst, ht, hv, policy, discipline, admission, res, sc, run,
                                vm_cpu, vm_mem, cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size, head, nxt, prv, stack, gp)
    return (st, refused, vf, inst[: cnt[N_INST]], outs[: cnt[N_OUT]], migs[: cnt[N_MIG]], evac[:E], bstat)


@njit(inline="always")
def _start_new(v, h, t, st, vi, vf, inst, cnt, ht, hv, run, vm_cpu, vm_mem, cpu_free, mem_free, tc, tm, size, head,
               nxt, prv, sc, gp):
    """VM ``v``'s first start, on ``h`` at ``t``: its end is fixed (start + run) and scheduled (the caller
    made room for one more instance)."""
    vf[v, 0] = t
    vf[v, 1] = t + run[v]
    _run_on(v, h, t, t, vi, st, vf, inst, cnt, cpu_free, mem_free, tc, tm, size, head, nxt, prv, sc, vm_cpu, vm_mem, gp, True)
    if run[v] < np.inf:
        cnt[N_DEP] = _heap_push(ht, hv, cnt[N_DEP], vf[v, 1], v)


@njit(refcount=False)
def _arrive(v, t, st, refused, vi, vf, inst, cnt, queue, ht, hv, policy, discipline, admission, res, sc, run, vm_cpu,
            vm_mem, cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size, head, nxt, prv, stack, gp):
    """VM ``v`` arrives at ``t``: fails if no empty host could hold it; waits behind a fifo queue; else
    placed (admission permitting), queued, or refused (``reject``). The caller made room for one more
    instance (this function borrows its arrays: it allocates and returns none)."""
    ever = False
    for h in range(cpu_cap.size):  # an empty host takes it: its CPU and memory, and its GPUs all free
        if fits(cpu_cap[h], mem_cap[h], vm_cpu[v], vm_mem[v]) and gpu_ever_fits(v, h, gp):
            ever = True
            break
    if not ever:
        st[v] = FAILED
        return
    if discipline == 0 and cnt[Q_TAIL] > cnt[Q_HEAD]:
        queue[cnt[Q_TAIL]] = v
        cnt[Q_TAIL] += 1
        st[v] = WAITING
        return
    ok = _admits(admission, sc, vm_cpu[v], vm_mem[v], res)
    h = _find(policy, vm_cpu[v], vm_mem[v], cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size, stack, v, gp) if ok else -1
    if h < 0:
        refused[v] = not ok
        if discipline == 2:
            st[v] = FAILED
        else:
            queue[cnt[Q_TAIL]] = v
            cnt[Q_TAIL] += 1
            st[v] = WAITING
        return
    return _start_new(v, h, t, st, vi, vf, inst, cnt, ht, hv, run, vm_cpu, vm_mem, cpu_free, mem_free, tc, tm, size,
                      head, nxt, prv, sc, gp)


@njit(refcount=False)
def _serve_queue(t, queue, cnt, st, vi, vf, inst, ht, hv, policy, discipline, admission, res, sc, run, vm_cpu, vm_mem,
                 cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size, head, nxt, prv, stack, gp):
    """Capacity freed at ``t``: the arrival queue in order (fifo: the head blocks the rest; backfill: every VM that
    fits). The caller made room for as many instances as VMs wait (borrowed arrays: allocates and returns none)."""
    k = cnt[Q_HEAD]
    w = cnt[Q_HEAD]
    while k < cnt[Q_TAIL]:
        v = queue[k]
        ok = _admits(admission, sc, vm_cpu[v], vm_mem[v], res)
        h = _find(policy, vm_cpu[v], vm_mem[v], cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size, stack, v, gp) if ok else -1
        if h < 0:
            if discipline == 0:
                break
            queue[w] = v
            w += 1
            k += 1
            continue
        _start_new(v, h, t, st, vi, vf, inst, cnt, ht, hv, run, vm_cpu, vm_mem, cpu_free, mem_free, tc, tm, size,
                   head, nxt, prv, sc, gp)
        k += 1
    if discipline == 0:
        cnt[Q_HEAD] = k
    else:
        while k < cnt[Q_TAIL]:
            queue[w] = queue[k]
            w += 1
            k += 1
        cnt[Q_TAIL] = w


@njit
def _serve_restarts(t, boot_s, policy, rq, rq_t, cnt, st, vi, vf, inst, outs, cpu_free, mem_free, cpu_cap, mem_cap, tc,
                    tm, size, head, nxt, prv, sc, vm_cpu, vm_mem, stack, gp):
    """The restart queue in priority order: each VM down is placed where the policy finds room, up ``boot_s`` later."""
    w = 0
    for k in range(cnt[N_RQ]):
        v = rq[k]
        if st[v] != DOWN:
            continue
        h = _find(policy, vm_cpu[v], vm_mem[v], cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size, stack, v, gp)
        if h < 0:
            rq[w] = v
            rq_t[w] = rq_t[k]
            w += 1
            continue
        up = min(t + boot_s, vf[v, 1]) if vf[v, 1] == vf[v, 1] else t + boot_s
        inst = _grow(inst, cnt[N_INST])
        _run_on(v, h, t, up, vi, st, vf, inst, cnt, cpu_free, mem_free, tc, tm, size, head, nxt, prv, sc, vm_cpu,
                       vm_mem, gp, True)
        o = vi[v, 2]
        outs[o, O_PLACE] = t
        outs[o, O_HOST] = h
        vi[v, 2] = -1
    cnt[N_RQ] = w
    return inst, outs
