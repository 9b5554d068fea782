"""densim plan with HCI storage: the hosts the datastore needs and a storage-bound headline, by hand."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from densim.spec.storage import HciPlanSpec
from densim.tools.plan.hci import hci_answer
from densim.tools.plan.report import headline_lines
from densim.workloads.inventory import Inventory


def _inv(n: int) -> Inventory:
    return Inventory(names=np.array([f"vm{i}" for i in range(n)], dtype=object), vcpus=np.full(n, 4, np.int32),
                     vcpu_mhz=np.full(n, 2300.0), mem_bytes=np.full(n, 16 * 2.0**30))


def _spec(**kw):
    d = {"device": "intel-dc-p4600-1.6tb", "disks_per_host": 4, "nic": "connectx-4-lx-2x25g", "policy": "vsan-raid5",
         "disk": "1 TiB", "slack": 0.25, "rebuild_reserve_hosts": 1, "rebuild_share": 0.2} | kw
    return SimpleNamespace(hci=HciPlanSpec.model_validate(d))


def test_storage_needs_more_hosts_than_compute():
    # 12 VMs x 1 TiB at RAID-5 (4/3): 16 TiB raw; a host: 4 x 1.6e12 B = 5.82 TiB, 4.37 TiB after 25 % slack;
    # 1 reserve + ceil(16 / 4.37 = 3.66) = 5 hosts; the policy: 4 + 1 rebuild = 5. Compute needs 3: storage binds
    a = hci_answer(_spec(), _inv(12), 3)
    assert (a["hosts_for_capacity"], a["hosts_for_policy"], a["hosts_needed"], a["binds"]) == (5, 5, 5, True)
    assert a["storage_limit"] == "policy vsan-raid5"  # a tie goes to the policy
    assert a["raw_tib"] == pytest.approx(5 * 4 * 1.6e12 / 2**40)
    # 30 VMs: 40 TiB raw / 4.37 = 9.2 -> 10 + 1 = 11 hosts, capacity-bound
    b = hci_answer(_spec(), _inv(30), 3)
    assert (b["hosts_needed"], b["storage_limit"]) == (11, "capacity")
    # compute needing 20 hosts: storage does not bind
    assert not hci_answer(_spec(), _inv(12), 20)["binds"]


def test_vcf_vsan_tib_in_the_answer():
    # 5 hosts x 32 licensed cores x 1 TiB = 160 TiB included against 29.1 TiB raw: no add-on
    a = hci_answer(_spec(), _inv(12), 3, licensed_cores_per_host=32, tib_per_core=1.0)
    assert a["vsan_licence"]["included_tib"] == 160.0 and a["vsan_licence"]["addon_tib"] == 0


def test_headline_names_the_storage_policy_as_the_limit():
    hci = hci_answer(_spec(), _inv(12), 3)
    summary = {"answer": {"candidate": "c", "hosts": 5, "hosts_packed": 2, "ha_spare_hosts": 1, "vms": 12, "vms_per_host": 2.4,
                          "tco_per_vm_year_usd": 1.0, "tco_per_year_usd": 12.0, "years": 4, "feasible": 1, "candidates": 1,
                          "bounds": [], "limiting": "storage", "limiting_through": None, "power": {}, "hci": hci}}
    lines = headline_lines(summary)
    assert lines[0].startswith("Buy 5 x c (2 for the VMs + 1 spare for HA + 2 more for the HCI datastore)")
    assert ("Limiting resource: storage policy vsan-raid5 (FTT=1): the HCI datastore needs 5 hosts (its minimum of 4 hosts "
            "plus 1 to rebuild on); compute alone needs 3.") in lines


def test_ecx_plan_needs_cold_fraction():
    with pytest.raises(ValueError, match="give cold_fraction"):
        _spec(policy="nutanix-rf2-ecx")


def test_a_plan_with_an_hci_section_is_storage_bound_end_to_end(tmp_path):
    from densim.spec.plan import PlanSpec
    from densim.tools.plan.capacity import plan
    from densim.tools.plan.report import summary_dict, write_outputs
    from densim.workloads.inventory import build_inventory

    # 4 VMs of 2 vCPUs, 8 GiB, 1,000 MHz each on 4-core hosts at 1 vCPU per core: compute needs 2 hosts.
    # Their 4 x 1 TiB at RAID-5 take 5.33 TiB raw (4.37 TiB available per host): capacity 1 + 2 = 3 hosts,
    # the policy 4 + 1 = 5: buy 5, storage-bound
    inv = build_inventory([f"v{i}" for i in range(4)], [2] * 4, [2000.0] * 4, [8 * 2**30] * 4,
                          cpu_mhz=np.full((4, 4), 1000.0))
    spec = PlanSpec.model_validate({
        "qos": {"cpu_ready_pct": 5.0, "vcpus_per_core": 1.0},
        "candidates": [{"name": "new", "cpu": {"sockets": 1, "cores_per_socket": 4, "base_clock": "2 GHz"},
                        "memory": "32 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "300 W"}, "price_usd": 5000}],
        "hci": {"device": "intel-dc-p4600-1.6tb", "disks_per_host": 4, "nic": "connectx-4-lx-2x25g", "policy": "vsan-raid5",
                "disk": "1 TiB", "rebuild_share": 0.2}})
    res = plan(inv, spec)
    s = summary_dict(res)
    a = s["answer"]
    assert (a["hosts"], a["hosts_packed"], a["limiting"]) == (5, 2, "storage")
    assert a["hci"]["hosts_for_capacity"] == 3 and a["hci"]["storage_limit"] == "policy vsan-raid5"
    write_outputs(res, tmp_path)  # the report renders the storage-bound answer
    html = (tmp_path / "report.html").read_text()
    assert "limiting: storage policy vsan-raid5" in html


def test_vsan_tib_included_follow_the_order_minimum_end_to_end():
    # 4 VMs x 1 TiB at RAID-1 FTT=1 (2 copies): 8 TiB raw, capacity 1 + ceil(8 / 4.37) = 3 hosts, the policy 3 + 1 = 4:
    # 4 hosts of one 4-core CPU. VCF counts 16 cores per CPU: 4 x 16 = 64 cores, lifted to its 72-core order minimum
    # (fleet_licences), so the vSAN allowance is 72 x 1 TiB = 72 TiB, not 64 TiB
    from densim.spec.plan import PlanSpec
    from densim.tools.plan.capacity import plan
    from densim.tools.plan.report import summary_dict
    from densim.workloads.inventory import build_inventory

    inv = build_inventory([f"v{i}" for i in range(4)], [2] * 4, [2000.0] * 4, [8 * 2**30] * 4,
                          cpu_mhz=np.full((4, 4), 1000.0))
    spec = PlanSpec.model_validate({
        "qos": {"cpu_ready_pct": 5.0, "vcpus_per_core": 1.0},
        "candidates": [{"name": "new", "cpu": {"sockets": 1, "cores_per_socket": 4, "base_clock": "2 GHz"},
                        "memory": "32 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "300 W"}, "price_usd": 5000}],
        "licensing": {"products": ["vmware-vcf"]},
        "hci": {"device": "intel-dc-p4600-1.6tb", "disks_per_host": 4, "nic": "connectx-4-lx-2x25g",
                "policy": "vsan-raid1-ftt1", "disk": "1 TiB", "rebuild_share": 0.2}})
    a = summary_dict(plan(inv, spec))["answer"]
    assert a["hosts"] == 4
    lic = a["hci"]["vsan_licence"]
    assert lic["licensed_cores"] == 72 and lic["included_tib"] == 72.0
