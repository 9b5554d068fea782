"""A sweep: a study file (:class:`densim.spec.sweep.SweepSpec`) expanded to scenario points and tasks.

The sweep is the Cartesian product of the study file's axes, times ``replications`` seeds.
Replication ``r`` of *every* scenario uses seed ``spawn_seeds(seed, replications)[r]``
(numpy ``SeedSequence.spawn``): scenarios are compared under common random numbers, which
removes the seed-to-seed noise from the differences between them.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from densim.errors import InputError
from densim.rng import spawn_seeds
from densim.spec.sweep import DEFAULT_MAX_RUNS, SweepSpec, canon, load_sweep_spec, parse_path


@dataclass(frozen=True)
class ScenarioPoint:
    """One point of the Cartesian product: axis values and the full scenario mapping."""

    id: str
    index: int
    values: dict[str, Any]
    mapping: dict[str, Any]
    sha256: str
    # what the point's results depend on, recorded with every finished task: a task counts as done
    # only while these match (see :func:`point_inputs`)
    inputs: dict[str, Any] = field(default_factory=dict)


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
class Sweep:
    """A loaded and expanded study file: its scenario points and replication seeds."""

    spec: SweepSpec
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


def sha256_of(obj: Any) -> str:
    return hashlib.sha256(canon(obj).encode()).hexdigest()


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


# fields the scenario loader reads (or densim sets) when it reads the base scenario: an axis cannot vary them
LOADER_FIELDS = ("imports", "base_dir")
# keys whose values are data files a scenario reads (as in densim.spec.loader)
_DATA_KEYS = ("path", "file", "trace_path", "inventory")


def _numeric_canon(v: Any) -> Any:
    """``v`` with every whole float written as an int (``1.0`` -> ``1``), so equal numbers compare equal."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, dict):
        return {k: _numeric_canon(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_numeric_canon(x) for x in v]
    return v


def check_axes(spec: SweepSpec, source: Any) -> None:
    """Refuse an axis that sets a loader field, and an axis that lists one number twice (``1`` and ``1.0``)."""
    for axis, vals in spec.axes.items():
        head = parse_path(axis)[0]
        if head in LOADER_FIELDS:
            raise InputError(source, f"axes.{axis}", f"sets {head!r}, which the loader resolves when it reads the base "
                                                     "scenario (an axis cannot change it); vary the scenario's own fields, "
                                                     "or make one study per base scenario")
        seen: dict[str, Any] = {}
        for v in vals:
            key = canon(_numeric_canon(v))
            if key in seen:
                raise InputError(source, f"axes.{axis}", f"repeats a value: {canon(seen[key])} and {canon(v)} are the same "
                                                         "number (they would be one scenario run twice); list it once")
            seen[key] = v


def _data_files(mapping: Any, out: dict[str, None] | None = None) -> list[str]:
    """Absolute paths of the data files a resolved scenario mapping names (inventories, traces)."""
    out = {} if out is None else out
    if isinstance(mapping, dict):
        for k, v in mapping.items():
            if k in _DATA_KEYS and isinstance(v, str) and Path(v).is_absolute():
                out[v] = None
            else:
                _data_files(v, out)
    elif isinstance(mapping, list):
        for v in mapping:
            _data_files(v, out)
    return list(out)


def _content_sha256(path: str, cache: dict[str, str | None]) -> str | None:
    """SHA-256 of a data file's bytes (of a folder: of its files' names and digests); None if absent."""
    if path not in cache:
        p = Path(path)
        if p.is_file():
            h = hashlib.sha256()
            with p.open("rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            cache[path] = h.hexdigest()
        elif p.is_dir():
            parts = {q.relative_to(p).as_posix(): _content_sha256(str(q), cache) for q in sorted(p.rglob("*")) if q.is_file()}
            cache[path] = sha256_of(parts)
        else:
            cache[path] = None
    return cache[path]


def point_inputs(mapping: dict[str, Any], scenario_sha256: str, runner: str, cache: dict[str, str | None]) -> dict[str, Any]:
    """What a point's results depend on: the resolved scenario (base file with its imports merged and
    the axis values applied), the bytes of every data file it names, the runner and densim's version."""
    from densim import __version__

    return {"scenario_sha256": scenario_sha256,
            "data_sha256": {f: _content_sha256(f, cache) for f in _data_files(mapping)},
            "runner": runner, "densim": __version__}


def scenario_id(values: dict[str, Any]) -> str:
    """A stable id for an axis assignment (independent of axis order and of the other points)."""
    return sha256_of(values)[:12]


def estimate_runs(spec: SweepSpec) -> int:
    """Tasks the study expands to (product of the axis lengths x replications), without expanding it."""
    n = spec.replications
    for vals in spec.axes.values():
        n *= len(vals)
    return n


def check_runs(spec: SweepSpec, source: Any, max_runs: int | None) -> int:
    """Refuse a study that expands to more than ``max_runs`` tasks, before anything is allocated."""
    n = estimate_runs(spec)
    limit = DEFAULT_MAX_RUNS if max_runs is None else max_runs
    if n > limit:
        shape = " x ".join(str(len(v)) for v in spec.axes.values()) or "1"
        raise InputError(source, "axes", f"the study expands to {n:,} runs ({shape} points x {spec.replications:,} "
                                         f"replications), more than the limit of {limit:,}; raise it with --max-runs")
    return n


def load_sweep(path: str | Path, *, max_runs: int | None = None) -> Sweep:
    """Read, validate and expand a study file; every scenario point is validated before any run.

    A study that would expand to more than ``max_runs`` tasks (default :data:`DEFAULT_MAX_RUNS`)
    is refused before it is expanded.
    """
    from densim.spec.loader import load_mapping

    path = Path(path).resolve()
    spec = load_sweep_spec(path)
    check_runs(spec, path, max_runs)
    check_axes(spec, path)
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
    data_cache: dict[str, str | None] = {}
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
            where = ", ".join(f"{k}={canon(v)}" for k, v in values.items()) or "base"
            validate(mapping, source=f"{path}:axes[{where}]", base_dir=base_path.parent)
        sha = sha256_of(mapping)
        points.append(ScenarioPoint(sid, index, values, mapping, sha, point_inputs(mapping, sha, spec.runner, data_cache)))
    seeds = spawn_seeds(spec.seed, spec.replications)
    study_sha = sha256_of({"spec": spec.model_dump(), "points": [p.sha256 for p in points]})
    return Sweep(spec, path, base, points, seeds, study_sha, extra={"base_dir": str(base_path.parent)})
