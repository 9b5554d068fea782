"""Memory over-commit settings (memory model, reclamation, swap). Owned by the memory model."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class MemorySettings(BaseModel):
    """Memory over-commit settings (memory model, reclamation, swap). Owned by the memory model.

    model: none (the default) switches the mechanism off.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    model: str = "none"
