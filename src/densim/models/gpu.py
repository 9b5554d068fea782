"""GPU parts: memory, compute, bandwidth, power, MIG profiles and time-sliced vGPU sizes (catalog section ``gpus``).

A MIG profile is described in NVIDIA's own units (NVML ``nvmlGpuInstancePlacement_t``): a GPU instance
occupies ``memory_slices`` consecutive memory slices out of :data:`MIG_MEMORY_SLOTS` = 8 and may start
only at the slice indices ``starts``; it uses ``compute_slices`` of the 7 compute slices. Placement
(:mod:`densim.placement.gpu`) keeps one 8-bit mask of occupied memory slices per GPU: an instance fits
where its slices are free at one of its valid starts, which is what makes a MIG layout more than a count.

A time-sliced vGPU profile is a framebuffer size; NVIDIA's vGPU manager gives each vGPU that much of the
GPU's memory, and (without mixed-size mode) every vGPU on one physical GPU has the same size, so a GPU of
``M`` bytes holds ``floor(M / size)`` vGPUs of one size (NVIDIA's "maximum vGPUs per GPU" column).
See docs/background/gpus.md.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from densim.units import BytesPerSecond, PosMemBytes, Seconds, Watts

#: memory slices of a MIG-capable GPU (A100, H100, H200: 8; each instance's placement counts in them)
MIG_MEMORY_SLOTS = 8
#: compute slices (GPCs) a MIG-capable GPU offers to instances
MIG_COMPUTE_SLICES = 7

_CFG = ConfigDict(defer_build=True, allow_inf_nan=False, frozen=True, extra="forbid", populate_by_name=True)


class MigProfile(BaseModel):
    """One MIG GPU-instance profile: its name, its compute and memory slices, where it may start."""

    model_config = _CFG

    name: str = Field(description="NVIDIA's profile name, e.g. 3g.40gb")
    compute_slices: int = Field(ge=1, le=MIG_COMPUTE_SLICES)
    memory_slices: int = Field(ge=1, le=MIG_MEMORY_SLOTS, description="consecutive memory slices the instance occupies")
    starts: list[int] = Field(min_length=1, description="memory-slice indices where an instance of this profile may start")
    memory_bytes: PosMemBytes = Field(alias="memory", description="memory the instance sees")

    @model_validator(mode="after")
    def _fits_the_gpu(self) -> "MigProfile":
        for s in self.starts:
            if s < 0 or s + self.memory_slices > MIG_MEMORY_SLOTS:
                raise ValueError(f"MIG profile {self.name!r}: start {s} + {self.memory_slices} memory slices passes "
                                 f"the GPU's {MIG_MEMORY_SLOTS} slices")
        if len(set(self.starts)) != len(self.starts):
            raise ValueError(f"MIG profile {self.name!r}: a start is listed twice")
        return self

    @property
    def slot_mask(self) -> int:
        """The memory slices an instance starting at 0 occupies, as a bit mask (shift by the start)."""
        return (1 << self.memory_slices) - 1


class GpuSpec(BaseModel):
    """A GPU model. Compute figures are dense tensor-core peaks (no 2:4 sparsity); None where the card has no such unit."""

    model_config = _CFG

    name: str
    vendor: str
    memory_bytes: PosMemBytes = Field(alias="memory")
    memory_bandwidth_bps: BytesPerSecond = Field(alias="memory_bandwidth", gt=0)
    fp16_tflops: float = Field(gt=0, description="dense FP16 tensor TFLOP/s")
    fp8_tflops: float | None = Field(default=None, gt=0, description="dense FP8 tensor TFLOP/s (None: no FP8 unit)")
    idle_power_w: Watts = Field(alias="idle_power", ge=0)
    max_power_w: Watts = Field(alias="max_power", gt=0, description="board power limit (TDP/TBP)")
    power_limit_min_w: Watts | None = Field(
        default=None, alias="power_limit_min", gt=0,
        description="lowest power limit the card accepts (nvidia-smi -q -d POWER 'Min Power Limit'); None: densim "
                    "knows none, so a power cap never lowers this card's limit")
    mig_profiles: list[MigProfile] = Field(default_factory=list, description="empty: the card has no MIG")
    vgpu_profiles: list[PosMemBytes] = Field(
        default_factory=list, description="time-sliced vGPU framebuffer sizes (empty: passthrough only)")
    interconnect: Literal["nvswitch", "mesh", "pcie"] | None = Field(
        default=None, description="how the host's GPUs reach each other: nvswitch (every GPU at its full link bandwidth "
                                  "to any other), mesh (one direct link to each peer), pcie (through the host's PCIe); "
                                  "None: densim knows no figures, so tensor parallel over such cards is refused")
    interconnect_bandwidth_bps: BytesPerSecond | None = Field(
        default=None, alias="interconnect_bandwidth", gt=0,
        description="GPU-to-GPU bandwidth of one GPU, per direction, all its links together")
    interconnect_links: int | None = Field(
        default=None, gt=0, description="mesh only: the GPU's links, one to each peer (a TP group of n uses n - 1)")
    interconnect_latency_s: Seconds | None = Field(
        default=None, alias="interconnect_latency", gt=0, description="latency of one ring all-reduce step (hop)")
    source: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> "GpuSpec":
        if self.idle_power_w > self.max_power_w:
            raise ValueError(f"GPU {self.name!r}: idle power {self.idle_power_w:g} W above max power {self.max_power_w:g} W")
        lo = self.power_limit_min_w
        if lo is not None and not self.idle_power_w <= lo <= self.max_power_w:
            raise ValueError(f"GPU {self.name!r}: minimum power limit {lo:g} W is outside idle {self.idle_power_w:g} W .. "
                             f"max power {self.max_power_w:g} W")
        names = [p.name for p in self.mig_profiles]
        if len(set(names)) != len(names):
            raise ValueError(f"GPU {self.name!r}: a MIG profile name is listed twice")
        ic = (self.interconnect, self.interconnect_bandwidth_bps, self.interconnect_latency_s)
        if any(v is not None for v in ic) and any(v is None for v in ic):
            raise ValueError(f"GPU {self.name!r}: give interconnect, interconnect_bandwidth and interconnect_latency "
                             "together (or none of them)")
        if self.interconnect == "mesh" and self.interconnect_links is None:
            raise ValueError(f"GPU {self.name!r}: a mesh interconnect needs interconnect_links (links per GPU)")
        if self.interconnect != "mesh" and self.interconnect_links is not None:
            raise ValueError(f"GPU {self.name!r}: interconnect_links is for a mesh interconnect, not "
                             f"{self.interconnect or 'none'}")
        for s in self.vgpu_profiles:
            if s > self.memory_bytes:
                raise ValueError(f"GPU {self.name!r}: a vGPU profile of {s / 2**30:g} GiB is larger than the GPU's memory")
        return self

    def link_bandwidth_bps(self, tp: int) -> float:
        """Per-direction bandwidth one GPU of a ``tp``-GPU tensor-parallel group has to the others: the card's
        figure on NVSwitch or PCIe; on a mesh only the ``tp - 1`` links to the group's peers carry its traffic
        (``bandwidth x (tp - 1) / links``). ValueError when the card has no interconnect figures."""
        if self.interconnect is None or self.interconnect_bandwidth_bps is None:
            raise ValueError(f"{self.name} has no interconnect figures (interconnect, interconnect_bandwidth, "
                             "interconnect_latency): tensor parallel over it is not modelled")
        if self.interconnect == "mesh":
            links = self.interconnect_links or 1
            return self.interconnect_bandwidth_bps * min(tp - 1, links) / links
        return self.interconnect_bandwidth_bps

    def mig(self, name: str) -> MigProfile | None:
        """The MIG profile ``name`` (case-insensitive), or None."""
        key = name.strip().lower()
        for p in self.mig_profiles:
            if p.name.lower() == key:
                return p
        return None

    def vgpus_per_gpu(self, size_bytes: float) -> int:
        """vGPUs of ``size_bytes`` one GPU holds (0 when the card has no such profile): floor(memory / size)."""
        if not any(abs(s - size_bytes) <= 0.5 for s in self.vgpu_profiles):
            return 0
        return int(self.memory_bytes // size_bytes)
