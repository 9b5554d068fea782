"""Randomness is injected: one root seed, recorded, spawned with SeedSequence."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

# the one default seed: of scenarios (simulation.seed), sweeps (seed), tile hosts (run.seed), and of every
# command's --seed (run, demo, study, studies, plan, bench tiles); results record the seed they used.
# (numpy is imported in the functions: the specs read this constant and must not pay for numpy.)
DEFAULT_SEED = 42


def make_rng(seed: int | None) -> np.random.Generator:
    """A Generator for ``seed`` (``None`` means the recorded default seed, never OS entropy)."""
    import numpy as np

    return np.random.default_rng(np.random.SeedSequence(DEFAULT_SEED if seed is None else seed))


def spawn_seeds(root_seed: int, n: int) -> list[int]:
    """``n`` independent child seeds derived from ``root_seed`` (for replications and sweeps)."""
    import numpy as np

    children = np.random.SeedSequence(root_seed).spawn(n)
    return [int(c.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1)) for c in children]
