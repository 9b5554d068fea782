"""Capacity planning: for each candidate host configuration, how many hosts keep every VM within
its quality-of-service bound over the whole demand series, and what that costs per VM.

Per candidate:

1. (optional) right-size the VMs (:mod:`densim.tools.plan.rightsizing`);
2. reduce the demand series to ``windows`` windows (each VM's maximum in the window) and place the
   VMs with a named policy (default ``timeseries``: capacity with over-commit ratios, NUMA fit,
   anti-affinity, the CPU Ready bound; VMs whose peaks do not coincide share a host);
3. re-check every host at full time resolution with the ready model (binomial occupancy, normal
   approximation, :func:`densim.models.queueing.expected_excess`); if a host breaks the bound the
   placement is repeated with a tighter window bound. Where the plan has a ``memory`` section, the
   memory model replays every host short of memory and the worst VM's slowdown must stay below
   ``qos.memory_slowdown`` (else the memory over-commit used for placing is lowered by 10 %);
   where a candidate has local ``storage`` and the inventory disk series, every host's mean I/O
   latency per step must stay below ``qos.io_latency_ms`` (placement keeps each host's per-window
   IOPS within the datastore's budget at that latency, lowered by 15 % when a host still breaks
   it) (:mod:`densim.tools.plan.qos`);
4. add ``ha_spare_hosts`` spare hosts (N+k: any k hosts may fail and the survivors' spare capacity
   is the spare hosts'), or more for ``ha_reserve_percent`` / ``ha_domain_hosts`` (:func:`ha_spare`);
5. cost: bill of materials (or price), energy from the power model at each host's mean
   utilisation x PUE x $/kWh, space, licences, maintenance (:mod:`densim.models.cost`).

An inventory without a CPU demand series (an RVTools export with only vInfo) is placed by vCPUs
(``qos.vcpus_per_core`` per physical core, :func:`vcpu_capacity`) and memory only: CPU Ready is not checked (reported as
null, with a note) and energy is computed with every vCPU busy, an upper bound. An inventory with one
sample per VM is not right-sized unless ``rightsizing.from_snapshot`` asks for it. When no candidate
is feasible, :func:`closest` names the one that came nearest and why it failed.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from densim.errors import InputError
from densim.workloads.inventory import Inventory
from densim.catalog.core import builtin_catalog
from densim.models.cost import bom_cost_usd, power_w, tco_per_year

from densim.spec.plan import Candidate, OptimiseSpec, PlanSpec, QosSpec, RightsizeSpec  # noqa: F401  (the plan file's schema)
from densim.tools.plan.hosts import host_type_of, vcpu_capacity  # noqa: F401  (here since issue 28; waves and replay use them too)


def load_plan_spec(path: str | Path) -> PlanSpec:
    """Read and validate a plan (candidates) file with the one loader; problems name the file and field path."""
    from densim.spec.loader import load_spec

    spec = load_spec(path, PlanSpec, what="candidates file", imports=False, resolve_paths=False)
    gs = spec.carbon.grid_series if spec.carbon is not None else None
    if gs is not None and not Path(gs.file).is_absolute():  # relative to the candidates file, as scenario paths are
        carbon = spec.carbon.model_copy(update={"grid_series": gs.model_copy(update={"file": str(Path(path).resolve().parent / gs.file)})})
        spec = spec.model_copy(update={"carbon": carbon})
    wv = spec.waves
    if wv is not None and wv.groups.file is not None and not Path(wv.groups.file).is_absolute():  # the same for a groups file
        groups = wv.groups.model_copy(update={"file": str(Path(path).resolve().parent / wv.groups.file)})
        spec = spec.model_copy(update={"waves": wv.model_copy(update={"groups": groups})})
    issues = plan_spec_issues(spec)
    if issues:
        from densim.errors import ScenarioInvalid

        raise ScenarioInvalid(path, issues)
    return spec


def plan_spec_issues(spec: PlanSpec) -> list[tuple[str, str]]:
    """Names in a plan file checked against the catalog and the registries, each with its field path:
    candidate names unique, CPU models, bill-of-materials parts, the placement prefab."""
    from pydantic import ValidationError

    from densim.catalog.core import CatalogError
    from densim.models.cost import BomPart
    from densim.placement.prefabs import recipe
    from densim.plant import resolve_cpu

    cat = builtin_catalog()
    issues: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for i, c in enumerate(spec.candidates):
        if c.name in seen:
            issues.append((f"candidates[{i}].name", f"candidate {c.name!r} is also candidates[{seen[c.name]}]: give each "
                           "candidate its own name"))
        seen.setdefault(c.name, i)
    for section, items in (("candidates", spec.candidates), ("current", spec.current or [])):
        for i, c in enumerate(items):
            try:
                resolve_cpu(c.cpu, cat)
            except (CatalogError, ValidationError, KeyError) as exc:
                field = "cpu.model" if isinstance(exc, CatalogError) else "cpu"
                text = str(exc.args[0]).strip("'\"") if isinstance(exc, (CatalogError, KeyError)) else str(exc).splitlines()[0]
                issues.append((f"{section}[{i}].{field}", text))
    for i, c in enumerate(spec.candidates):
        if c.power_cap_w is None or any(f[0].startswith(f"candidates[{i}].cpu") for f in issues):
            continue
        from densim.tools.plan.power import capped_clock

        cc = capped_clock(c, float(resolve_cpu(c.cpu, cat).base_mhz))
        if cc["clock_mhz"] is None:
            issues.append((f"candidates[{i}].power_cap", f"{cc['cap_w']:g} W is below what a fully busy host draws at its "
                           f"lowest P-state: {cc['idle_w']:g} W idle + ({cc['full_load_w']:g} - {cc['idle_w']:g}) W x "
                           f"({cc['min_clock_mhz']:g} / {cc['base_mhz']:g} MHz)^3 = {cc['floor_w']:.1f} W (raise the cap or "
                           "lower min_clock)"))
    for i, c in enumerate(spec.candidates):
        for k, line in enumerate(c.bom or []):
            try:
                cat.get("bom_parts", line.part, BomPart)
            except (CatalogError, ValidationError) as exc:
                issues.append((f"candidates[{i}].bom[{k}].part", str(exc.args[0]).strip("'\"") if isinstance(exc, CatalogError)
                               else str(exc).splitlines()[0]))
    try:
        recipe(spec.policy)
    except KeyError as exc:
        issues.append(("policy", str(exc.args[0]).strip("'\"")))
    if spec.hci is not None:
        from densim.tools.plan.hci import hci_plan_issues

        issues += hci_plan_issues(spec)
    return issues


@dataclass
class CandidateResult:
    name: str
    feasible: bool
    reason: str = ""
    n_hosts: int = 0
    n_hosts_packed: int = 0
    lower_bound_hosts: int = 0
    vms_per_host: float = 0.0
    ready_pct_worst: float = 0.0
    ready_pct_p99: float = 0.0
    cpu_util_mean: float = 0.0
    cpu_util_peak: float = 0.0
    mem_peak_frac: float = 0.0
    host_capex_usd: float = 0.0
    price_date: str = ""
    tco: dict = field(default_factory=dict)
    power: dict = field(default_factory=dict)  # power cap's clock, hosts per rack, racks, VMs per kW (tools/plan/power.py)
    carbon: dict = field(default_factory=dict)  # operational / embodied kgCO2e (tools/plan/licensing_carbon.py)
    hci: dict = field(default_factory=dict)  # HCI storage: hosts it needs, usable TiB, network, resync (tools/plan/hci.py)
    host_of_vm: np.ndarray | None = None
    per_host: dict = field(default_factory=dict)
    window_bound_pct: float = 0.0
    optimiser: dict = field(default_factory=dict)
    memory_overcommit_used: float = 0.0
    mem_hosts_short: int = 0
    mem_slowdown_worst: float = 1.0
    io_budget_iops: float = float("nan")
    io_latency_worst_ms: float = float("nan")
    io_latency_mean_ms: float = float("nan")
    notes: list = field(default_factory=list)
    wall_s: float = 0.0
    gpu: dict = field(default_factory=dict)  # the GPU part (tools/plan/gpu.py) when the plan has a gpu section
    failed: str = ""  # why infeasible: "qos" (placed, a bound broken), "fit" (VMs fit no empty host), "config"
    unplaced_vms: int = 0  # for "fit": how many VMs fit no empty host

    def row(self) -> dict[str, Any]:
        return {
            "candidate": self.name,
            "feasible": self.feasible,
            "reason": self.reason,
            "hosts": self.n_hosts,
            "hosts_packed": self.n_hosts_packed,
            "lower_bound_hosts": self.lower_bound_hosts,
            "vms_per_host": self.vms_per_host,
            "ready_pct_worst": _finite_or_none(self.ready_pct_worst),
            "ready_pct_p99": _finite_or_none(self.ready_pct_p99),
            "cpu_util_mean": _finite_or_none(self.cpu_util_mean),
            "cpu_util_peak": _finite_or_none(self.cpu_util_peak),
            "mem_peak_frac": self.mem_peak_frac,
            "memory_overcommit_used": self.memory_overcommit_used,
            "mem_hosts_short": self.mem_hosts_short,
            "mem_slowdown_worst": self.mem_slowdown_worst,
            "io_budget_iops": _finite_or_none(self.io_budget_iops),
            "io_latency_worst_ms": _finite_or_none(self.io_latency_worst_ms),
            "io_latency_mean_ms": _finite_or_none(self.io_latency_mean_ms),
            "notes": "; ".join(self.notes),
            "host_capex_usd": self.host_capex_usd,
            "price_date": self.price_date,
            "tco_per_year_usd": self.tco.get("total_usd", float("nan")),
            "tco_per_vm_year_usd": self.tco.get("per_vm_usd", float("nan")),
            "tco_per_user_year_usd": self.tco.get("per_user_usd", float("nan")),
            "power_capped_clock_mhz": (self.power.get("capped") or {}).get("clock_mhz"),
            "hosts_per_rack": self.power.get("hosts_per_rack"),
            "racks": self.power.get("racks"),
            "rack_bound": self.power.get("rack_bound"),
            "vms_per_kw": self.power.get("vms_per_kw"),
            "optimiser_status": self.optimiser.get("status", ""),
            "optimiser_gap": self.optimiser.get("gap", float("nan")),
        } | ({"limiting_factor": self.gpu.get("limiting_factor"), "gpus": self.gpu.get("gpus"),
              "gpus_per_host": self.gpu.get("gpus_per_host"), "hosts_gpu_vms": self.gpu.get("hosts_gpu_vms"),
              "hosts_inference": self.gpu.get("hosts_inference")} if self.gpu else {}
        ) | ({"hci_hosts_needed": self.hci["hosts_needed"], "hci_usable_tib": self.hci["usable_tib"],
              "hci_limit": self.hci["storage_limit"]} if self.hci else {})


def _finite_or_none(x: float) -> float | None:
    """Not modelled (nan) or unbounded (inf) figures are written as null, not as non-JSON NaN/Infinity."""
    return float(x) if np.isfinite(x) else None


def plan_candidate(inv: Inventory, spec: PlanSpec, c: Candidate, *, vcpus=None, mem_bytes=None) -> CandidateResult:
    from densim.placement.prefabs import lower_bound_hosts, place
    from densim.placement.tspack import build_problem, host_metrics

    t0 = time.perf_counter()
    host = host_type_of(c)
    vcpus = inv.vcpus if vcpus is None else vcpus
    mem_bytes = inv.mem_bytes if mem_bytes is None else mem_bytes
    has_cpu = inv.cpu_mhz is not None
    # without a demand series the VMs are placed by size only; the busy-everywhere series below is used
    # for the energy estimate alone (an upper bound), never for placement or CPU Ready
    cpu = inv.cpu_mhz if has_cpu else inv.capacity_mhz[None, :].astype(np.float32)
    capex, _ = bom_cost_usd(c.bom, builtin_catalog()) if c.bom else (c.price_usd, None)
    if capex is None:
        raise InputError(None, f"candidates.{c.name}", "give either 'bom' (parts list) or 'price_usd'")
    q = spec.qos
    anti = inv.tags.get("anti_affinity")
    aff = inv.tags.get("affinity")
    res = CandidateResult(name=c.name, feasible=False, host_capex_usd=float(capex), price_date=c.price_date or "")
    if host.usable_mem_bytes <= 0:
        res.reason = "hypervisor memory >= host memory"
        res.failed = "config"
        return res
    qos = _QosChecks(inv, spec, c, host)
    res.notes.extend(qos.notes)
    res.io_budget_iops = qos.io_cap
    if qos.infeasible:
        res.reason = qos.infeasible
        res.failed = "config"
        res.wall_s = time.perf_counter() - t0
        return res
    bound = q.cpu_ready_pct
    mem_oc = q.memory_overcommit
    from densim.tools.plan.tiering import in_use_for_capacity

    used = in_use_for_capacity(inv, spec)  # memory in use against DRAM (+ an NVMe tier's share)
    oc_logical = vcpu_capacity(host, q) / host.logical_cpus  # the placement library counts per logical CPU
    for _attempt in range(10):
        p = build_problem(
            vcpus, mem_bytes, cpu if has_cpu else None, used, host, n_windows=spec.windows, cpu_overcommit=oc_logical,
            memory_overcommit=mem_oc, max_cpu_utilisation=q.max_cpu_utilisation, ready_bound_pct=bound,
            anti_affinity=anti, affinity=aff, io_iops=qos.io_iops, io_cap_iops=qos.io_cap,
        )
        pl = place(p, spec.policy)
        if pl.unplaceable:
            j, why = pl.unplaceable[0]
            if why == "demand" and qos.io_iops is not None and float(qos.io_iops[:, j].max()) > qos.io_cap:
                why = (f"its disk I/O peak of {float(qos.io_iops[:, j].max()):,.0f} IOPS exceeds a host's budget of "
                       f"{qos.io_cap:,.0f} IOPS at <= {q.io_latency_ms:g} ms")
            res.reason = (f"{len(pl.unplaceable)} VM(s) fit no empty host, e.g. {inv.names[j]!s} ({int(vcpus[j])} vCPUs, "
                          f"{mem_bytes[j] / 2**30:.1f} GiB): {_why(why, p, j, host, q)}")
            res.failed, res.unplaced_vms = "fit", len(pl.unplaceable)
            res.wall_s = time.perf_counter() - t0
            return res
        m = host_metrics(pl.host_of_vm, pl.n_hosts, host, vcpus, cpu, used)
        broken = qos.broken(pl.host_of_vm, pl.n_hosts, m, mem_bytes, vcpus)
        if not broken:
            break
        if "ready" in broken:
            bound *= 0.7  # windows hid a coincidence of peaks: tighten and place again
        if "memory" in broken:
            # fewer configured bytes per host: less reclamation, fewer faults. Below the fullest
            # offending host's ratio at once (steps above it would not change the placement).
            mem_oc = min(mem_oc, qos.worst_mem_ratio) * 0.9
        if "io" in broken:
            qos.io_cap *= 0.85  # read mix or window maxima hid a latency peak
    else:
        res.reason = "could not meet " + ", ".join(qos.describe(b) for b in broken) + " at full resolution"
        res.failed = "qos"
    if spec.optimise.enabled and not res.reason and not has_cpu:
        res.optimiser = {"status": "SKIPPED", "reason": "no CPU demand series"}
    elif spec.optimise.enabled and not res.reason and inv.n_vms <= spec.optimise.max_vms:
        better = _optimise(inv, spec, host, vcpus, mem_bytes, cpu, pl.host_of_vm, q, qos, mem_oc)
        res.optimiser = better["info"]
        if better["host_of_vm"] is not None:
            pl.host_of_vm, pl.n_hosts, m = better["host_of_vm"], better["n_hosts"], better["metrics"]
    last = qos.last(pl.host_of_vm, pl.n_hosts, mem_bytes, vcpus)
    res.memory_overcommit_used = mem_oc
    res.mem_hosts_short = last.get("mem_hosts_short", 0)
    res.mem_slowdown_worst = last.get("mem_slowdown_worst", 1.0)
    res.io_latency_worst_ms = last.get("io_latency_worst_ms", float("nan"))
    res.io_latency_mean_ms = last.get("io_latency_mean_ms", float("nan"))
    res.n_hosts_packed = pl.n_hosts
    if spec.gpu is not None:  # GPU demand: hosts for the GPU VMs and LLM services (tools/plan/gpu.py)
        from densim.tools.plan.gpu import gpu_hosts

        res.gpu = gpu_hosts(spec, c, inv.names, pl.n_hosts, vcpus=vcpus, mem_bytes=mem_bytes,
                            vcpu_cap=vcpu_capacity(host, q), mem_cap=mem_oc * host.usable_mem_bytes)
        if res.gpu["reason"] and not res.reason:
            res.reason, res.failed = res.gpu["reason"], "config"
        res.n_hosts_packed = res.gpu.get("hosts_packed", pl.n_hosts)
    res.feasible = not res.reason
    res.window_bound_pct = bound
    spare = ha_spare(q, res.n_hosts_packed)
    res.n_hosts = res.n_hosts_packed + spare
    lb = lower_bound_hosts(p)
    if res.gpu and not res.gpu["reason"]:  # the GPU VMs' share of GPUs, then the LLM services' own hosts
        lb = max(lb, res.gpu["lower_bound_gpu_vm_hosts"]) + res.gpu["hosts_inference"]
    if spec.hci is not None:  # the datastore of the hosts' disks may need more hosts than compute (tools/plan/hci.py)
        from densim.tools.plan.hci import hci_answer

        res.hci = hci_answer(spec, inv, res.n_hosts, *_vsan_licence(spec, host))
        if res.hci["binds"]:
            spare += res.hci["hosts_needed"] - res.n_hosts  # hosts for storage hold no VMs in the packing
            res.n_hosts = res.hci["hosts_needed"]
    res.lower_bound_hosts = lb + spare
    res.vms_per_host = inv.n_vms / res.n_hosts
    res.ready_pct_worst = float(m.ready_pct_worst.max(initial=0.0)) if has_cpu else float("nan")
    res.ready_pct_p99 = float(m.ready_pct_p99.max(initial=0.0)) if has_cpu else float("nan")
    util_host = m.cpu_util_mean if has_cpu else np.ones(pl.n_hosts)  # no demand series: every host busy (energy upper bound)
    res.cpu_util_mean = float(m.cpu_util_mean.mean()) * pl.n_hosts / res.n_hosts if has_cpu else float("nan")
    res.cpu_util_peak = float(m.cpu_util_peak.max(initial=0.0)) if has_cpu else float("nan")
    res.mem_peak_frac = float(m.mem_used_peak_frac.max(initial=0.0))
    res.host_of_vm = pl.host_of_vm
    util_all = np.concatenate([util_host, np.zeros(res.n_hosts - pl.n_hosts)])  # spares (and GPU-only hosts) idle
    watts = power_w(c.power, util_all)
    if res.gpu:
        from densim.tools.plan.gpu import gpu_watts_per_host

        watts = watts + gpu_watts_per_host(res.gpu, res.n_hosts)
    unknown = [None] * pl.n_hosts
    res.per_host = {"cpu_util_mean": m.cpu_util_mean.tolist() if has_cpu else unknown,
                    "cpu_util_peak": m.cpu_util_peak.tolist() if has_cpu else unknown,
                    "ready_pct_worst": m.ready_pct_worst.tolist() if has_cpu else unknown, "power_w": watts.tolist(),
                    "vms": np.bincount(pl.host_of_vm, minlength=pl.n_hosts).tolist()}
    from densim.tools.plan.licensing_carbon import candidate_carbon, licence_rows

    lic_rows = licence_rows(spec, inv.names, vcpus, n_hosts=res.n_hosts, sockets=host.sockets, cores_per_socket=host.cores_per_socket,
                            gpus_per_host=c.gpus.count if c.gpus is not None else 0,
                            vgpu_vms=res.gpu.get("vgpu_vms", 0) if res.gpu else 0)
    res.tco = tco_per_year(
        n_hosts=res.n_hosts, n_vms=inv.n_vms, host_capex_usd=float(capex), host_rack_units=c.rack_units,
        mean_power_w=watts, sockets=host.sockets, cores_per_socket=host.cores_per_socket, inputs=spec.cost,
        extra_licences=lic_rows,
    )
    res.carbon = candidate_carbon(spec, c.name, watts, res.n_hosts, inv.n_vms)
    from densim.plant import resolve_cpu
    from densim.tools.plan.power import capped_clock, rack_plan

    res.power = rack_plan(spec, c, res.n_hosts, inv.n_vms, float(np.sum(watts)))
    res.power["capped"] = capped_clock(c, float(resolve_cpu(c.cpu, builtin_catalog()).base_mhz))
    res.wall_s = time.perf_counter() - t0
    return res


def _vsan_licence(spec, host) -> tuple[int | None, float | None, int]:
    """(cores licensed per host, vSAN TiB per core, the order's minimum cores) of the first licensed product with a
    vSAN allowance, else (None, None, 0)."""
    from densim.tools.plan.licensing_carbon import resolve_products

    if spec.licensing is None:
        return None, None, 0
    from densim.models.licensing import cores_licensed_per_host

    for _use, p in resolve_products(spec):
        if p.vsan_tib_per_core is not None and p.rule == "per_core":
            return (cores_licensed_per_host(p, [host.cores_per_socket] * host.sockets), float(p.vsan_tib_per_core),
                    int(p.min_cores_per_order))
    return None, None, 0


_FILTER_WORDS = {
    "capacity": "more vCPUs than qos.vcpus_per_core x the host's physical cores, or more configured memory than "
                "qos.memory_overcommit x its usable memory",
    "numa_fit": "wider than one socket (vCPUs or memory)",
    "ready": "CPU Ready above qos.cpu_ready_pct even alone on a host",
    "anti_affinity": "its anti-affinity group",
}


def ha_spare(q, n_packed: int) -> int:
    """Spare hosts for HA admission on identical hosts: the largest of N+k (``ha_spare_hosts``), a percentage
    kept free (``s / (N + s) >= p / 100``, so ``s = ceil(N p / (100 - p))``) and one failure domain."""
    pct = math.ceil(n_packed * q.ha_reserve_percent / (100.0 - q.ha_reserve_percent) - 1e-9) if q.ha_reserve_percent else 0
    return int(max(q.ha_spare_hosts, pct, q.ha_domain_hosts))


def _why(filt: str, p, j: int, host, q) -> str:
    """The placement filter that refused VM ``j`` on an empty host, in words with the figures."""
    if filt == "demand":
        cw = None if p.cpu_w_mhz is None else float(p.cpu_w_mhz[:, j].max())
        cap = host.capacity_mhz * q.max_cpu_utilisation
        if cw is not None and cw > cap + 1e-6:
            return (f"demand: its CPU peak of {cw:,.0f} MHz exceeds the host's {cap:,.0f} MHz "
                    f"({host.cores} cores x {host.core_mhz:,.0f} MHz x SMT {host.smt_gain:g} x qos.max_cpu_utilisation)")
        if p.mem_w_bytes is not None and float(p.mem_w_bytes[:, j].max()) > host.usable_mem_bytes:
            return f"demand: its memory in use of {float(p.mem_w_bytes[:, j].max()) / 2**30:.1f} GiB exceeds the host's usable memory"
        return "demand"
    return f"{filt} ({_FILTER_WORDS[filt]})" if filt in _FILTER_WORDS else filt


def closest(results: list["CandidateResult"]) -> "CandidateResult | None":
    """The infeasible candidate that came nearest: one that placed every VM but broke a QoS bound at full
    resolution, else the one with the fewest VMs that fit no empty host, else any (configuration errors)."""
    if not results or any(r.feasible for r in results):
        return None
    rank = {"qos": 0, "fit": 1}
    return min(results, key=lambda r: (rank.get(r.failed, 2), r.unplaced_vms))


class _QosChecks:
    """The full-resolution QoS checks of one candidate: CPU Ready, and memory and storage where modelled."""

    def __init__(self, inv: Inventory, spec: PlanSpec, c: Candidate, host) -> None:
        from densim.tools.plan import qos as plan_qos
        from densim.catalog.core import CatalogError, builtin_catalog

        self.inv, self.spec, self.c, self.host, self.q = inv, spec, c, host, spec.qos
        self.cat = builtin_catalog()
        self.notes: list[str] = []
        self.infeasible = ""
        self._memo = None
        self.worst_mem_ratio = np.inf  # configured / usable memory of the fullest host breaking the memory bound
        self.has_cpu = inv.cpu_mhz is not None
        self.cpu = inv.cpu_mhz if self.has_cpu else inv.capacity_mhz[None, :].astype(np.float32)

        self.memory = spec.memory if spec.memory is not None and spec.memory.model != "none" else None
        from densim.tools.plan.memcheck import plan_images

        self.images = plan_images(spec, inv.names, self.cat, inv.tags)  # page sharing by guest image (spec.guest_images)
        if self.memory is not None:
            for field_, name in (("swap_device", self.memory.swap_device), ("swap_cache_device", self.memory.swap_cache_device),
                                 ("workload", self.memory.workload)):
                if name is None:
                    continue
                try:
                    self.cat.raw("memory_workloads" if field_ == "workload" else "devices", name)
                except (CatalogError, KeyError) as exc:
                    raise InputError(None, f"memory.{field_}", str(exc).strip("'\"")) from None
        self.io_iops = None
        self.io_cap = float("inf")
        self.ds = None
        st = c.storage
        if st is not None:
            try:
                self.ds = plan_qos.datastore_model(st, self.cat)
            except (CatalogError, KeyError) as exc:
                raise InputError(None, f"candidates.{c.name}.storage", str(exc).strip("'\"")) from None
            if not inv.has_disk:
                self.notes.append("storage not checked: the inventory has no disk read/write series")
                self.ds = None
            else:
                self.io_iops = (inv.disk_read_Bps + inv.disk_write_Bps) / np.float32(st.block_size_bytes)
                tot = float(inv.disk_read_Bps.sum(dtype=np.float64) + inv.disk_write_Bps.sum(dtype=np.float64))
                rf = float(inv.disk_read_Bps.sum(dtype=np.float64)) / tot if tot > 0 else st.read_fraction
                self.io_cap = plan_qos.max_iops_at_latency(self.ds, st, self.q.io_latency_ms / 1e3, rf)
                if self.io_cap <= 0:
                    self.infeasible = (f"its datastore's I/O latency at no load exceeds qos.io_latency_ms = "
                                       f"{self.q.io_latency_ms:g} ms")

    def _measure(self, host_of, n_hosts, mem_bytes, vcpus) -> dict:
        """Memory and storage figures of a placement (the last one is kept: ``last`` asks again)."""
        from densim.tools.plan import qos as plan_qos

        key = (int(n_hosts), np.asarray(host_of).tobytes(), np.asarray(mem_bytes).tobytes())
        if self._memo is not None and self._memo[0] == key:
            return self._memo[1]
        out: dict = {}
        if self.memory is not None:
            mc = plan_qos.memory_check(host_of, n_hosts, self.host.mem_bytes, np.asarray(mem_bytes, float),
                                       np.asarray(vcpus, float) * self.host.core_mhz, self.cpu, self.inv.mem_used_bytes,
                                       self.memory, self.cat, images=self.images, sockets=int(self.host.sockets))
            out["mem_hosts_short"] = mc.hosts_short
            out["mem_slowdown_worst"] = float(mc.slowdown_worst.max(initial=1.0))
            bad = mc.slowdown_worst > self.q.memory_slowdown + 1e-9
            cfg_h = np.bincount(host_of, weights=np.asarray(mem_bytes, float), minlength=n_hosts)
            self.worst_mem_ratio = float((cfg_h[bad] / self.host.usable_mem_bytes).max(initial=0.0)) if bad.any() else np.inf
        if self.ds is not None:
            sc = plan_qos.storage_check(host_of, n_hosts, self.inv.disk_read_Bps, self.inv.disk_write_Bps, self.c.storage, self.ds)
            out["io_latency_worst_ms"] = float(sc.latency_worst_s.max(initial=0.0)) * 1e3
            tot = sc.iops_peak.sum()
            out["io_latency_mean_ms"] = float(np.mean(sc.latency_mean_s)) * 1e3 if tot > 0 else 0.0
        self._memo = (key, out)
        return out

    def broken(self, host_of, n_hosts, m, mem_bytes, vcpus) -> list[str]:
        """Which bounds the placement breaks at full resolution: "ready", "memory", "io"."""
        out = []
        if self.has_cpu and m.ready_pct_worst.max(initial=0.0) > self.q.cpu_ready_pct + 1e-9:
            out.append("ready")
        got = self._measure(host_of, n_hosts, mem_bytes, vcpus)
        if got.get("mem_slowdown_worst", 1.0) > self.q.memory_slowdown + 1e-9:
            out.append("memory")
        if got.get("io_latency_worst_ms", 0.0) > self.q.io_latency_ms * (1 + 1e-9):
            out.append("io")
        return out

    def last(self, host_of, n_hosts, mem_bytes, vcpus) -> dict:
        return self._measure(host_of, n_hosts, mem_bytes, vcpus)

    def describe(self, what: str) -> str:
        return {"ready": f"CPU Ready <= {self.q.cpu_ready_pct} %", "memory": f"memory slowdown <= {self.q.memory_slowdown}",
                "io": f"I/O latency <= {self.q.io_latency_ms} ms"}.get(what, what)


def _optimise(inv, spec: PlanSpec, host, vcpus, mem_bytes, cpu, heuristic_host_of, q, qos: "_QosChecks",
              memory_overcommit: float) -> dict:
    """CP-SAT on integer sizes (vCPU slots, MiB, MHz per window) with lazily added windows.

    The heuristic placed against ``spec.windows`` windows; CP-SAT starts from the ``optimise.windows``
    windows of highest total demand (a relaxation, so its bound is a valid lower bound), and every
    window the answer overloads is added before solving again. The heuristic placement satisfies
    every window, so it is always a valid warm start and the answer is never worse.
    """
    from densim.placement.optimiser import optimise
    from densim.placement.tspack import host_metrics, window_max

    o = spec.optimise
    base = np.stack([np.asarray(vcpus, dtype=np.float64), np.ceil(np.asarray(mem_bytes) / 2**20)], axis=1)
    # the memory over-commit the heuristic ended with (lowered when the memory QoS check needed it)
    base_cap = np.array([np.floor(vcpu_capacity(host, q) + 1e-9), np.floor(memory_overcommit * host.usable_mem_bytes / 2**20)])
    cw_f = window_max(cpu, spec.windows)  # (W, N) MHz, as the heuristic saw them
    cw = np.ceil(cw_f)  # integer sizes for CP-SAT, rounded up (conservative)
    cap_f = host.capacity_mhz * q.max_cpu_utilisation
    cpu_cap = np.floor(cap_f)
    anti = inv.tags.get("anti_affinity")
    aff = inv.tags.get("affinity")
    if aff is not None and any(str(g) for g in aff):
        return {"host_of_vm": None, "info": {"status": "SKIPPED", "reason": "affinity groups are not modelled in CP-SAT"}}
    if (cw > cpu_cap).any() or (base > base_cap[None, :]).any():
        return {"host_of_vm": None, "info": {"status": "SKIPPED", "reason": "a VM exceeds an empty host"}}
    sel = list(np.argsort(-cw.sum(axis=1))[: o.windows])
    heur_hosts = int(heuristic_host_of.max()) + 1
    r = None
    over = np.zeros(0, dtype=np.int64)
    for _round in range(o.rounds):
        sizes = np.concatenate([base, cw[sel].T], axis=1)
        cap = np.concatenate([base_cap, np.full(len(sel), cpu_cap)])
        r = optimise(sizes, cap, anti_affinity=anti, warm_start=heuristic_host_of,
                     max_deterministic_time=o.max_deterministic_time, max_time_s=o.max_time_s)
        if r.n_hosts >= heur_hosts:  # nothing to gain over the heuristic; r.lower_bound still bounds it
            over = np.zeros(0, dtype=np.int64)
            break
        load = np.zeros((r.n_hosts, cw.shape[0]))
        np.add.at(load, r.host_of_vm, cw_f.T)
        over = np.flatnonzero((load > cap_f * (1 + 1e-9)).any(axis=0))
        if over.size == 0:
            break
        worst = over[np.argsort(-load[:, over].max(axis=0))][:16]
        sel = sorted(set(sel) | set(int(w) for w in worst))
    best = min(r.n_hosts, heur_hosts) if not over.size else heur_hosts
    info = {"status": r.status, "hosts": best, "lower_bound": r.lower_bound, "gap": (best - r.lower_bound) / best,
            "heuristic_hosts": heur_hosts, "windows_used": len(sel), "wall_s": r.wall_s, "adopted": False}
    if over.size:
        info["reason"] = f"windows still overloaded after {o.rounds} rounds"
    elif r.n_hosts < heur_hosts:
        from densim.tools.plan.tiering import in_use_for_capacity

        m = host_metrics(r.host_of_vm, r.n_hosts, host, vcpus, cpu, in_use_for_capacity(inv, spec))
        broken = qos.broken(r.host_of_vm, r.n_hosts, m, mem_bytes, vcpus)
        if m.mem_used_peak_frac.max(initial=0.0) > 1 + 1e-9:
            broken.append("memory in use")
        if not broken:
            info["adopted"] = True
            return {"host_of_vm": r.host_of_vm, "n_hosts": r.n_hosts, "metrics": m, "info": info}
        info["reason"] = "CP-SAT placement breaks " + ", ".join(qos.describe(b) for b in broken) + " at full resolution"
    return {"host_of_vm": None, "info": info}


@dataclass
class PlanResult:
    inventory: Inventory
    spec: PlanSpec
    results: list[CandidateResult]
    rightsizing: Any = None
    wall_s: float = 0.0
    notes: list[str] = field(default_factory=list)  # warnings about the inventory and the plan (shown and in summary.json)
    time_remaining: dict | None = None  # with a forecast section (densim.tools.plan.forecast)
    confidence: dict | None = None  # data-quality rating, its facts and the host-count interval (densim.tools.plan.confidence)
    waves: dict | None = None  # the migration programme onto the chosen candidate (densim.tools.plan.waves)

    def ranked(self) -> list[CandidateResult]:
        return sorted(self.results, key=lambda r: (not r.feasible, r.tco.get("per_vm_usd", float("inf")), r.n_hosts))

    def closest(self) -> CandidateResult | None:
        """When no candidate is feasible, the one that came nearest (None otherwise)."""
        return closest(self.results)


def plan(inv: Inventory, spec: PlanSpec, progress=None, seed: int = 42, phase=None, groups_file=None) -> PlanResult:
    """Every candidate planned for ``inv``; ``progress(name)``, if given, is called as each candidate starts, ``phase(text)``
    as the host-count interval starts. ``seed`` draws its day resamples (:mod:`densim.tools.plan.confidence`).
    With ``spec.waves`` (or a ``groups_file``, which needs it), the migration waves onto the chosen candidate
    (:mod:`densim.tools.plan.waves`)."""
    from densim.tools.plan.rightsizing import rightsize

    from densim.tools.plan.licensing_carbon import grid_intensity_mean, resolve_products

    t0 = time.perf_counter()
    resolve_products(spec)  # unknown licence products fail before any placing
    if spec.carbon is not None:
        grid_intensity_mean(spec.carbon)  # so does an unreadable grid series
        unknown = sorted(set(spec.carbon.embodied) - {c.name for c in spec.candidates})
        if unknown:
            raise InputError(None, f"carbon.embodied.{unknown[0]}", "no candidate of that name; candidates: "
                             + ", ".join(c.name for c in spec.candidates))
    vcpus, mem = inv.vcpus, inv.mem_bytes
    rs = None
    notes = list(inv.notes)
    if inv.cpu_mhz is None:
        notes.append(NO_CPU_NOTE.format(oc=spec.qos.vcpus_per_core))
    if inv.fmt == "opendc" or inv.vm_start_s is not None:
        notes.append(tasks_note(inv))
    r = spec.rightsizing
    if r.enabled and inv.cpu_mhz is None and inv.mem_used_bytes is None:
        notes.append("right-sizing skipped: the inventory has no demand series (sizes only), nothing to right-size from")
    elif r.enabled and inv.is_snapshot and not r.from_snapshot:
        notes.append(SNAPSHOT_SKIP)
    elif r.enabled:
        if inv.is_snapshot:
            notes.append(SNAPSHOT_WARN)
        rs = rightsize(inv, r.percentile, r.headroom)
        vcpus, mem = rs.vcpus_rec, rs.mem_rec_bytes
    results = []
    for c in spec.candidates:
        if progress is not None:
            progress(c.name)
        results.append(plan_candidate(inv, spec, c, vcpus=vcpus, mem_bytes=mem))
    tr = None
    if spec.forecast is not None:
        from densim.tools.plan.forecast import plan_time_remaining

        tr = plan_time_remaining(inv, spec, results, host_type_of)
    from densim.tools.plan.confidence import confidence

    out = PlanResult(inv, spec, results, rs, time.perf_counter() - t0, notes, tr)
    if phase is not None and spec.confidence.resamples:
        phase(f"host-count interval ({spec.confidence.resamples} resamples)")
    out.confidence = confidence(out, plan_candidate, seed)
    if groups_file is not None and spec.waves is None:
        raise InputError(None, "--groups", "a groups file needs a waves: section in the candidates file (the migration "
                         "waves it groups VMs for)")
    if spec.waves is not None:
        from densim.tools.plan.waves import plan_waves

        if phase is not None:
            phase("migration waves and the landing cluster's engine run")
        out.waves = plan_waves(out, spec.waves, groups_file)
    out.wall_s = time.perf_counter() - t0
    return out


def tasks_note(inv: Inventory) -> str:
    """The plan places every VM at once; say so when the inventory's VMs arrive and leave."""
    import numpy as np

    most = ""
    if inv.vm_start_s is not None and inv.vm_end_s is not None:
        s, e = np.asarray(inv.vm_start_s, float), np.asarray(inv.vm_end_s, float)
        ok = np.isfinite(s)
        ends = np.where(np.isfinite(e), e, np.inf)[ok]
        starts = np.sort(s[ok])
        if starts.size:
            running = np.arange(1, starts.size + 1) - np.searchsorted(np.sort(ends), starts, side="right")
            most = f", at most {int(running.max()):,} at once"
    return (f"the inventory's VMs arrive and leave ({inv.n_vms:,} of them{most}), but this plan places them all at once, "
            "as if every VM ran the whole time: its host counts are an upper bound. To size for tasks that come and go, "
            "run the trace with densim run (scheduling: online placement, wait queue) over host counts, e.g. with densim "
            "sweep on cluster.hosts[0].count, and read summary.scheduling (docs/howto/tasks-that-arrive-and-leave.md)")


NO_CPU_NOTE = ("no CPU demand series in the inventory (no CPU usage exported): VMs placed by vCPUs (qos.vcpus_per_core = "
               "{oc:g} per physical core) and memory only; CPU Ready not checked; energy with every host fully busy (an upper bound)")
SNAPSHOT_SKIP = ("right-sizing skipped: the inventory has one sample per VM (a snapshot, such as an RVTools export), and one "
                 "sample says nothing about peaks; set rightsizing.from_snapshot: true (or --rightsize-snapshot) to right-size "
                 "from it anyway")
SNAPSHOT_WARN = ("right-sized from a single sample per VM (a snapshot): one sample says nothing about peaks, so the recommended "
                 "vCPUs and memory may be far below what the VMs need at their busiest")
