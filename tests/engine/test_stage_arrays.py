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
