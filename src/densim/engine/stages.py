"""How resource models plug into the engine.

A stage factory ``factory(ctx) -> Stage | None`` is registered in :data:`STAGES`; it returns None
when the scenario switches its mechanism off. Every module in :mod:`densim.engine.plugins` is
imported by the engine, so registering is all a model has to do.

**Order.** A stage declares which stages it must run after (``after=``) and/or before
(``before=``) when it registers, or as ``after``/``before`` attributes of the factory::

    @STAGES.register("storage", description=..., after=("memory",))

:func:`stage_order` sorts every registered stage topologically (Kahn's algorithm; among stages
that are free to go next, the alphabetically first goes first, so the order is deterministic and
stages with no constraint between them keep a stable order). The order is computed over *all*
registered stages and then restricted to the active ones, so ``a after b after c`` still puts
``a`` after ``c`` when ``b`` is switched off. A cycle, or a name in ``after``/``before`` that is no
registered stage, is a :class:`StageOrderError`. ``summary.json`` records the order in
``models.stages``.

Per chunk of time steps the engine calls, for every active stage in that order:

1. ``before_cpu(ctx, chunk)``: may add to ``chunk.vm["cpu_demand_mhz"]`` (overheads, fault handling)
   or scale ``chunk.host_capacity_mhz`` (turbo, SMT; it arrives as a read-only (steps, hosts) view, so a
   stage assigns a new array rather than writing into it);
2. the CPU model runs (delivered, unserved, ready, utilisation, power);
3. ``after_cpu(ctx, chunk)``: may read the CPU results, writes its own metrics to ``chunk.vm_out`` /
   ``chunk.host_out`` (arrays shaped (steps, VMs) / (steps, hosts)) after declaring them with
   ``ctx.declare(name, level="vm"|"host", agg="mean"|"sum"|"max", unit=..., doc=...)``, and reports
   the busy share of the resources it models with :func:`add_saturation` ``(ctx, kind, names, busy)``
   (see :class:`densim.engine.state.SaturationLog`); ``summary["saturation"]`` lists those at or
   above 90 % busy in some step.

The CPU results per VM and step (``chunk.vm["cpu_claim_mhz"]``, ``["cpu_delivered_mhz"]``,
``["cpu_ready_s"]``, (steps x VMs)) and per host and step (``chunk.host[...]``, (steps x hosts))
are arrays the fused CPU kernel writes only when asked: a stage whose ``after_cpu`` reads the
per-VM ones sets the class attribute ``reads_cpu_results = True`` (it gets both), one that reads
only the per-host ones ``reads_host_results = True``. A stage that reads them without saying so
finds the keys missing. A stage that neither reads nor changes ``chunk.vm`` sets
``uses_vm_demand = False``: then the run may keep the demand in factored form (``chunk.vm`` empty).
A stage that reads the demand only through ``chunk.demand()`` (which expands it on first use) or
``chunk.demand_factors`` sets ``accepts_factored_demand = True``; when every such stage does, a
source with a factored form (PlanetLab) is not expanded to (steps x VMs) unless a stage asks.

Alive rows: in a run whose VMs arrive and leave (``ctx.liveness``), a chunk may hold only the VM rows
alive at some time in it. A stage that can work on such a chunk sets ``accepts_active_rows = True``;
when every stage does (and no per-VM time series is kept, no migration planner runs), the engine
steps only those rows. Then ``chunk.vm_ids`` is the (rows,) array of the VM rows the chunk holds (in
host order), every per-VM array (``chunk.vm``, ``vm_out``, ``vm_reduced``) has one column per entry
of it, per-VM parameters (and the window state's alive shares: ``chunk.window(ctx).alive(chunk.vm_ids)``)
are read at ``chunk.vm_ids`` and per-host arrays keep every host; the
engine adds the columns' sums to their VMs. ``chunk.vm_ids`` is None in a chunk of every VM row. Such
a chunk carries the same source channels as a chunk of every row, for its rows; a row missing from a
chunk (not alive in it) takes, for each of its steps, the value ``idle_vm_values[name]`` (0 unless given) of
every per-VM metric the stage writes: that value must be the one the stage gives a row that is not
alive in a step, so that the results equal those of a chunk of every row.

``finish(ctx, summary)`` adds the stage's sections to ``summary.json`` through
``summary.add(section, value)``; a stage declares them, with their keys, as
``summary_sections = {"name": SomeTypedDict}`` (see :mod:`densim.engine.summary`). Writing an
undeclared section, a section twice, or keys other than the TypedDict's is a ``SummaryError``.

A stage's arrays in ``chunk.vm_out`` / ``chunk.host_out`` are handed over: when the run is one
chunk the engine keeps such an array as the metric's time series without copying it, so a stage
puts there no array it writes into later.

A factory may carry ``kernels``, a function of the scenario returning the ``"module:function"``
names of the numba kernels the stage will call (empty when the scenario switches it off):
:mod:`densim.engine.preload` loads their cached machine code in a background thread while the run
builds its inputs.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Protocol

import numpy as np

from densim.registry import Registry


class Stage(Protocol):
    """A resource model plugged into the engine (memory, storage, fabric, virtualization, carbon).

    A registered factory builds one per run (None: the scenario switches it off); the engine keeps
    the active ones in ``ctx.stages`` by ``name``, in dependency order, and calls their hooks in
    that order: :meth:`prepare` once, :meth:`before_cpu` and :meth:`after_cpu` once per chunk of
    steps (chunks in time order, each chunk's hooks before the next chunk's), :meth:`finish` once
    when the summary is built. ``ctx`` is the run's :class:`densim.engine.state.EngineContext`,
    ``chunk`` a :class:`densim.engine.run.Chunk` ((steps, VMs) and (steps, hosts) arrays).

    A stage keeps its own state between hooks (per-host queues, running sums); what it reports
    goes through ``chunk.vm_out``/``host_out`` (per step), :func:`add_saturation` and its declared
    ``summary_sections`` ({section name: TypedDict of its keys}). The optional class attributes
    ``reads_cpu_results``, ``reads_host_results``, ``uses_vm_demand`` and
    ``accepts_factored_demand`` (see :class:`BaseStage` and the module docstring) tell the engine
    which arrays to build for it.
    """

    name: str

    def prepare(self, ctx) -> None:
        """Once, before the first chunk, when every active stage exists (``ctx.stage(name)`` finds the
        others) and the VMs are placed (``ctx.vms.host``): declare metrics (``ctx.declare``), size the
        stage's per-VM and per-host state, check the scenario's settings (InputError on a bad one)."""
        ...

    def before_cpu(self, ctx, chunk) -> None:
        """Per chunk, before the CPU step: may add to the demand (``chunk.vm["cpu_demand_mhz"]`` or
        ``chunk.demand()``, (steps, VMs) MHz), assign a new ``chunk.host_capacity_mhz`` ((steps, hosts)
        MHz; the one given is read-only) or add host power (``chunk.add_host_power``, W)."""
        ...

    def after_cpu(self, ctx, chunk) -> None:
        """Per chunk, after the CPU step: read its results (``chunk.vm``/``chunk.host``, when the class
        asks for them), write the stage's declared metrics to ``chunk.vm_out``/``chunk.host_out``
        ((steps, VMs)/(steps, hosts), handed over) and report busy shares with :func:`add_saturation`."""
        ...

    summary_sections: dict[str, type]

    def finish(self, ctx, summary) -> None:
        """Once, after the last chunk, when :attr:`densim.engine.result.Result.summary` is built: add the
        stage's sections with ``summary.add(section, value)`` (only those in ``summary_sections``,
        with the declared keys; a :class:`densim.engine.summary.StageSummary`)."""
        ...


class BaseStage:
    """Convenience base with do-nothing hooks."""

    name = "stage"
    summary_sections: dict[str, type] = {}
    reads_cpu_results = False  # True: after_cpu reads chunk.vm["cpu_delivered_mhz"] etc. (see above)
    reads_host_results = False  # True: after_cpu reads chunk.host["power_w"] etc.
    uses_vm_demand = True  # False: the stage never touches chunk.vm
    accepts_factored_demand = False  # True: reads the demand through chunk.demand() or chunk.demand_factors
    accepts_active_rows = False  # True: works on a chunk of the alive VM rows only (chunk.vm_ids, see above)
    idle_vm_values: dict[str, float] = {}  # a per-VM metric's value in a step its row is not alive (0 if absent)

    def prepare(self, ctx) -> None:
        """Nothing to prepare (see :meth:`Stage.prepare`)."""

    def before_cpu(self, ctx, chunk) -> None:
        """Leaves demand and capacity as they are (see :meth:`Stage.before_cpu`)."""

    def after_cpu(self, ctx, chunk) -> None:
        """Writes no metric (see :meth:`Stage.after_cpu`)."""

    def finish(self, ctx, summary) -> None:
        """Adds no summary section (see :meth:`Stage.finish`)."""


class StageOrderError(ValueError):
    """The declared stage dependencies have a cycle or name a stage that is not registered."""


class StageRegistry(Registry):
    """The stage registry: a :class:`~densim.registry.Registry` that also keeps ``after``/``before``."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.after: dict[str, tuple[str, ...]] = {}
        self.before: dict[str, tuple[str, ...]] = {}

    def register(self, name: str, *, description: str, source: str = "", after: Iterable[str] = (),
                 before: Iterable[str] = ()) -> Callable:
        """Decorator registering a stage factory under ``name`` (as :meth:`Registry.register`), with the
        stages it runs ``after`` and ``before`` (names, case-insensitive; added to the factory's own
        ``after``/``before`` attributes). A string instead of a sequence is a TypeError."""
        base = super().register(name, description=description, source=source)
        if isinstance(after, str) or isinstance(before, str):
            raise TypeError(f"stage {name!r}: after/before take a sequence of stage names, not a string")

        def deco(obj):
            base(obj)
            key = name.lower()
            self.after[key] = tuple(s.lower() for s in (*after, *getattr(obj, "after", ())))
            self.before[key] = tuple(s.lower() for s in (*before, *getattr(obj, "before", ())))
            return obj

        return deco

    def unregister(self, name: str) -> None:
        """Remove a stage (tests register dummy stages and take them out again)."""
        key = name.lower()
        self._entries.pop(key, None)
        self.after.pop(key, None)
        self.before.pop(key, None)

    def order(self) -> list[str]:
        """Every registered stage name (lower case), dependencies first; see :func:`stage_order`."""
        return stage_order(self.names(), self.after, self.before)


