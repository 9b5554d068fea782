"""The inventory: what runs today (VM sizes) and, when known, what each VM demanded over time.

Arrays, one entry per VM, with the unit in each name. ``cpu_mhz``, ``mem_used_bytes``,
``disk_read_Bps`` and ``disk_write_Bps`` are optional (steps x VMs) demand series on a uniform grid
of ``step_s`` seconds from ``start_s``; ``mem_config_bytes`` is the configured memory over time when a
source says it changes (``mem_bytes`` is then each VM's largest). ``vm_start_s``/``vm_end_s`` are each
VM's arrival and departure (same clock as ``start_s``) when the source has lifetimes (Azure vmtable,
generic ``start``/``end`` columns). ``hosts`` describes the hosts the VMs run on today (RVTools vHost).
``ready_pct``/``costop_pct`` are CPU readiness and co-stop measured per VM, % of time per vCPU (RVTools 'Overall Cpu
Readiness' as exported: vSphere averages it over the vCPUs), kept so a plan can set them beside its simulated CPU Ready.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

DEFAULT_VCPU_MHZ = 2400.0  # used only when a source gives no clock; stated in every report
SERIES = ("cpu_mhz", "mem_used_bytes", "disk_read_Bps", "disk_write_Bps", "mem_config_bytes")  # optional (steps x VMs) arrays
PER_VM = ("vm_start_s", "vm_end_s", "ready_pct", "costop_pct", "consumed_bytes")  # optional (N,) arrays


@dataclass(frozen=True)
class HostInventory:
    """The hosts of today's estate (RVTools vHost), one entry per host, units in the names."""

    names: np.ndarray  # (H,) object
    model: np.ndarray  # (H,) object: vendor and model ("Dell Inc. PowerEdge M630"), "" when not exported
    cpu_model: np.ndarray  # (H,) object
    sockets: np.ndarray  # (H,) int32
    cores: np.ndarray  # (H,) int32, all sockets
    core_mhz: np.ndarray  # (H,) float64, NaN when not exported
    mem_bytes: np.ndarray  # (H,) float64
    cluster: np.ndarray  # (H,) object

    @property
    def n_hosts(self) -> int:
        return int(self.names.shape[0])

    def by_model(self) -> list[dict]:
        """One row per (model, CPU, cores, memory): how many hosts of each configuration run today."""
        rows: dict[tuple, int] = {}
        for key in zip(self.model, self.cpu_model, self.sockets.tolist(), self.cores.tolist(), self.core_mhz.tolist(), self.mem_bytes.tolist()):
            k = tuple("" if isinstance(v, float) and v != v else v for v in key)
            rows[k] = rows.get(k, 0) + 1
        return [{"model": m, "cpu_model": c, "sockets": int(s), "cores": int(n), "core_mhz": (None if mhz == "" else float(mhz)),
                 "memory_gib": float(mem) / 2**30, "count": cnt}
                for (m, c, s, n, mhz, mem), cnt in sorted(rows.items(), key=lambda kv: (-kv[1], str(kv[0])))]


