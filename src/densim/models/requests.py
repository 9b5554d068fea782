"""Request-driven workloads: closed populations of users with think times (modelling guide §0.4).

A request class (web, Java application, mail, ...) is a closed population of ``users`` that think
for ``think_s`` between requests. A request visits one or more VMs (web server then NFS server;
application server then database); in each it executes instructions on the VM's vCPUs, issues disk
I/Os and packets. Its cycles come from the CPI model (NUMA, page walks) plus the virtual I/O path
costs (:mod:`densim.models.virtualization`); host CPU contention stretches them (CPU ready), and the
response time per class comes from exact MVA (:func:`densim.models.queueing.mva`) over the stations:

* one multi-server station per VM visited (its vCPUs),
* one single-server station per VM for the device back-end thread (QEMU or vhost) when it has work,
* a delay station for storage (device response at the offered IOPS) and for the wire.

QoS is a response-time bound met by a share of requests (e.g. 95 % within 1 s) in every interval;
the quantile of the response time is taken as exponential with the MVA mean (E).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from densim.models.numa import NumaSpec, cycles_per_instruction
from densim.models.queueing import MvaResult, erlang_c, mva
from densim.models.virtualization import ExitCosts, IoPath, Paging, ShadowPaging, TlbSpec, io_path_cycles, shadow_sync_cycles_per_kinstr, tlb_walk_cycles_per_kinstr
from densim.units import PosSeconds, PosMemBytes

_CFG = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)


class VmRole(BaseModel):
    """A VM in a tile."""

    model_config = _CFG
    name: str
    vcpus: int = Field(gt=0)
    memory_bytes: PosMemBytes = Field(alias="memory")


class Visit(BaseModel):
    """Work one request does in one VM (per visit)."""

    model_config = _CFG
    vm: str
    visits: float = Field(default=1.0, gt=0)
    instructions_m: float = Field(gt=0, description="million guest instructions per visit")
    cpi_core: float = Field(default=1.0, gt=0)
    llc_mpki: float = Field(default=0.0, ge=0, description="last-level-cache misses to DRAM per 1,000 instructions")
    tlb_mpki_4k: float = Field(default=0.0, ge=0, description="TLB misses per 1,000 instructions with 4 KB translations")
    guest_large_fraction: float = Field(default=0.0, ge=0, le=1, description="share of TLB misses in memory the guest maps with 2 MB pages")
    pt_updates_per_kinstr: float = Field(default=0.02, ge=0, description="guest page-table writes per 1,000 instructions (shadow paging exits); (E) as catalog kvm-shadow")
    context_switches_per_kinstr: float = Field(default=0.005, ge=0, description="guest CR3 loads per 1,000 instructions; (E) as catalog kvm-shadow")
    disk_ios: float = Field(default=0.0, ge=0)
    disk_read_fraction: float = Field(default=0.7, ge=0, le=1)
    packets: float = Field(default=0.0, ge=0, description="network packets sent + received per visit")
    net_bytes: float = Field(default=0.0, ge=0)


class LoadProfile(BaseModel):
    """Users active in each interval: ``users x (1 + amplitude sin(2 pi (t/period + phase)))``."""

    model_config = _CFG
    shape: Literal["constant", "wave"] = "constant"
    amplitude: float = Field(default=0.0, ge=0, lt=1)
    period_intervals: float = Field(default=12.0, gt=0)


class RequestClass(BaseModel):
    """A closed population driving one chain of VMs, with its QoS."""

    model_config = _CFG
    name: str
    users: int = Field(gt=0)
    think_s: PosSeconds = Field(alias="think")
    qos_bound_s: PosSeconds = Field(alias="qos_bound")
    qos_share: float = Field(default=0.95, gt=0, lt=1)
    load: LoadProfile = Field(default_factory=LoadProfile)
    visits: list[Visit]
    source: str = ""
    notes: str = ""


@dataclass(frozen=True)
class PathCosts:
    """Per-platform, per-configuration costs a request pays."""

    exits: ExitCosts
    network: IoPath
    storage: IoPath
    tlb: TlbSpec
    numa: NumaSpec
    paging: Paging
    host_hugepages: bool
    guest_large_pages: bool
    shadow: ShadowPaging | None = None  # needed when paging is "shadow"


def visit_cycles(visit: Visit, costs: PathCosts, remote_frac: float, *, vcpus: int = 1, vms_on_host: int = 1) -> tuple[float, float]:
    """(vCPU cycles, host back-end cycles) of one visit.

    vCPU: ``instructions x CPI(r, walks) + disk_ios x c_io + packets x c_pkt`` (exits on the vCPU);
    host: ``disk_ios x h_io + packets x h_pkt`` (QEMU/vhost/host-kernel work outside the vCPU).
    Under shadow paging the walks include shadow page-table synchronisation for a VM of ``vcpus``
    vCPUs on a host running ``vms_on_host`` VMs (:func:`~densim.models.virtualization.shadow_sync_cycles_per_kinstr`).
    """
    g = visit.guest_large_fraction if costs.guest_large_pages else 0.0
    walk = tlb_walk_cycles_per_kinstr(visit.tlb_mpki_4k, g, costs.tlb, host_hugepages=costs.host_hugepages, paging=costs.paging)
    if costs.paging == "shadow":
        if costs.shadow is None:
            raise ValueError("shadow paging needs PathCosts.shadow (a catalog 'virt_shadow_paging' entry)")
        # a trapped page-table write is emulated (heavy); a CR3 load is handled in the hypervisor (light)
        walk += float(shadow_sync_cycles_per_kinstr(visit.pt_updates_per_kinstr, visit.context_switches_per_kinstr, costs.exits,
                                                    costs.shadow, vcpus=vcpus, vms_on_host=vms_on_host))
    cpi = float(cycles_per_instruction(visit.cpi_core, visit.llc_mpki, remote_frac, costs.numa, walk))
    net_v, net_h = io_path_cycles(costs.network, costs.exits)
    io_v, io_h = io_path_cycles(costs.storage, costs.exits)
    vcpu = visit.instructions_m * 1e6 * cpi + visit.disk_ios * io_v + visit.packets * net_v
    host = visit.disk_ios * io_h + visit.packets * net_h
    return vcpu * visit.visits, host * visit.visits


def ready_stretch(utilisation, capacity_cores, burstiness: float = 1.0):
    """CPU-ready stretch of CPU work on a pool of ``capacity_cores`` core-equivalents at ``utilisation``.

    M/M/c residence over service time: ``1 + b C(c, A) / (c - A)`` with ``A = U c`` (Erlang C,
    continuous in ``c``) and ``b = (c_a^2 + c_s^2)/2`` the Allen-Cunneen burstiness factor.
    Infinite at ``U >= 1``.
    """
    u = np.asarray(utilisation, dtype=float)
    c = np.asarray(capacity_cores, dtype=float)
    a = u * c
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(u < 1.0, 1.0 + burstiness * erlang_c(c, a) / (c - a), np.inf)
    return out[()] if out.ndim == 0 else out


def solve_class(demands_s, servers, delay, users: int, think_s: float) -> MvaResult:
    """Exact MVA for one request class (reuses :func:`densim.models.queueing.mva`)."""
    return mva(np.asarray(demands_s, float), int(users), think_s=float(think_s), servers=np.asarray(servers, float), delay=np.asarray(delay, bool))


def response_quantile_s(mean_s, share: float):
    """``share`` quantile of an exponential response time with mean ``mean_s``: ``-R ln(1-share)``."""
    out = np.asarray(mean_s, dtype=float) * -math.log(1.0 - share)
    return out[()] if out.ndim == 0 else out


def qos_margin(mean_s, bound_s: float, share: float):
    """``1 - quantile/bound``: >= 0 when the share of requests within the bound is met."""
    out = 1.0 - np.asarray(response_quantile_s(mean_s, share), dtype=float) / bound_s
    return out[()] if out.ndim == 0 else out


def users_in_interval(rc: RequestClass, interval, phase: float = 0.0):
    """Active users in each interval index under the class's load profile (at least 1)."""
    t = np.asarray(interval, dtype=float)
    if rc.load.shape == "constant" or rc.load.amplitude == 0:
        m = np.ones_like(t)
    else:
        m = 1.0 + rc.load.amplitude * np.sin(2 * np.pi * (t / rc.load.period_intervals + phase))
    return np.maximum(1, np.rint(rc.users * m)).astype(int)
