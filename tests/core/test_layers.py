"""The layers of docs/background/design.md hold: import-linter contracts in pyproject.toml, no cycles.

``make lint`` (run by ``make test``) checks the contracts on the real tree; these tests also show
that the check has teeth: a copy of the package with one deliberate back-import (a model importing
the engine) breaks the layers contract, naming the offending import.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is a dev dependency (make test installs it)")


def _lint(src_parent: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src_parent)}
    return subprocess.run([str(LINT), "--config", str(ROOT / "pyproject.toml"), "--no-cache"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_layer_contracts_hold():
    r = _lint(ROOT / "src")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 kept, 0 broken" in r.stdout


def test_a_deliberate_back_import_breaks_the_contract(tmp_path):
    shutil.copytree(ROOT / "src" / "densim", tmp_path / "densim", ignore=shutil.ignore_patterns("__pycache__"))
    cpu = tmp_path / "densim" / "models" / "cpu.py"
    cpu.write_text(cpu.read_text() + "\n\ndef _back():\n    import densim.engine.run  # noqa: F401  deliberate back-import\n")
    r = _lint(tmp_path)
    assert r.returncode == 1, r.stdout
    assert "BROKEN" in r.stdout and "densim.models.cpu -> densim.engine.run" in r.stdout


def test_no_import_cycles():
    """No two modules import each other, directly or through others (function-level imports included)."""
    import grimp

    graph = grimp.build_graph("densim", cache_dir=None)
    cycles = []
    for m in sorted(graph.modules):
        for dep in graph.find_modules_directly_imported_by(m):
            if dep != m and graph.chain_exists(importer=dep, imported=m):
                cycles.append((m, dep))
    # a package's __init__ importing its own submodules (and them importing a sibling through it) is not a cycle
    real = [(a, b) for a, b in cycles if not (b.startswith(a + ".") or a.startswith(b + "."))]
    assert real == [], f"import cycles: {real[:5]}"
