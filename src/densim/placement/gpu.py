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
from densim.models.gpu import MIG_COMPUTE_SLICES, MIG_MEMORY_SLOTS
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


# the GPU state of a placement as one tuple (numba passes it whole through the event loop of
# :mod:`densim.placement.timeline`): the VMs' requests, the (model, request) tables, the GPUs' state and
# each VM's GPUs. ``vg`` (VMs, 4): the GPU mask and MIG start the VM holds on its host, then the ones reserved
# on its live migration's destination (-1 start / 0 mask: none). ``kind`` of size 0: no VM asks for a GPU.
G_KIND, G_REQ, G_COUNT, G_HMODEL, G_HNGPU, G_VCAP, G_MSIZE, G_MSTARTS, G_POLICY, G_MODE, G_KEY, G_USED, G_OWNER, G_VG = range(14)


@njit(inline="always")
def wants_gpu(gp, v):
    """Whether VM ``v`` asks for a GPU in the state tuple ``gp`` (False for every VM when none does)."""
    return gp[G_KIND].size > 0 and gp[G_KIND][v] != NONE


@njit
def gpu_find(policy, v, c, mm, cpu_free, mem_free, cpu_cap, mem_cap, gp):
    """The host ``policy`` picks for VM ``v`` (``c`` vCPUs, ``mm`` bytes, its GPU request): one where
    :func:`densim.placement.capacity.fits` holds and :func:`gpu_fit` finds a GPU, or -1. ``policy``: 0 first-fit
    (the lowest such host), 1 best-fit, 2 worst-fit (least / most normalised free CPU + memory + GPU share left,
    see the module docstring). The one host choice of the static kernel and of the event loop."""
    kind, req, count, hm, hn = gp[G_KIND], gp[G_REQ], gp[G_COUNT], gp[G_HMODEL], gp[G_HNGPU]
    vcap, ms, mst, gpol = gp[G_VCAP], gp[G_MSIZE], gp[G_MSTARTS], gp[G_POLICY]
    gmode, gkey, gused = gp[G_MODE], gp[G_KEY], gp[G_USED]
    chosen = -1
    score_best = 0.0
    for h in range(cpu_free.size):
        if not fits(cpu_free[h], mem_free[h], c, mm):
            continue
        m = hm[h]
        g = gpu_fit(kind[v], req[v], count[v], m, hn[h], gmode[h], gkey[h], gused[h], vcap, ms, mst, gpol)
        if g < 0:
            continue
        if policy == 0:
            return h
        s = (cpu_free[h] / cpu_cap[h] + mem_free[h] / mem_cap[h]) - (c / cpu_cap[h] + mm / mem_cap[h])
        s += _host_gpu_share(h, m, hn[h], gmode, gkey, gused, vcap) - _request_share(kind[v], req[v], count[v], m, hn[h],
                                                                                    vcap, ms)
        if chosen < 0 or (policy == 1 and s < score_best) or (policy == 2 and s > score_best):
            chosen = h
            score_best = s
    return chosen


@njit(inline="always")
def gpu_ever_fits(v, h, gp):
    """Whether host ``h`` could take VM ``v``'s GPU request with all its GPUs free (True for a VM without one): its
    GPU model offers the vGPU size or MIG profile, or it has ``count`` GPUs for a passthrough request."""
    if not wants_gpu(gp, v):
        return True
    m = gp[G_HMODEL][h]
    n = gp[G_HNGPU][h]
    if m < 0 or n == 0:
        return False
    kind = gp[G_KIND][v]
    if kind == PASS:
        return gp[G_COUNT][v] <= n
    if kind == VGPU:
        return gp[G_VCAP][m, gp[G_REQ][v]] > 0
    return gp[G_MSIZE][m, gp[G_REQ][v]] > 0


@njit
def gpu_fits_on(v, h, gp):
    """Whether host ``h`` has a GPU that takes VM ``v``'s request now (True for a VM without one)."""
    if not wants_gpu(gp, v):
        return True
    m = gp[G_HMODEL][h]
    return gpu_fit(gp[G_KIND][v], gp[G_REQ][v], gp[G_COUNT][v], m, gp[G_HNGPU][h], gp[G_MODE][h], gp[G_KEY][h],
                   gp[G_USED][h], gp[G_VCAP], gp[G_MSIZE], gp[G_MSTARTS], gp[G_POLICY]) >= 0


