import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

BASE = """\
name: tiny
cluster:
  hosts:
    - count: 2
      cpu: {cores_per_socket: 8, base_clock: 2 GHz}
      memory: 64 GiB
      power: {model: linear, idle: 100 W, peak: 250 W}
vms:
  - name: web
    count: 6
    vcpus: 2
    vcpu_speed: 2 GHz
    memory: 4 GiB
    profile: {kind: diurnal, mean: 0.3, amplitude: 0.2}
simulation: {step: 5 min, horizon: 2 h}
"""


@pytest.fixture
def toy_env(monkeypatch):
    """Make ``toy_runner`` importable in worker processes (forkserver, spawn, Dask nannies)."""
    parts = [str(HERE), str(SRC)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(parts))
    monkeypatch.delenv("DENSIM_TOY_SLEEP", raising=False)
    monkeypatch.delenv("DENSIM_TOY_DIE_DIR", raising=False)
    return monkeypatch


def write_study(tmp: Path, *, axes: str | None = None, reps: int = 2, runner: str = "toy") -> Path:
    (tmp / "base.yaml").write_text(BASE)
    axes = axes or "  placement.cpu_overcommit: [1, 2]\n  cluster.hosts[0].count: [2, 3]\n"
    text = f"name: toy\nscenario: base.yaml\nseed: 7\nreplications: {reps}\nrunner: {runner}\naxes:\n{axes}"
    (tmp / "study.yaml").write_text(text)
    return tmp / "study.yaml"
