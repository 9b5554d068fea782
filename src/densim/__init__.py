"""densim: a what-if simulator and capacity planner for virtualized data centres.

Layers (imports flow one way only):

    units, errors, registry, rng           foundations
    scenario                               pure data: pydantic models, YAML/JSON loading, catalog
    models, workloads, placement, engine   mechanistic models and the vectorised engine
    analysis, reports, studies, cli        what users see
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
