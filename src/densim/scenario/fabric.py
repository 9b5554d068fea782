"""Shared storage pools, fabrics and batch jobs. Owned by the shared-storage model."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class FabricSettings(BaseModel):
    """Shared storage pools, fabrics and batch jobs. Owned by the shared-storage model.

    model: none (the default) switches the mechanism off.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    model: str = "none"
