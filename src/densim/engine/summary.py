"""The run's summary as a typed object: what ``summary.json`` holds, and how stages add to it.

:class:`Summary` has typed core fields the engine fills (:class:`GridInfo`, :class:`ModelsInfo`,
:class:`PlacementInfo`, :class:`Totals`, :class:`Qos`, counts) and one section per active stage.
A stage *declares* the sections it writes and their keys as a class attribute::

    class MemorySummary(TypedDict):
        model: str
        hosts_swapping: list[str]
        ...

    class MemoryStage(BaseStage):
        summary_sections = {"memory": MemorySummary}

        def finish(self, ctx, summary):
            summary.add("memory", {...})

:meth:`StageSummary.add` refuses a section the stage did not declare, a section another stage
already wrote, a core field's name, and a value whose keys differ from the declared TypedDict's
(a missing required key or an undeclared one): a model that writes a field another change
removed fails loudly instead of writing a summary.json nobody reads the same way.

``Summary`` is a read-only :class:`~collections.abc.Mapping` over the same nested dict that is
written to ``summary.json`` (:meth:`Summary.to_dict`), so readers keep ``summary["totals"]["energy_kwh"]``;
the key order is the file's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


class SummaryError(RuntimeError):
    """A stage wrote a section it did not declare, twice, or with keys other than declared."""


@dataclass(frozen=True)
class GridInfo:
    start_s: float
    step_s: float
    n_steps: int
    horizon_s: float


@dataclass(frozen=True)
class ModelsInfo:
    cpu_contention: str
    burstiness: str
    placement: str
    stages: list[str]


@dataclass(frozen=True)
class PlacementInfo:
    policy: str
    cpu_overcommit: float
    memory_overcommit: float


@dataclass(frozen=True)
class Totals:
    cpu_demand_mhz_s: float
    cpu_delivered_mhz_s: float
    cpu_unserved_mhz_s: float
    cpu_ready_s: float
    energy_j: float
    energy_kwh: float


@dataclass(frozen=True)
class Qos:
    cpu_ready_pct_mean: float
    cpu_ready_pct_worst_vm_mean: float
    cpu_ready_pct_worst_step: float
    vms_ready_over_5pct: int
    vms_ready_over_10pct: int


@dataclass(frozen=True)
class SchedulingInfo:
    """VMs that arrive and leave (present only when ``scheduling.lifetimes`` is on for the run)."""

    queue: str
    idle_hosts: str
    tasks_total: int
    completed: int
    running_at_end: int
    waiting_at_end: int
    failed: int
    not_arrived: int
    scheduling_delay_total_s: float
    scheduling_delay_mean_s: float
    scheduling_delay_max_s: float
    peak_concurrent: int
    simulated_end_s: float  # from the start of the run to the end of the last task to finish (the grid's end if some still run)
    host_power_ons: int
    boot_energy_j: float


@dataclass(frozen=True)
class Core:
    """The engine's own part of the summary, in file order."""

    densim_version: str
    scenario: str
    seed: int
    grid: GridInfo
    models: ModelsInfo
    placement: PlacementInfo
    hosts_total: int
    hosts_used: int
    hosts_powered_on: int
    vms_total: int
    vms_placed: int
    vms_unplaced: int
    unplaced_vms: list[str]
    rack_units_powered_on: float
    totals: Totals
    qos: Qos
    scheduling: SchedulingInfo | None = None  # written only when VMs arrive and leave
    notes: list[str] = field(default_factory=list)  # warnings from the workload readers (written only when there are some)
    data_quality: dict[str, Any] | None = None  # how far the demand can be trusted (:func:`data_quality`)


CORE_FIELDS = frozenset(Core.__dataclass_fields__) | {"saturation"}


