"""Shadow page-table synchronisation grows with vCPUs per VM and VMs per host (issue 15, gap 1).

Catalog ``kvm-shadow`` (all (E)): u = 0.02 page-table writes and c = 0.005 CR3 loads per 1,000
instructions, half the writes flush the VM's other vCPUs, no refresh on a lone VM, +2 % refresh
share per other VM on the host, 64 hidden faults per refresh. Exit costs ``kvm-westmere``:
light 1,500 cycles, heavy 10,000.
"""

import copy

import numpy as np
import pytest

from densim.catalog.core import builtin_catalog
from densim.engine import simulate
from densim.errors import ScenarioInvalid
from densim.models.virtualization import (
    ExitCosts,
    ShadowPaging,
    shadow_paging_cycles_per_kinstr,
    shadow_refresh_share,
    shadow_sync_cycles_per_kinstr,
)
from densim.plant import resolve
from densim.spec.loader import scenario_from_dict

EXITS = ExitCosts(light_cycles=1500, heavy_cycles=10000)


def kvm_shadow() -> ShadowPaging:
    return builtin_catalog().get("virt_shadow_paging", "kvm-shadow", ShadowPaging)


def test_lone_single_vcpu_vm_costs_what_the_fixed_rate_did():
    # v = 1, n = 1: 0.02 x 10,000 + 0.005 x 1,500 x (1 + 0 x 64) = 200 + 7.5 = 207.5
    s = kvm_shadow()
    assert shadow_sync_cycles_per_kinstr(0.02, 0.005, EXITS, s) == pytest.approx(207.5)
    assert shadow_paging_cycles_per_kinstr(0.02, 0.005, 10000, 1500) == pytest.approx(207.5)


def test_each_extra_vcpu_adds_a_remote_flush_on_half_the_writes():
    s = kvm_shadow()
    # v = 4: each write 10,000 + 0.5 x 3 x 1,500 = 12,250 -> 0.02 x 12,250 = 245; + 7.5 = 252.5
    assert shadow_sync_cycles_per_kinstr(0.02, 0.005, EXITS, s, vcpus=4) == pytest.approx(252.5)
    # v = 8: 0.02 x (10,000 + 0.5 x 7 x 1,500) = 305; + 7.5 = 312.5
    assert shadow_sync_cycles_per_kinstr(0.02, 0.005, EXITS, s, vcpus=8) == pytest.approx(312.5)


def test_each_other_vm_on_the_host_makes_more_switches_rebuild():
    s = kvm_shadow()
    # n = 11: refresh share 0.02 x 10 = 0.2; each switch 1,500 x (1 + 0.2 x 64) = 20,700
    #   -> 0.005 x 20,700 = 103.5; + 200 = 303.5
    assert shadow_refresh_share(s, 11) == pytest.approx(0.2)
    assert shadow_sync_cycles_per_kinstr(0.02, 0.005, EXITS, s, vms_on_host=11) == pytest.approx(303.5)
    # n = 100: share capped at 1 -> 0.005 x 1,500 x 65 = 487.5; + 200 = 687.5
    assert shadow_refresh_share(s, 100) == 1.0
    assert shadow_sync_cycles_per_kinstr(0.02, 0.005, EXITS, s, vms_on_host=100) == pytest.approx(687.5)


def test_arrays_broadcast_and_cost_never_falls():
    s = kvm_shadow()
    v = np.arange(1, 9)[:, None]
    n = np.arange(1, 40)[None, :]
    c = shadow_sync_cycles_per_kinstr(0.02, 0.005, EXITS, s, vcpus=v, vms_on_host=n)
    assert c.shape == (8, 39)
    assert (np.diff(c, axis=0) > 0).all() and (np.diff(c, axis=1) >= 0).all()
    assert c[0, 0] == pytest.approx(207.5)


def test_xen_31_refreshes_on_every_switch():
    # Rao 2007: "The shadow page tables on the guest are refreshed on a context switch"
    x = builtin_catalog().get("virt_shadow_paging", "xen-3.1-shadow", ShadowPaging)
    assert shadow_refresh_share(x, 1) == 1.0
    # 0.02 x 10,000 + 0.005 x 1,500 x 65 = 200 + 487.5
    assert shadow_sync_cycles_per_kinstr(0.02, 0.005, EXITS, x) == pytest.approx(687.5)


# ------------------------------------------------------------------ engine micro-scenario
BASE = {
    "name": "shadow-sync",
    "cluster": {"hosts": [{"count": 1, "server": "ibm-x3650-m3-x5680"}]},
    "vms": [
        {"name": "small", "count": 2, "vcpus": 1, "vcpu_speed": "3330 MHz", "memory": "2 GiB",
         "profile": {"kind": "constant", "mean": 0.3}},
        {"name": "wide", "count": 1, "vcpus": 4, "vcpu_speed": "3330 MHz", "memory": "2 GiB",
         "profile": {"kind": "constant", "mean": 0.3}},
    ],
    "virtualization": {"model": "kvm", "hypervisor": {"paging": "shadow", "shadow": {"refresh_share_per_vm": 0.1, "refresh_faults": 10}}},
    "simulation": {"step": "5 min", "horizon": "1 h", "seed": 1},
}
# no TLB or LLC misses: native CPI = cpi_core = 1 and the demand factor is 1 + sync / 1,000
QUIET = {"tlb_mpki_4k": 0, "llc_mpki": 0}


def _run(d):
    for g in d["vms"]:
        g.setdefault("workload", dict(QUIET))
    return simulate(resolve(scenario_from_dict(d)))


