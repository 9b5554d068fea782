"""A sweep's input file, a *study file*: set-valued axes over a base scenario.

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

:func:`load_sweep_spec` reads it through the one loader (:func:`densim.spec.loader.load_spec`);
:mod:`densim.tools.sweep.expand` expands it into scenario points and tasks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from densim.rng import DEFAULT_SEED

_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")

# sanity bounds of a study file, and the default limit on the runs one sweep may expand to
MAX_REPLICATIONS = 1_000_000
MAX_NAME_LENGTH = 100
DEFAULT_MAX_RUNS = 100_000


class SweepSpec(BaseModel):
    """The contents of a study file (the input of ``densim sweep``)."""

    model_config = ConfigDict(defer_build=True, allow_inf_nan=False, frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=MAX_NAME_LENGTH, description="study name; results go to <out>/<name>")
    description: str = ""
    scenario: str = Field(description="base scenario file, relative to the study file")
    seed: int = Field(default=DEFAULT_SEED, ge=0, le=2**64 - 1, strict=True, description="root seed; replication seeds are spawned from it")
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
            texts = [canon(x) for x in vals]
            if len(set(texts)) != len(texts):
                raise ValueError(f"axis {k!r} repeats a value")
        return v


def canon(obj: Any) -> str:
    """Canonical JSON of a value (sorted keys, no spaces): equal values, equal text."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


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


def load_sweep_spec(path: str | Path) -> SweepSpec:
    """Read and validate a study file (no ``imports``; ``scenario`` stays relative to the file)."""
    from densim.spec.loader import load_spec

    return load_spec(path, SweepSpec, what="study file", imports=False, resolve_paths=False)
