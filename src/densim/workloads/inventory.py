"""The inventory: what runs today (VM sizes) and, when known, what each VM demanded over time.

Arrays, one entry per VM, with the unit in each name. ``cpu_mhz``, ``mem_used_bytes``,
``disk_read_Bps`` and ``disk_write_Bps`` are optional (steps x VMs) demand series on a uniform grid
of ``step_s`` seconds from ``start_s``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

DEFAULT_VCPU_MHZ = 2400.0  # used only when a source gives no clock; stated in every report
SERIES = ("cpu_mhz", "mem_used_bytes", "disk_read_Bps", "disk_write_Bps")  # optional (steps x VMs) arrays


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
    step_s: float = 300.0
    start_s: float = 0.0
    source: str = ""
    fmt: str = ""
    demand_rule: str = ""  # how the demand was obtained (stated in reports)
    tags: dict[str, np.ndarray] = field(default_factory=dict)  # e.g. "cluster", "anti_affinity" -> (N,) object

    def __post_init__(self) -> None:
        n = self.names.shape[0]
        for name in ("vcpus", "vcpu_mhz", "mem_bytes"):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"inventory field {name} has shape {getattr(self, name).shape}, expected ({n},)")
        for name in SERIES:
            arr = getattr(self, name)
            if arr is not None and (arr.ndim != 2 or arr.shape[1] != n):
                raise ValueError(f"inventory series {name} has shape {arr.shape}, expected (steps, {n})")

    @property
    def n_vms(self) -> int:
        return int(self.names.shape[0])

    @property
    def n_steps(self) -> int:
        return 0 if self.cpu_mhz is None else int(self.cpu_mhz.shape[0])

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
            tags={k: v[idx] for k, v in self.tags.items()},
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
    step_s=300.0, start_s=0.0, source="", fmt="", demand_rule="", tags=None,
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
        step_s=float(step_s),
        start_s=float(start_s),
        source=str(source),
        fmt=fmt,
        demand_rule=demand_rule,
        tags={k: np.asarray(v, dtype=object) for k, v in (tags or {}).items()},
    )
