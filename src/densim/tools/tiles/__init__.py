"""Consolidation benchmark in tiles: ``densim bench tiles HOST.yaml`` and ``densim bench compare``."""