def test_engine_factor_by_hand_three_vms_on_one_host():
    r = _run(copy.deepcopy(BASE))
    # n = 3: refresh share 0.1 x 2 = 0.2 -> each switch 1,500 x (1 + 0.2 x 10) = 4,500 -> 0.005 x 4,500 = 22.5
    # small (1 vCPU): 0.02 x 10,000 + 22.5 = 222.5                          -> factor 1.2225
    # wide (4 vCPUs): 0.02 x (10,000 + 0.5 x 3 x 1,500) + 22.5 = 245 + 22.5 = 267.5 -> factor 1.2675
    ovh = r.vms["virt_overhead_mhz_mean"].to_numpy()  # VMs in scenario order: small, small, wide
    base_mhz = 0.3 * 3330.0 * np.array([1, 1, 4])  # constant profile: 30 % of each VM's vCPUs
    assert ovh == pytest.approx(base_mhz * np.array([0.2225, 0.2225, 0.2675]), rel=1e-5)
    sh = r.summary["virtualization"]["shadow_sync_cycles_per_kinstr"]
    assert sh["max"] == pytest.approx(267.5) and sh["mean"] == pytest.approx((2 * 222.5 + 267.5) / 3)


def test_engine_cost_grows_with_vms_on_the_host():
    one = copy.deepcopy(BASE)
    one["vms"] = [dict(one["vms"][0], count=1)]
    six = copy.deepcopy(BASE)
    six["vms"] = [dict(six["vms"][0], count=6)]
    a = _run(one).summary["virtualization"]["shadow_sync_cycles_per_kinstr"]["mean"]
    b = _run(six).summary["virtualization"]["shadow_sync_cycles_per_kinstr"]["mean"]
    # n = 1: 207.5; n = 6: share 0.5 -> 0.005 x 1,500 x (1 + 0.5 x 10) = 45 -> 245
    assert a == pytest.approx(207.5) and b == pytest.approx(245.0)


def test_workload_rates_override_the_entry():
    d = copy.deepcopy(BASE)
    d["vms"] = [dict(d["vms"][0], count=1, workload={**QUIET, "pt_updates_per_kinstr": 0.1, "context_switches_per_kinstr": 0.0})]
    # 0.1 x 10,000 = 1,000 cycles per 1,000 instructions
    assert _run(d).summary["virtualization"]["shadow_sync_cycles_per_kinstr"]["mean"] == pytest.approx(1000.0)


def test_ept_has_no_shadow_cost_and_unknown_entry_is_one_line_error():
    d = copy.deepcopy(BASE)
    d["virtualization"]["hypervisor"]["paging"] = "ept"
    assert "shadow_sync_cycles_per_kinstr" not in _run(d).summary["virtualization"]
    bad = copy.deepcopy(BASE)
    bad["virtualization"]["hypervisor"]["shadow"] = {"model": "no-such-shadow"}
    with pytest.raises(ScenarioInvalid) as exc:
        resolve(scenario_from_dict(bad))
    lines = exc.value.lines()
    assert len(lines) == 1 and "virtualization.hypervisor.shadow.model" in lines[0] and "no-such-shadow" in lines[0]


def test_visit_cycles_use_the_vm_width_and_host_count():
    from densim.models.numa import NumaSpec
    from densim.models.requests import PathCosts, Visit, visit_cycles
    from densim.models.virtualization import IoPath, TlbSpec

    visit = Visit(vm="db", instructions_m=1.0, tlb_mpki_4k=0.0)  # 1 M instructions, no walks, CPI 1
    numa = NumaSpec(local_cycles=190, remote_cycles=310, stall_fraction=0.5)
    native = IoPath(name="native")
    tlb = TlbSpec(entries_4k=576, entries_2m=32, leaf_ref_cycles=40, upper_ref_cycles=5)
    costs = PathCosts(exits=EXITS, network=native, storage=native, tlb=tlb, numa=numa, paging="shadow",
                      host_hugepages=False, guest_large_pages=True, shadow=kvm_shadow())
    # 1,000 kinstr x 207.5 (v = 1, n = 1) and x 252.5 (v = 4, n = 1) on top of 1 M cycles
    assert visit_cycles(visit, costs, 0.0)[0] == pytest.approx(1e6 + 207_500)
    assert visit_cycles(visit, costs, 0.0, vcpus=4)[0] == pytest.approx(1e6 + 252_500)
    with pytest.raises(ValueError, match="shadow"):
        visit_cycles(visit, PathCosts(**{**costs.__dict__, "shadow": None}), 0.0)


@pytest.mark.parametrize("server,base,turbo,all_core", [("2s-xeon-x5550", 2660, 3060, 2930), ("2s-xeon-w5580", 3200, 3460, 3330)])
def test_nehalem_hosts_have_their_own_platform(server, base, turbo, all_core):
    # Nehalem-EP (2009, first Xeon with EPT): 2 sockets x 4 cores; ARK base/turbo clocks
    d = copy.deepcopy(BASE)
    d["cluster"]["hosts"][0]["server"] = server
    d["virtualization"]["hypervisor"]["paging"] = "ept"
    plant = resolve(scenario_from_dict(d))
    vp = plant.virtualization[0]
    hg = plant.host_groups[0]
    assert vp.own and vp.platform.name == server and vp.platform.all_core_turbo_mhz == all_core
    assert (hg.cpu.cores, hg.cpu.base_mhz, hg.cpu.turbo_mhz, hg.server.cpu.sockets) == (4, base, turbo, 2)
    scale = simulate(plant).hosts["clock_scale_mean"].to_numpy()
    # 3 VMs x 30 % of 6 vCPUs on 8 cores: few busy cores, clock between all-core turbo and max turbo
    assert (scale >= all_core / base - 1e-6).all() and (scale <= turbo / base + 1e-6).all()
