"""Memory behaviour of workloads: active memory, access intensity, miss-ratio model.

A profile (catalog section ``memory_workloads``) says how much of a VM's configured memory is
active, how hard the workload touches it (faults per second of unconstrained work when the whole
active set is non-resident, ``access_rate_per_s`` per stream), how many streams/threads run
(``streams``), how well its faults overlap with other work (``overlap`` = theta of §2.5), which
miss-ratio model applies, and guest-side properties the reclamation pipeline needs (share of
active reclamation the guest gives up through the balloon, compressibility of its pages).

Kinds: ``decision-support`` (TPC-H-style: database size and concurrent streams set the active
set), ``oltp`` (SQL Server-style buffer pool), ``eda`` (single large silicon-design job whose
working set may exceed DRAM), ``generic`` (an active fraction; used for traces).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from densim.units import Bytes

WorkloadKind = Literal["decision-support", "oltp", "eda", "generic"]


class MemoryWorkload(BaseModel):
    """One workload's memory profile."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)

    name: str
    kind: WorkloadKind = "generic"
    description: str = ""
    active_fraction: float = Field(default=0.5, ge=0.0, le=1.0, description="active share of the memory it can use")
    database_bytes: Bytes | None = Field(default=None, alias="database_size", description="decision support: database size")
    os_bytes: Bytes = Field(default=4 * (1 << 30), alias="os_memory", description="guest OS and engine memory beside the data")
    streams: int = Field(default=1, ge=1, description="concurrent query streams / threads")
    access_rate_per_s: float = Field(
        default=0.0, ge=0.0, description="faults per second of unconstrained work per stream at miss ratio 1"
    )
    overlap: float = Field(default=1.0, gt=0.0, le=1.0, description="theta: share of fault time not hidden by other work")
    miss_model: str = Field(default="random", description="miss-ratio registry name")
    miss_table: list[tuple[float, float]] | None = Field(default=None, description="(resident fraction, miss ratio)")
    balloon_active_share: float = Field(
        default=0.0, ge=0.0, le=1.0, description="share of active reclamation the guest gives up via the balloon"
    )
    compressible_fraction: float = Field(default=0.5, ge=0.0, le=1.0, description="pages that compress to <= 2 KiB")
    source: str = ""
    notes: str = ""

    def active_bytes(self, configured_bytes):
        """Active memory of a VM of ``configured_bytes``.

        Decision support: the active set is ``active_fraction`` of what the engine can cache,
        ``min(configured, database + os)``; other kinds: ``active_fraction * configured``.
        """
        cfg = np.asarray(configured_bytes, dtype=float)
        if self.kind == "decision-support" and self.database_bytes is not None:
            usable = np.minimum(cfg, float(self.database_bytes) + float(self.os_bytes))
            return self.active_fraction * usable
        return self.active_fraction * cfg

    @property
    def total_access_rate_per_s(self) -> float:
        return self.access_rate_per_s * self.streams

    def miss_params(self) -> dict:
        return {"table": self.miss_table} if self.miss_table else {}


def load_workload(name: str, catalog) -> MemoryWorkload:
    """A profile from ``catalog`` (a :class:`densim.catalog.core.Catalog`) section ``memory_workloads``."""
    return catalog.get("memory_workloads", name, MemoryWorkload)
