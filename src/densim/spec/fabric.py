"""Shared storage pools, fabrics and batch jobs (scenario section ``fabric``).

``model: none`` (the default) switches the mechanism off. ``model: fluid`` runs the batch jobs of
``tenants`` over the storage they name with max-min fair sharing of every shared component
(:mod:`densim.models.jobs`). Example::

    fabric:
      model: fluid
      local_storage: {device: intel-dc-p4600-1.6tb, count: 2}
      pools:
        - {name: jbof, target: nvmeof-jbof-32bay-p4600}   # 2 P4600 per attached server
      tenants:
        - name: tenant-a
          hosts: cluster-a          # a cluster.hosts group (by name)
          vms: datanodes-a          # a vms group, spread evenly over those hosts
          job: spark-terasort-1tb   # a catalog batch_profiles entry
          storage: jbof             # a pool name, or "local"
          transport: nvmeof-rdma    # a catalog transports entry
          storage_nic: connectx-4-2x40g-roce
          data_nic: connectx-4-lx-2x25g
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from densim.units import Bytes, BytesPerSecond, PerSecond, Seconds

_CFG = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)


class LocalStorage(BaseModel):
    """Drives inside every host (the local-NVMe reference)."""

    model_config = _CFG

    device: str = Field(description="catalog 'devices' entry")
    count: int = Field(default=1, gt=0, description="drives per host")


class PoolSettings(BaseModel):
    """A shared storage pool on a catalog storage target; device fields override the target's.

    A target sized per server (``drives_per_server``) is populated for every host of the tenants
    that use the pool.
    """

    model_config = _CFG

    name: str
    target: str = Field(description="catalog 'storage_targets' entry")
    device: str | None = None
    device_count: int | None = Field(default=None, gt=0, description="fixed drive count (overrides the target's sizing)")
    drives_per_server: int | None = Field(
        default=None, gt=0, description="drives per attached server (overrides the target's sizing)"
    )
    switch: str | None = Field(default=None, description="switch in front of the target (default: the target's)")
    provisioning: Literal["thin", "thick"] = Field(
        default="thin",
        description="thick: the tenants' volume sizes must fit; thin: the bytes their jobs store must fit",
    )

    @model_validator(mode="after")
    def _one_sizing(self) -> "PoolSettings":
        if self.device_count is not None and self.drives_per_server is not None:
            raise ValueError(f"pool {self.name!r}: give device_count or drives_per_server, not both")
        return self


class TenantSettings(BaseModel):
    """One tenant: a group of hosts and VMs running a batch job on one storage pool."""

    model_config = _CFG

    name: str
    hosts: str = Field(description="name of a cluster.hosts group")
    vms: str = Field(description="name of a vms group; its VMs are spread evenly over the hosts")
    job: str = Field(description="catalog 'batch_profiles' entry")
    storage: str = Field(default="local", description="a pool name, or 'local' for the hosts' own drives")
    transport: str = Field(default="local-nvme", description="catalog 'transports' entry")
    storage_nic: str | None = Field(default=None, description="catalog 'nics' entry (remote storage only)")
    data_nic: str = Field(default="connectx-4-lx-2x25g", description="catalog 'nics' entry for the cluster network")
    data_switch: str = Field(default="sn2700-32x100g", description="catalog 'switches' entry for the cluster network")
    weight: float = Field(default=1.0, gt=0, description="max-min weight of this tenant's flows")
    volume_bandwidth_limit_bps: BytesPerSecond | None = Field(
        default=None, alias="volume_bandwidth_limit", description="per-VM storage bandwidth cap (QoS), read+write"
    )
    volume_iops_limit: PerSecond | None = Field(default=None, description="per-VM storage IOPS cap (QoS)")
    volumes: dict[str, Bytes] = Field(
        default_factory=lambda: {"data": 375e9, "temp": 100e9}, description="volumes per VM (checked against the pool)"
    )
    start_s: Seconds = Field(default=0.0, alias="start", description="when the job starts")

    @model_validator(mode="after")
    def _remote_needs_nic(self) -> "TenantSettings":
        if self.storage != "local" and self.storage_nic is None:
            raise ValueError(f"tenant {self.name!r}: remote storage {self.storage!r} needs 'storage_nic'")
        return self


class FabricSettings(BaseModel):
    """Shared storage pools, fabrics and batch jobs. See the module docstring."""

    model_config = _CFG

    model: Literal["none", "fluid"] = "none"
    local_storage: LocalStorage | None = None
    pools: list[PoolSettings] = Field(default_factory=list)
    tenants: list[TenantSettings] = Field(default_factory=list)
    rho_max: float = Field(
        default=0.95, gt=0, lt=1, description="utilisation at which the latency stretch 1/(1-rho) stops growing"
    )

    @model_validator(mode="after")
    def _consistent(self) -> "FabricSettings":
        if self.model == "none":
            return self
        if not self.tenants:
            raise ValueError("model 'fluid' needs at least one tenant")
        pools = {p.name for p in self.pools}
        if len(pools) != len(self.pools):
            raise ValueError("pool names must be unique")
        names = [t.name for t in self.tenants]
        if len(set(names)) != len(names):
            raise ValueError("tenant names must be unique")
        for t in self.tenants:
            if t.storage == "local":
                if self.local_storage is None:
                    raise ValueError(f"tenant {t.name!r} uses local storage but 'local_storage' is not set")
            elif t.storage not in pools:
                raise ValueError(f"tenant {t.name!r}: no pool named {t.storage!r}; pools: {', '.join(sorted(pools)) or '(none)'}")
        return self
