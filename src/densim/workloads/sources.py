"""Demand sources: what the engine reads, one time window at a time.

A source describes ``n_vms`` VMs (sizes) and yields per-step mean demand for a window of the
engine's :class:`~densim.workloads.timegrid.TimeGrid` as float32 arrays shaped (steps, VMs):

=====================  ==========================================
channel                meaning
=====================  ==========================================
``cpu_mhz``            CPU demand (MHz)
``mem_used_bytes``     memory the guest uses (bytes)
``disk_read_Bps``      disk read throughput (bytes/s)
``disk_write_Bps``     disk write throughput (bytes/s)
``net_rx_Bps``         network received (bytes/s)
``net_tx_Bps``         network transmitted (bytes/s)
=====================  ==========================================

Sources stream: a window is computed from the trace files (or a small per-file base matrix that
VMs index into) without materialising the whole VM x time matrix.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from densim.workloads.timegrid import TimeGrid

CHANNELS = ("cpu_mhz", "mem_used_bytes", "disk_read_Bps", "disk_write_Bps", "net_rx_Bps", "net_tx_Bps")


@dataclass
class VmSizes:
    names: np.ndarray  # object array of str
    vcpus: np.ndarray  # int32
    vcpu_mhz: np.ndarray  # float64
    mem_bytes: np.ndarray  # float64

    @property
    def n(self) -> int:
        return int(self.vcpus.size)

    def take(self, idx: np.ndarray) -> "VmSizes":
        return VmSizes(names=self.names[idx], vcpus=self.vcpus[idx], vcpu_mhz=self.vcpu_mhz[idx], mem_bytes=self.mem_bytes[idx])


class DemandSource(ABC):
    """Base class of every demand source."""

    sizes: VmSizes
    channels: tuple[str, ...] = ("cpu_mhz",)

    @property
    def n_vms(self) -> int:
        return self.sizes.n

    def span_s(self) -> tuple[float, float] | None:
        """Natural (start, end) of the data in seconds, or None for unbounded synthetic demand."""
        return None

    def native_step_s(self) -> float | None:
        return None

    # True when every array window() returns is new and held by nobody else, so the engine's
    # stages may write into it (False: a window may be a view of data the source keeps)
    fresh_windows = False

    @abstractmethod
    def window(self, grid: TimeGrid, t0: int, t1: int, channels: tuple[str, ...]) -> dict[str, np.ndarray]:
        """Per-step mean demand for grid steps ``[t0, t1)``, for the requested channels it has."""

    def window_factors(self, grid: TimeGrid, t0: int, t1: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The CPU demand of ``window`` as ``(base, col, scale)`` with ``cpu_mhz[t, v] = base[t, col[v]] * scale[v]``
        (``scale`` float32, the product in ``base``'s precision), or None when the source has no such form.

        A trace replayed by many VMs (PlanetLab) has it: the engine then never materialises the
        (steps x VMs) demand.
        """
        return None

    def subset(self, idx: np.ndarray) -> "DemandSource":
        """The VMs ``idx`` (ascending) alone, with the same demand as in this source (a part of a
        distributed run). Sources that can compute a subset directly override this."""
        return SubsetSource(self, idx)

    def steady(self) -> bool:
        """True when every VM's demand is the same at every step of any grid (a constant profile): the
        engine may then compute one step of a window in which nothing else changes and count it for all
        of the window's steps (:func:`densim.engine.run.steady_segments`). False unless a source knows."""
        return False


class SubsetSource(DemandSource):
    """VMs ``idx`` of another source: its windows, columns ``idx``."""

    fresh_windows = True  # a column selection is a new array

    def __init__(self, parent: DemandSource, idx: np.ndarray) -> None:
        self.parent = parent
        self.idx = np.asarray(idx, dtype=np.int64)
        self.sizes = parent.sizes.take(self.idx)
        self.channels = parent.channels

    def span_s(self):
        return self.parent.span_s()

    def native_step_s(self):
        return self.parent.native_step_s()

    def window(self, grid, t0, t1, channels):
        return {k: np.ascontiguousarray(v[:, self.idx]) for k, v in self.parent.window(grid, t0, t1, channels).items()}

    def window_factors(self, grid, t0, t1):
        f = self.parent.window_factors(grid, t0, t1)
        return None if f is None else (f[0], f[1][self.idx], f[2][self.idx])

    def steady(self) -> bool:
        return self.parent.steady()


