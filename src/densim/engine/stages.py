"""How resource models plug into the engine.

A stage factory ``factory(ctx) -> Stage | None`` is registered in :data:`STAGES`; it returns None
when the scenario switches its mechanism off. Every module in :mod:`densim.engine.plugins` is
imported by the engine, so registering is all a model has to do.

Per chunk of time steps the engine calls, for every active stage in registration order:

1. ``before_cpu(ctx, chunk)``: may add to ``chunk.vm["cpu_demand_mhz"]`` (overheads, fault handling)
   or scale ``chunk.host_capacity_mhz`` (turbo, SMT);
2. the CPU model runs (delivered, unserved, ready, utilisation, power);
3. ``after_cpu(ctx, chunk)``: reads the CPU results, writes its own metrics to ``chunk.vm_out`` /
   ``chunk.host_out`` (arrays shaped (steps, VMs) / (steps, hosts)) after declaring them with
   ``ctx.declare(name, level="vm"|"host", agg="mean"|"sum"|"max", unit=..., doc=...)``.

``finish(ctx, summary)`` may add entries to ``summary.json``.
"""

from __future__ import annotations

from typing import Protocol

from densim.registry import Registry


class Stage(Protocol):
    name: str

    def prepare(self, ctx) -> None: ...

    def before_cpu(self, ctx, chunk) -> None: ...

    def after_cpu(self, ctx, chunk) -> None: ...

    def finish(self, ctx, summary: dict) -> None: ...


class BaseStage:
    """Convenience base with do-nothing hooks."""

    name = "stage"

    def prepare(self, ctx) -> None:
        pass

    def before_cpu(self, ctx, chunk) -> None:
        pass

    def after_cpu(self, ctx, chunk) -> None:
        pass

    def finish(self, ctx, summary: dict) -> None:
        pass


STAGES: Registry = Registry("engine-stage")


def load_plugins() -> None:
    """Import every module in :mod:`densim.engine.plugins` (each registers its stage)."""
    import importlib
    import pkgutil

    import densim.engine.plugins as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"densim.engine.plugins.{mod.name}")
