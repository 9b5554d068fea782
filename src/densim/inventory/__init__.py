"""Inventories: what runs today, read from the files users already have.

``load_inventory(path, fmt="auto")`` returns an :class:`Inventory` (VM sizes + optional demand
series). Formats: see :data:`FORMATS` and docs/reference/inventory-formats.md.
"""

from densim.inventory.load import FORMATS, detect_format, load_inventory
from densim.inventory.model import Inventory, build_inventory

__all__ = ["FORMATS", "Inventory", "build_inventory", "detect_format", "load_inventory"]
