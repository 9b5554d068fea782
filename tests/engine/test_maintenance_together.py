"""Hosts put into maintenance at the same instant are no target for each other (issue 28)."""

from __future__ import annotations

from densim.engine import simulate
from densim.plant import resolve
from tests.core.helpers import const_vms, host, scenario


def run(hosts, vms, migration):
    sc = scenario(hosts, vms, step="1 min", horizon="30 min", migration={"model": "precopy", **migration})
    return simulate(resolve(sc))


def test_every_host_in_maintenance_at_once_strands_every_vm():
    # 2 hosts of 4 cores; first-fit (cpu_overcommit 1) puts four 1-vCPU VMs on h-0, two on h-1. Both
    # enter maintenance at 5 min: no host is left to take a VM, so all 6 are stranded, nothing migrates
    # and neither host empties. (Before: two of h-0's VMs went to h-1, which was being evacuated itself.)
    r = run([host(count=2, cores=4, mhz=2000, mem="64 GiB")], [const_vms("a", 6, 1, 2000, 0.5, mem="4 GiB")],
            {"maintenance": [{"host": "h-0", "at": "5 min"}, {"host": "h-1", "at": "5 min"}]})
    m = r.summary["migration"]
    assert m["migrations"] == 0
    assert [(e["host"], e["vms"], e["stranded"], e["time_to_empty_s"]) for e in m["evacuations"]] == [
        ("h-0", 0, 4, None), ("h-1", 0, 2, None)]


def test_two_hosts_in_maintenance_at_once_empty_onto_the_third():
    # 3 hosts of 4 cores; first-fit puts four VMs on h-0, two on h-1, none on h-2. h-0 and h-1 enter
    # maintenance at 5 min. Only h-2 (4 cores free) can take VMs: h-0's four migrate there (h-0
    # empties), h-1's two find no room and are stranded; every migration lands on h-2.
    r = run([host(count=3, cores=4, mhz=2000, mem="64 GiB")], [const_vms("a", 6, 1, 2000, 0.5, mem="4 GiB")],
            {"maintenance": [{"host": "h-0", "at": "5 min"}, {"host": "h-1", "at": "5 min"}]})
    m = r.summary["migration"]
    assert {x["to"] for x in m["log"]} == {"h-2"} and m["migrations"] == 4
    e0, e1 = m["evacuations"]
    assert (e0["vms"], e0["stranded"]) == (4, 0) and e0["time_to_empty_s"] > 0
    assert (e1["vms"], e1["stranded"], e1["time_to_empty_s"]) == (0, 2, None)


def test_a_vm_on_its_way_to_a_host_entering_maintenance_moves_on_when_it_lands():
    # 3 hosts of 2 cores, 64 GiB; two 1-vCPU 8 GiB VMs on h-0. h-0 enters maintenance at 1 min: its VMs
    # go to h-1 and h-2 (lowest projected load), each taking 8 GiB / (1 Gbit/s shared by 2) = 137 s.
    # h-1 enters maintenance at 2 min, while its VM is still on its way: h-1 is not empty then; when
    # the VM lands (step 4) it is moved on to h-2 (h-0 is in maintenance). 3 migrations, h-1 empties
    # only after the third ends, none stranded.
    r = run([host(count=3, cores=2, mhz=2000, mem="64 GiB")], [const_vms("a", 2, 1, 2000, 0.5, mem="8 GiB")],
            {"bandwidth": "1 Gbit/s", "dirty_rate": 0,
             "maintenance": [{"host": "h-0", "at": "1 min"}, {"host": "h-1", "at": "2 min"}]})
    m = r.summary["migration"]
    assert m["migrations"] == 3
    assert [(x["from"], x["to"]) for x in m["log"]] == [("h-0", "h-1"), ("h-0", "h-2"), ("h-1", "h-2")]
    e1 = [e for e in m["evacuations"] if e["host"] == "h-1"][0]
    assert e1["vms"] == 1 and e1["stranded"] == 0
    assert e1["time_to_empty_s"] > 137.0  # it emptied after the VM that was still landing moved on
    assert r.hosts["vms"].to_list() == [2, 1, 2]  # VM runs per host (rows): 2 left h-0, 1 passed through h-1
