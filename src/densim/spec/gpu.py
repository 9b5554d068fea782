"""GPUs in a scenario: a host group's GPUs and a VM group's GPU demand (see docs/background/gpus.md).

Example::

    cluster:
      hosts:
        - {server: ..., count: 4, gpus: {model: nvidia-a100-80gb-sxm, count: 8}}
        - {server: ..., count: 2, gpus: {model: nvidia-l40s, count: 2, scheduler: equal-share, time_slice: 2 ms}}
    vms:
      - {name: notebooks, ..., gpu: {mode: mig, profile: 1g.10gb}}       # a MIG instance
      - {name: vdi, ..., gpu: {mode: vgpu, memory: 4 GiB}}               # a time-sliced vGPU of 4 GiB
      - {name: training, ..., gpu: {mode: passthrough, count: 2}}        # two whole GPUs
      - {name: odc, trace: {format: opendc, ...}, gpu: {mode: passthrough}}  # each task's gpu_count, busy share from gpu_usage
    placement:
      gpu_policy: pack     # or spread: which GPU of a host takes a shared (vGPU, MIG) request
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from densim.units import PosMemBytes, PosSeconds, Watts

_CFG = ConfigDict(defer_build=True, allow_inf_nan=False, frozen=True, extra="forbid", populate_by_name=True)

#: GPUs in one host at most (HGX/OAM boards carry 8; PCIe servers up to 10-16)
MAX_GPUS_PER_HOST = 64


class HostGpus(BaseModel):
    """``count`` GPUs of catalog model ``model`` in every host of the group."""

    model_config = _CFG
    model: str = Field(description="name of a GPU in the catalog (section gpus) or in parts.gpus")
    count: int = Field(gt=0, le=MAX_GPUS_PER_HOST, strict=True)
    scheduler: Literal["best-effort", "equal-share", "fixed-share"] = Field(
        default="best-effort",
        description="NVIDIA vGPU time-slice scheduler of these GPUs (time-sliced vGPUs only; MIG and passthrough are "
                    "not time-sliced): best-effort (default; idle vGPUs cede their time), equal-share (1/N of the "
                    "GPU's time to each of the N vGPUs on it, used or not), fixed-share (1/max vGPUs of the profile "
                    "per GPU, used or not)")
    time_slice_s: PosSeconds = Field(
        default=0.002, alias="time_slice", le=1.0,
        description="how long a vGPU runs before it is pre-empted (the scheduler's quantum): a vGPU waits up to "
                    "(other vGPUs in the round) x time_slice for its next turn; default 2 ms (E)")
    power_limit_w: Watts | None = Field(
        default=None, alias="power_limit", gt=0,
        description="power limit the operator sets on each of these GPUs (nvidia-smi -pl), between the card's "
                    "power_limit_min and max_power in the catalog; a busy GPU then runs at the lower clock that "
                    "keeps it within (docs/background/gpus.md); default: the card's max_power")


class VmGpu(BaseModel):
    """What one VM of the group asks of a GPU: a time-sliced vGPU, a MIG instance, or whole GPUs."""

    model_config = _CFG
    mode: Literal["vgpu", "mig", "passthrough"]
    memory_bytes: PosMemBytes | None = Field(default=None, alias="memory",
                                             description="vgpu: the vGPU profile's framebuffer (a size the GPU offers)")
    profile: str | None = Field(default=None, description="mig: the MIG profile name, e.g. 3g.40gb")
    count: int | None = Field(default=None, gt=0, le=MAX_GPUS_PER_HOST, strict=True,
                              description="passthrough: whole GPUs, all on the VM's host; omitted for an OpenDC trace "
                                          "group: each task's gpu_count (a task with 0 takes none)")
    utilisation: float | None = Field(
        default=None, ge=0, le=1,
        description="GPU busy share for GPU power: of its GPUs (passthrough), of its MIG instance's compute, or "
                    "of one whole GPU's time (vGPU); default: an OpenDC trace's gpu_usage / gpu_capacity in each "
                    "step (a passthrough group without count), else the VM's CPU utilisation in each step")

    @model_validator(mode="after")
    def _one_shape(self) -> "VmGpu":
        need = {"vgpu": "memory", "mig": "profile", "passthrough": "count"}[self.mode]
        given = {"memory": self.memory_bytes, "profile": self.profile, "count": self.count}  # utilisation: any mode
        # passthrough without count: each VM's count from its trace (an OpenDC task's gpu_count; checked where the
        # scenario is resolved, densim.plant.gpu, and where the trace is read, densim.workloads.readers.opendc)
        if given[need] is None and self.mode != "passthrough":
            raise ValueError(f"gpu mode {self.mode!r} needs '{need}'")
        extra = [k for k, v in given.items() if v is not None and k != need]
        if extra:
            raise ValueError(f"gpu mode {self.mode!r} takes '{need}' only, not {', '.join(repr(e) for e in extra)}")
        return self
