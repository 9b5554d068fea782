"""What the user writes: every user-facing schema (frozen pydantic models) and the one loader.

Pure data: nothing here looks up the catalog or runs a model. :func:`densim.plant.resolve` turns
a :class:`Scenario` into the plant the engine runs.
"""

from densim.spec.loader import load_scenario, load_spec, scenario_from_dict
from densim.spec.scenario import Scenario

__all__ = ["Scenario", "load_scenario", "load_spec", "scenario_from_dict"]
