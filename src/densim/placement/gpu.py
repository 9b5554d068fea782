"""GPUs as a placement resource: the GPU fit test and the static placement kernel for scenarios whose VMs ask for GPUs.

The CPU and memory columns stay those of :mod:`densim.placement.capacity` (``host_capacity``, ``fits``);
a GPU is the one more column, but not a number: what a host can still give is the state of each of its
GPUs. Each GPU is in one of four modes

* free -- nothing on it (it can become any of the others);
* passthrough -- given whole to one VM (a VM may take ``count`` whole GPUs of one host);
* vgpu -- time-sliced: ``used`` vGPUs of one framebuffer size ``s`` (NVIDIA's vGPU manager, without
  mixed-size mode, puts one size on a physical GPU), at most ``floor(memory / s)`` of them;
* mig -- MIG instances: an 8-bit mask of occupied memory slices. An instance of a profile with
  ``k`` memory slices fits where its ``k`` slices ``[start, start + k)`` are free at one of the
  profile's valid starts (NVML placements, catalog ``mig_profiles[].starts``). The first free valid
  start is taken (the lowest index): so three 1g.10gb instances take slices 0, 1 and 2, and a 4g.40gb
  (start 0 only) no longer fits although 3 + 4 = 7 compute slices and 3 + 4 = 7 of 8 memory slices
  would: a MIG layout is not a count.

:func:`gpu_fit` is the one GPU fit test (numba, one host and one VM): which GPU of the host takes the
request, or -1. A VM fits a host when :func:`densim.placement.capacity.fits` holds for its vCPUs and
memory AND :func:`gpu_fit` finds a GPU (a VM without a GPU request needs no GPU).

``gpu_policy`` chooses among a host's GPUs that can take a shared (vGPU, MIG) request: ``pack`` the
fullest one (least free share; a free GPU last), keeping whole GPUs free for passthrough and large MIG
instances; ``spread`` the emptiest one (a free GPU first), one tenant per GPU while GPUs last. The host
is chosen by the scenario's placement policy (first-fit, first-fit-decreasing, best-fit, worst-fit) with
the GPU column added to best/worst-fit's normalised free space: ``+ (free GPU share of the host)``,
the mean over its GPUs of 1 (free), 0 (passthrough), ``1 - used / cap`` (vGPU), ``1 - slices / 8`` (MIG).
First-fit-decreasing places GPU requests first (largest share of one GPU first), then by its usual size.

Cost: every VM scans the hosts (first-fit stops at the first that fits) and each host's GPUs:
O(VMs x hosts x GPUs per host) in numba, no Python loop over VMs or hosts; GPU clusters have hundreds
to thousands of hosts. A scenario where no VM asks for a GPU does not come here (the fast kernels of
:mod:`densim.placement.heuristics` place it exactly as before).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from densim._jit import njit
from densim.models.gpu import MIG_MEMORY_SLOTS
from densim.placement.capacity import fits

NONE, VGPU, MIG, PASS = 0, 1, 2, 3  # a VM's request kind; also a GPU's mode (0 = free)
MODES = {"vgpu": VGPU, "mig": MIG, "passthrough": PASS}
POLICY_CODES = {"pack": 0, "spread": 1}
HOST_POLICIES = {"first-fit": 0, "first-fit-decreasing": 0, "best-fit": 1, "worst-fit": 2}


@njit
def _popcount8(x):
    n = 0
    for b in range(MIG_MEMORY_SLOTS):
        n += (x >> b) & 1
    return n


@njit
def _mig_start(mask, size, starts):
    """The lowest valid start (bit ``s`` of ``starts``) where ``size`` memory slices are free in ``mask``, or -1."""
    block = (1 << size) - 1
    for s in range(MIG_MEMORY_SLOTS):
        if (starts >> s) & 1 and ((mask >> s) & block) == 0:
            return s
    return -1


@njit
def _gpu_free_share(mode, key, used, vcap_row):
    """Free share of one GPU: 1 free, 0 passthrough, 1 - used/cap for vGPUs, 1 - occupied slices/8 for MIG."""
    if mode == NONE:
        return 1.0
    if mode == PASS:
        return 0.0
    if mode == VGPU:
        return 1.0 - used / vcap_row[key]
    return 1.0 - _popcount8(used) / MIG_MEMORY_SLOTS


@njit
def gpu_fit(kind, req, count, m, n_gpu, gmode, gkey, gused, vcap, mig_size, mig_starts, policy):
    """The GPU of one host (model ``m``, ``n_gpu`` GPUs, state rows ``gmode/gkey/gused``) that takes the
    request, or -1. ``kind``: VGPU (request ``req``: vGPUs per GPU ``vcap[m, req]``), MIG (profile ``req``:
    ``mig_size[m, req]`` memory slices at the starts ``mig_starts[m, req]``, a bit mask), PASS (``count``
    free GPUs; the first free one is returned). ``policy``: 0 pack, 1 spread (see the module docstring)."""
    if kind == NONE:
        return 0
    if m < 0 or n_gpu == 0:
        return -1
    if kind == PASS:
        first = -1
        n_free = 0
        for g in range(n_gpu):
            if gmode[g] == NONE:
                n_free += 1
                if first < 0:
                    first = g
        return first if n_free >= count else -1
    best = -1
    best_share = 0.0
    for g in range(n_gpu):
        ok = False
        if gmode[g] == NONE:
            ok = (vcap[m, req] > 0) if kind == VGPU else (mig_size[m, req] > 0)
        elif kind == VGPU and gmode[g] == VGPU:
            ok = gkey[g] == req and gused[g] < vcap[m, req]
        elif kind == MIG and gmode[g] == MIG:
            ok = _mig_start(gused[g], mig_size[m, req], mig_starts[m, req]) >= 0
        if not ok:
            continue
        share = _gpu_free_share(gmode[g], gkey[g], gused[g], vcap[m])
        if best < 0 or (policy == 0 and share < best_share) or (policy == 1 and share > best_share):
            best = g
            best_share = share
    return best


@njit
def _gpu_take(kind, req, count, g, m, n_gpu, gmode, gkey, gused, mig_size, mig_starts, gowner, v):
    """Commit VM ``v``'s request to GPU ``g`` (from :func:`gpu_fit`); returns the MIG start (else -1).
    A passthrough VM takes the first ``count`` free GPUs from ``g`` on; ``gowner`` records it on each."""
    if kind == PASS:
        left = count
        for j in range(g, n_gpu):
            if left == 0:
                break
            if gmode[j] == NONE:
                gmode[j] = PASS
                gowner[j] = v
                left -= 1
        return -1
    if kind == VGPU:
        gmode[g] = VGPU
        gkey[g] = req
        gused[g] += 1
        return -1
    if kind == MIG:
        gmode[g] = MIG
        s = _mig_start(gused[g], mig_size[m, req], mig_starts[m, req])
        gused[g] |= ((1 << mig_size[m, req]) - 1) << s
        return s
    return -1


@njit
def _host_gpu_share(h, m, n_gpu, gmode, gkey, gused, vcap):
    """Mean free share over the host's GPUs (0 for a host without GPUs)."""
    if n_gpu == 0 or m < 0:
        return 0.0
    tot = 0.0
    for g in range(n_gpu):
        tot += _gpu_free_share(gmode[h, g], gkey[h, g], gused[h, g], vcap[m])
    return tot / n_gpu


