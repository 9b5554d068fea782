"""Online placement with host failures, HA restarts and admission control.

:func:`failover` generalises :func:`densim.placement.online.schedule`: besides VMs that arrive, wait
and leave, hosts go down over given intervals. At a host's failure every VM running on it stops (its
run on that host ends there) and becomes a *restart*: ``detection`` seconds later it is released to
the restart queue, which is served in restart-priority order (high first; then by release time, then
VM order) before the arrival queue, whenever a restart is released or capacity frees (a departure, a
host repaired). A restart is placed by the policy on the hosts that are up; what fits nowhere waits
for capacity. A restarted VM reserves its host's capacity from its placement and is up ``boot``
seconds later. A VM leaves at its first start + its run length whatever happened in between (its
lifetime is wall-clock: a VM deleted at 17:00 is deleted at 17:00).

Admission control (vSphere HA's "cluster resource percentage" model) refuses the power-on of an
arriving VM when the capacity reserved by running VMs would exceed the capacity of the hosts up
minus a reserve: ``used + vm <= up - reserve`` in vCPUs (against cores x over-commit) and in memory,
with ``reserve = max(fixed, share x up)``; ``fixed`` is the capacity of the k largest hosts (N+k) or
of the largest failure domain, ``share`` the percentage policy. Restarts are never refused (HA
admission control guards power-ons, not failover). In a run without lifetimes (VMs placed once at
the start, ``initial`` hosts given) a refused VM is not placed.

Everything is one numba event loop; per-host lists of running VMs make a failure O(VMs on the host).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from densim._jit import njit
from densim.placement.heuristics import _tree_update as _set_leaf
from densim.placement.online import DISCIPLINES, ONLINE_POLICIES, _find, _heap_pop, _heap_push

@dataclass(frozen=True)
class Failover:
    """The runs of every VM (instances) and every outage a failure caused. Times in seconds."""

    # per VM
    status: np.ndarray  # int8, online.STATUS codes as seen at ``until``; 3 also for an admission refusal
    refused: np.ndarray  # bool: admission control refused its power-on (at its arrival, or at the start)
    first_start_s: np.ndarray  # NaN if never started
    end_s: np.ndarray  # first start + run (NaN if never started)
    # per instance (one run of a VM on one host)
    inst_vm: np.ndarray
    inst_host: np.ndarray
    inst_placed_s: np.ndarray  # capacity reserved from here
    inst_start_s: np.ndarray  # up from here (placed + boot for a restart)
    inst_end_s: np.ndarray  # failure of its host, or the VM's end
    # per outage (a VM stopped by a host failure)
    out_vm: np.ndarray
    out_interval: np.ndarray  # index into the host-down intervals given
    out_fail_s: np.ndarray
    out_placed_s: np.ndarray  # NaN: not restarted by ``until``
    out_up_s: np.ndarray  # placed + boot (NaN as above)
    out_host: np.ndarray  # host it restarted on, -1
    until: float


@njit
def _grow_f(a, n):
    b = np.empty(max(2 * a.size, n + 16), dtype=a.dtype)
    b[: a.size] = a
    return b


@njit
def _link(head, nxt, prv, h, v):
    nxt[v] = head[h]
    prv[v] = -1
    if head[h] >= 0:
        prv[head[h]] = v
    head[h] = v


@njit
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
def _record(i_vm, i_host, i_place, i_start, i_end, ni, v, h, place, start, end):
    """Instance ``ni``: VM ``v`` on host ``h``, placed at ``place``, up from ``start`` to ``end`` (arrays grown as needed)."""
    if ni >= i_vm.size:
        i_vm = _grow_f(i_vm, ni)
        i_host = _grow_f(i_host, ni)
        i_place = _grow_f(i_place, ni)
        i_start = _grow_f(i_start, ni)
        i_end = _grow_f(i_end, ni)
    i_vm[ni] = v
    i_host[ni] = h
    i_place[ni] = place
    i_start[ni] = start
    i_end[ni] = end
    return i_vm, i_host, i_place, i_start, i_end


@njit(inline="always")
def _occupy(v, h, host, status, cpu_free, mem_free, vm_cpu, vm_mem, head, nxt, prv):
    """VM ``v`` runs on host ``h``: its CPU and memory leave the host's free capacity; it joins the host's list."""
    host[v] = h
    status[v] = 1
    cpu_free[h] -= vm_cpu[v]
    mem_free[h] -= vm_mem[v]
    _link(head, nxt, prv, h, v)


@njit
def _failover_kernel(arrival, run, vm_cpu, vm_mem, prio, initial, cpu_cap, mem_cap,
                     d_host, d_start, d_end, policy, discipline, until, detect_s, boot_s,
                     admission, res_fixed_cpu, res_fixed_mem, res_share):
    n = arrival.size
    H = cpu_cap.size
    eps = 1e-9
    host = np.full(n, -1, dtype=np.int64)
    status = np.full(n, 4, dtype=np.int8)
    refused = np.zeros(n, dtype=np.bool_)
    first = np.full(n, np.nan)
    dep = np.full(n, np.nan)
    cur_inst = np.full(n, -1, dtype=np.int64)
    cur_out = np.full(n, -1, dtype=np.int64)
    cpu_free = cpu_cap.copy()
    mem_free = mem_cap.copy()
    down = np.zeros(H, dtype=np.int64)
    up_cpu = cpu_cap.sum()
    up_mem = mem_cap.sum()
    used_cpu = 0.0
    used_mem = 0.0
    head = np.full(H, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    prv = np.full(n, -1, dtype=np.int64)
    size = 1
    while size < max(H, 1):
        size *= 2
    tc = np.full(2 * size, -1.0)
    tm = np.full(2 * size, -1.0)
    for h in range(H):
        _set_leaf(tc, tm, size, h, cpu_free[h], mem_free[h])
    # instances and outages, grown as needed
    i_vm = np.empty(n + 16, dtype=np.int64)
    i_host = np.empty(n + 16, dtype=np.int64)
    i_place = np.empty(n + 16)
    i_start = np.empty(n + 16)
    i_end = np.empty(n + 16)
    ni = 0
    o_vm = np.empty(16, dtype=np.int64)
    o_iv = np.empty(16, dtype=np.int64)
    o_fail = np.empty(16)
    o_place = np.empty(16)
    o_host = np.empty(16, dtype=np.int64)
    no = 0
    # departures heap; the arrival queue; released restarts (FIFO by release time) and the restart queue
    ht = np.empty(n + 1)
    hv = np.empty(n + 1, dtype=np.int64)
    nh = 0
    queue = np.empty(n, dtype=np.int64)
    q_head = 0
    q_tail = 0
    rel_t = np.empty(16)
    rel_v = np.empty(16, dtype=np.int64)
    r_head = 0
    r_tail = 0
    rq = np.empty(16, dtype=np.int64)
    rq_t = np.empty(16)
    nrq = 0
    up_order = np.argsort(d_end, kind="mergesort")
    di = 0
    ui = 0
    nd = d_host.size

    # VMs placed at the start (a run without lifetimes): power-on in VM order, admission permitting
    static = False
    for v in range(n):
        if initial[v] == -2:
            continue
        static = True
        h = initial[v]
        if h < 0:
            status[v] = 3
            continue
        if admission:
            res_c = max(res_fixed_cpu, res_share * up_cpu)
            res_m = max(res_fixed_mem, res_share * up_mem)
            if used_cpu + vm_cpu[v] > up_cpu - res_c + eps or used_mem + vm_mem[v] > up_mem - res_m + eps * max(1.0, vm_mem[v]):
                status[v] = 3
                refused[v] = True
                continue
        t = arrival[v]
        first[v] = t
        dep[v] = t + run[v]
        _occupy(v, h, host, status, cpu_free, mem_free, vm_cpu, vm_mem, head, nxt, prv)
        used_cpu += vm_cpu[v]
        used_mem += vm_mem[v]
        i_vm, i_host, i_place, i_start, i_end = _record(i_vm, i_host, i_place, i_start, i_end, ni, v, h,
                                                         t, t, dep[v])
        cur_inst[v] = ni
        ni += 1
        if run[v] < np.inf:
            nh = _heap_push(ht, hv, nh, dep[v], v)
    if static:
        for h in range(H):
            _set_leaf(tc, tm, size, h, cpu_free[h], mem_free[h])
    order = np.argsort(arrival, kind="mergesort")
    i = 0
    if static:
        i = n  # no arrivals: every VM was placed (or not) at the start
    while True:
        next_arr = arrival[order[i]] if i < n else np.inf
        t_dep = ht[0] if nh > 0 else np.inf
        t_up = d_end[up_order[ui]] if ui < nd else np.inf
        t_down = d_start[di] if di < nd else np.inf
        t_rel = rel_t[r_head] if r_head < r_tail else np.inf
        t = min(t_dep, t_up, t_down, t_rel)
        if t == np.inf and next_arr == np.inf:
            break
        if t <= next_arr:
            if t > until:
                break
            freed = False
            # hosts repaired at t
            while ui < nd and d_end[up_order[ui]] == t:
                h = d_host[up_order[ui]]
                ui += 1
                down[h] -= 1
                if down[h] == 0:
                    cpu_free[h] = cpu_cap[h]
                    mem_free[h] = mem_cap[h]
                    up_cpu += cpu_cap[h]
                    up_mem += mem_cap[h]
                    if policy == 0:
                        _set_leaf(tc, tm, size, h, cpu_free[h], mem_free[h])
                    freed = True
            # departures at t
            while nh > 0 and ht[0] == t:
                v = hv[0]
                nh = _heap_pop(ht, hv, nh)
                if status[v] == 1:
                    h = host[v]
                    cpu_free[h] += vm_cpu[v]
                    mem_free[h] += vm_mem[v]
                    used_cpu -= vm_cpu[v]
                    used_mem -= vm_mem[v]
                    _unlink(head, nxt, prv, h, v)
                    if policy == 0:
                        _set_leaf(tc, tm, size, h, cpu_free[h], mem_free[h])
                    freed = True
                status[v] = 0  # done (also a VM down at its end: it is not restarted)
                cur_out[v] = -1
            # hosts failing at t: their VMs stop and will be restarted
            while di < nd and d_start[di] == t:
                h = d_host[di]
                down[h] += 1
                if down[h] == 1:
                    v = head[h]
                    while v >= 0:
                        w = nxt[v]
                        cpu_free[h] += vm_cpu[v]
                        mem_free[h] += vm_mem[v]
                        used_cpu -= vm_cpu[v]
                        used_mem -= vm_mem[v]
                        nxt[v] = -1
                        prv[v] = -1
                        k = cur_inst[v]
                        if i_end[k] > t:
                            i_end[k] = t
                        if i_start[k] > t:
                            i_start[k] = t
                        host[v] = -1
                        status[v] = 5
                        if no >= o_vm.size:
                            o_vm = _grow_f(o_vm, no)
                            o_iv = _grow_f(o_iv, no)
                            o_fail = _grow_f(o_fail, no)
                            o_place = _grow_f(o_place, no)
                            o_host = _grow_f(o_host, no)
                        o_vm[no] = v
                        o_iv[no] = di
                        o_fail[no] = t
                        o_place[no] = np.nan
                        o_host[no] = -1
                        cur_out[v] = no
                        no += 1
                        if r_tail >= rel_t.size:
                            rel_t = _grow_f(rel_t, r_tail)
                            rel_v = _grow_f(rel_v, r_tail)
                        rel_t[r_tail] = t + detect_s
                        rel_v[r_tail] = v
                        r_tail += 1
                        v = w
                    head[h] = -1
                    cpu_free[h] = -1.0  # down: no policy picks it (every VM on it left: free = capacity at repair)
                    mem_free[h] = -1.0
                    up_cpu -= cpu_cap[h]
                    up_mem -= mem_cap[h]
                    if policy == 0:
                        _set_leaf(tc, tm, size, h, cpu_free[h], mem_free[h])
                di += 1
            # restarts released at t join the restart queue in priority order
            released = False
            while r_head < r_tail and rel_t[r_head] == t:
                v = rel_v[r_head]
                r_head += 1
                if status[v] != 5:
                    continue
                if nrq >= rq.size:
                    rq = _grow_f(rq, nrq)
                    rq_t = _grow_f(rq_t, nrq)
                j = nrq
                while j > 0 and (prio[rq[j - 1]] < prio[v] or (prio[rq[j - 1]] == prio[v] and rq_t[j - 1] == t and rq[j - 1] > v)):
                    rq[j] = rq[j - 1]
                    rq_t[j] = rq_t[j - 1]
                    j -= 1
                rq[j] = v
                rq_t[j] = t
                nrq += 1
                released = True
            if (released or freed) and nrq > 0:
                w = 0
                for k in range(nrq):
                    v = rq[k]
                    if status[v] != 5:
                        continue
                    h = _find(policy, vm_cpu[v], vm_mem[v], cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size)
                    if h < 0:
                        rq[w] = v
                        rq_t[w] = rq_t[k]
                        w += 1
                        continue
                    _occupy(v, h, host, status, cpu_free, mem_free, vm_cpu, vm_mem, head, nxt, prv)
                    used_cpu += vm_cpu[v]
                    used_mem += vm_mem[v]
                    if policy == 0:
                        _set_leaf(tc, tm, size, h, cpu_free[h], mem_free[h])
                    i_vm, i_host, i_place, i_start, i_end = _record(i_vm, i_host, i_place, i_start, i_end, ni, v, h,
                                                                     t, min(t + boot_s, dep[v]) if dep[v] == dep[v] else t + boot_s, dep[v] if dep[v] == dep[v] else np.inf)
                    cur_inst[v] = ni
                    ni += 1
                    o = cur_out[v]
                    o_place[o] = t
                    o_host[o] = h
                    cur_out[v] = -1
                nrq = w
            # the arrival queue, when capacity freed
            if freed and q_tail > q_head:
                k = q_head
                w = q_head
                while k < q_tail:
                    v = queue[k]
                    h = -1
                    ok = True
                    if admission:
                        res_c = max(res_fixed_cpu, res_share * up_cpu)
                        res_m = max(res_fixed_mem, res_share * up_mem)
                        ok = used_cpu + vm_cpu[v] <= up_cpu - res_c + eps and used_mem + vm_mem[v] <= up_mem - res_m + eps * max(1.0, vm_mem[v])
                    if ok:
                        h = _find(policy, vm_cpu[v], vm_mem[v], cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size)
                    if h < 0:
                        if discipline == 0:
                            break
                        queue[w] = v
                        w += 1
                        k += 1
                        continue
                    first[v] = t
                    dep[v] = t + run[v]
                    _occupy(v, h, host, status, cpu_free, mem_free, vm_cpu, vm_mem, head, nxt, prv)
                    used_cpu += vm_cpu[v]
                    used_mem += vm_mem[v]
                    if policy == 0:
                        _set_leaf(tc, tm, size, h, cpu_free[h], mem_free[h])
                    i_vm, i_host, i_place, i_start, i_end = _record(i_vm, i_host, i_place, i_start, i_end, ni, v, h,
                                                                     t, t, dep[v])
                    cur_inst[v] = ni
                    ni += 1
                    if run[v] < np.inf:
                        nh = _heap_push(ht, hv, nh, dep[v], v)
                    k += 1
                if discipline == 0:
                    q_head = k
                else:
                    while k < q_tail:
                        queue[w] = queue[k]
                        w += 1
                        k += 1
                    q_tail = w
            continue
        # one arrival
        t = next_arr
        if t > until:
            break
        v = order[i]
        i += 1
        fits_somewhere = False
        for h in range(H):
            if cpu_cap[h] + eps >= vm_cpu[v] and mem_cap[h] + eps * max(1.0, vm_mem[v]) >= vm_mem[v]:
                fits_somewhere = True
                break
        if not fits_somewhere:
            status[v] = 3
            continue
        if discipline == 0 and q_tail > q_head:
            queue[q_tail] = v
            q_tail += 1
            status[v] = 2
            continue
        h = -1
        ok = True
        if admission:
            res_c = max(res_fixed_cpu, res_share * up_cpu)
            res_m = max(res_fixed_mem, res_share * up_mem)
            ok = used_cpu + vm_cpu[v] <= up_cpu - res_c + eps and used_mem + vm_mem[v] <= up_mem - res_m + eps * max(1.0, vm_mem[v])
        if ok:
            h = _find(policy, vm_cpu[v], vm_mem[v], cpu_free, mem_free, cpu_cap, mem_cap, tc, tm, size)
        if h < 0:
            if not ok:
                refused[v] = True
            if discipline == 2:
                status[v] = 3
            else:
                queue[q_tail] = v
                q_tail += 1
                status[v] = 2
            continue
        if ok:
            refused[v] = False
        first[v] = t
        dep[v] = t + run[v]
        _occupy(v, h, host, status, cpu_free, mem_free, vm_cpu, vm_mem, head, nxt, prv)
        used_cpu += vm_cpu[v]
        used_mem += vm_mem[v]
        if policy == 0:
            _set_leaf(tc, tm, size, h, cpu_free[h], mem_free[h])
        i_vm, i_host, i_place, i_start, i_end = _record(i_vm, i_host, i_place, i_start, i_end, ni, v, h,
                                                         t, t, dep[v])
        cur_inst[v] = ni
        ni += 1
        if run[v] < np.inf:
            nh = _heap_push(ht, hv, nh, dep[v], v)
    return (status, refused, first, dep, i_vm[:ni], i_host[:ni], i_place[:ni], i_start[:ni], i_end[:ni],
            o_vm[:no], o_iv[:no], o_fail[:no], o_place[:no], o_host[:no])


def failover(arrival_s, run_s, vm_cpu, vm_mem, cpu_cap, mem_cap, *, down_host, down_start_s, down_end_s,
             priority=None, initial=None, policy: str = "first-fit", discipline: str = "fifo", until: float = np.inf,
             detection_s: float = 0.0, boot_s: float = 0.0, admission: bool = False, reserve_cpu: float = 0.0,
             reserve_mem: float = 0.0, reserve_share: float = 0.0) -> Failover:
    """Place VMs online through host failures (see the module docstring).

    ``down_*``: one row per host-down interval, sorted by start. ``initial``: a host per VM placed at
    its arrival (a run without lifetimes; -1 = placed nowhere), or None to place every VM as it arrives.
    ``priority``: higher restarts first. ``reserve_cpu``/``reserve_mem``: the fixed reserve of
    admission control (vCPU and memory units of ``cpu_cap``/``mem_cap``); ``reserve_share``: the share of
    the capacity up kept free.
    """
    if policy not in ONLINE_POLICIES:
        raise KeyError(f"placement policy {policy!r} cannot restart VMs online; use one of: {', '.join(ONLINE_POLICIES)}")
    if discipline not in DISCIPLINES:
        raise KeyError(f"queue discipline {discipline!r}; one of: {', '.join(DISCIPLINES)}")
    n = len(arrival_s)
    f64 = lambda a: np.ascontiguousarray(a, dtype=np.float64)  # noqa: E731
    start = f64(down_start_s)
    if start.size > 1 and np.any(np.diff(start) < 0):
        raise ValueError("host-down intervals must be sorted by start")
    init = np.full(n, -2, dtype=np.int64) if initial is None else np.ascontiguousarray(initial, dtype=np.int64)
    pr = np.zeros(n, dtype=np.int64) if priority is None else np.ascontiguousarray(priority, dtype=np.int64)
    out = _failover_kernel(f64(arrival_s), f64(run_s), f64(vm_cpu), f64(vm_mem), pr, init, f64(cpu_cap), f64(mem_cap),
                           np.ascontiguousarray(down_host, dtype=np.int64), start, f64(down_end_s),
                           ONLINE_POLICIES[policy], DISCIPLINES[discipline], float(until), float(detection_s), float(boot_s),
                           bool(admission), float(reserve_cpu), float(reserve_mem), float(reserve_share))
    status, refused, first, dep, i_vm, i_host, i_place, i_start, i_end, o_vm, o_iv, o_fail, o_place, o_host = out
    status = status.copy()
    status[status == 5] = 2  # down at ``until``, waiting for a restart: waiting
    o_up = np.where(np.isnan(o_place), np.nan, np.minimum(o_place + boot_s, dep[o_vm]))
    return Failover(status=status, refused=refused, first_start_s=first, end_s=dep, inst_vm=i_vm, inst_host=i_host,
                    inst_placed_s=i_place, inst_start_s=i_start, inst_end_s=i_end, out_vm=o_vm, out_interval=o_iv,
                    out_fail_s=o_fail, out_placed_s=o_place, out_up_s=o_up, out_host=o_host, until=float(until))


def reserve(cpu_cap: np.ndarray, mem_cap: np.ndarray, k: int, domains: list[np.ndarray] | None = None) -> tuple[float, float]:
    """The N+k reserve: the capacity of the k largest hosts (each dimension on its own, as vSphere's
    percentage derived from host failures to tolerate), or of the largest domain when ``domains`` is given."""
    if domains is not None:
        if not domains:
            return 0.0, 0.0
        c = max(float(cpu_cap[d].sum()) for d in domains)
        m = max(float(mem_cap[d].sum()) for d in domains)
        return c, m
    k = min(int(k), cpu_cap.size)
    return float(np.sort(cpu_cap)[::-1][:k].sum()), float(np.sort(mem_cap)[::-1][:k].sum())
