"""Hypervisor features, NUMA policy and processor power management. Owned by the virtualization model.

Each mechanism of the overhead model (modelling guide §3.4) is a switch here; the parameters of
each mechanism live in ``catalog/virtualization.yaml``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from densim.units import PosSeconds

_CFG = ConfigDict(defer_build=True, allow_inf_nan=False, frozen=True, extra="forbid", populate_by_name=True)


class ShadowPagingSettings(BaseModel):
    """Shadow page-table upkeep under ``paging: shadow`` (modelling guide §3.4; :mod:`densim.models.virtualization`).

    ``model`` names a catalog ``virt_shadow_paging`` entry (each default there carries its source or
    "(E)"); every field set here overrides that entry. The two rates are workload defaults: a VM
    group's ``workload`` mapping may set its own ``pt_updates_per_kinstr`` and
    ``context_switches_per_kinstr``.
    """

    model_config = _CFG
    model: str = Field(default="kvm-shadow", description="catalog 'virt_shadow_paging' entry")
    pt_updates_per_kinstr: float | None = Field(default=None, ge=0, description="guest page-table writes per 1,000 instructions")
    context_switches_per_kinstr: float | None = Field(default=None, ge=0, description="guest CR3 loads per 1,000 instructions")
    remote_flush_share: float | None = Field(default=None, ge=0, le=1, description="share of page-table writes that flush the VM's other vCPUs")
    refresh_base_share: float | None = Field(default=None, ge=0, le=1, description="share of CR3 loads that rebuild shadow tables on a lone VM")
    refresh_share_per_vm: float | None = Field(default=None, ge=0, le=1, description="added refresh share per other VM on the host")
    refresh_faults: float | None = Field(default=None, ge=0, description="hidden page faults to rebuild an address space after a refresh")


class HypervisorFeatures(BaseModel):
    """Switches of the hypervisor and host configuration."""

    model_config = _CFG
    paging: Literal["ept", "shadow"] = Field(default="ept", description="hardware-assisted (EPT/NPT) or shadow page tables")
    host_hugepages: bool = Field(default=False, description="guest memory backed by 2 MB host pages (hugetlbfs or transparent hugepages)")
    guest_large_pages: bool = Field(default=True, description="guest applications that ask for large pages (JVM, DB) get them")
    network: Literal["emulated", "virtio", "vhost", "sriov"] = "virtio"
    storage: Literal["emulated", "virtio"] = "virtio"
    exit_costs: str | None = Field(default=None, description="catalog 'virt_exit_costs' entry; default: the platform's")
    shadow: ShadowPagingSettings = Field(default_factory=ShadowPagingSettings, description="shadow page-table upkeep (paging: shadow)")


class NumaSettings(BaseModel):
    """Where VMs run and allocate memory."""

    model_config = _CFG
    policy: Literal["none", "manual", "auto"] = Field(
        default="none", description="none: the host scheduler spreads vCPUs; manual: pinning below; auto: node binding at start + periodic rebalancing"
    )
    pinning: dict[str, int] = Field(default_factory=dict, description="manual policy: VM (or VM group) name -> node index")
    guest_numa_aware: bool = Field(default=False, description="the guest sees a virtual NUMA topology (vNUMA) and uses it")
    rebalance_interval_s: PosSeconds = Field(default=300.0, alias="rebalance_interval", description="auto policy: how often the balancer looks")
    imbalance_threshold: float = Field(default=0.1, gt=0, le=1, description="auto policy: move a VM when node loads differ by more than this share")
    migrate_cycles_per_byte: float = Field(default=2.0, ge=0, description="host CPU to move a VM's memory to another node (E)")


class PowerManagement(BaseModel):
    """Processor power management by the power control unit."""

    model_config = _CFG
    turbo: bool = True
    power_gating: bool = Field(default=True, description="idle cores enter C6 and stop leaking")
    smt: bool = Field(default=True, description="hyper-threading on (throughput factor smt_gain per core)")


class VirtualizationSettings(BaseModel):
    """Hypervisor features, NUMA policy and processor power management. Owned by the virtualization model.

    model: none (the default) switches the mechanism off; ``kvm`` applies the overhead, NUMA and
    power models with the switches below.
    """

    model_config = _CFG

    model: Literal["none", "kvm"] = "none"
    hypervisor: HypervisorFeatures = Field(default_factory=HypervisorFeatures)
    numa: NumaSettings = Field(default_factory=NumaSettings)
    power: PowerManagement = Field(default_factory=PowerManagement)
