"""The fabric stage inside the time-stepped engine: the job's CPU reaches the engine's CPU model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from densim.engine import simulate
from densim.plant import resolve
from densim.plant.core import run_fabric
from densim.spec.loader import load_scenario

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fabric" / "pooled-nvme.yaml"


@pytest.fixture(scope="module")
def engine_run():
    sc = load_scenario(EXAMPLE)
    return sc, simulate(resolve(sc), seed=1)


def test_engine_summary_carries_the_jobs_result(engine_run):
    sc, res = engine_run
    alone = run_fabric(sc)
    fab = res.summary["fabric"]
    assert [t["runtime_s"] for t in fab["tenants"]] == pytest.approx([t["runtime_s"] for t in alone.tenants], rel=1e-12)
    # the example's JBOF holds 2 P4600 per server (16 for 8): the jobs stay CPU-bound, so the busiest
    # component is a data-node VM's vCPUs; the pool has 2 drives per server
    assert fab["components"][0]["kind"] == "vm-cpu"
    drives = next(c for c in alone.components if c["component"] == "jbof/drives")
    assert drives["capacity"] == 16


def test_job_cpu_is_delivered_by_the_engine(engine_run):
    # The VMs' profiles ask for nothing (mean 0), so all CPU the engine delivers is job work:
    # sum over VMs of busy vCPU-seconds x (host capacity / logical CPUs) MHz.
    # Host: 56 cores x 2500 MHz / 112 logical CPUs = 1250 MHz per busy vCPU.
    sc, res = engine_run
    stage = next(s for s in res.stages if s.name == "fabric")
    ev = stage.result.events
    busy_vcpu_s = float((ev.busy_vcpus * np.diff(ev.t)[:, None]).sum())
    delivered_mhz_s = float(res.vm_acc.sum["cpu_delivered_mhz"].sum() * sc.simulation.step_s)
    assert delivered_mhz_s == pytest.approx(busy_vcpu_s * 1250.0, rel=1e-4)
    # and the engine's per-VM job metric integrates to the same busy time
    job_busy = float(res.vm_acc.sum["job_cpu_busy_vcpus"].sum() * sc.simulation.step_s)
    assert job_busy == pytest.approx(busy_vcpu_s, rel=1e-4)
