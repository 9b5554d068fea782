"""The serve page's GPU controls: GPU model, GPUs per host, vGPU scheduler and the GPU policy of a GPU host group;
the headline's GPU figures are densim run's."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import wait_done

# one host with one L4 (24 GiB, 16 W idle / 72 W max) and three 8 GiB vGPUs asking 0.6, 0.3 and 0.1 of its time
# (tests/models/test_gpu_contention.py): best-effort serves all (slowdown 1, the L4 at 72 W); equal-share holds the
# first to 1/3 (slowdown 1.8, the L4 at 16 + 56 x 0.733 = 57.07 W)
GPU = """\
name: gpu-micro
cluster:
  hosts:
    - name: l4
      count: 1
      cpu: {sockets: 1, cores_per_socket: 16, threads_per_core: 1, base_clock: 2 GHz}
      memory: 256 GiB
      power: {model: linear, idle: 200 W, peak: 200 W}
      gpus: {model: nvidia-l4, count: 1}
vms:
  - {name: v0, count: 1, vcpus: 2, vcpu_speed: 2 GHz, memory: 8 GiB, profile: {kind: constant, mean: 0.5},
     gpu: {mode: vgpu, memory: 8 GiB, utilisation: 0.6}}
  - {name: v1, count: 1, vcpus: 2, vcpu_speed: 2 GHz, memory: 8 GiB, profile: {kind: constant, mean: 0.5},
     gpu: {mode: vgpu, memory: 8 GiB, utilisation: 0.3}}
  - {name: v2, count: 1, vcpus: 2, vcpu_speed: 2 GHz, memory: 8 GiB, profile: {kind: constant, mean: 0.5},
     gpu: {mode: vgpu, memory: 8 GiB, utilisation: 0.1}}
simulation: {step: 1 h, horizon: 1 h}
"""


@pytest.fixture
def gpu_client(tmp_path: Path):
    from fastapi.testclient import TestClient

    from densim.tools.serve.app import create_app
    from densim.tools.serve.sources import Sources, scenario_source

    p = tmp_path / "scenarios" / "gpu.yaml"
    p.parent.mkdir()
    p.write_text(GPU)
    app = create_app(Sources([scenario_source(p, "gpu", "gpu.yaml", "given")]), tmp_path / "out")
    with TestClient(app) as c:
        yield c


def test_gpu_controls_are_offered_for_a_gpu_host_group(gpu_client):
    ctl = {c["path"]: c for c in gpu_client.get("/api/sources/gpu").json()["controls"]}
    assert ctl["cluster.hosts[0].gpus.model"]["value"] == "nvidia-l4"
    assert "nvidia-h100-sxm" in ctl["cluster.hosts[0].gpus.model"]["options"]
    assert ctl["cluster.hosts[0].gpus.count"]["value"] == "1"
    assert ctl["cluster.hosts[0].gpus.scheduler"]["options"] == ["best-effort", "equal-share", "fixed-share"]
    assert ctl["placement.gpu_policy"]["value"] == "pack"


def test_the_scheduler_control_moves_the_gpu_figures(gpu_client):
    def heads(edits):
        r = gpu_client.post("/api/run", json={"source": "gpu", "edits": edits, "slot": "a"})
        assert r.status_code == 200, r.text
        st = wait_done(gpu_client, r.json()["key"])
        assert st["state"] == "done", st
        return {h["key"]: h["value"] for h in st["view"]["headline"]}

    best = heads({})
    assert best["vgpu_slowdown_worst"] == pytest.approx(1.0) and best["gpu_energy_kwh"] == pytest.approx(0.072)
    eq = heads({"cluster.hosts[0].gpus.scheduler": "equal-share"})
    assert eq["vgpu_slowdown_worst"] == pytest.approx(1.8, rel=1e-6)
    assert eq["gpu_energy_kwh"] == pytest.approx((16 + 56 * (1 / 3 + 0.4)) / 1000)


def test_a_bad_gpu_value_names_the_control(gpu_client):
    r = gpu_client.post("/api/run", json={"source": "gpu", "edits": {"cluster.hosts[0].gpus.count": "0"}, "slot": "a"})
    assert r.status_code == 422
    assert "cluster.hosts[0].gpus.count" in r.json()["errors"]
    r = gpu_client.post("/api/run", json={"source": "gpu", "edits": {"cluster.hosts[0].gpus.model": "nvidia-b300"},
                                          "slot": "a"})
    assert r.status_code == 422 and "cluster.hosts[0].gpus.model" in r.json()["errors"]