@njit
def gpu_claim(v, h, gp):
    """VM ``v`` takes its GPU request on host ``h`` (where :func:`gpu_find` found room): returns ``(mask, start)``,
    the bit mask of the host's GPUs it holds and its MIG start (-1 unless MIG)."""
    kind, req, count, hm, hn = gp[G_KIND], gp[G_REQ], gp[G_COUNT], gp[G_HMODEL], gp[G_HNGPU]
    m = hm[h]
    g = gpu_fit(kind[v], req[v], count[v], m, hn[h], gp[G_MODE][h], gp[G_KEY][h], gp[G_USED][h], gp[G_VCAP],
                gp[G_MSIZE], gp[G_MSTARTS], gp[G_POLICY])
    start = _gpu_take(kind[v], req[v], count[v], g, m, hn[h], gp[G_MODE][h], gp[G_KEY][h], gp[G_USED][h], gp[G_MSIZE],
                      gp[G_MSTARTS], gp[G_OWNER][h], v)
    return vm_mask(v, h, g, gp), start


@njit(inline="always")
def vm_mask(v, h, g, gp):
    """The bit mask of host ``h``'s GPUs VM ``v`` holds, its (first) GPU being ``g``: one bit for a vGPU or MIG
    instance, every GPU it owns for passthrough."""
    if gp[G_KIND][v] != PASS:
        return np.int64(1) << g
    mask = np.int64(0)
    own = gp[G_OWNER][h]
    for j in range(gp[G_HNGPU][h]):
        if own[j] == v:
            mask |= np.int64(1) << j
    return mask


@njit
def gpu_release(v, h, mask, start, gp):
    """VM ``v`` gives back what it holds on host ``h`` (``mask``, ``start`` from :func:`gpu_claim`): a vGPU (the GPU
    is free again when its last vGPU leaves), a MIG instance's memory slices, or its whole GPUs. No-op for mask 0."""
    if mask == 0:
        return
    kind = gp[G_KIND][v]
    gmode, gkey, gused, gowner = gp[G_MODE][h], gp[G_KEY][h], gp[G_USED][h], gp[G_OWNER][h]
    for g in range(gp[G_HNGPU][h]):
        if not (mask >> g) & 1:
            continue
        if kind == PASS:
            gmode[g] = NONE
            gowner[g] = -1
        elif kind == VGPU:
            gused[g] -= 1
            if gused[g] <= 0:
                gused[g] = 0
                gmode[g] = NONE
                gkey[g] = 0
        else:
            size = gp[G_MSIZE][gp[G_HMODEL][h], gp[G_REQ][v]]
            gused[g] &= ~(((np.int64(1) << size) - 1) << start)
            if gused[g] == 0:
                gmode[g] = NONE


@njit
def claim_on_hosts(host, order, gp):
    """VMs in ``order`` take their GPU request on the host ``host[v]`` already chosen for them (a given placement):
    returns the first VM whose host has no GPU that takes it (-1: every VM got one)."""
    vg = gp[G_VG]
    for k in range(order.size):
        v = order[k]
        h = host[v]
        if h < 0 or not wants_gpu(gp, v):
            continue
        if not gpu_fits_on(v, h, gp):
            return v
        vg[v, 0], vg[v, 1] = gpu_claim(v, h, gp)
    return -1


def place_given_gpu(host: np.ndarray, p: GpuProblem, a) -> None:
    """The GPUs of a given placement (``a``: :class:`densim.placement.given.Assignment`): each VM takes its request on
    its host in the file's row order, by the GPU policy (``pack``/``spread``); a VM whose host has no GPU left for it
    is refused with the file and row."""
    from densim.errors import InputError

    p.reset(len(p.host_model))
    order = np.argsort(a.row, kind="stable").astype(np.int64)
    bad = claim_on_hosts(np.asarray(host, np.int64), order, p.state())
    if bad >= 0:
        what = {VGPU: "a vGPU", MIG: "a MIG instance", PASS: f"{int(p.count[bad])} whole GPU(s)"}[int(p.kind[bad])]
        raise InputError(a.path, f"row {int(a.row[bad])}, column 'host'", f"host {str(a.host_names[host[bad]])!r} has no "
                         f"GPU left that takes this VM's request ({what}) once the rows above it are placed")
    p.set_rows(p.vg[:, 0], p.vg[:, 1])


