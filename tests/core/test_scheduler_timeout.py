"""``--scheduler`` at an address where no Dask scheduler answers fails after a few seconds, not Dask's
30 s, with one line naming the address (issue 29). Two such addresses: a port that accepts the
connection and never says a word (the kernel completes the handshake of a listening socket nobody
reads), and a closed port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from densim.tools import distributed

SRC = Path(__file__).resolve().parents[2] / "src"

SCENARIO = """\
name: tiny
cluster:
  hosts:
    - count: 2
      cpu: {cores_per_socket: 4, base_clock: 2 GHz}
      memory: 16 GiB
      power: {model: linear, idle: 100 W, peak: 200 W}
vms:
  - {name: v, count: 4, vcpus: 1, memory: 1 GiB, profile: {kind: constant, mean: 0.5}}
simulation: {step: 5 min, horizon: 1 h}
"""


@pytest.fixture(params=["silent", "closed"])
def address(request):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    if request.param == "silent":
        s.listen(8)
    else:
        s.close()
    yield f"tcp://127.0.0.1:{port}"
    s.close()


def test_the_default_timeout_is_a_few_seconds():
    assert distributed.CONNECT_TIMEOUT_S == 5.0


def _densim(*args: str) -> subprocess.CompletedProcess:
    """The CLI in its own process, with a hang guard far above the 5 s (old code: 30 s, or for ever on a
    port that accepts and never answers: Dask's Client(timeout=...) does not cover that case)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "densim.cli.main", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_run_on_a_silent_or_closed_scheduler_is_one_line(tmp_path, address):
    (tmp_path / "s.yaml").write_text(SCENARIO)
    r = _densim("run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o"), "--no-report", "--no-progress",
                "--scheduler", address)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        f"densim: error: --scheduler: cannot reach the Dask scheduler at {address}: no answer within 5 s"]
    assert not (tmp_path / "o").exists()


def test_sweep_on_a_silent_or_closed_scheduler_is_one_line(tmp_path, address):
    (tmp_path / "base.yaml").write_text(SCENARIO)
    (tmp_path / "study.yaml").write_text("name: t\nscenario: base.yaml\nseed: 7\nreplications: 1\n"
                                         "axes:\n  placement.cpu_overcommit: [1, 2]\n")
    r = _densim("sweep", str(tmp_path / "study.yaml"), "--out", str(tmp_path / "res"), "--no-progress", "--quiet",
                "--scheduler", address)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        f"densim: error: --scheduler: cannot reach the Dask scheduler at {address}: no answer within 5 s"]
