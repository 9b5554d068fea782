"""Shared fixtures: repository paths and helpers for writing tiny scenarios."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
TRACES = SHARED / "traces"


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def traces() -> Path:
    if not TRACES.exists():
        pytest.skip("../shared/traces is not beside the repository")
    return TRACES


@pytest.fixture
def write_yaml(tmp_path):
    def _write(data: dict, name: str = "scenario.yaml") -> Path:
        p = tmp_path / name
        p.write_text(yaml.safe_dump(data, sort_keys=False))
        return p

    return _write


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")