@njit
def gpu_place_kernel(order, vm_cpu, vm_mem, cpu_cap, mem_cap, host_policy, gp):
    """Place VMs in ``order`` onto hosts: host per VM (-1: fits nowhere), by :func:`gpu_find` (``host_policy``: 0
    first-fit, 1 best-fit, 2 worst-fit) and :func:`gpu_claim`. ``gp``'s GPU state is updated in place and its
    ``vg[v, 0:2]`` gets each VM's GPU mask and MIG start."""
    cpu_free = cpu_cap.copy()
    mem_free = mem_cap.copy()
    out = np.full(vm_cpu.size, -1, dtype=np.int64)
    vg = gp[G_VG]
    for k in range(order.size):
        v = order[k]
        h = gpu_find(host_policy, v, vm_cpu[v], vm_mem[v], cpu_free, mem_free, cpu_cap, mem_cap, gp)
        if h < 0:
            continue
        out[v] = h
        cpu_free[h] -= vm_cpu[v]
        mem_free[h] -= vm_mem[v]
        if gp[G_KIND][v] != NONE:
            vg[v, 0], vg[v, 1] = gpu_claim(v, h, gp)
    return out


# ------------------------------------------------------------------------------------------ the problem
@dataclass
class GpuProblem:
    """The GPU side of a placement: host GPUs, VM requests, per (model, request) tables, and after
    :func:`place_gpu` (or the event loop of :mod:`densim.placement.timeline`) the GPUs' state and each row's GPUs.

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
    vm_gpu: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # (first) GPU index of each row, -1
    vm_mig_start: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    vm_mask: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # bit mask of the row's GPUs on its host
    vg: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), np.int64))  # the kernels' per-VM GPU columns
    first_run: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # the row is its VM's first run (counts)

    @property
    def any_request(self) -> bool:
        return bool((self.kind != NONE).any())

    def reset(self, n_hosts: int) -> None:
        """Every GPU free, no VM holding one: the state before a placement."""
        G = max(int(self.host_ngpu.max()) if self.host_ngpu.size else 0, 1)
        self.gmode = np.zeros((n_hosts, G), np.int8)
        self.gkey = np.zeros((n_hosts, G), np.int64)
        self.gused = np.zeros((n_hosts, G), np.int64)
        self.gowner = np.full((n_hosts, G), -1, np.int64)
        self.vg = np.zeros((self.kind.size, 4), np.int64)
        self.vg[:, 1] = self.vg[:, 3] = -1
        self.set_rows(self.vg[:, 0], self.vg[:, 1])

    def state(self) -> tuple:
        """The state tuple the numba kernels take (layout ``G_*``); its arrays are this problem's, changed in place."""
        return (self.kind, self.req, self.count, self.host_model, self.host_ngpu, self.vcap, self.mig_size,
                self.mig_starts, POLICY_CODES[self.policy], self.gmode, self.gkey, self.gused, self.gowner, self.vg)

    def set_rows(self, mask: np.ndarray, start: np.ndarray) -> None:
        """Each row's GPU mask and MIG start; ``vm_gpu`` is the mask's lowest GPU (-1: none)."""
        self.vm_mask = np.array(mask, np.int64)
        self.vm_mig_start = np.where(self.vm_mask != 0, np.asarray(start, np.int64), -1)
        low = self.vm_mask & -self.vm_mask  # the lowest bit set
        self.vm_gpu = np.where(low > 0, np.log2(np.maximum(low, 1)).round().astype(np.int64), -1)
        self.first_run = np.ones(self.vm_mask.size, bool)

    def for_rows(self, vm_of: np.ndarray, mask: np.ndarray, start: np.ndarray) -> GpuProblem:
        """This problem with engine rows (runs of VMs, :mod:`densim.engine.failures`) in place of VMs: row r is a
        run of VM ``vm_of[r]`` holding the GPUs ``mask[r]`` (MIG start ``start[r]``) on its host."""
        import dataclasses

        out = dataclasses.replace(self, kind=self.kind[vm_of], req=self.req[vm_of], count=self.count[vm_of],
                                  vg=np.zeros((vm_of.size, 4), np.int64))
        out.set_rows(mask, start)
        out.first_run = np.zeros(vm_of.size, bool)  # rows are in the order the runs began: a VM's first row is its first run
        out.first_run[np.unique(vm_of, return_index=True)[1]] = True
        return out


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
            g_cnt[i] = r.count or 0  # None: each VM's own count from its trace (problem_of's vm_gpu_count)
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


