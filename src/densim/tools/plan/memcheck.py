"""The memory check's answer for one placement (:func:`densim.tools.plan.qos.memory_check`, and the tiered
check of :mod:`densim.tools.plan.tiering`): its own module so the two do not import each other."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class MemoryCheck:
    slowdown_worst: np.ndarray  # (H,) worst VM's slowdown over all steps (1 = none)
    vm_slowdown_max: np.ndarray  # (N,)
    hosts_short: int  # hosts whose configured memory exceeds what the memory model can give VMs
    swapped_gib_peak: np.ndarray  # (H,) peak host swap in use
