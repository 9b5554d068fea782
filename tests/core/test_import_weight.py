"""Importing what a run imports (engine, plant, spec loader) must not pull heavy libraries a run does not use.

A fresh interpreter imports the three modules and lists which of the heavy packages ended up in
``sys.modules``; none may. (No timing: the point is what is imported, not how long it takes.)
Also: the spec's pydantic models are built on first use (``defer_build``), and validation on first use
still refuses a bad field exactly as before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
HEAVY = ("polars", "pyarrow", "duckdb", "plotly", "scipy", "typer", "rich", "pandas", "numba", "llvmlite")

PROBE = """
import json, sys
import densim.engine, densim.plant, densim.spec.loader
from densim.spec.scenario import Scenario
print(json.dumps({
    "heavy": sorted(m for m in sys.modules if m.split('.')[0] in %r),
    "scenario_built": bool(Scenario.__pydantic_complete__),
}))
"""


def _probe() -> dict:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    out = subprocess.run(
        [sys.executable, "-c", PROBE % (HEAVY,)], capture_output=True, text=True, env=env, timeout=300, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_run_imports_pull_no_heavy_library() -> None:
    assert _probe()["heavy"] == []


def test_spec_models_are_built_on_first_use_not_at_import() -> None:
    assert _probe()["scenario_built"] is False


def test_deferred_model_still_refuses_unknown_field() -> None:
    from pydantic import ValidationError

    from densim.spec.storage import DatastoreSpec

    with pytest.raises(ValidationError):
        DatastoreSpec.model_validate({"no_such_field": 1})
