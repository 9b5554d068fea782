"""The vectorised time-stepped engine: :func:`simulate` a scenario into a :class:`Result`."""

from densim.engine.result import Result
from densim.engine.run import simulate

__all__ = ["Result", "simulate"]