class CompositeSource(DemandSource):
    """Several sources side by side (VM groups)."""

    def __init__(self, parts: list[DemandSource], *, concat: bool | None = None) -> None:
        self.parts = parts
        # several parts: windows are concatenated into float32 arrays (a subset keeps the rule)
        self.concat = len(parts) > 1 if concat is None else concat
        self.sizes = VmSizes(
            names=np.concatenate([p.sizes.names for p in parts]),
            vcpus=np.concatenate([p.sizes.vcpus for p in parts]).astype(np.int32),
            vcpu_mhz=np.concatenate([p.sizes.vcpu_mhz for p in parts]).astype(np.float64),
            mem_bytes=np.concatenate([p.sizes.mem_bytes for p in parts]).astype(np.float64),
        )
        chans: list[str] = []
        for p in parts:
            chans += [c for c in p.channels if c not in chans]
        self.channels = tuple(chans)
        self.offsets = np.cumsum([0] + [p.n_vms for p in parts])
        self.fresh_windows = self.concat or bool(parts[0].fresh_windows)  # concatenated windows are new arrays

    def span_s(self):
        spans = [s for s in (p.span_s() for p in self.parts) if s is not None]
        if not spans:
            return None
        return min(s[0] for s in spans), max(s[1] for s in spans)

    def native_step_s(self):
        steps = [s for s in (p.native_step_s() for p in self.parts) if s]
        return min(steps) if steps else None

    def subset(self, idx):
        idx = np.asarray(idx, dtype=np.int64)
        parts = []
        for i, p in enumerate(self.parts):
            lo, hi = self.offsets[i], self.offsets[i + 1]
            local = idx[(idx >= lo) & (idx < hi)] - lo
            if local.size:
                parts.append(p.subset(local))
        return CompositeSource(parts, concat=self.concat)

    def steady(self) -> bool:
        return all(p.steady() for p in self.parts)

    def window_factors(self, grid, t0, t1):
        facs = [p.window_factors(grid, t0, t1) for p in self.parts]
        if any(f is None for f in facs):
            return None
        if not self.concat:
            return facs[0]
        if any(f[0].dtype != np.float32 for f in facs):  # window() rounds every part to float32
            return None
        widths = np.cumsum([0] + [f[0].shape[1] for f in facs])
        base = np.concatenate([f[0] for f in facs], axis=1)
        col = np.concatenate([f[1] + widths[i] for i, f in enumerate(facs)])
        scale = np.concatenate([f[2] for f in facs])
        return base, col, scale

    def window(self, grid, t0, t1, channels):
        if not self.concat:
            return self.parts[0].window(grid, t0, t1, channels)
        out: dict[str, np.ndarray] = {}
        wins = [p.window(grid, t0, t1, channels) for p in self.parts]
        for ch in channels:
            if not any(ch in w for w in wins):
                continue
            arr = np.zeros((t1 - t0, self.n_vms), dtype=np.float32)
            for i, w in enumerate(wins):
                if ch in w:
                    arr[:, self.offsets[i] : self.offsets[i + 1]] = w[ch]
            out[ch] = arr
        return out


