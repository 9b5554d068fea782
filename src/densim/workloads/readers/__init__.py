"""Trace and inventory readers; :mod:`densim.workloads.registry` chooses them by format name."""

from densim.workloads.registry import FORMATS, open_trace

__all__ = ["FORMATS", "open_trace"]
