"""GPUs in ``densim plan``: hosts a candidate needs for the plan's GPU demand, and which resource decides.

The plan's ``gpu`` section names GPU requests of inventory VMs (``requests``: VM names (glob) -> a vGPU,
MIG instance or whole GPUs, :class:`densim.spec.gpu.VmGpu`) and LLM services (``inference``: model, tokens,
target tokens/s, latency bounds); each candidate gives ``gpus: {model, count}`` per host.

Per candidate (:func:`gpu_hosts`):

* the GPU VMs are placed, with their vCPUs and configured memory against the plan's capacity rule
  (``qos.vcpus_per_core`` x cores, ``qos.memory_overcommit`` x usable memory), on the candidate's GPUs with
  the engine's GPU fit test (:func:`densim.placement.gpu.place_gpu`, first-fit-decreasing by share of a
  GPU: MIG layouts and one-vGPU-size-per-GPU hold): ``H_gpu`` hosts are needed for them;
* each inference service is sized by :func:`densim.models.inference.size` on whole GPUs of the candidate
  (replicas of ``tp`` GPUs within a host): ``H_inf`` hosts, dedicated to it;
* the candidate's hosts are ``max(H_cpu, H_gpu) + H_inf`` with ``H_cpu`` the CPU/memory placement's; the
  limiting factor is ``gpu`` when ``H_gpu > H_cpu`` (the GPU VMs need more hosts than the whole inventory's
  CPU and memory) or when ``H_inf > 0`` decides the added hosts, else ``cpu/memory``. The other VMs are
  taken to fit beside the GPU VMs within ``max(H_cpu, H_gpu)`` hosts (the two placements are made
  separately: where both are tight the answer is a lower bound).

GPU power per host: ``count x idle + (max - idle) x busy`` with busy the GPU-equivalents in use: over the
GPUs the requests are placed on, ``min(1, sum of w x utilisation)`` of each GPU's tenants as the engine's GPU
stage counts it (:func:`densim.placement.gpu.gpu_tenants`: w = 1 for passthrough and vGPU, whose utilisation is a
share of the whole GPU's time, compute slices / 7 for MIG; utilisation 1 when not given: an upper bound), and
the inference replicas' GPUs times their slot utilisation. GPUs must be in the candidate's ``price_usd`` or ``bom``.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from densim.errors import InputError


def _gpu_of(c):
    from densim.catalog.core import CatalogError, builtin_catalog
    from densim.models.gpu import GpuSpec

    try:
        return builtin_catalog().get("gpus", c.gpus.model, GpuSpec)
    except CatalogError as exc:
        raise InputError(None, f"candidates.{c.name}.gpus.model", str(exc.args[0]).strip("'\"")) from None


def request_of_vm(spec, names: np.ndarray) -> np.ndarray:
    """Index into ``spec.gpu.requests`` per VM (-1: no GPU); a pattern that matches nothing, or a VM two
    patterns match, is an InputError."""
    from densim.tools.plan.patterns import rule_of_vm

    return rule_of_vm(names, [r.vms for r in spec.gpu.requests], "gpu.requests", "one GPU request")


def gpu_hosts(spec, c, names: np.ndarray, cpu_hosts: int, *, vcpus=None, mem_bytes=None, vcpu_cap: float = np.inf,
              mem_cap: float = np.inf) -> dict:
    """The candidate's GPU part (see the module docstring): hosts, limiting factor, GPU power, or a reason.
    With ``vcpus``/``mem_bytes`` (per VM) the GPU VMs are placed with their vCPUs and configured memory too,
    against ``vcpu_cap`` vCPUs and ``mem_cap`` bytes per host (the plan's capacity rule)."""
    from densim.catalog.core import builtin_catalog
    from densim.models.inference import LlmSpec, Workload, size
    from densim.placement.gpu import NONE, build_problem, gpu_share_of_vm, gpu_tenants, place_gpu

    g = spec.gpu
    n_req = len(g.requests) + len(g.inference)
    if c.gpus is None:
        return {"reason": f"the plan's gpu section asks for {n_req} GPU demand(s) but the candidate has no gpus"}
    gpu = _gpu_of(c)
    per_host = c.gpus.count
    out: dict = {"model": gpu.name, "gpus_per_host": per_host, "hosts_cpu_memory": int(cpu_hosts)}
    # the VMs' requests on the candidate's GPUs alone
    req = request_of_vm(spec, names)
    gv = np.flatnonzero(req >= 0)
    hosts_vm, busy = 0, 0.0
    out["vms_with_gpu"] = int(gv.size)
    out["vgpu_vms"] = int(sum(1 for j in gv if g.requests[req[j]].gpu.mode == "vgpu"))
    if gv.size:
        H = int(gv.size)  # at worst one VM per host
        hg = SimpleNamespace(gpu=gpu, gpu_count=per_host)
        p = build_problem([hg], np.zeros(H, np.int64), [r.gpu for r in g.requests], req[gv], policy="pack")
        for ri, (what, val) in enumerate(p.requests):
            bad = (p.vcap[0, ri] == 0) if what == "vgpu" else (p.mig_size[0, ri] == 0)
            if bad:
                label = f"a {val / 2**30:g} GiB vGPU" if what == "vgpu" else f"MIG profile {val}"
                return out | {"reason": f"{gpu.name} does not offer {label}"}
        if (p.kind == 3).any() and int(p.count[p.kind == 3].max()) > per_host:
            return out | {"reason": f"a VM asks for {int(p.count[p.kind == 3].max())} whole GPUs; the candidate's hosts "
                                    f"have {per_host}"}
        vc = np.zeros(H) if vcpus is None else np.asarray(vcpus, np.float64)[gv]
        vm = np.zeros(H) if mem_bytes is None else np.asarray(mem_bytes, np.float64)[gv]
        too_big = (vc > vcpu_cap) | (vm > mem_cap)
        if too_big.any():  # the CPU/memory placement names such VMs first; kept as a guard
            return out | {"reason": f"VM {names[gv[int(np.argmax(too_big))]]!s} fits no empty host"}
        cc = np.full(H, vcpu_cap if np.isfinite(vcpu_cap) else 1.0)
        mc = np.full(H, mem_cap if np.isfinite(mem_cap) else 1.0)
        host = place_gpu("first-fit-decreasing", vc if np.isfinite(vcpu_cap) else np.zeros(H),
                         vm if np.isfinite(mem_cap) else np.zeros(H), cc, mc, p)
        if (host < 0).any():  # cannot happen with one host per VM and every request offered; kept as a guard
            return out | {"reason": f"{int((host < 0).sum())} GPU request(s) fit no empty host"}
        hosts_vm = int(host.max()) + 1
        out["gpus_used_by_vms"] = int(np.count_nonzero(p.gmode[:, :per_host] != NONE))
        # each GPU busy min(1, sum of its tenants' w x u), as the engine's GPU stage counts it (gpu_tenants): a vGPU's
        # utilisation is a share of the whole GPU's time, a MIG instance's of its compute slices (w = slices / 7)
        util = np.array([1.0 if r.gpu.utilisation is None else r.gpu.utilisation for r in g.requests])[req[gv]]
        rr, cols, ws = gpu_tenants(p, host, per_host)
        per_gpu = np.bincount(np.unique(cols, return_inverse=True)[1], weights=ws * util[rr]) if rr.size else np.zeros(0)
        busy += float(np.minimum(per_gpu, 1.0).sum())
    out["hosts_gpu_vms"] = hosts_vm
    # a lower bound: the requests' GPU shares (whole GPUs for passthrough) over the host's GPUs, no layout
    lb_vm = 0 if not gv.size else math.ceil(float(gpu_share_of_vm(p).sum()) / per_host - 1e-9)
    # the LLM services on whole GPUs
    cat = builtin_catalog()
    services, hosts_inf = [], 0
    for i, s in enumerate(g.inference):
        try:
            llm = cat.get("llm_models", s.model, LlmSpec)
        except Exception as exc:  # CatalogError: unknown model
            raise InputError(None, f"gpu.inference[{i}].model", str(exc.args[0]).strip("'\"")) from None
        if s.precision == "fp8" and gpu.fp8_tflops is None:
            return out | {"reason": f"gpu.inference[{i}] ({s.name}) asks for fp8; {gpu.name} has no FP8 tensor unit"}
        a = size(llm, gpu, Workload(tokens_in=s.tokens_in, tokens_out=s.tokens_out, precision=s.precision,
                                     kv_read=s.kv_read),
                 tokens_per_s=s.tokens_per_s, gpus_per_host=per_host, ttft_s=s.ttft_s, tpot_s=s.tpot_s)
        if not a["feasible"]:
            return out | {"reason": f"inference {s.name}: " + "; ".join(a["reasons"])}
        services.append({k: a[k] for k in ("tp", "batch", "replicas", "gpus", "hosts", "batch_limited_by", "decode_bound",
                                            "tpot_s", "ttft_p95_s", "capacity_tokens_per_s", "slot_utilisation")} | {"name": s.name})
        hosts_inf += a["hosts"]
        busy += a["gpus"] * a["slot_utilisation"]
    out["inference"] = services
    out["hosts_inference"] = hosts_inf
    packed = max(int(cpu_hosts), hosts_vm) + hosts_inf
    out["hosts_packed"] = packed
    out["lower_bound_gpu_vm_hosts"] = lb_vm
    out["limiting_factor"] = "gpu" if (hosts_vm > cpu_hosts or hosts_inf > 0) else "cpu/memory"
    out["gpus"] = packed * per_host
    out["gpu_busy_equivalents"] = busy
    out["gpu_power_w"] = packed * per_host * gpu.idle_power_w + (gpu.max_power_w - gpu.idle_power_w) * min(busy, packed * per_host)
    out["reason"] = ""
    return out


def gpu_watts_per_host(g: dict, n_hosts: int) -> np.ndarray:
    """The GPUs' power spread over ``n_hosts`` hosts (spares included: their GPUs idle)."""
    if not g or g.get("reason"):
        return np.zeros(n_hosts)
    per = g["gpus_per_host"]
    extra = max(0, n_hosts - g["hosts_packed"])
    total = g["gpu_power_w"] + extra * per * _idle_w(g)
    return np.full(n_hosts, total / max(n_hosts, 1))


def _idle_w(g: dict) -> float:
    from densim.catalog.core import builtin_catalog
    from densim.models.gpu import GpuSpec

    return builtin_catalog().get("gpus", g["model"], GpuSpec).idle_power_w


__all__ = ["gpu_hosts", "gpu_watts_per_host", "request_of_vm"]
