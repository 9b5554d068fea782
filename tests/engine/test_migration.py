"""VMs moved during a run: maintenance evacuation, the DRS-style balancer, and what they cost."""

from __future__ import annotations

import numpy as np
import pytest

from densim.engine import simulate
from densim.errors import InputError
from densim.plant import resolve
from tests.core.helpers import const_vms, host, scenario


def run(hosts, vms, migration, **kw):
    sc = scenario(hosts, vms, step="1 min", horizon="30 min", migration={"model": "precopy", **migration}, **kw)
    return simulate(resolve(sc))


def test_maintenance_evacuates_a_host():
    # 3 hosts (4 cores x 2000 MHz = 8000 MHz, linear 100-200 W, unused hosts idle); first-fit puts the
    # four 1-vCPU VMs (1000 MHz each, 8 GiB) on h-0. h-0 enters maintenance at 10 min (step 10).
    # Destinations by the most room left (worst-fit): h-1, h-2, h-1, h-2. All 4 start at 600 s and share
    # h-0's 1 Gbit/s link (1.25e8 B/s / 4 = 3.125e7 B/s); no dirtying: each takes
    # 8 GiB / 3.125e7 = 8589934592 / 31250000 = 274.877906944 s + 20 ms resume = 274.897906944 s.
    # They land at 874.897906944 s (inside step 14, 840..900 s): h-1 runs two VMs (2000/8000 = 0.25) in
    # steps 15..29; in step 14 they run 25.102093056 s (mean 2 x 1000 x 25.102093056 / 60 = 836.7364352 MHz)
    # on a capacity cut by the migration's 0.3 cores for 34.897906944 s (8000 - 0.3 x 2000 x 34.897906944 / 60
    # = 7651.02093056 MHz): energy = 180000 + 100 x 0.25 x 900 + 100 x 60 x 836.7364352 / 7651.02093056
    # = 180000 + 22500 + 656.17632866 J.
    r = run([host(count=3, cores=4, mhz=2000, mem="64 GiB")], [const_vms("a", 4, 1, 2000, 0.5, mem="8 GiB")],
            {"bandwidth": "1 Gbit/s", "dirty_rate": 0, "maintenance": [{"host": "h-0", "at": "10 min"}]})
    m = r.summary["migration"]
    assert m["migrations"] == 4 and m["by_reason"] == {"maintenance": 4}
    ev = m["evacuations"][0]
    assert ev["host"] == "h-0" and ev["vms"] == 4 and ev["stranded"] == 0
    assert ev["time_to_empty_s"] == pytest.approx(274.897906944)
    assert [x["to"] for x in m["log"]] == ["h-1", "h-2", "h-1", "h-2"]
    assert m["bytes_sent"] == 4 * 8 * 2**30
    hosts = r.hosts
    # VM runs per host: each VM's run on h-0 until its landing, then on h-1 or h-2 (rows are runs)
    assert hosts["vms"].to_list() == [4, 2, 2]
    assert hosts["energy_j"][1] == pytest.approx(203156.17632866, rel=1e-9)
    # the VMs' lost work: 10 % of 1000 MHz over 274.877906944 s of pre-copy + all of it over 20 ms:
    # 4 x (100 x 274.877906944 + 1000 x 0.02) = 4 x 27507.7906944 = 110031.1627776 MHz x s
    assert m["vm_work_lost_mhz_s"] == pytest.approx(110031.1627776, rel=1e-6)
    assert r.summary["totals"]["cpu_unserved_mhz_s"] == pytest.approx(110031.1627776, rel=1e-4)
    # CPU on both ends: max(0.3, 0.1 x 1 Gbit/s) = 0.3 cores on a host while some migration runs on it
    # (not per migration: vMotion's reservation is the host's). h-0, h-1 and h-2 each migrate over
    # 600 .. 874.897906944 s: 3 hosts x 0.3 cores x 274.897906944 s = 247.408 core-s
    assert m["host_cpu_core_s"] == pytest.approx(3 * 0.3 * 274.897906944, rel=1e-6)
    # the link: 4 x 8 GiB leave h-0 over the 1800 s run: 34359.738368 MB / 1800 s = 19.0887 MB/s mean
    assert hosts["migration_net_mb_per_s_mean"][0] == pytest.approx(4 * 8 * 2**30 / 1e6 / 1800)


def test_maintenance_host_that_cannot_empty():
    # two 1-core hosts with 8 GiB each; first-fit puts one 1-vCPU VM on each. Evacuating h-0 finds no
    # room (h-1's core is taken at cpu_overcommit 1): the VM is stranded, the host never empties.
    r = run([host(count=2, cores=1, mhz=2000, mem="8 GiB")], [const_vms("a", 2, 1, 2000, 0.5, mem="4 GiB")],
            {"maintenance": [{"host": "h-0", "at": "5 min"}]})
    ev = r.summary["migration"]["evacuations"][0]
    assert ev["stranded"] == 1 and ev["vms"] == 0 and ev["time_to_empty_s"] is None
    assert r.summary["migration"]["migrations"] == 0


