"""The first run (issue 31): `make demo` installs only what the demo needs and compiles the kernels
ahead of use, with a line saying so; `make test` adds the extras and the test tools in a second step.

``scripts/bootstrap.sh`` is run with a stand-in Python that records every command it is given, so
the test sees exactly what would be installed, without a network or a new virtual environment."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# a stand-in for python3: logs its arguments; `-m venv DIR` makes DIR/bin/python (itself)
FAKE_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "$BOOT_LOG"
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then mkdir -p "$3/bin"; cp "$0" "$3/bin/python"; fi
"""


def _bootstrap(tmp: Path, step: str) -> tuple[list[str], str]:
    fake = tmp / "fakepython"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    log = tmp / "log"
    log.unlink(missing_ok=True)
    r = subprocess.run(["bash", "scripts/bootstrap.sh", str(fake), str(tmp / "venv"), step], cwd=ROOT, capture_output=True,
                       text=True, env={**os.environ, "BOOT_LOG": str(log)}, timeout=120)
    assert r.returncode == 0, r.stderr
    return log.read_text().splitlines(), r.stderr


def test_demo_step_installs_densim_without_extras_and_compiles_the_kernels(tmp_path):
    calls, err = _bootstrap(tmp_path, "core")
    installs = [c for c in calls if c.startswith("-m pip install") and "--upgrade pip" not in c]
    assert installs == ["-m pip install -q -e ."]  # no [all,dev]: no ortools, dask, playwright, pytest
    assert calls[-1] == "-m densim.cli.main warmup"  # the kernels, compiled at install time
    assert "installing densim" in err and "kernels ready" in err  # the steps say what they do
    # the test step adds the extras and test tools to the same venv (not created again)
    calls, err = _bootstrap(tmp_path, "test")
    assert calls == ["-m pip install -q -e .[all,dev]"]
    assert "test tools installed" in err


def test_an_unknown_step_is_refused(tmp_path):
    r = subprocess.run(["bash", "scripts/bootstrap.sh", "python3", str(tmp_path / "v"), "everything"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "unknown step 'everything'" in r.stderr and not (tmp_path / "v").exists()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_runs_only_the_core_step_and_make_test_both(tmp_path):
    def plan(target: str) -> str:
        r = subprocess.run(["make", "-n", "-C", str(ROOT), target, f"VENV={tmp_path / 'v'}", "PYTHON=py"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout

    demo = plan("demo")
    assert f'bootstrap.sh "py" "{tmp_path / "v"}" core' in demo and " test" not in demo
    test = plan("test")
    assert test.index(" core") < test.index(f'"{tmp_path / "v"}" test')
