"""The CPU kernel's per-VM step arrays exist for a stage that asks for them; broadcast rows are summed exactly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from densim.engine import simulate
from densim.engine.run import Accumulator
from densim.engine.stages import STAGES, BaseStage, load_plugins
from densim.plant import resolve
from tests.core.helpers import const_vms, host, scenario


class _Reader(BaseStage):
    """Reads the CPU results after the CPU step: delivered MHz per VM and step."""

    def __init__(self, declared: bool, seen: list):
        self.name = "test-reader"
        self.reads_cpu_results = declared
        self.seen = seen

    def after_cpu(self, ctx, chunk):
        self.seen.append(chunk.vm["cpu_delivered_mhz"].copy())


def _run(declared: bool):
    load_plugins()
    seen: list = []
    STAGES.register("test-reader", description="test")(lambda ctx: _Reader(declared, seen))
    try:
        # one 4-core 2000 MHz host, 2 VMs of 1 vCPU at half load: each gets its 500 MHz demand
        sc = scenario([host()], [const_vms("v", 2, 1, 1000, 0.5)])
        simulate(resolve(sc))
    finally:
        STAGES.unregister("test-reader")
    return seen


def test_a_stage_that_declares_it_reads_the_cpu_results_gets_them():
    seen = _run(True)
    assert seen and seen[0].shape[1] == 2
    np.testing.assert_allclose(seen[0], 500.0)


def test_a_stage_that_reads_them_undeclared_finds_them_missing():
    # the kernel writes no (steps x VMs) delivered/claim/ready arrays unless a stage says it reads them
    with pytest.raises(KeyError, match="cpu_delivered_mhz"):
        _run(False)


@settings(max_examples=60, deadline=None)
@given(row=st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False, allow_subnormal=False), min_size=1, max_size=8),
       n=st.integers(min_value=1, max_value=2000))
def test_a_broadcast_row_is_summed_as_n_times_the_row_exactly(row, n):
    # float32 values have 24 significant bits; n < 2^29 copies: every partial sum is exact in float64,
    # so numpy's sum over the materialised rows and n x row are the same floats
    r = np.array(row, dtype=np.float32)
    acc_b, acc_m = Accumulator(n, r.size, False), Accumulator(n, r.size, False)
    acc_b.add("x", 0, np.broadcast_to(r, (n, r.size)), want_max=True)
    acc_m.add("x", 0, np.tile(r, (n, 1)), want_max=True)
    np.testing.assert_array_equal(acc_b.sum["x"], acc_m.sum["x"])
    np.testing.assert_array_equal(acc_b.max["x"], acc_m.max["x"])


class _DenseUser(BaseStage):
    """Uses the demand and cannot take it factored: the engine expands the window."""

    name = "test-dense"

    def before_cpu(self, ctx, chunk):
        assert "cpu_demand_mhz" in chunk.vm and chunk.demand_factors is None


def _planetlab_memory_run(dense: bool, seen_factored: list):
    from densim.spec.loader import load_mapping, scenario_from_dict
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "planetlab.yaml"
    d = load_mapping(example)
    d["cluster"]["hosts"][0]["count"] = 30
    d["vms"][0]["count"] = 300
    d["vms"][0]["memory"] = "24 GiB"  # 16 x 24 GiB on a 128 GiB host: every VM faults (the ladder's 3x rung)
    d["placement"]["memory_overcommit"] = 3.003
    d["memory"] = {"model": "vsphere-like"}
    d["simulation"]["horizon"] = "2 h"
    d["output"] = {"vm_timeseries": "off"}
    sc = scenario_from_dict(d, source=example, base_dir=example.parent)
    from densim.models import memory as mem_model  # the stage reads it through a lazy module: patch the module

    orig = mem_model.solve_steps

    def spy(demand, *a, **k):
        seen_factored.append(k.get("factors") is not None)
        return orig(demand, *a, **k)

    mem_model.solve_steps = spy
    if dense:
        STAGES.register("test-dense", description="test")(lambda ctx: _DenseUser())
    try:
        return simulate(resolve(sc))
    finally:
        mem_model.solve_steps = orig
        if dense:
            STAGES.unregister("test-dense")


def test_memory_stage_reads_a_factored_source_without_expanding_it_and_gets_the_same_figures():
    # PlanetLab demand is base[t, file(v)] x capacity: the memory stage passes that form to the
    # fault-cost kernel (no (steps x VMs) window); with a stage that needs the expanded window the
    # figures are the same to the bit
    load_plugins()
    f_seen, d_seen = [], []
    fac = _planetlab_memory_run(False, f_seen)
    den = _planetlab_memory_run(True, d_seen)
    assert f_seen == [True] and d_seen == [False]
    assert fac.summary["memory"]["vms_slowed"] == 300
    for key in ("energy_j", "cpu_demand_mhz_s", "cpu_delivered_mhz_s", "cpu_ready_s"):
        assert fac.summary["totals"][key] == den.summary["totals"][key], key
    assert fac.summary["memory"]["worst_vm_slowdown"] == den.summary["memory"]["worst_vm_slowdown"]
    np.testing.assert_array_equal(fac.vm_acc.sum["mem_slowdown"], den.vm_acc.sum["mem_slowdown"])
