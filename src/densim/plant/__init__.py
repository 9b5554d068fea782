"""The plant: what the user wrote (a spec), resolved once against the catalog.

``resolve(scenario)`` returns a :class:`Plant` (host groups, datastores, memory model, virtualization
platforms, batch-job fabric: every part looked up and checked once, with field-path errors); the
engine and the tools take the plant.
"""

from densim.plant.core import DatastorePlant, MemoryPlant, Plant, VirtPlatform, catalog_for, load_plant, plant_from_dict, resolve, validate_file
from densim.plant.hosts import HostGroupPlant, resolve_cpu

__all__ = ["DatastorePlant", "HostGroupPlant", "MemoryPlant", "Plant", "VirtPlatform", "catalog_for", "load_plant", "plant_from_dict", "resolve", "resolve_cpu", "validate_file"]
