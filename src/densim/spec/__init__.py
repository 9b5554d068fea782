"""Scenario data: frozen pydantic models, YAML/JSON loading with imports, and the parts catalog.

Pure data: nothing here runs a simulation. The engine consumes :class:`Scenario` objects.
"""

from densim.catalog.core import Catalog, builtin_catalog
from densim.spec.loader import load_scenario, scenario_from_dict, validate_file
from densim.spec.scenario import Scenario

__all__ = ["Catalog", "Scenario", "builtin_catalog", "load_scenario", "scenario_from_dict", "validate_file"]
