"""Hand-calculated checks of each virtualization overhead mechanism (modelling guide §3.4)."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from densim.models.virtualization import (
    PAGE_2M_BYTES,
    PAGE_4K_BYTES,
    ExitCosts,
    IoPath,
    TlbSpec,
    exit_cycles,
    io_path_cycles,
    page_table_levels,
    shadow_paging_cycles_per_kinstr,
    tlb_misses_per_kinstr,
    tlb_reach_bytes,
    tlb_walk_cycles_per_kinstr,
    walk_cycles,
    walk_references,
)
from densim.catalog.core import builtin_catalog

K4, M2 = PAGE_4K_BYTES, PAGE_2M_BYTES
EXITS = ExitCosts(light_cycles=1500, heavy_cycles=10000)
TLB = TlbSpec(entries_4k=576, entries_2m=32, leaf_ref_cycles=40, upper_ref_cycles=5)


def test_two_dimensional_walk_lengths():
    # (n+1)(m+1)-1: 4 KB both = 5*5-1 = 24; 2 MB both = 4*4-1 = 15; mixed = 5*4-1 = 19; native 4 KB = 4
    assert walk_references(K4, K4, "ept") == 24
    assert walk_references(M2, M2, "ept") == 15
    assert walk_references(K4, M2, "ept") == 19
    assert walk_references(M2, K4, "ept") == 19
    assert walk_references(K4, K4, "native") == 4
    assert walk_references(M2, M2, "native") == 3
    # shadow tables map straight to host-physical at the smaller page: native length
    assert walk_references(M2, K4, "shadow") == 4
    assert page_table_levels(1024**3) == 2


def test_walk_cycles_split_leaf_and_upper_references():
    # EPT 4K/4K: 24 refs; 4 KB leaves = 1 guest + (4+1) host = 6 -> 6*40 + 18*5 = 240 + 90 = 330
    assert walk_cycles(K4, K4, "ept", 40, 5) == 330
    # EPT guest 4K / host 2M: 19 refs; only the guest leaf is a 4 KB leaf -> 40 + 18*5 = 130
    assert walk_cycles(K4, M2, "ept", 40, 5) == 130
    # EPT 2M/2M: 15 refs, none 4 KB leaves -> 75
    assert walk_cycles(M2, M2, "ept", 40, 5) == 75
    # native 4 KB: 1 leaf + 3 upper = 40 + 15 = 55
    assert walk_cycles(K4, K4, "native", 40, 5) == 55


def test_tlb_reach_and_power_law_miss_rate():
    assert tlb_reach_bytes(576, K4) == 576 * 4096  # 2.25 MiB
    assert tlb_reach_bytes(32, M2) == 64 * 1024**2
    # 4x the reach halves the misses under the square-root rule: 2 * 4^-0.5 = 1
    assert tlb_misses_per_kinstr(2.0, 4.0, 1.0) == pytest.approx(1.0)


def test_tlb_walk_cycles_per_kinstr_for_page_size_choices():
    # 2 misses/kinstr at 4 KB, EPT, no host hugepages: 2 * 330 = 660 cycles per kinstr
    assert tlb_walk_cycles_per_kinstr(2.0, 0.0, TLB, host_hugepages=False, paging="ept") == pytest.approx(660)
    # host hugepages, guest 4 KB: translations stay 4 KB (same misses), walk 130 -> 260
    assert tlb_walk_cycles_per_kinstr(2.0, 0.0, TLB, host_hugepages=True, paging="ept") == pytest.approx(260)
    # guest and host 2 MB: reach 64 MiB / 2.25 MiB = 28.44 -> misses 2/sqrt(28.44) = 0.375; walk 75
    ratio = (32 * M2) / (576 * K4)
    expect = 2.0 / math.sqrt(ratio) * 75
    assert tlb_walk_cycles_per_kinstr(2.0, 1.0, TLB, host_hugepages=True, paging="ept") == pytest.approx(expect)
    # guest large pages without host hugepages: translation is 4 KB, walk 2M guest x 4K host
    # = (3+1)(4+1)-1 = 19 refs: 3 guest refs (2 MB leaf, cheap) + 4 host walks of 4 refs, each
    # ending in a 4 KB leaf -> 4*40 + 15*5 = 235 per walk; 2 misses -> 470
    assert tlb_walk_cycles_per_kinstr(2.0, 1.0, TLB, host_hugepages=False, paging="ept") == pytest.approx(470)


def test_shadow_paging_upkeep_exits():
    # (0.02 page-table writes + 0.005 context switches) per kinstr x 1500 cycles = 37.5 cycles/kinstr
    assert shadow_paging_cycles_per_kinstr(0.02, 0.005, 1500) == pytest.approx(37.5)
    # emulated page-table writes at 10,000 cycles, CR3 loads at 1,500: 200 + 7.5 = 207.5
    assert shadow_paging_cycles_per_kinstr(0.02, 0.005, 10000, 1500) == pytest.approx(207.5)
    assert exit_cycles(3, 1500) == 4500


@pytest.mark.parametrize(
    ("path", "vcpu", "host"),
    [
        # emulated: 4 heavy exits * 10000 + 1 interrupt * 2 light * 1500 = 43000; host 20000
        (IoPath(name="e", heavy_exits=4, host_cycles=20000, interrupts=1, light_exits_per_interrupt=2), 43000, 20000),
        # virtio in QEMU: 0.25*10000 + (0.5*2)*1500 = 2500 + 1500 = 4000; host 22000
        (IoPath(name="v", heavy_exits=0.25, host_cycles=22000, interrupts=0.5, light_exits_per_interrupt=2), 4000, 22000),
        # vhost: (0.25 + 0.5*2) * 1500 = 1875; host 6000
        (IoPath(name="vh", light_exits=0.25, host_cycles=6000, interrupts=0.5, light_exits_per_interrupt=2), 1875, 6000),
        # SR-IOV: 0.125 interrupts * 3 light exits * 1500 = 562.5; no host work
        (IoPath(name="s", interrupts=0.125, light_exits_per_interrupt=3), 562.5, 0),
    ],
)
def test_io_path_costs_per_packet(path, vcpu, host):
    assert io_path_cycles(path, EXITS) == pytest.approx((vcpu, host))


def test_catalog_io_paths_are_ordered_emulated_virtio_vhost_sriov():
    cat = builtin_catalog()
    ex = cat.get("virt_exit_costs", "kvm-westmere", ExitCosts)
    totals = [sum(io_path_cycles(cat.get("virt_io_paths", n, IoPath), ex)) for n in ("emulated-e1000", "virtio-net", "vhost-net", "sriov-vf")]
    assert totals == sorted(totals, reverse=True)
    for name in cat.names("virt_io_paths"):
        assert cat.raw("virt_io_paths", name)["source"]


@given(st.sampled_from([K4, M2]), st.sampled_from([K4, M2]))
def test_ept_walk_never_shorter_than_native(gp, hp):
    assert walk_references(gp, hp, "ept") >= walk_references(gp, hp, "native")
    assert walk_cycles(gp, hp, "ept", 40, 5) >= walk_cycles(gp, hp, "native", 40, 5)
