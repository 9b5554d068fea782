"""Hypervisor features, NUMA policy and processor power management. Owned by the virtualization model."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class VirtualizationSettings(BaseModel):
    """Hypervisor features, NUMA policy and processor power management. Owned by the virtualization model.

    model: none (the default) switches the mechanism off.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    model: str = "none"
