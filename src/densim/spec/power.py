"""Host power caps: the P-state grid a capped host's clock is chosen from (``power:`` section).

The caps themselves are per host group (``cluster.hosts[].power_cap``); this section says which
clocks the power control unit may pick: from ``min_clock`` up to the base clock in steps of
``pstate_step`` (Intel and AMD P-states are multiples of a 100 MHz reference clock; the lowest
operating clock of current server CPUs is 0.8-1.2 GHz). Owned by the ``power_cap`` engine stage
(:mod:`densim.engine.plugins.power_cap`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from densim.units import PosMHz

_CFG = ConfigDict(defer_build=True, allow_inf_nan=False, frozen=True, extra="forbid", populate_by_name=True)


class PowerSettings(BaseModel):
    """The P-states a power-capped host may run at."""

    model_config = _CFG

    min_mhz: PosMHz = Field(default=800.0, alias="min_clock",
                            description="lowest P-state clock (Intel's 'LFM'; 800 MHz on many Xeons, see the CPU's datasheet)")
    pstate_step_mhz: PosMHz = Field(default=100.0, alias="pstate_step",
                                    description="clock step between P-states (the 100 MHz bus/reference clock ratio)")