def gpu_tenants(p: GpuProblem, host: np.ndarray, gpus_per_host: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One entry per (row, GPU it holds) after placement: the row, the GPU's column ``host x gpus_per_host + gpu``
    and the tenant's weight in that GPU's busy share, ``b_j = min(1, sum of w_v u_v)`` over its tenants: 1 for a
    passthrough VM on each of its GPUs, 1 for a time-sliced vGPU (its ``u`` is a share of the whole GPU's time),
    ``compute_slices / 7`` for a MIG instance. The engine's GPU stage and ``densim plan`` both read it, so a plan's
    GPU power and the run of its scenario follow one rule. Rows without a request or a host hold no GPU."""
    G = int(gpus_per_host)
    host = np.asarray(host, np.int64)
    mask = np.where((host >= 0) & (p.kind != NONE), p.vm_mask, 0)
    bits = ((mask[:, None] >> np.arange(G)[None, :]) & 1).astype(bool)  # (rows, G)
    rr, gg = np.nonzero(bits)
    ws = np.ones(rr.size)
    mig = p.kind[rr] == MIG
    if mig.any():
        m = p.host_model[host[rr[mig]]]
        ws[mig] = p.mig_compute[m, p.req[rr[mig]]] / MIG_COMPUTE_SLICES
    return rr, host[rr] * G + gg, ws


def place_gpu(policy: str, vm_cpu, vm_mem, cpu_cap, mem_cap, p: GpuProblem) -> np.ndarray:
    """Static placement with GPUs: host per VM (-1 where it fits nowhere); fills ``p``'s GPU state, ``p.vg`` and
    the rows' ``vm_mask``, ``vm_gpu`` (the VM's first GPU on its host, -1 without a request) and ``vm_mig_start``."""
    from densim.errors import InputError
    from densim.placement.heuristics import decreasing_order

    vc = np.ascontiguousarray(vm_cpu, dtype=np.float64)
    vm = np.ascontiguousarray(vm_mem, dtype=np.float64)
    cc = np.ascontiguousarray(cpu_cap, dtype=np.float64)
    mc = np.ascontiguousarray(mem_cap, dtype=np.float64)
    V, H = vc.size, cc.size
    p.reset(H)
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
    host = gpu_place_kernel(order, vc, vm, cc, mc, HOST_POLICIES[policy], p.state())
    p.set_rows(p.vg[:, 0], p.vg[:, 1])
    return host


def problem_of(sc, plant, host_group, vm_group, group_names, vm_gpu_count=None) -> GpuProblem | None:
    """The :class:`GpuProblem` of a scenario (None when no VM asks for a GPU): hosts from the plant's host groups
    (``host_group`` (H,)), requests from the VM groups (``vms[].gpu``; ``vm_group`` (V,) into ``group_names``, which
    are the scenario's groups unless a given source replaced them). ``vm_gpu_count`` (V,) or None: whole GPUs per
    VM given by its trace (:func:`densim.workloads.sources.vm_gpu_counts`; -1: its group's request)."""
    if not any(g.gpu is not None for g in sc.vms) or len(group_names) != len(sc.vms):
        return None
    p = build_problem(plant.host_groups, host_group, [g.gpu for g in sc.vms], vm_group, policy=sc.placement.gpu_policy)
    if vm_gpu_count is not None:  # an OpenDC task's gpu_count: passthrough of that many GPUs, none for 0
        own = np.asarray(vm_gpu_count) >= 0
        p.count[own] = np.asarray(vm_gpu_count)[own]
        p.kind[own & (p.count == 0)] = NONE
    bad = np.flatnonzero((p.kind == PASS) & (p.count <= 0))
    if bad.size:
        from densim.errors import InputError

        raise InputError(sc.name, f"vms[{int(np.asarray(vm_group)[bad[0]])}].gpu.count", "needed: these VMs do not come "
                         "from an OpenDC trace giving each its count")
    return p if p.any_request else None


def problem_for(ctx, vm_gpu_count=None) -> GpuProblem | None:
    """The run's :class:`GpuProblem` (:func:`problem_of` of the context's scenario, hosts and VMs)."""
    return problem_of(ctx.scenario, ctx.plant, ctx.hosts.group, ctx.vms.group, ctx.vms.group_names, vm_gpu_count)


def no_gpu_state(n_hosts: int = 1) -> tuple:
    """A state tuple for a placement in which no VM asks for a GPU (``kind`` of size 0): the kernels skip the GPU
    column for every VM. Same types as :meth:`GpuProblem.state`, so the kernels compile once."""
    z1 = np.zeros(0, np.int64)
    z2 = np.zeros((1, 1), np.int64)
    return (np.zeros(0, np.int8), z1, z1, z1, z1, z2, z2, z2, 0, np.zeros((1, 1), np.int8), z2, z2, z2,
            np.zeros((0, 4), np.int64))


__all__ = ["GpuProblem", "build_problem", "gpu_claim", "gpu_find", "gpu_fit", "gpu_place_kernel", "gpu_release",
           "no_gpu_state", "place_gpu", "problem_for"]