# ---- CPU Ready judged over each VM's life ------------------------------------------------------------
def alive_steps(start_s: np.ndarray, end_s: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """(rows,) float64: the steps of the grid ``edges`` (uniform) each row is alive on ``[start, end)``,
    fractional at its ends (the sum over steps of :func:`densim.workloads.tasks.alive_fraction`); 0 for a
    row that never started (NaN start). Computed from the ends alone: no (steps x rows) array."""
    step = float(edges[1] - edges[0]) if edges.size > 1 else 1.0
    s = np.where(np.isnan(start_s), np.inf, start_s)
    e = np.where(np.isnan(end_s), -np.inf, end_s)
    over = np.minimum(e, edges[-1]) - np.maximum(s, edges[0])
    return np.maximum(over, 0.0) / step


def ready_over_life(ready_pct_sum: np.ndarray, alive: np.ndarray, vm_of: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Each VM's CPU Ready over its own life (%), and which VMs were ever alive.

    ``ready_pct_sum`` (rows,) is the sum over steps of a row's per-step CPU Ready per vCPU (%), each
    step's figure measured against the whole step (ready s / (vCPUs x step)); ``alive`` (rows,) the
    steps the row is alive (:func:`alive_steps`; the grid's step count for VMs that never leave). The
    share is ``sum / alive``: ready time over alive time, so a task alive 1 of 4 steps that waits half
    of that step reads 50 %, not the 12.5 % an average over the whole run gives. With ``vm_of`` (the
    VM of each row, when rows are runs of one VM after HA restarts or maintenance landings) the
    runs of a VM are pooled (their ready and alive times added) and the arrays are per VM in
    ``np.unique(vm_of)`` order. A VM never alive has share 0 and ``False`` in the second array.
    """
    r = np.asarray(ready_pct_sum, dtype=np.float64)
    a = np.asarray(alive, dtype=np.float64)
    if vm_of is not None:
        _, inv = np.unique(vm_of, return_inverse=True)
        r = np.bincount(inv, weights=r)
        a = np.bincount(inv, weights=a)
    lived = a > 0
    return np.divide(r, a, out=np.zeros_like(r), where=lived), lived


def declared_keys(schema: type) -> tuple[frozenset[str], frozenset[str]]:
    """(required, optional) keys of a TypedDict."""
    return frozenset(schema.__required_keys__), frozenset(schema.__optional_keys__)


@dataclass
class Summary(Mapping):
    """summary.json: typed core fields, then the stages' declared sections, then saturation.

    Built by :attr:`densim.engine.result.Result.summary` at the end of a run: ``core`` (the engine's
    :class:`Core`: totals in MHz x s, s and J, QoS in %, counts) first, then each stage's ``finish``
    writes its sections through :meth:`for_stage` (in stage order; the failures section last), then
    :meth:`set_saturation`. Read as a mapping (``summary["totals"]["energy_j"]``) by the CLI, the
    studies, sweeps and the report, and written as the file by :meth:`to_dict`.

    Invariants: a section is written once, by the stage that declares it, with exactly its
    TypedDict's keys, and never under a core field's name (else :class:`SummaryError`); the
    mapping's key order is the file's.
    """

    core: Core
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    saturation: list[dict[str, Any]] = field(default_factory=list)
    _owner: dict[str, str] = field(default_factory=dict, repr=False)
    _dict: dict[str, Any] | None = field(default=None, repr=False)

    def for_stage(self, stage) -> StageSummary:
        """The view a stage's ``finish`` writes through (only its declared sections)."""
        return StageSummary(self, getattr(stage, "name", type(stage).__name__), getattr(stage, "summary_sections", {}))

    def _add(self, stage: str, declared: Mapping[str, type], section: str, value: Mapping[str, Any]) -> None:
        if section in CORE_FIELDS:
            raise SummaryError(f"stage {stage!r} writes summary section {section!r}, which is a core field of the summary")
        if section not in declared:
            raise SummaryError(f"stage {stage!r} writes summary section {section!r} it does not declare "
                               f"(summary_sections: {', '.join(sorted(declared)) or 'none'})")
        if section in self.sections:
            raise SummaryError(f"summary section {section!r} written twice (by {self._owner[section]!r} and {stage!r})")
        check_section(stage, section, declared[section], value)
        self.sections[section] = dict(value)
        self._owner[section] = stage
        self._dict = None

    def set_saturation(self, rows: list[dict[str, Any]]) -> None:
        """Set ``saturation``: the rows of :func:`densim.saturation.summarise` (resources at or above 90 % busy)."""
        self.saturation = rows
        self._dict = None

    # ---- the file's dict ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The nested dict written to ``summary.json`` (core fields, sections, ``saturation``), built once
        and rebuilt after a change; ``scheduling`` and ``notes`` are left out when empty."""
        if self._dict is None:
            out = asdict(self.core)
            if out["scheduling"] is None:
                del out["scheduling"]
            if not out["notes"]:
                del out["notes"]
            if out["data_quality"] is None:
                del out["data_quality"]
            out.update(self.sections)
            out["saturation"] = self.saturation
            self._dict = out
        return self._dict

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())


class StageSummary(Mapping):
    """One stage's writing view of a :class:`Summary` (read access to everything written so far)."""

    def __init__(self, summary: Summary | None, stage: str, declared: Mapping[str, type]) -> None:
        self._summary = summary
        self._stage = stage
        self._declared = dict(declared)
        self._local: dict[str, Any] = {}

    @classmethod
    def standalone(cls, stage) -> StageSummary:
        """A view not attached to a run's summary (unit tests of one stage's ``finish``)."""
        return cls(None, getattr(stage, "name", type(stage).__name__), getattr(stage, "summary_sections", {}))

    def add(self, section: str, value: Mapping[str, Any]) -> None:
        """Write the stage's ``section`` (declared in its ``summary_sections``, with the declared keys);
        :class:`SummaryError` otherwise, or when the section was already written."""
        if self._summary is not None:
            self._summary._add(self._stage, self._declared, section, value)
            return
        if section not in self._declared:
            raise SummaryError(f"stage {self._stage!r} writes summary section {section!r} it does not declare")
        if section in self._local:
            raise SummaryError(f"summary section {section!r} written twice by {self._stage!r}")
        check_section(self._stage, section, self._declared[section], value)
        self._local[section] = dict(value)

    def _view(self) -> Mapping[str, Any]:
        return self._summary.to_dict() if self._summary is not None else self._local

    def __getitem__(self, key: str) -> Any:
        return self._view()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._view())

    def __len__(self) -> int:
        return len(self._view())


def check_section(stage: str, section: str, schema: type, value: Mapping[str, Any]) -> None:
    """The keys of ``value`` are the declared TypedDict's: every required key, nothing undeclared."""
    if not isinstance(value, Mapping):
        raise SummaryError(f"stage {stage!r}: summary section {section!r} must be a mapping, got {type(value).__name__}")
    required, optional = declared_keys(schema)
    keys = set(value)
    missing = sorted(required - keys)
    extra = sorted(keys - required - optional)
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing)}")
        if extra:
            parts.append(f"undeclared {', '.join(extra)}")
        raise SummaryError(f"stage {stage!r}: summary section {section!r} ({schema.__name__}): {'; '.join(parts)}")