def stage_order(names: Iterable[str], after: dict[str, Iterable[str]], before: dict[str, Iterable[str]]) -> list[str]:
    """Topological order of ``names`` under ``x after y`` / ``x before y`` constraints.

    Kahn's algorithm with a heap: among the stages whose predecessors have all been placed, the
    alphabetically first goes next (deterministic, and independent of registration order).
    Raises :class:`StageOrderError` on an unknown name or a cycle.
    """
    nodes = sorted(set(names))
    known = set(nodes)
    preds: dict[str, set[str]] = {n: set() for n in nodes}
    for n in nodes:
        for p in after.get(n, ()):
            if p not in known:
                raise StageOrderError(f"stage {n!r} runs after {p!r}, which is no registered stage; stages: {', '.join(nodes)}")
            preds[n].add(p)
        for s in before.get(n, ()):
            if s not in known:
                raise StageOrderError(f"stage {n!r} runs before {s!r}, which is no registered stage; stages: {', '.join(nodes)}")
            preds[s].add(n)
    for n in nodes:
        if n in preds[n]:
            raise StageOrderError(f"stage {n!r} is declared to run after itself")
    succ: dict[str, list[str]] = {n: [] for n in nodes}
    for n, ps in preds.items():
        for p in ps:
            succ[p].append(n)
    indeg = {n: len(preds[n]) for n in nodes}
    ready = [n for n in nodes if indeg[n] == 0]
    heapq.heapify(ready)
    out: list[str] = []
    while ready:
        n = heapq.heappop(ready)
        out.append(n)
        for s in succ[n]:
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(ready, s)
    if len(out) < len(nodes):
        stuck = sorted(n for n in nodes if indeg[n] > 0)
        raise StageOrderError(f"stage dependencies form a cycle among: {', '.join(stuck)}")
    return out