@njit
def _request_share(kind, req, count, m, n_gpu, vcap, mig_size):
    """The share of the host's GPU column a request takes (for the best/worst-fit score)."""
    if kind == NONE or n_gpu == 0 or m < 0:
        return 0.0
    if kind == PASS:
        return count / n_gpu
    if kind == VGPU:
        return 1.0 / vcap[m, req] / n_gpu
    return mig_size[m, req] / MIG_MEMORY_SLOTS / n_gpu


@njit
def gpu_place_kernel(order, vm_cpu, vm_mem, kind, req, count, cpu_cap, mem_cap, host_model, host_ngpu,
                     vcap, mig_size, mig_starts, host_policy, gpu_policy, gmode, gkey, gused, gowner, out_gpu, out_start):
    """Place VMs in ``order`` onto hosts: host per VM (-1: fits nowhere). ``host_policy``: 0 first-fit,
    1 best-fit, 2 worst-fit; ``gpu_policy``: 0 pack, 1 spread. ``gmode/gkey/gused`` (hosts, max GPUs) are the
    GPUs' state, updated in place (``gowner``: the passthrough VM of each GPU, -1); ``out_gpu`` gets the (first) GPU index of each VM with a request and
    ``out_start`` the MIG start."""
    n_h = cpu_cap.size
    cpu_free = cpu_cap.copy()
    mem_free = mem_cap.copy()
    out = np.full(vm_cpu.size, -1, dtype=np.int64)
    for k in range(order.size):
        v = order[k]
        c = vm_cpu[v]
        mm = vm_mem[v]
        chosen = -1
        chosen_g = -1
        score_best = 0.0
        for h in range(n_h):
            if not fits(cpu_free[h], mem_free[h], c, mm):
                continue
            m = host_model[h]
            g = gpu_fit(kind[v], req[v], count[v], m, host_ngpu[h], gmode[h], gkey[h], gused[h], vcap, mig_size,
                        mig_starts, gpu_policy)
            if g < 0:
                continue
            if host_policy == 0:
                chosen = h
                chosen_g = g
                break
            s = (cpu_free[h] / cpu_cap[h] + mem_free[h] / mem_cap[h]) - (c / cpu_cap[h] + mm / mem_cap[h])
            s += _host_gpu_share(h, m, host_ngpu[h], gmode, gkey, gused, vcap) - _request_share(
                kind[v], req[v], count[v], m, host_ngpu[h], vcap, mig_size)
            if chosen < 0 or (host_policy == 1 and s < score_best) or (host_policy == 2 and s > score_best):
                chosen = h
                chosen_g = g
                score_best = s
        if chosen < 0:
            continue
        out[v] = chosen
        cpu_free[chosen] -= c
        mem_free[chosen] -= mm
        if kind[v] != NONE:
            out_gpu[v] = chosen_g
            out_start[v] = _gpu_take(kind[v], req[v], count[v], chosen_g, host_model[chosen], host_ngpu[chosen],
                                     gmode[chosen], gkey[chosen], gused[chosen], mig_size, mig_starts, gowner[chosen], v)
    return out


