"""Fixtures of the ``densim serve`` tests: a micro scenario whose answer is hand-calculable, the
application over it, and a real uvicorn server on a free port (for the browser tests)."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

# 4 hosts of 4 cores at 2 GHz with 8 GiB; 8 VMs of 1 vCPU at 2 GHz with 4 GiB, 25 % busy, first-fit.
# memory_overcommit 1: 8 GiB / 4 GiB = 2 VMs per host -> 8 / 2 = 4 hosts used.
# memory_overcommit 2: 16 GiB / 4 GiB = 4 VMs per host, and 4 vCPUs on 4 cores at cpu_overcommit 1
#                      -> 8 / 4 = 2 hosts used.
MICRO = """\
name: micro
cluster:
  hosts:
    - name: small
      count: 4
      cpu: {sockets: 1, cores_per_socket: 4, base_clock: 2 GHz}
      memory: 8 GiB
      power: {model: linear, idle: 100 W, peak: 200 W}
vms:
  - name: vm
    count: 8
    vcpus: 1
    vcpu_speed: 2 GHz
    memory: 4 GiB
    profile: {kind: constant, mean: 0.25}
placement:
  policy: first-fit
  cpu_overcommit: 1.0
  memory_overcommit: 1.0
simulation:
  step: 5 min
  horizon: 1 h
  seed: 7
"""


@pytest.fixture
def micro(tmp_path: Path) -> Path:
    p = tmp_path / "scenarios" / "micro.yaml"
    p.parent.mkdir()
    p.write_text(MICRO)
    return p


@pytest.fixture
def app(micro: Path, tmp_path: Path):
    from densim.tools.serve.app import create_app
    from densim.tools.serve.sources import Sources, builtin_sources, scenario_source

    return create_app(Sources([scenario_source(micro, "given", "micro.yaml (given)", "given"), *builtin_sources()]), tmp_path / "out")


@pytest.fixture
def client(app):
    from fastapi.testclient import TestClient

    with TestClient(app) as c:
        yield c


def wait_done(client, key: str, timeout: float = 300.0) -> dict:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        st = client.get(f"/api/runs/{key}").json()
        if st["state"] not in ("queued", "running"):
            return st
        time.sleep(0.05)
    raise AssertionError(f"run {key} not finished after {timeout} s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def served(app):
    """``app`` behind a real uvicorn server in a thread; yields its address."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    th = threading.Thread(target=server.run, daemon=True)
    th.start()
    t0 = time.monotonic()
    while not server.started:
        if time.monotonic() - t0 > 120 or not th.is_alive():  # a hang guard: uvicorn starts in well under a second
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    th.join(timeout=10)