def vm_gpu_counts(source: DemandSource, host_groups) -> np.ndarray | None:
    """(VMs,) the whole GPUs each VM of ``source`` takes by its trace (an OpenDC task's ``gpu_count``, in a group
    whose ``vms[].gpu`` is passthrough without count), -1 where the VM's group says its request; None when no part
    of the source gives one. A VM asking for more GPUs than any of ``host_groups`` (the plant's) has is refused."""
    parts = source.parts if isinstance(source, CompositeSource) else [source]
    got = [getattr(p, "gpu_count", None) for p in parts]
    if all(g is None for g in got):
        return None
    most = max((int(h.gpu_count) for h in host_groups if getattr(h, "gpu", None) is not None), default=0)
    for p in parts:
        if getattr(p, "gpu_count", None) is not None:
            p.check_gpus(most)
    return np.concatenate([np.full(p.n_vms, -1, np.int64) if g is None else np.asarray(g, np.int64)
                           for p, g in zip(parts, got)])


def hash_uniform(seed: int, t_idx: np.ndarray, vm_idx: np.ndarray) -> np.ndarray:
    """Counter-based uniform noise in [-1, 1): the same (seed, step, VM) always gives the same value.

    splitmix64 finaliser over ``seed ^ (t * P1) ^ (vm * P2)``; chunk-invariant. A numba kernel over the
    (steps, VMs) cells (tests/workloads/test_hash_uniform.py compares it with the numpy expression, bit for bit).
    """
    from densim.workloads.noise import hash_uniform_rows  # numba: imported when a run draws noise, not with the engine

    t = np.ascontiguousarray(t_idx, dtype=np.int64)
    v = np.ascontiguousarray(vm_idx, dtype=np.int64)
    out = np.empty((t.size, v.size), dtype=np.float32)
    hash_uniform_rows(np.uint64(seed & 0xFFFFFFFFFFFFFFFF), t, v, out)
    return out


class ProfileSource(DemandSource):
    """Synthetic demand from a :class:`~densim.spec.scenario.ProfileSpec` for ``count`` VMs."""

    channels = ("cpu_mhz", "mem_used_bytes")

    def __init__(self, name: str, profile, count: int, vcpus: int, vcpu_mhz: float, mem_bytes: float, seed: int) -> None:
        self.profile = profile
        self.seed = int(seed)
        self.vm_index = np.arange(count)  # the VMs' numbers in the group (their noise streams)
        self.sizes = VmSizes(
            names=np.array([f"{name}-{i}" for i in range(count)], dtype=object),
            vcpus=np.full(count, vcpus, dtype=np.int32),
            vcpu_mhz=np.full(count, vcpu_mhz, dtype=np.float64),
            mem_bytes=np.full(count, mem_bytes, dtype=np.float64),
        )

    def utilisation(self, grid: TimeGrid, t0: int, t1: int) -> np.ndarray:
        p = self.profile
        mid = grid.start_s + grid.step_s * (np.arange(t0, t1) + 0.5)
        u = np.full((t1 - t0, self.n_vms), p.mean, dtype=np.float32)
        if p.kind in ("diurnal", "random") and p.amplitude > 0:
            wave = p.amplitude * np.cos(2 * np.pi * (mid - p.peak_at_s) / p.period_s)
            u += wave.astype(np.float32)[:, None]
        if p.noise > 0:
            u += p.noise * hash_uniform(self.seed, np.arange(t0, t1), self.vm_index)
        return np.clip(u, 0.0, 1.0)

    def steady(self) -> bool:
        """No wave and no noise: ``u = clip(mean, 0, 1)`` at every step."""
        p = self.profile
        return not (p.kind in ("diurnal", "random") and p.amplitude > 0) and not p.noise > 0

    def subset(self, idx):
        import copy

        out = copy.copy(self)
        out.vm_index = self.vm_index[idx]
        out.sizes = self.sizes.take(idx)
        return out

    def window(self, grid, t0, t1, channels):
        u = self.utilisation(grid, t0, t1)
        out = {}
        if "cpu_mhz" in channels:
            out["cpu_mhz"] = u * (self.sizes.vcpus * self.sizes.vcpu_mhz).astype(np.float32)[None, :]
        if "mem_used_bytes" in channels:
            frac = self.profile.active_memory_fraction
            out["mem_used_bytes"] = np.broadcast_to(
                (self.sizes.mem_bytes * frac).astype(np.float32)[None, :], (t1 - t0, self.n_vms)
            ).copy()
        return out
