"""Turbo, power gating, SMT and NUMA models against hand calculations."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from densim.models.cpu_power import (
    core_power_w,
    expected_package_power_w,
    expected_turbo_frequency_mhz,
    package_power_w,
    power_limited_frequency_mhz,
    smt_core_throughput,
    turbo_frequency_mhz,
)
from densim.models.numa import (
    NumaSpec,
    costop_probability,
    costop_stretch,
    cycles_per_instruction,
    memory_latency_cycles,
    nodes_spanned,
    numa_slowdown,
    remote_fraction,
)

GiB = 1024**3


def test_turbo_rises_as_fewer_cores_are_busy():
    # X5680: 3600 MHz with 1 busy core, 3466 MHz with all 6, linear: 3.5 cores -> (3600+3466)/2 = 3533
    assert turbo_frequency_mhz(1, 6, 3333, 3600, 3466) == 3600
    assert turbo_frequency_mhz(6, 6, 3333, 3600, 3466) == 3466
    assert turbo_frequency_mhz(3.5, 6, 3333, 3600, 3466) == pytest.approx(3533)
    assert turbo_frequency_mhz(3, 6, 3333, None) == 3333  # no turbo
    assert expected_turbo_frequency_mhz(1.0, 6, 3333, 3600, 3466) == pytest.approx(3466)
    assert expected_turbo_frequency_mhz(1e-6, 6, 3333, 3600, 3466) == pytest.approx(3600, abs=0.1)


@given(st.integers(1, 27))
def test_turbo_never_rises_with_more_busy_cores(k):
    assert turbo_frequency_mhz(k + 1, 28, 2500, 3800, 3200) <= turbo_frequency_mhz(k, 28, 2500, 3800, 3200)


def test_smt_throughput():
    assert smt_core_throughput(0, 2, 1.2) == 0
    assert smt_core_throughput(1, 2, 1.2) == 1
    assert smt_core_throughput(2, 2, 1.2) == pytest.approx(1.2)
    assert smt_core_throughput(2, 1, 1.2) == 1  # no SMT


def test_core_and_package_power_with_gating():
    # one busy core at base: 3 W leak + 12 W dynamic = 15 W; at twice the clock 3 + 12*8 = 99 W
    assert core_power_w(3333, 3333, 12, 3) == pytest.approx(15)
    assert core_power_w(6666, 3333, 12, 3) == pytest.approx(99)
    # 2 of 6 busy at base, gated idle cores 0.2 W: 30 + 2*15 + 4*0.2 = 60.8 W
    kw = dict(base_mhz=3333, uncore_w=30, core_dynamic_w_at_base=12, core_leakage_w=3, gated_core_w=0.2)
    assert package_power_w(2, 6, 3333, **kw) == pytest.approx(60.8)
    # without gating the idle cores leak 3 W each: 30 + 30 + 12 = 72 W
    assert package_power_w(2, 6, 3333, **kw, power_gating=False) == pytest.approx(72)
    # expected power at u=0: uncore + 6 gated cores = 31.2; at u=1 all 6 busy at the all-core clock
    e = dict(base_mhz=3333, max_turbo_mhz=3600, all_core_turbo_mhz=3466, uncore_w=30, core_dynamic_w_at_base=12, core_leakage_w=3, gated_core_w=0.2)
    assert expected_package_power_w(0.0, 6, **e) == pytest.approx(31.2)
    assert expected_package_power_w(1.0, 6, **e) == pytest.approx(30 + 6 * (3 + 12 * (3466 / 3333) ** 3))


def test_power_limited_turbo_gives_headroom_to_fewer_cores():
    kw = dict(tdp_w=130, base_mhz=3333, uncore_w=30, core_dynamic_w_at_base=12, core_leakage_w=3, cores=6)
    # 6 busy: (130-30)/6 - 3 = 13.667 W dynamic -> f = 3333 * (13.667/12)^(1/3) = 3481 MHz
    assert power_limited_frequency_mhz(6, **kw) == pytest.approx(3333 * (13.6667 / 12) ** (1 / 3), rel=1e-4)
    # 1 busy, 5 gated at 0 W: 100 - 3 = 97 W -> 3333 * (97/12)^(1/3)
    one_gated = power_limited_frequency_mhz(1, **kw)
    assert one_gated == pytest.approx(3333 * (97 / 12) ** (1 / 3))
    # without gating the 5 idle cores leak 15 W: (85 - 3)/12
    one_leaky = power_limited_frequency_mhz(1, **kw, power_gating=False)
    assert one_leaky == pytest.approx(3333 * (82 / 12) ** (1 / 3))
    assert one_gated > one_leaky > power_limited_frequency_mhz(6, **kw)


NUMA = NumaSpec(local_cycles=190, remote_cycles=310, stall_fraction=0.5)


def test_numa_latency_and_cpi():
    assert memory_latency_cycles(0.5, 190, 310) == 250
    # CPI = 1 + 10/1000 * 190 * 0.5 = 1.95 local; 1 + 0.01*310*0.5 = 2.55 all remote
    assert cycles_per_instruction(1.0, 10.0, 0.0, NUMA) == pytest.approx(1.95)
    assert cycles_per_instruction(1.0, 10.0, 1.0, NUMA) == pytest.approx(2.55)
    assert numa_slowdown(1.0, 10.0, 1.0, NUMA) == pytest.approx(2.55 / 1.95)
    # extra cycles per kinstr (page walks) add /1000
    assert cycles_per_instruction(1.0, 0.0, 0.0, NUMA, 500) == pytest.approx(1.5)


def test_wide_vms_span_nodes():
    assert nodes_spanned(4, 8 * GiB, 6, 72 * GiB, 2) == 1
    assert nodes_spanned(8, 8 * GiB, 6, 72 * GiB, 2) == 2  # wider than a node in vCPUs
    assert nodes_spanned(2, 100 * GiB, 6, 72 * GiB, 2) == 2  # wider in memory
    assert remote_fraction(1, bound=True, guest_numa_aware=False) == 0
    assert remote_fraction(2, bound=True, guest_numa_aware=False) == 0.5  # 1 - 1/2
    assert remote_fraction(2, bound=True, guest_numa_aware=True, aware_remote_fraction=0.2) == 0.2
    assert remote_fraction(1, bound=False, guest_numa_aware=False, host_nodes=4) == 0.75


def test_costop_for_wide_vms():
    # width 2 on 4 logical CPUs, 3 other vCPUs busy half the time: co-stop when K > 2 -> P(K=3) = 1/8
    assert costop_probability(2, 4, 3, 0.5) == pytest.approx(0.125)
    assert costop_stretch(2, 4, 3, 0.5) == pytest.approx(1 / 0.875)
    assert costop_stretch(1, 4, 3, 0.5) == 1.0
    assert costop_probability(8, 4, 3, 0.5) == 1.0


@given(st.floats(0, 1), st.floats(0, 1))
def test_remote_share_raises_latency_monotonically(r1, r2):
    lo, hi = sorted((r1, r2))
    assert memory_latency_cycles(lo, 190, 310) <= memory_latency_cycles(hi, 190, 310) + 1e-9