def data_quality(leaves: list, n_vms: int) -> dict[str, Any]:
    """The run's data-quality section: the plan's rating rule (:func:`densim.workloads.quality.rate`) on the facts
    of the run's demand sources (``leaves``: the leaf sources, in VM order).

    A VM group driven by a synthetic profile or a synthetic trace has no measured demand: its VMs count as sized
    by a default rule, and a run with no measured source at all grades D ("synthetic"). A trace's history is its
    span and native sample interval; with several traces, the shortest span and the coarsest interval are graded.
    Hosts are given by the scenario, so the host-list grades of the plan do not apply."""
    from densim.workloads.quality import DAY_S, rate
    from densim.workloads.sources import ProfileSource
    from densim.workloads.synthetic_trace import SyntheticTrace

    groups = []
    synthetic_vms = 0
    measured_days: list[float] = []
    measured_step: list[float] = []
    for p in leaves:
        synthetic = isinstance(p, (ProfileSource, SyntheticTrace))
        span = None if synthetic else p.span_s()
        step = None if synthetic else p.native_step_s()
        row: dict[str, Any] = {"source": type(p).__name__, "vms": int(p.n_vms),
                               "kind": "synthetic" if synthetic else ("series" if span is not None else "unknown")}
        if synthetic:
            synthetic_vms += int(p.n_vms)
        elif span is not None:
            row["days"] = (float(span[1]) - float(span[0])) / DAY_S
            row["step_s"] = None if step is None else float(step)
            measured_days.append(row["days"])
            if step is not None:
                measured_step.append(float(step))
        groups.append(row)
    n = max(int(n_vms), 1)
    total = sum(g["vms"] for g in groups) or n
    measured = bool(measured_days)
    facts: dict[str, Any] = {
        "kind": "series" if measured else "synthetic",
        "days": min(measured_days) if measured else 0.0,
        "step_s": max(measured_step) if measured_step else None,
        "vms": int(n_vms), "synthetic_vms_share": synthetic_vms / total,
        "cpu_default_vms": int(round(synthetic_vms * n / total)), "mem_default_vms": int(round(synthetic_vms * n / total)),
        "defaulted_share": synthetic_vms / total, "hosts_listed": None, "sources": groups,
    }
    return {"facts": facts} | rate(facts)
