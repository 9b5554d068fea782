"""Virtualization overhead per unit of work: event rates x event costs (modelling guide §3.4).

Every mechanism is a pure function returning CPU cycles per unit of work (per kilo-instruction,
per I/O, per packet) so the caller can sum them into a request's cycle demand:

* **VM exits**: ``exits x cost``; a light exit is handled in the hypervisor kernel (EOI, interrupt
  window), a heavy exit returns to the user-space device model (QEMU) (costs 1,000-10,000 cycles [S17o]).
* **Paging**: under hardware-assisted paging (EPT/NPT) a TLB miss walks both the guest and the nested
  table: ``(n+1)(m+1) - 1`` references for ``n``-level guest and ``m``-level host tables (24 for 4 KB
  on both, 15 for 2 MB on both, 4 natively; Bhargava et al., ASPLOS 2008). Under shadow paging the walk
  is native length, but every guest page-table update and context switch exits to the hypervisor.
* **Page size**: 2 MB translations widen TLB reach; the miss rate follows the power law of cache
  misses, ``m ~ reach^-alpha`` with ``alpha = 0.5`` (Hartstein et al., "Cache miss behavior: is it
  sqrt(2)?", CF 2006) (E). A translation is only as large as the smaller of the guest and host page.
* **Device I/O path** per I/O or per packet: emulated, paravirtual (virtio in QEMU), vhost (in-kernel
  virtio) and SR-IOV (virtual function passed through) differ in exits, host copy cycles and
  interrupt handling. Parameters and sources live in ``catalog/virtualization.yaml``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from densim.models.numa import NumaSpec
from densim.units import MHz

PAGE_4K_BYTES = 4096
PAGE_2M_BYTES = 2 * 1024 * 1024
Paging = Literal["native", "shadow", "ept"]
IoModel = Literal["native", "emulated", "virtio", "vhost", "sriov"]

_CFG = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)


def page_table_levels(page_bytes: int) -> int:
    """Levels of an x86-64 page walk: 4 for 4 KB pages, 3 for 2 MB, 2 for 1 GB."""
    return {PAGE_4K_BYTES: 4, PAGE_2M_BYTES: 3, 1024**3: 2}[int(page_bytes)]


def walk_references(guest_page_bytes: int, host_page_bytes: int, paging: Paging) -> int:
    """Memory references for one TLB-miss walk.

    native/shadow: the guest table's ``n`` levels (shadow tables map guest-virtual to host-physical
    directly, at the smaller page size); ept: ``(n+1)(m+1) - 1``.
    """
    n = page_table_levels(guest_page_bytes)
    if paging == "ept":
        m = page_table_levels(host_page_bytes)
        return (n + 1) * (m + 1) - 1
    if paging == "shadow":
        return page_table_levels(min(guest_page_bytes, host_page_bytes))
    return n


def walk_cycles(guest_page_bytes: int, host_page_bytes: int, paging: Paging, leaf_ref_cycles: float, upper_ref_cycles: float) -> float:
    """Cycles of one TLB-miss walk, splitting references into 4 KB-leaf and the rest.

    A 4 KB leaf table covers 2 MB, so the leaf entries of a large memory footprint do not stay in
    the paging-structure caches; upper levels and 2 MB leaves do (E). Under EPT each of the ``n``
    guest references and the final guest-physical address need an ``m``-level host walk:
    ``n`` guest refs (1 leaf) + ``(n+1) m`` host refs (``n+1`` leaves).
    native/shadow: ``n`` refs of which 1 leaf at the translation's page size.
    """
    n = page_table_levels(guest_page_bytes)
    if paging == "ept":
        guest_leaf4k = 1 if guest_page_bytes == PAGE_4K_BYTES else 0
        host_leaf4k = (n + 1) if host_page_bytes == PAGE_4K_BYTES else 0
        total = walk_references(guest_page_bytes, host_page_bytes, paging)
        leaf = guest_leaf4k + host_leaf4k
        return float(leaf * leaf_ref_cycles + (total - leaf) * upper_ref_cycles)
    page = min(guest_page_bytes, host_page_bytes) if paging == "shadow" else guest_page_bytes
    levels = page_table_levels(page)
    leaf = 1 if page == PAGE_4K_BYTES else 0
    return float(leaf * leaf_ref_cycles + (levels - leaf) * upper_ref_cycles)


def tlb_reach_bytes(entries: int, page_bytes: int) -> int:
    """Memory covered by a TLB: ``entries x page size``."""
    return int(entries) * int(page_bytes)


def tlb_misses_per_kinstr(misses_per_kinstr_at_ref, reach_bytes, ref_reach_bytes, alpha: float = 0.5):
    """TLB misses per 1,000 instructions at another reach: ``m_ref (reach/reach_ref)^-alpha``, never above ``m_ref`` x (reach_ref/reach)."""
    ratio = np.asarray(reach_bytes, dtype=float) / float(ref_reach_bytes)
    out = np.asarray(misses_per_kinstr_at_ref, dtype=float) * ratio ** (-alpha)
    return out[()] if out.ndim == 0 else out


def exit_cycles(exits, cycles_per_exit):
    """Cycles spent in VM exits: ``exits x cycles per exit``."""
    out = np.asarray(exits, dtype=float) * np.asarray(cycles_per_exit, dtype=float)
    return out[()] if out.ndim == 0 else out


def paging_cycles_per_kinstr(tlb_misses_per_kinstr_, cycles_per_walk):
    """Cycles per 1,000 instructions spent walking page tables: ``misses x cycles per walk``."""
    out = np.asarray(tlb_misses_per_kinstr_, dtype=float) * cycles_per_walk
    return out[()] if np.ndim(out) == 0 else out


def shadow_paging_cycles_per_kinstr(pt_updates_per_kinstr, context_switches_per_kinstr, cycles_per_exit, context_switch_cycles=None):
    """Shadow-table upkeep of a lone single-vCPU VM: each guest page-table write (write-protect fault,
    emulated and synced into the shadow table) and each CR3 load (context switch) exits:
    ``pt_updates x cycles_per_exit + context_switches x context_switch_cycles`` (default the same cost).

    :func:`shadow_sync_cycles_per_kinstr` adds what grows with vCPUs per VM and VMs per host.
    """
    cs = cycles_per_exit if context_switch_cycles is None else context_switch_cycles
    out = np.asarray(pt_updates_per_kinstr, dtype=float) * cycles_per_exit + np.asarray(context_switches_per_kinstr, dtype=float) * cs
    return out[()] if np.ndim(out) == 0 else out


class ShadowPaging(BaseModel):
    """How a hypervisor keeps shadow page tables in step with the guest's (catalog ``virt_shadow_paging``).

    Rates per 1,000 guest instructions are the workload's defaults (a VM group's ``workload`` may set
    its own ``pt_updates_per_kinstr`` / ``context_switches_per_kinstr``); the other fields describe the
    hypervisor's shadow MMU. See :func:`shadow_sync_cycles_per_kinstr`.
    """

    model_config = _CFG
    name: str = "custom"
    pt_updates_per_kinstr: float = Field(ge=0, description="guest page-table writes per 1,000 instructions (each traps)")
    context_switches_per_kinstr: float = Field(ge=0, description="guest CR3 loads (process switches) per 1,000 instructions")
    remote_flush_share: float = Field(ge=0, le=1, description="share of page-table writes that narrow a mapping and so flush the shadow TLB entries on the VM's other vCPUs (one IPI + exit each)")
    refresh_base_share: float = Field(ge=0, le=1, description="share of CR3 loads that rebuild the incoming address space's shadow tables on a lone VM")
    refresh_share_per_vm: float = Field(ge=0, le=1, description="added share of CR3 loads that find their shadow tables reclaimed, per other VM on the host")
    refresh_faults: float = Field(ge=0, description="hidden page faults (each a light exit) to rebuild an address space's working translations after a refresh")
    source: str = ""
    notes: str = ""


def shadow_refresh_share(shadow: ShadowPaging, vms_on_host):
    """Share of CR3 loads that rebuild shadow tables: ``min(1, r0 + r_vm (n - 1))`` for ``n`` VMs on the host."""
    n = np.maximum(np.asarray(vms_on_host, dtype=float), 1.0)
    out = np.minimum(1.0, shadow.refresh_base_share + shadow.refresh_share_per_vm * (n - 1.0))
    return out[()] if out.ndim == 0 else out


def shadow_sync_cycles_per_kinstr(pt_updates_per_kinstr, context_switches_per_kinstr, exits: "ExitCosts", shadow: ShadowPaging, *,
                                  vcpus=1, vms_on_host=1):
    """Shadow page-table synchronisation, cycles per 1,000 guest instructions (arrays broadcast).

    ``u (C_heavy + s_flush (v - 1) C_light) + c C_light (1 + r(n) F)`` with ``u`` page-table writes
    and ``c`` CR3 loads per 1,000 instructions, ``v`` vCPUs of the VM, ``n`` VMs on its host:

    * a trapped page-table write is emulated and synced into the shadow table (``C_heavy``); when it
      narrows a mapping (share ``s_flush``) the stale shadow TLB entries of the VM's other ``v - 1``
      vCPUs are flushed, by an IPI that makes each running vCPU exit (``C_light`` each; KVM release
      28, "Flush remote tlbs when reducing shadow pte permissions");
    * a CR3 load exits (``C_light``); a share ``r(n)`` (:func:`shadow_refresh_share`) finds the incoming
      address space's shadow tables dropped (refreshed on the switch, or reclaimed for other VMs'
      shadow pages) and rebuilds its working translations with ``F`` hidden page faults, each a light exit.

    With ``v = 1``, ``n = 1`` and no base refresh it is :func:`shadow_paging_cycles_per_kinstr`.
    """
    v = np.maximum(np.asarray(vcpus, dtype=float), 1.0)
    ch, cl = float(exits.heavy_cycles), float(exits.light_cycles)
    per_update = ch + shadow.remote_flush_share * (v - 1.0) * cl
    per_switch = cl * (1.0 + shadow_refresh_share(shadow, vms_on_host) * shadow.refresh_faults)
    out = np.asarray(pt_updates_per_kinstr, dtype=float) * per_update + np.asarray(context_switches_per_kinstr, dtype=float) * per_switch
    return out[()] if np.ndim(out) == 0 else out


class ExitCosts(BaseModel):
    """Cost of one VM exit + re-entry, by where it is handled."""

    model_config = _CFG
    name: str = "custom"
    light_cycles: float = Field(gt=0, description="exit handled in the hypervisor kernel (EOI, MSR, interrupt window)")
    heavy_cycles: float = Field(gt=0, description="exit returned to the user-space device model (QEMU)")
    source: str = ""


class IoPath(BaseModel):
    """Per-operation cost of one virtual device model (one I/O or one packet).

    ``heavy_exits`` / ``light_exits`` per operation, ``host_cycles`` of copying and backend work
    outside the vCPU (QEMU or vhost thread, host kernel), ``interrupts`` delivered to the guest per
    operation (after coalescing), each costing ``light_exits_per_interrupt`` exits.
    """

    model_config = _CFG
    name: str
    heavy_exits: float = Field(default=0.0, ge=0)
    light_exits: float = Field(default=0.0, ge=0)
    host_cycles: float = Field(default=0.0, ge=0)
    interrupts: float = Field(default=0.0, ge=0)
    light_exits_per_interrupt: float = Field(default=0.0, ge=0)
    source: str = ""
    notes: str = ""


def io_path_cycles(path: IoPath, exits: ExitCosts) -> tuple[float, float]:
    """(vCPU cycles, host-thread cycles) per operation on ``path``.

    vCPU side: ``heavy x C_heavy + (light + interrupts x exits/interrupt) x C_light``;
    host side: ``host_cycles`` (work done by QEMU, vhost or the host kernel outside the vCPU).
    """
    light = path.light_exits + path.interrupts * path.light_exits_per_interrupt
    vcpu = float(exit_cycles(path.heavy_exits, exits.heavy_cycles) + exit_cycles(light, exits.light_cycles))
    return vcpu, float(path.host_cycles)


class TlbSpec(BaseModel):
    """Data-TLB entries of a core (first level + second level, by page size)."""

    model_config = _CFG
    name: str = "custom"
    entries_4k: int = Field(gt=0)
    entries_2m: int = Field(gt=0)
    leaf_ref_cycles: float = Field(gt=0, description="cycles per walk reference to a leaf table of 4 KB pages (large footprint: misses the paging-structure caches and L1/L2)")
    upper_ref_cycles: float = Field(gt=0, description="cycles per reference to an upper-level or 2 MB-leaf table entry (small footprint: cached)")
    source: str = ""


def translation_page_bytes(guest_page_bytes: int, host_page_bytes: int, paging: Paging) -> int:
    """Size of the TLB entry a guest access ends up with: the smaller of guest and host page."""
    if paging == "native":
        return int(guest_page_bytes)
    return int(min(guest_page_bytes, host_page_bytes))


def tlb_walk_cycles_per_kinstr(
    misses_per_kinstr_4k: float,
    guest_large_fraction: float,
    tlb: TlbSpec,
    *,
    host_hugepages: bool,
    paging: Paging,
    alpha: float = 0.5,
) -> float:
    """Page-walk cycles per 1,000 instructions for a workload.

    ``misses_per_kinstr_4k`` is the miss rate with 4 KB translations everywhere; a share
    ``guest_large_fraction`` of the misses falls in memory the guest maps with 2 MB pages.
    Each region gets its translation size (smaller of guest and host page), a miss rate scaled
    by TLB reach, and a walk length for the paging mode.
    """
    host_page = PAGE_2M_BYTES if host_hugepages else PAGE_4K_BYTES
    ref_reach = tlb_reach_bytes(tlb.entries_4k, PAGE_4K_BYTES)
    total = 0.0
    for share, guest_page in ((1.0 - guest_large_fraction, PAGE_4K_BYTES), (guest_large_fraction, PAGE_2M_BYTES)):
        if share <= 0:
            continue
        tpage = translation_page_bytes(guest_page, host_page, paging)
        entries = tlb.entries_4k if tpage == PAGE_4K_BYTES else tlb.entries_2m
        misses = tlb_misses_per_kinstr(share * misses_per_kinstr_4k, tlb_reach_bytes(entries, tpage), ref_reach, alpha)
        walk = walk_cycles(guest_page, host_page, paging, tlb.leaf_ref_cycles, tlb.upper_ref_cycles)
        total += float(paging_cycles_per_kinstr(misses, walk))
    return total


# ---- the virtualization platform of a server (catalog section ``virt_platforms``)
class CorePower(BaseModel):
    model_config = _CFG
    uncore_w: float = Field(ge=0)
    core_dynamic_w_at_base: float = Field(gt=0)
    core_leakage_w: float = Field(ge=0)
    gated_core_w: float = Field(default=0.0, ge=0)
    source: str = ""


class StorageRef(BaseModel):
    model_config = _CFG
    device: str
    count: int = Field(default=1, gt=0)


class PlatformSpec(BaseModel):
    """What the virtualization model needs about a server beyond its ServerSpec."""

    model_config = _CFG
    name: str
    numa: NumaSpec
    tlb: TlbSpec
    all_core_turbo_mhz: MHz | None = Field(default=None, alias="all_core_turbo")
    exit_costs: str
    power: CorePower
    storage: StorageRef
    nic_gbps: float = Field(gt=0)
    source: str = ""
