"""The profiles' counter-based noise (:func:`densim.workloads.sources.hash_uniform`) is a numba kernel; it must give
the numpy expression it replaced (kept here as the reference), bit for bit, for any seed, steps and VM numbers."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from densim.workloads.sources import hash_uniform


def reference(seed: int, t_idx: np.ndarray, vm_idx: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = (
            np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
            ^ (t_idx.astype(np.uint64)[:, None] * np.uint64(0x9E3779B97F4A7C15))
            ^ (vm_idx.astype(np.uint64)[None, :] * np.uint64(0xBF58476D1CE4E5B9))
        )
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return ((x >> np.uint64(11)).astype(np.float64) / float(1 << 53) * 2.0 - 1.0).astype(np.float32)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**64 - 1), st.integers(0, 10**7), st.integers(0, 40), st.integers(0, 10**8), st.integers(0, 60))
def test_kernel_equals_the_numpy_expression(seed, t0, n_t, v0, n_v):
    t = np.arange(t0, t0 + n_t)
    v = np.arange(v0, v0 + n_v)
    got, want = hash_uniform(seed, t, v), reference(seed, t, v)
    assert got.dtype == np.float32 and got.shape == want.shape
    assert np.array_equal(got, want)


def test_scattered_vm_numbers_and_the_value_range():
    rng = np.random.default_rng(5)
    v = rng.integers(0, 2**40, size=300)
    got = hash_uniform(12345, np.arange(50, 80), v)
    assert np.array_equal(got, reference(12345, np.arange(50, 80), v))
    assert got.min() >= -1.0 and got.max() < 1.0 and abs(float(got.mean())) < 0.01  # uniform on [-1, 1)