def test_balancer_spreads_load():
    # 2 hosts of 8000 MHz; first-fit puts four 1-vCPU VMs at 1800 MHz on h-0: utilisation 0.9 and 0,
    # stdev 0.45 > 0.1. At 5 min the balancer moves the VM whose move lowers the stdev most: one VM
    # -> (0.675, 0.225), stdev 0.225; a second -> (0.45, 0.45), stdev 0: 2 moves (budget 4).
    # 10 Gbit/s link shared by the two (6.25e8 B/s each), no dirtying:
    # 4 GiB / 6.25e8 = 6.871947674 s + 0.02 s = 6.891947674 s.
    r = run([host(count=2, cores=4, mhz=2000, mem="64 GiB")], [const_vms("a", 4, 1, 2000, 0.9, mem="4 GiB")],
            {"bandwidth": "10 Gbit/s", "dirty_rate": 0,
             "balance": {"threshold": 0.1, "interval": "5 min", "budget_per_interval": 4}})
    m = r.summary["migration"]
    assert m["migrations"] == 2 and m["by_reason"] == {"balance": 2}
    assert m["imbalance_first"] == pytest.approx(0.45)
    assert m["imbalance_last"] == pytest.approx(0.0, abs=1e-9)
    assert m["time_max_s"] == pytest.approx(6.891947674)
    # VM runs per host (rows are runs, the balancer's moves being events of the placement timeline): four on h-0, two
    # of which end at their landing on h-1 at 306.891947674 s; from then two VMs on each host
    assert r.hosts["vms"].to_list() == [4, 2]
    alive = r.ctx.liveness.alive(r.ctx.grid.edges_s(0, r.ctx.grid.n_steps))
    on = np.stack([alive[:, r.ctx.vms.host == h].sum(axis=1) for h in (0, 1)], axis=1)
    assert on[6:].tolist() == [[2.0, 2.0]] * 24 and on[:5].tolist() == [[4.0, 0.0]] * 5
    assert m["balance_checks"] == 5  # decisions at 5, 10, 15, 20, 25 min
    assert m["balance_triggered"] == 1


def test_balancer_budget_and_cost_benefit():
    # same cluster with a budget of 1: one move per interval; the second comes at 10 min
    r = run([host(count=2, cores=4, mhz=2000, mem="64 GiB")], [const_vms("a", 4, 1, 2000, 0.9, mem="4 GiB")],
            {"bandwidth": "10 Gbit/s", "dirty_rate": 0,
             "balance": {"threshold": 0.1, "interval": "5 min", "budget_per_interval": 1}})
    starts = [x["start_s"] for x in r.summary["migration"]["log"]]
    assert starts == [300.0, 600.0]
    # a benefit counted over 1 s cannot pay for a 6.9 s migration at 1 core busy on two hosts:
    # benefit = (3600 - 1800) MHz x 1 s = 1800 MHz s; cost >= 2 x 1 core x 2000 MHz x 6.87 s = 27488 MHz s
    r = run([host(count=2, cores=4, mhz=2000, mem="64 GiB")], [const_vms("a", 4, 1, 2000, 0.9, mem="4 GiB")],
            {"bandwidth": "10 Gbit/s", "dirty_rate": 0,
             "balance": {"threshold": 0.1, "interval": "5 min", "benefit_horizon": "1 s"}})
    m = r.summary["migration"]
    assert m["migrations"] == 0 and m["rejected_cost_benefit"] == 5


def test_balanced_cluster_does_not_move():
    # spread placement puts 2 VMs on each host: stdev 0 <= threshold, nothing moves
    r = run([host(count=2, cores=4, mhz=2000, mem="64 GiB")], [const_vms("a", 4, 1, 2000, 0.9, mem="4 GiB")],
            {"balance": {"threshold": 0.1, "interval": "5 min"}}, policy="worst-fit")
    m = r.summary["migration"]
    assert m["migrations"] == 0 and m["balance_triggered"] == 0


def test_migration_off_leaves_the_run_alone():
    sc = scenario([host(count=2)], [const_vms("a", 4, 1, 2000, 0.5)])
    r = simulate(resolve(sc))
    assert "migration" not in r.summary and "migration" not in r.summary["models"]["stages"]


