"""Modules imported on first use: scipy, numba-compiled kernels and the like stay out of start-up.

``stats = lazy("scipy.stats")`` at module level behaves like ``from scipy import stats`` except
that the import happens at the first attribute access (``stats.binom``), so ``densim validate``
and ``densim --help`` do not pay for libraries only a run needs.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class _LazyModule:
    __slots__ = ("_name", "_module")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}{' (loaded)' if self._module is not None else ''}>"


def lazy(name: str) -> Any:
    """The module ``name``, imported when one of its attributes is first used."""
    return _LazyModule(name)