@dataclass(frozen=True)
class Inventory:
    names: np.ndarray  # (N,) object: unique VM names
    vcpus: np.ndarray  # (N,) int32 >= 1
    vcpu_mhz: np.ndarray  # (N,) float64: MHz one vCPU can deliver (the clock of the host it ran on)
    mem_bytes: np.ndarray  # (N,) float64 configured memory
    cpu_mhz: np.ndarray | None = None  # (T, N) float32 CPU demand per step
    mem_used_bytes: np.ndarray | None = None  # (T, N) float32 memory in use per step
    disk_read_Bps: np.ndarray | None = None  # (T, N) float32 disk read bytes per second
    disk_write_Bps: np.ndarray | None = None  # (T, N) float32 disk write bytes per second
    mem_config_bytes: np.ndarray | None = None  # (T, N) float32 configured memory per step (when it changes)
    step_s: float = 300.0
    start_s: float = 0.0
    source: str = ""
    fmt: str = ""
    demand_rule: str = ""  # how the demand was obtained (stated in reports)
    tags: dict[str, np.ndarray] = field(default_factory=dict)  # e.g. "cluster", "anti_affinity" -> (N,) object
    vm_start_s: np.ndarray | None = None  # (N,) float64 arrival of each VM
    vm_end_s: np.ndarray | None = None  # (N,) float64 departure of each VM
    hosts: HostInventory | None = None  # today's hosts (RVTools vHost)
    notes: tuple[str, ...] = ()  # what the reader skipped or assumed, for reports
    skipped_readings: int = 0  # samples the reader left out (Azure readings of VMs not in vmtable)
    ready_pct: np.ndarray | None = None  # (N,) float64 measured CPU readiness, % of time per vCPU (RVTools 'Overall Cpu Readiness'); NaN: not exported
    costop_pct: np.ndarray | None = None  # (N,) float64 measured co-stop, % of time per vCPU, where exported
    consumed_bytes: np.ndarray | None = None  # (N,) float64 host memory the VM has touched (RVTools vMemory 'Consumed'); NaN: not exported
    missing_host_vms: int = 0  # VMs whose host is not in the export's host list (RVTools vHost)
    readiness: Any = None  # migration readiness per VM (RVTools: readers/rvtools_readiness.Readiness), None when not read
    facts: dict = field(default_factory=dict)  # what the source held, for the data-quality rating: "tabs", "cpu_default_vms"...

    def __post_init__(self) -> None:
        n = self.names.shape[0]
        for name in ("vcpus", "vcpu_mhz", "mem_bytes"):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"inventory field {name} has shape {getattr(self, name).shape}, expected ({n},)")
        for name in SERIES:
            arr = getattr(self, name)
            if arr is not None and (arr.ndim != 2 or arr.shape[1] != n):
                raise ValueError(f"inventory series {name} has shape {arr.shape}, expected (steps, {n})")
        for name in PER_VM:
            arr = getattr(self, name)
            if arr is not None and arr.shape != (n,):
                raise ValueError(f"inventory field {name} has shape {arr.shape}, expected ({n},)")

    @property
    def n_vms(self) -> int:
        return int(self.names.shape[0])

    @property
    def n_steps(self) -> int:
        return 0 if self.cpu_mhz is None else int(self.cpu_mhz.shape[0])

    @property
    def is_snapshot(self) -> bool:
        """One sample per VM (an RVTools export): it says what VMs used at one moment, nothing about peaks."""
        steps = {getattr(self, k).shape[0] for k in ("cpu_mhz", "mem_used_bytes") if getattr(self, k) is not None}
        return steps == {1}

    @property
    def capacity_mhz(self) -> np.ndarray:
        """Configured CPU capacity of each VM: vCPUs x MHz per vCPU."""
        return self.vcpus.astype(np.float64) * self.vcpu_mhz

    def cpu_percentile_mhz(self, q: float) -> np.ndarray:
        """Per-VM ``q``-th percentile of CPU demand (configured capacity when there is no series)."""
        if self.cpu_mhz is None:
            return self.capacity_mhz
        return np.percentile(self.cpu_mhz, q, axis=0).astype(np.float64)

    def mem_percentile_bytes(self, q: float) -> np.ndarray:
        if self.mem_used_bytes is None:
            return self.mem_bytes.astype(np.float64)
        return np.percentile(self.mem_used_bytes, q, axis=0).astype(np.float64)

    def subset(self, idx: np.ndarray) -> "Inventory":
        idx = np.asarray(idx)
        return replace(
            self,
            names=self.names[idx],
            vcpus=self.vcpus[idx],
            vcpu_mhz=self.vcpu_mhz[idx],
            mem_bytes=self.mem_bytes[idx],
            **{k: None if getattr(self, k) is None else getattr(self, k)[:, idx] for k in SERIES},
            **{k: None if getattr(self, k) is None else getattr(self, k)[idx] for k in PER_VM},
            tags={k: v[idx] for k, v in self.tags.items()},
            readiness=None if self.readiness is None else self.readiness.subset(idx),
        )

    def with_series_steps(self, n_steps: int) -> "Inventory":
        """The first ``n_steps`` of the demand series (for quick runs)."""
        if self.cpu_mhz is None:
            return self
        return replace(self, **{k: None if getattr(self, k) is None else getattr(self, k)[:n_steps] for k in SERIES})

    @property
    def has_disk(self) -> bool:
        return self.disk_read_Bps is not None and self.disk_write_Bps is not None

    def describe(self) -> str:
        span = f", {self.n_steps} steps of {self.step_s:g} s" if self.cpu_mhz is not None else ", no time series"
        return f"{self.n_vms} VMs, {int(self.vcpus.sum())} vCPUs, {self.mem_bytes.sum() / 2**30:.1f} GiB{span}"


def build_inventory(
    names, vcpus, vcpu_mhz, mem_bytes, *, cpu_mhz=None, mem_used_bytes=None, disk_read_Bps=None, disk_write_Bps=None,
    mem_config_bytes=None, step_s=300.0, start_s=0.0, source="", fmt="", demand_rule="", tags=None, vm_start_s=None,
    vm_end_s=None, hosts=None, notes=(), skipped_readings=0, ready_pct=None, costop_pct=None, missing_host_vms=0,
    readiness=None, facts=None, consumed_bytes=None,
) -> Inventory:
    """An :class:`Inventory` with the arrays converted to their canonical dtypes."""
    return Inventory(
        names=np.asarray(names, dtype=object),
        vcpus=np.asarray(vcpus, dtype=np.int32),
        vcpu_mhz=np.asarray(vcpu_mhz, dtype=np.float64),
        mem_bytes=np.asarray(mem_bytes, dtype=np.float64),
        cpu_mhz=None if cpu_mhz is None else np.asarray(cpu_mhz, dtype=np.float32),
        mem_used_bytes=None if mem_used_bytes is None else np.asarray(mem_used_bytes, dtype=np.float32),
        disk_read_Bps=None if disk_read_Bps is None else np.asarray(disk_read_Bps, dtype=np.float32),
        disk_write_Bps=None if disk_write_Bps is None else np.asarray(disk_write_Bps, dtype=np.float32),
        mem_config_bytes=None if mem_config_bytes is None else np.asarray(mem_config_bytes, dtype=np.float32),
        step_s=float(step_s),
        start_s=float(start_s),
        source=str(source),
        fmt=fmt,
        demand_rule=demand_rule,
        tags={k: np.asarray(v, dtype=object) for k, v in (tags or {}).items()},
        vm_start_s=None if vm_start_s is None else np.asarray(vm_start_s, dtype=np.float64),
        vm_end_s=None if vm_end_s is None else np.asarray(vm_end_s, dtype=np.float64),
        hosts=hosts,
        notes=tuple(notes),
        skipped_readings=int(skipped_readings),
        ready_pct=None if ready_pct is None else np.asarray(ready_pct, dtype=np.float64),
        costop_pct=None if costop_pct is None else np.asarray(costop_pct, dtype=np.float64),
        missing_host_vms=int(missing_host_vms),
        readiness=readiness,
        facts=dict(facts or {}),
        consumed_bytes=None if consumed_bytes is None else np.asarray(consumed_bytes, dtype=np.float64),
    )