STAGES: StageRegistry = StageRegistry("engine-stage")


def add_saturation(ctx, kind: str, names, busy, *, key=None) -> None:
    """Report a chunk of busy shares ``(steps, len(names))`` to ``ctx.saturation`` (see SaturationLog).

    The one way a stage contributes to ``summary["saturation"]``; a stand-in context without a
    saturation log (unit tests of a stage) is accepted and ignored.
    """
    log = getattr(ctx, "saturation", None)
    if log is not None:
        log.add(kind, names, busy, key=key)


def step_sums(x) -> np.ndarray:
    """(steps, n) -> (n,) float64: each column added step by step, in time order (a cumulative sum).

    The same bits for a column whatever the other columns are: ``x.sum(axis=0)`` adds a single column
    pairwise but several columns step by step, so a part of a split run holding one host would differ.
    A stage that keeps per-host sums (``partition_host_sums``) takes them with this and :func:`host_sums`."""
    x = np.asarray(x)
    if x.shape[0] == 0:
        return np.zeros(x.shape[1:])
    acc = x[0].astype(np.float64)  # a loop over steps, not a (steps, n) float64 cumulative sum: no full-size copy
    for row in x[1:]:
        acc += row
    return acc


def stable_order(keys) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` of integer keys (host numbers), taken on int32 keys when they fit: numpy
    sorts those by radix, about 12x faster than int64 at 20 M keys, and a stable sort of the same keys is the same
    permutation."""
    k = np.asarray(keys)
    if k.dtype.kind in "iu" and k.size and k.dtype.itemsize > 4 and -2**31 <= int(k.min()) and int(k.max()) < 2**31:
        k = k.astype(np.int32)
    return np.argsort(k, kind="stable")


def host_sums(x, col_host, n_hosts: int) -> np.ndarray:
    """(steps, columns) -> (n_hosts,) float64: each column's :func:`step_sums`, added per host ``col_host``
    (columns, int) in column order (``np.bincount``: one addition after the other), 0 for a host without columns.

    A host's figure depends only on its own columns and their order, so a part of a split run whose columns are
    its hosts' in the whole run's order gives each host the whole run's bits (:mod:`densim.engine.partition`)."""
    col_host = np.asarray(col_host, dtype=np.int64)
    if col_host.size == 0:
        return np.zeros(n_hosts)
    return np.bincount(col_host, weights=step_sums(x), minlength=n_hosts).astype(np.float64)


def scattered_host_sums(cols, vals, col_host, n_hosts: int) -> np.ndarray:
    """:func:`host_sums` of a (steps, columns) array that is ``vals`` at the entries of columns ``cols`` and 0
    elsewhere, the entries listed step by step (``np.nonzero``'s order): each column's values added in time order
    (``np.bincount``), then the columns per host ``col_host`` (all columns) in column order."""
    col_host = np.asarray(col_host, dtype=np.int64)
    per_col = np.bincount(np.asarray(cols, dtype=np.int64), weights=np.asarray(vals, dtype=np.float64),
                          minlength=col_host.size)
    return np.bincount(col_host, weights=per_col, minlength=n_hosts).astype(np.float64)


def ordered_entries(registry: StageRegistry | None = None):
    """The registry's entries in dependency order."""
    reg = registry or STAGES
    return [reg.entry(n) for n in reg.order()]


def load_plugins() -> None:
    """Import every module in :mod:`densim.engine.plugins` (each registers its stage)."""
    import importlib
    import pkgutil

    import densim.engine.plugins as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"densim.engine.plugins.{mod.name}")