# ------------------------------------------------------------------------------------------ the problem
@dataclass
class GpuProblem:
    """The GPU side of one static placement: host GPUs, VM requests, per (model, request) tables, and
    after :func:`place_gpu` the GPUs' state and each VM's GPU.

    ``models``: the GPU models (GpuSpec) of the hosts; ``host_model`` (H,) index into it (-1: no GPU),
    ``host_ngpu`` (H,); ``kind`` (V,) NONE/VGPU/MIG/PASS, ``req`` (V,) index into ``requests`` (the
    distinct vGPU sizes and MIG profile names), ``count`` (V,) GPUs of a passthrough request;
    ``vcap[m, r]`` vGPUs of request r per GPU of model m (0: not offered), ``mig_size[m, r]`` memory
    slices and ``mig_starts[m, r]`` the valid-start bit mask of MIG request r on model m (0: not offered).
    """

    models: list
    host_model: np.ndarray
    host_ngpu: np.ndarray
    kind: np.ndarray
    req: np.ndarray
    count: np.ndarray
    requests: list
    vcap: np.ndarray
    mig_size: np.ndarray
    mig_starts: np.ndarray
    mig_compute: np.ndarray  # (models, requests): compute slices of MIG request r on model m
    policy: str = "pack"
    # written by place_gpu
    gmode: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int8))
    gkey: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    gused: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    gowner: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))  # passthrough VM per GPU, -1
    vm_gpu: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    vm_mig_start: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def any_request(self) -> bool:
        return bool((self.kind != NONE).any())


def build_problem(host_groups, host_group_of_host, vm_gpu_of_group, group_of_vm, policy: str = "pack") -> GpuProblem:
    """The :class:`GpuProblem` of hosts (``host_group_of_host`` (H,) into ``host_groups``, each with ``gpu`` and
    ``gpu_count``) and VMs (``group_of_vm`` (V,) into ``vm_gpu_of_group``, a VmGpu or None per VM group)."""
    models, model_ix = [], {}
    for hg in host_groups:
        if hg.gpu is not None and hg.gpu.name not in model_ix:
            model_ix[hg.gpu.name] = len(models)
            models.append(hg.gpu)
    grp_model = np.array([model_ix[hg.gpu.name] if hg.gpu is not None else -1 for hg in host_groups], np.int64)
    grp_n = np.array([hg.gpu_count if hg.gpu is not None else 0 for hg in host_groups], np.int64)
    hg_of = np.asarray(host_group_of_host, np.int64)
    requests, req_ix = [], {}
    g_kind = np.zeros(len(vm_gpu_of_group), np.int8)
    g_req = np.zeros(len(vm_gpu_of_group), np.int64)
    g_cnt = np.zeros(len(vm_gpu_of_group), np.int64)
    for i, r in enumerate(vm_gpu_of_group):
        if r is None:
            continue
        g_kind[i] = MODES[r.mode]
        if r.mode == "passthrough":
            g_cnt[i] = r.count
            continue
        key = ("vgpu", float(r.memory_bytes)) if r.mode == "vgpu" else ("mig", r.profile.strip().lower())
        if key not in req_ix:
            req_ix[key] = len(requests)
            requests.append(key)
        g_req[i] = req_ix[key]
    M, R = max(len(models), 1), max(len(requests), 1)
    vcap = np.zeros((M, R), np.int64)
    mig_size = np.zeros((M, R), np.int64)
    mig_starts = np.zeros((M, R), np.int64)
    mig_compute = np.zeros((M, R), np.int64)
    for mi, gpu in enumerate(models):
        for ri, (what, val) in enumerate(requests):
            if what == "vgpu":
                vcap[mi, ri] = gpu.vgpus_per_gpu(val)
            else:
                p = gpu.mig(val)
                if p is not None:
                    mig_size[mi, ri] = p.memory_slices
                    mig_starts[mi, ri] = sum(1 << s for s in p.starts)
                    mig_compute[mi, ri] = p.compute_slices
    gv = np.asarray(group_of_vm, np.int64)
    return GpuProblem(models, grp_model[hg_of] if hg_of.size else np.zeros(0, np.int64),
                      grp_n[hg_of] if hg_of.size else np.zeros(0, np.int64), g_kind[gv], g_req[gv], g_cnt[gv], requests,
                      vcap, mig_size, mig_starts, mig_compute, policy)


