"""Randomness is injected: one root seed, recorded, spawned with SeedSequence."""

from __future__ import annotations

import numpy as np

DEFAULT_SEED = 20131231


def make_rng(seed: int | None) -> np.random.Generator:
    """A Generator for ``seed`` (``None`` means the recorded default seed, never OS entropy)."""
    return np.random.default_rng(np.random.SeedSequence(DEFAULT_SEED if seed is None else seed))


def spawn_seeds(root_seed: int, n: int) -> list[int]:
    """``n`` independent child seeds derived from ``root_seed`` (for replications and sweeps)."""
    children = np.random.SeedSequence(root_seed).spawn(n)
    return [int(c.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1)) for c in children]
