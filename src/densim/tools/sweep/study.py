"""Sweep study files: set-valued axes over a base scenario, expanded to tasks.

A study file (YAML) names a base scenario and a set of *axes*. Each axis is a field path into
the scenario (``placement.cpu_overcommit``, ``cluster.hosts[0].count``) with a list of values.
The sweep is the Cartesian product of all axes, times ``replications`` seeds::

    name: overcommit-vs-hosts
    scenario: base.yaml          # relative to this file
    seed: 2026                   # root seed, recorded in the manifest
    replications: 3
    axes:
      placement.cpu_overcommit: [1, 2, 4]
      cluster.hosts[0].count: [8, 16]

Replication ``r`` of *every* scenario uses seed ``spawn_seeds(seed, replications)[r]``
(numpy ``SeedSequence.spawn``): scenarios are compared under common random numbers, which
removes the seed-to-seed noise from the differences between them.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from densim.errors import InputError
from densim.rng import spawn_seeds

_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")

# sanity bounds of a study file, and the default limit on the runs one sweep may expand to
MAX_REPLICATIONS = 1_000_000
MAX_NAME_LENGTH = 100
DEFAULT_MAX_RUNS = 100_000


class StudySpec(BaseModel):
    """The contents of a study file."""

    model_config = ConfigDict(allow_inf_nan=False, frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=MAX_NAME_LENGTH, description="study name; results go to <out>/<name>")
    description: str = ""
    scenario: str = Field(description="base scenario file, relative to the study file")
    seed: int = Field(default=0, ge=0, le=2**64 - 1, strict=True, description="root seed; replication seeds are spawned from it")
    replications: int = Field(default=1, gt=0, le=MAX_REPLICATIONS, strict=True)
    axes: dict[str, list[Any]] = Field(default_factory=dict, description="field path -> list of values")
    runner: str = Field(default="engine", description="a registered runner name: 'engine', or one an installed "
                        "plug-in registers under the 'densim.runners' entry-point group")
    metrics: list[str] = Field(default_factory=list, description="summary fields the report compares (default: all numeric)")

    @field_validator("name")
    @classmethod
    def _safe_name(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", v):
            raise ValueError("use letters, digits, '.', '_' and '-' only (it becomes a folder name)")
        return v

    @field_validator("axes")
    @classmethod
    def _non_empty(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for k, vals in v.items():
            if not vals:
                raise ValueError(f"axis {k!r} has no values")
            parse_path(k)
            canon = [_canon(x) for x in vals]
            if len(set(canon)) != len(canon):
                raise ValueError(f"axis {k!r} repeats a value")
        return v


@dataclass(frozen=True)
class ScenarioPoint:
    """One point of the Cartesian product: axis values and the full scenario mapping."""

    id: str
    index: int
    values: dict[str, Any]
    mapping: dict[str, Any]
    sha256: str


@dataclass(frozen=True)
class Task:
    """One simulation: a scenario point and one replication seed."""

    scenario_id: str
    replication: int
    seed: int

    @property
    def key(self) -> str:
        return f"scenario={self.scenario_id}/seed={self.seed}"


@dataclass
class Study:
    """A loaded and expanded study."""

    spec: StudySpec
    path: Path
    base_mapping: dict[str, Any]
    points: list[ScenarioPoint]
    seeds: list[int]
    study_sha256: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name

    def tasks(self) -> list[Task]:
        return [Task(p.id, r, s) for p in self.points for r, s in enumerate(self.seeds)]

    def point(self, scenario_id: str) -> ScenarioPoint:
        for p in self.points:
            if p.id == scenario_id:
                return p
        raise KeyError(scenario_id)


def _canon(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def sha256_of(obj: Any) -> str:
    return hashlib.sha256(_canon(obj).encode()).hexdigest()


def parse_path(path: str) -> list[str | int]:
    """``"cluster.hosts[0].count"`` -> ``["cluster", "hosts", 0, "count"]``."""
    out: list[str | int] = []
    pos = 0
    text = path.strip()
    while pos < len(text):
        if text[pos] == ".":
            pos += 1
            continue
        m = _PATH_TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"bad field path {path!r} at character {pos + 1}")
        out.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        pos = m.end()
    if not out:
        raise ValueError(f"empty field path {path!r}")
    return out


def _deep_merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _deep_merge(out[k], v) if k in out else copy.deepcopy(v)
        return out
    return copy.deepcopy(over)


def set_path(mapping: dict[str, Any], path: str, value: Any) -> None:
    """Set ``value`` at ``path`` inside ``mapping`` (in place); mappings merge into mappings."""
    tokens = parse_path(path)
    node: Any = mapping
    for i, tok in enumerate(tokens[:-1]):
        nxt = tokens[i + 1]
        if isinstance(tok, int):
            if not isinstance(node, list) or tok >= len(node):
                raise KeyError(f"{_fmt(tokens[: i + 1])}: no such list element")
            node = node[tok]
        else:
            if not isinstance(node, dict):
                raise KeyError(f"{_fmt(tokens[: i + 1])}: not a mapping")
            if tok not in node or node[tok] is None:
                if isinstance(nxt, int):
                    raise KeyError(f"{_fmt(tokens[: i + 1])}: no such list")
                node[tok] = {}
            node = node[tok]
    last = tokens[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or last >= len(node):
            raise KeyError(f"{_fmt(tokens)}: no such list element")
        node[last] = _deep_merge(node[last], value)
    else:
        if not isinstance(node, dict):
            raise KeyError(f"{_fmt(tokens[:-1])}: not a mapping")
        node[last] = _deep_merge(node[last], value) if last in node else copy.deepcopy(value)


def _fmt(tokens: list[str | int]) -> str:
    out = ""
    for t in tokens:
        out += f"[{t}]" if isinstance(t, int) else ("." if out else "") + t
    return out


def scenario_id(values: dict[str, Any]) -> str:
    """A stable id for an axis assignment (independent of axis order and of the other points)."""
    return sha256_of(values)[:12]


def estimate_runs(spec: StudySpec) -> int:
    """Tasks the study expands to (product of the axis lengths x replications), without expanding it."""
    n = spec.replications
    for vals in spec.axes.values():
        n *= len(vals)
    return n


def check_runs(spec: StudySpec, source: Any, max_runs: int | None) -> int:
    """Refuse a study that expands to more than ``max_runs`` tasks, before anything is allocated."""
    n = estimate_runs(spec)
    limit = DEFAULT_MAX_RUNS if max_runs is None else max_runs
    if n > limit:
        shape = " x ".join(str(len(v)) for v in spec.axes.values()) or "1"
        raise InputError(source, "axes", f"the study expands to {n:,} runs ({shape} points x {spec.replications:,} "
                                         f"replications), more than the limit of {limit:,}; raise it with --max-runs")
    return n


def _read_yaml(path: Path) -> dict[str, Any]:
    from densim.textio import read_mapping_file

    return read_mapping_file(path, "study file")


def load_study(path: str | Path, *, max_runs: int | None = None) -> Study:
    """Read, validate and expand a study file; every scenario point is validated before any run.

    A study that would expand to more than ``max_runs`` tasks (default :data:`DEFAULT_MAX_RUNS`)
    is refused before it is expanded.
    """
    from densim.spec.loader import format_loc, load_mapping

    path = Path(path).resolve()
    data = _read_yaml(path)
    try:
        spec = StudySpec.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")
        raise InputError(path, format_loc(tuple(e["loc"])), msg) from None
    check_runs(spec, path, max_runs)
    from densim.tools.sweep.runners import resolve_runner

    runner = resolve_runner(spec.runner, source=path)  # a registered name, checked before the base scenario is read
    try:
        base_path = (path.parent / spec.scenario).resolve()
        found = base_path.is_file()
    except (OSError, ValueError) as exc:  # a name too long for the file system, a NUL byte
        raise InputError(path, "scenario", f"not a usable file name: {getattr(exc, 'strerror', None) or exc}") from None
    if not found:
        raise InputError(path, "scenario", f"base scenario not found: {spec.scenario}" if not base_path.exists()
                         else f"base scenario is not a file: {spec.scenario}")
    base = load_mapping(base_path)

    axis_names = list(spec.axes)
    points: list[ScenarioPoint] = []
    seen: set[str] = set()
    for index, combo in enumerate(itertools.product(*(spec.axes[a] for a in axis_names))):
        values = dict(zip(axis_names, combo))
        mapping = copy.deepcopy(base)
        for axis, val in values.items():
            try:
                set_path(mapping, axis, val)
            except KeyError as exc:
                raise InputError(path, f"axes.{axis}", f"cannot apply to {spec.scenario}: {exc.args[0]}") from None
        sid = scenario_id(values)
        if sid in seen:  # pragma: no cover - sha256 collision
            raise InputError(path, "axes", "two points hash to the same id")
        seen.add(sid)
        validate = getattr(runner, "validate", None)
        if validate is not None:
            where = ", ".join(f"{k}={_canon(v)}" for k, v in values.items()) or "base"
            validate(mapping, source=f"{path}:axes[{where}]", base_dir=base_path.parent)
        points.append(ScenarioPoint(sid, index, values, mapping, sha256_of(mapping)))
    seeds = spawn_seeds(spec.seed, spec.replications)
    study_sha = sha256_of({"spec": spec.model_dump(), "points": [p.sha256 for p in points]})
    return Study(spec, path, base, points, seeds, study_sha, extra={"base_dir": str(base_path.parent)})
