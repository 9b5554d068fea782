"""The numba kernel of the profiles' counter-based noise (:func:`densim.workloads.sources.hash_uniform`), in a module
of its own so that importing the engine does not import numba."""

from __future__ import annotations

import numpy as np

from densim._jit import njit, prange

_P1, _P2, _P3 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S11, _S27, _S30, _S31 = np.uint64(11), np.uint64(27), np.uint64(30), np.uint64(31)
_TWO53 = float(1 << 53)


@njit(parallel=True)
def hash_uniform_rows(seed, t_idx, vm_idx, out):
    """splitmix64 noise into ``out`` (steps, VMs), the steps in parallel; uint64 arithmetic wraps as numpy's does."""
    for i in prange(t_idx.size):
        ti = np.uint64(t_idx[i]) * _P1
        for j in range(vm_idx.size):
            x = seed ^ ti ^ (np.uint64(vm_idx[j]) * _P2)
            x = (x ^ (x >> _S30)) * _P2
            x = (x ^ (x >> _S27)) * _P3
            x = x ^ (x >> _S31)
            out[i, j] = np.float32(np.float64(x >> _S11) / _TWO53 * 2.0 - 1.0)
