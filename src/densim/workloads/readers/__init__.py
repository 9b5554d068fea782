"""Trace readers, chosen by format name from :data:`READERS`."""

from densim.workloads.readers.base import READERS, open_trace

# importing the modules registers the readers
from densim.workloads.readers import bitbrains, opendc, planetlab  # noqa: E402,F401

__all__ = ["READERS", "open_trace"]