def test_reproducible():
    args = ([host(count=3, cores=4, mhz=2000, mem="64 GiB")], [const_vms("a", 6, 1, 2000, 0.7, mem="8 GiB")],
            {"dirty_rate": "200 MB/s", "maintenance": [{"host": "h-0", "at": "3 min"}],
             "balance": {"threshold": 0.05, "interval": "5 min"}})
    a, b = run(*args).summary.to_dict(), run(*args).summary.to_dict()
    assert a["migration"] == b["migration"] and a["totals"] == b["totals"]


def test_bad_host_name():
    with pytest.raises(InputError, match=r"migration.maintenance\[0\].host: no host named 'nope'"):
        run([host(count=2)], [const_vms("a", 2, 1, 2000, 0.5)], {"maintenance": [{"host": "nope", "at": "5 min"}]})


def test_maintenance_skips_zero_pages():
    # test_maintenance_evacuates_a_host with 90 % of each VM's memory never touched, read at 20 GB/s. Each of the
    # 4 moves shares the 1 Gbit/s link (3.125e7 B/s): non-zero 0.1 x 8 GiB = 858993459.2 B and the zero pages'
    # flags 0.9 x 8 GiB x 9/4096 = 16986931.2 B, together 875980390.4 B / 3.125e7 = 28.031372493 s, plus reading
    # the zero pages 0.9 x 8589934592 / 2e10 = 0.386547056 s, plus resume 20 ms = 28.437919549 s (274.90 s before)
    r = run([host(count=3, cores=4, mhz=2000, mem="64 GiB")], [const_vms("a", 4, 1, 2000, 0.5, mem="8 GiB")],
            {"bandwidth": "1 Gbit/s", "dirty_rate": 0, "zero_fraction": 0.9, "zero_scan_rate": "20 GB/s",
             "maintenance": [{"host": "h-0", "at": "10 min"}]})
    m = r.summary["migration"]
    assert m["migrations"] == 4
    assert m["evacuations"][0]["time_to_empty_s"] == pytest.approx(28.437919549, rel=1e-9)
    assert [x["time_s"] for x in m["log"]] == pytest.approx([28.437919549] * 4, rel=1e-9)
    assert m["bytes_sent"] == pytest.approx(4 * 875980390.4, rel=1e-12)


@pytest.mark.parametrize("extra, msg", [
    ({"zero_fraction": 0.95}, r"zero_fraction \(0.95\) \+ wws_fraction \(0.1\) > 1"),
    ({"zero_fraction": 1.0}, "zero_fraction"),
    ({"zero_fraction": -0.1}, "zero_fraction"),
    ({"zero_fraction": 0.5, "zero_scan_rate": 0}, "zero_scan_rate"),
])
def test_zero_share_refused_when_out_of_range_or_contradicting_the_working_set(extra, msg):
    with pytest.raises(InputError, match=msg) as e:
        run([host(count=2)], [const_vms("a", 2, 1, 2000, 0.5)], {"maintenance": [{"host": "h-0", "at": "5 min"}], **extra})
    assert "migration" in str(e.value) and "\n" not in str(e.value)


def test_balancer_moves_use_the_scenarios_link_and_zero_share():
    # test_balancer_spreads_load on a 1 Gbit/s link with half of each VM's memory never touched (read at 20 GB/s).
    # The two moves share the link: 1.25e8 / 2 = 6.25e7 B/s each. Bytes: 0.5 x 4 GiB = 2147483648 non-zero +
    # 2147483648 x 9/4096 = 4718592 of flags = 2152202240 B -> 34.435235840 s, + reading the zero pages
    # 2147483648 / 2e10 = 0.107374182 s, + resume 20 ms = 34.562610022 s. The event loop lands them then: each
    # host's mean migration traffic (sent + received) over the 1800 s is 2 x 2152202240 B / 1800 s, on both hosts.
    # (Before, a run with the balancer and no maintenance event moved its VMs in the event loop at the defaults:
    # 10 Gbit/s, no resume, no zero pages, while the report used the scenario's, so the traffic was 10 x short.)
    r = run([host(count=2, cores=4, mhz=2000, mem="64 GiB")], [const_vms("a", 4, 1, 2000, 0.9, mem="4 GiB")],
            {"bandwidth": "1 Gbit/s", "dirty_rate": 0, "zero_fraction": 0.5, "zero_scan_rate": "20 GB/s",
             "balance": {"threshold": 0.1, "interval": "5 min", "budget_per_interval": 4}})
    m = r.summary["migration"]
    assert m["migrations"] == 2 and m["time_max_s"] == pytest.approx(34.562610022, rel=1e-9)
    assert m["bytes_sent"] == pytest.approx(2 * 2152202240, rel=1e-12)
    assert r.hosts["migration_net_mb_per_s_mean"].to_list() == pytest.approx([2 * 2152202240 / 1e6 / 1800] * 2, rel=1e-9)
