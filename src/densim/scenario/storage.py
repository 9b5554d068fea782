"""Per-VM storage: devices, arrays and datastores VMs use. Owned by the storage model."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StorageSettings(BaseModel):
    """Per-VM storage: devices, arrays and datastores VMs use. Owned by the storage model.

    model: none (the default) switches the mechanism off.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    model: str = "none"