def gpu_share_of_vm(p: GpuProblem) -> np.ndarray:
    """Each VM's request as a share of one GPU (first-fit-decreasing's key): passthrough ``count``, a vGPU
    ``size / memory`` and a MIG instance ``memory slices / 8`` on the first model that offers it; 0 without a request."""
    share = np.zeros(p.kind.size)
    share[p.kind == PASS] = p.count[p.kind == PASS]
    for ri, (what, val) in enumerate(p.requests):
        per = 0.0
        for mi, gpu in enumerate(p.models):
            if what == "vgpu" and p.vcap[mi, ri] > 0:
                per = val / gpu.memory_bytes
                break
            if what == "mig" and p.mig_size[mi, ri] > 0:
                per = p.mig_size[mi, ri] / MIG_MEMORY_SLOTS
                break
        share[(p.kind != PASS) & (p.kind != NONE) & (p.req == ri)] = per
    return share


def place_gpu(policy: str, vm_cpu, vm_mem, cpu_cap, mem_cap, p: GpuProblem) -> np.ndarray:
    """Static placement with GPUs: host per VM (-1 where it fits nowhere); fills ``p``'s GPU state and
    ``p.vm_gpu`` (the VM's first GPU on its host, -1 without a request) and ``p.vm_mig_start``."""
    from densim.errors import InputError
    from densim.placement.heuristics import decreasing_order

    vc = np.ascontiguousarray(vm_cpu, dtype=np.float64)
    vm = np.ascontiguousarray(vm_mem, dtype=np.float64)
    cc = np.ascontiguousarray(cpu_cap, dtype=np.float64)
    mc = np.ascontiguousarray(mem_cap, dtype=np.float64)
    V, H = vc.size, cc.size
    G = int(p.host_ngpu.max()) if p.host_ngpu.size else 0
    p.gmode = np.zeros((H, max(G, 1)), np.int8)
    p.gkey = np.zeros((H, max(G, 1)), np.int64)
    p.gused = np.zeros((H, max(G, 1)), np.int64)
    p.gowner = np.full((H, max(G, 1)), -1, np.int64)
    p.vm_gpu = np.full(V, -1, np.int64)
    p.vm_mig_start = np.full(V, -1, np.int64)
    if policy == "none":
        return np.full(V, -1, np.int64)
    if policy not in HOST_POLICIES:
        raise InputError(None, "placement.policy", f"{policy!r} does not place GPU requests; with vms[].gpu use one of: "
                         f"{', '.join(HOST_POLICIES)}")
    if policy == "first-fit-decreasing":
        base = decreasing_order(vc, vm, cc, mc)  # by CPU/memory size, stable
        share = gpu_share_of_vm(p)[base]
        order = base[np.argsort(-share, kind="stable")].astype(np.int64)
    else:
        order = np.arange(V, dtype=np.int64)
    return gpu_place_kernel(order, vc, vm, p.kind, p.req, p.count, cc, mc, p.host_model, p.host_ngpu, p.vcap, p.mig_size,
                            p.mig_starts, HOST_POLICIES[policy], POLICY_CODES[p.policy], p.gmode, p.gkey, p.gused,
                            p.gowner, p.vm_gpu, p.vm_mig_start)


def problem_for(ctx) -> GpuProblem | None:
    """The run's :class:`GpuProblem` (None when no VM asks for a GPU): hosts from the plant's host groups,
    requests from the VM groups (``vms[].gpu``)."""
    sc = ctx.scenario
    if not any(g.gpu is not None for g in sc.vms) or len(ctx.vms.group_names) != len(sc.vms):
        return None
    p = build_problem(ctx.plant.host_groups, ctx.hosts.group, [g.gpu for g in sc.vms], ctx.vms.group,
                      policy=sc.placement.gpu_policy)
    return p if p.any_request else None


__all__ = ["GpuProblem", "build_problem", "gpu_fit", "gpu_place_kernel", "place_gpu", "problem_for"]
