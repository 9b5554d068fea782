"""numba's ``njit`` when available; otherwise the plain Python function (slow but identical)."""

from __future__ import annotations

try:  # pragma: no cover - depends on the environment
    from numba import njit as _njit

    def njit(fn):
        return _njit(cache=True, nogil=True)(fn)

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover
    def njit(fn):
        return fn

    HAVE_NUMBA = False
