"""The virtualization engine stage: overhead CPU, NUMA and turbo inside densim.engine.simulate."""

import copy

import pytest

from densim.engine import simulate
from densim.plant import resolve
from densim.spec.loader import scenario_from_dict

BASE = {
    "name": "virt-engine",
    "cluster": {"hosts": [{"count": 1, "server": "ibm-x3650-m3-x5680"}]},
    "vms": [{"name": "web", "count": 4, "vcpus": 2, "vcpu_speed": "3330 MHz", "memory": "2 GiB",
             "profile": {"kind": "constant", "mean": 0.3}}],
    "simulation": {"step": "5 min", "horizon": "1 h", "seed": 1},
}


def _run(virt, workload=None):
    d = copy.deepcopy(BASE)
    d["virtualization"] = virt
    if workload is not None:
        d["vms"][0]["workload"] = workload
    return simulate(resolve(scenario_from_dict(d)))


def test_default_kvm_demand_factor_by_hand():
    off = _run({"model": "none"})
    on = _run({"model": "kvm", "hypervisor": {"host_hugepages": False, "network": "virtio"}, "numa": {"policy": "none"}})
    # Defaults: CPI_core 1, LLC 7 MPKI, TLB 2.2 MPKI at 4 KB, 30 % of misses in guest 2 MB pages.
    # native: 4 KB part 1.54 misses x 55 cycles = 84.7; 2 MB part 0.66/sqrt(28.44) = 0.1238 x 15 = 1.856
    #   CPI = 1 + 0.007*190*0.5 + 0.08656 = 1.75156
    # KVM, EPT, 4 KB host pages, unbound on 2 sockets (r = 0.5, latency 250):
    #   walks 1.54 x 330 + 0.66 x 235 = 663.3 -> CPI = 1 + 0.007*250*0.5 + 0.6633 = 2.5383
    # factor = 2.5383 / 1.75156 = 1.4492
    ratio = on.vms["cpu_demand_mhz_s"].to_numpy() / off.vms["cpu_demand_mhz_s"].to_numpy()
    assert ratio == pytest.approx(1.4492, rel=1e-3)
    v = on.summary["virtualization"]
    assert v["mean_remote_fraction"] == pytest.approx(0.5)


def test_tuned_host_costs_less_and_packets_add_cpu():
    tuned = _run({"model": "kvm", "hypervisor": {"host_hugepages": True, "network": "sriov"}, "numa": {"policy": "auto"}})
    assert tuned.summary["virtualization"]["mean_remote_fraction"] == 0.0
    assert 1.0 < tuned.summary["virtualization"]["mean_demand_factor"] < 1.2
    quiet = _run({"model": "kvm"}, {"packets_per_s": 0})
    busy = _run({"model": "kvm"}, {"packets_per_s": 1000})
    # virtio-net per packet: 4,000 vCPU + 22,000 host cycles -> 1000/s adds 26 MHz per VM
    extra = (busy.vms["virt_overhead_mhz_mean"] - quiet.vms["virt_overhead_mhz_mean"]).to_numpy()
    assert extra == pytest.approx(26.0, rel=1e-4)


def test_turbo_raises_capacity_at_low_load():
    r = _run({"model": "kvm"})
    scale = r.hosts["clock_scale_mean"].to_numpy()
    # 4 VMs x 0.6 vCPU on 12 cores: mostly one or two busy cores per socket -> near 3.6/3.33 GHz
    assert (scale > 1.0).all() and (scale <= 3600 / 3330 + 1e-6).all()
    no_turbo = _run({"model": "kvm", "power": {"turbo": False}})
    assert no_turbo.hosts["clock_scale_mean"].to_numpy() == pytest.approx(1.0)


def test_bad_workload_value_is_reported_with_its_path():
    from densim.errors import InputError

    with pytest.raises(InputError, match=r"vms\[0\]\.workload\.llc_mpki"):
        _run({"model": "kvm"}, {"llc_mpki": "lots"})


def test_engine_example_runs():
    from pathlib import Path

    from densim.spec.loader import load_scenario

    sc = load_scenario(Path(__file__).resolve().parents[2] / "examples" / "virt" / "engine-kvm.yaml")
    sc = sc.model_copy(update={"simulation": sc.simulation.model_copy(update={"horizon_s": 3600.0})})
    r = simulate(resolve(sc))
    assert r.summary["virtualization"]["numa_policy"] == "auto"
    assert (r.vms["virt_overhead_mhz_mean"].to_numpy() > 0).all()


def test_a_server_without_a_platform_entry_says_whose_figures_it_borrows():
    # hp-dl380-g7 has no virt_platforms entry: the stage uses the default platform's figures and
    # summary.json names that, instead of falling back silently
    d = copy.deepcopy(BASE)
    d["cluster"]["hosts"] = [{"count": 1, "server": "hp-dl380-g7", "name": "old"},
                             {"count": 1, "server": "ibm-x3650-m3-x5680"}]
    d["virtualization"] = {"model": "kvm"}
    plats = simulate(resolve(scenario_from_dict(d))).summary["virtualization"]["platforms"]
    assert plats["ibm-x3650-m3-x5680"] == "ibm-x3650-m3-x5680"
    assert plats["old"].startswith("ibm-x3650-m3-x5680 (default: the catalog has no virt_platforms entry for hp-dl380-g7")
