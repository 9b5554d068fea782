"""Scenario data: frozen pydantic models, YAML/JSON loading with imports, and the parts catalog.

Pure data: nothing here runs a simulation. The engine consumes :class:`Scenario` objects.
"""

from densim.scenario.catalog import Catalog, builtin_catalog
from densim.scenario.io import load_scenario, scenario_from_dict, validate_file
from densim.scenario.model import Scenario

__all__ = ["Catalog", "Scenario", "builtin_catalog", "load_scenario", "scenario_from_dict", "validate_file"]
