"""The one event loop (densim.placement.timeline): maintenance evacuations by live migration, with
failures, departures and arrivals at the same time. Hand-checked micro-scenarios.

Arithmetic used throughout: a VM of M = 1 GiB copied at B bytes/s with no page dirtying takes one
pre-copy round of M/B seconds, then a stop-and-copy of 0 bytes plus ``resume`` (0 here): total M/B.
The link is 2^30 B/s, so a VM alone on the link takes 1 s, two sharing it 2 s each.
"""

from __future__ import annotations

import numpy as np
import pytest

from densim.placement import timeline as TL
from densim.placement.failover import Maintenance, failover

GIB = float(2**30)
NONE_I = np.zeros(0, dtype=np.int64)
NONE_F = np.zeros(0)


def maint(hosts, at, n, **kw):
    kw.setdefault("link_bps", GIB)
    kw.setdefault("resume_s", 0.0)
    return Maintenance(host=np.asarray(hosts, dtype=np.int64), at_s=np.asarray(at, dtype=float),
                       demand_mhz=np.zeros((max(len(at), 1), n)), **kw)


def run(n_vms, cpu_cap, mem_cap, *, initial=None, arrival=None, life=None, down=((), (), ()), m=None, **kw):
    kw.setdefault("core_mhz", np.full(len(cpu_cap), 2000.0))
    n = n_vms
    arr = np.zeros(n) if arrival is None else np.asarray(arrival, dtype=float)
    lf = np.full(n, np.inf) if life is None else np.asarray(life, dtype=float)
    d_host, d_start, d_end = (np.asarray(x, dtype=float) for x in down)
    return failover(arr, lf, np.ones(n), np.full(n, GIB), np.asarray(cpu_cap, float), np.asarray(mem_cap, float),
                    down_host=d_host.astype(np.int64), down_start_s=d_start, down_end_s=d_end, initial=initial,
                    maintenance=m, **kw)


def instances(fo):
    """(vm, host, start, end) per instance, sorted."""
    return sorted(zip(fo.inst_vm.tolist(), fo.inst_host.tolist(), fo.inst_start_s.tolist(), fo.inst_end_s.tolist()))


def test_two_vms_share_the_link_and_land_together():
    # hosts 0 and 1 (4 vCPUs, 8 GiB each); both VMs on host 0; host 0 into maintenance at 100 s:
    # one wave of 2 (max_concurrent 8), each at 2^30/2 B/s: 1 GiB in 2 s, landing at 102 s on host 1
    fo = run(2, [4, 4], [8 * GIB, 8 * GIB], initial=[0, 0], m=maint([0], [100.0], 2))
    assert instances(fo) == [(0, 0, 0.0, 102.0), (0, 1, 102.0, np.inf), (1, 0, 0.0, 102.0), (1, 1, 102.0, np.inf)]
    mig = fo.mig
    assert mig[:, TL.M_SHARE].tolist() == [2.0, 2.0]
    assert mig[:, TL.M_STATUS].tolist() == [TL.M_LANDED, TL.M_LANDED]
    assert fo.evac.tolist() == [[2.0, 0.0, 102.0]]  # 2 migrated, none stranded, last landing at 102 s


def test_waves_of_max_concurrent():
    # max_concurrent 1: one at a time at the full link (1 s each): 100 -> 101, then 101 -> 102
    fo = run(2, [4, 4], [8 * GIB, 8 * GIB], initial=[0, 0], m=maint([0], [100.0], 2, max_concurrent=1))
    assert sorted(zip(fo.mig[:, TL.M_START].tolist(), fo.mig[:, TL.M_END].tolist())) == [(100.0, 101.0), (101.0, 102.0)]


def test_largest_memory_first_and_stranded_when_nothing_fits():
    # host 1 has room for one 1-vCPU VM only: the first (largest memory, ties by order) goes, the other stays
    n = 2
    fo = failover(np.zeros(n), np.full(n, np.inf), np.ones(n), np.array([GIB, 2 * GIB]), np.array([2.0, 1.0]),
                  np.array([8 * GIB, 8 * GIB]), down_host=NONE_I, down_start_s=NONE_F, down_end_s=NONE_F,
                  initial=[0, 0], maintenance=maint([0], [10.0], n), core_mhz=np.full(2, 2000.0))
    assert fo.mig[:, TL.M_VM].tolist() == [1.0]  # the 2 GiB VM
    assert fo.evac[0, 1] == 1.0  # one stranded: the host never empties


def test_destination_failing_mid_migration_sends_the_vm_elsewhere():
    # hosts 1 and 2 empty, worst-fit ties go to the lower index: VM 0 leaves host 0 at 100 s for host 1
    # (1 s alone on the link); host 1 fails at 100.5 s: cancelled, sent to host 2 at once, lands at 101.5 s
    fo = run(1, [4, 4, 4], [8 * GIB] * 3, initial=[0], down=([1], [100.5], [500.0]), m=maint([0], [100.0], 1))
    assert fo.mig[:, TL.M_DST].tolist() == [1.0, 2.0]
    assert fo.mig[:, TL.M_STATUS].tolist() == [TL.M_CANCELLED, TL.M_LANDED]
    assert instances(fo) == [(0, 0, 0.0, 101.5), (0, 2, 101.5, np.inf)]
    assert fo.out_vm.size == 0  # the VM never stopped


def test_source_failing_mid_migration_stops_the_vm_and_frees_the_destination():
    # host 0 (in maintenance from 100 s) fails at 100.5 s while VM 0 copies to host 1 (room: 1 vCPU):
    # the VM stops, HA restarts it after 30 s detection at 130.5 s; host 1's reservation was freed, so it fits
    fo = run(1, [4, 1], [8 * GIB, 8 * GIB], initial=[0], down=([0], [100.5], [1000.0]), m=maint([0], [100.0], 1),
             detection_s=30.0)
    assert fo.mig[:, TL.M_STATUS].tolist() == [TL.M_CANCELLED]
    assert fo.out_vm.tolist() == [0] and fo.out_placed_s.tolist() == [130.5] and fo.out_host.tolist() == [1]


def test_vm_leaving_mid_migration_frees_the_destination_for_an_arrival():
    # VM 0 (on host 0, leaves at 100.5 s) migrates from 100 s to host 1 (room: 1 vCPU); VM 1 arrives at 101 s:
    # without the reservation freed at 100.5 s it would wait (fifo) -- it starts on host 1 at 101 s
    fo = failover(np.array([0.0, 101.0]), np.array([100.5, np.inf]), np.ones(2), np.full(2, GIB), np.array([4.0, 1.0]),
                  np.full(2, 8 * GIB), down_host=NONE_I, down_start_s=NONE_F, down_end_s=NONE_F,
                  maintenance=maint([0], [100.0], 2), core_mhz=np.full(2, 2000.0))
    assert fo.mig[:, TL.M_STATUS].tolist() == [TL.M_CANCELLED]
    assert fo.first_start_s[1] == 101.0 and fo.inst_host[fo.inst_vm == 1].tolist() == [1]


def test_arrivals_never_land_on_a_host_in_maintenance():
    # first-fit would put every arrival on host 0; in maintenance from 0 s, they all go to host 1
    n = 3
    fo = failover(np.array([10.0, 20.0, 30.0]), np.full(n, np.inf), np.ones(n), np.full(n, GIB), np.array([4.0, 4.0]),
                  np.full(2, 8 * GIB), down_host=NONE_I, down_start_s=NONE_F, down_end_s=NONE_F,
                  maintenance=maint([0], [0.0], n), core_mhz=np.full(2, 2000.0))
    assert fo.inst_host.tolist() == [1, 1, 1]


def test_landing_on_a_host_entering_maintenance_moves_on():
    # VM 0 leaves host 0 at 100 s for host 1 (the most room); host 1 enters maintenance at 100.5 s;
    # (worst-fit scores, room left as shares: host 1 7/8 + 7/8 = 1.75, host 2 1/2 + 7/8 = 1.375);
    # VM 0 lands at 101 s, runs on host 1 while it is copied on to host 2, and lands there at 102 s
    fo = run(1, [4, 8, 2], [8 * GIB] * 3, initial=[0], m=maint([0, 1], [100.0, 100.5], 1))
    assert fo.mig[:, TL.M_SRC].tolist() == [0.0, 1.0] and fo.mig[:, TL.M_DST].tolist() == [1.0, 2.0]
    assert instances(fo) == [(0, 0, 0.0, 101.0), (0, 1, 101.0, 102.0), (0, 2, 102.0, np.inf)]


def test_no_failure_no_maintenance_is_the_online_schedule():
    from densim.placement.online import schedule

    rng = np.random.default_rng(3)
    n = 200
    arr, life = rng.uniform(0, 1000, n), rng.uniform(10, 500, n)
    c, m = rng.integers(1, 8, n).astype(float), rng.uniform(1, 16, n) * GIB
    cap, mcap = np.full(5, 16.0), np.full(5, 64 * GIB)
    for policy in ("first-fit", "best-fit", "worst-fit"):
        s = schedule(arr, life, c, m, cap, mcap, policy=policy, discipline="backfill")
        fo = failover(arr, life, c, m, cap, mcap, down_host=NONE_I, down_start_s=NONE_F, down_end_s=NONE_F,
                      policy=policy, discipline="backfill")
        host = np.full(n, -1)
        host[fo.inst_vm] = fo.inst_host
        assert np.array_equal(host, s.host) and np.array_equal(fo.first_start_s, s.start_s, equal_nan=True)


def test_maintenance_without_core_speeds_is_refused():
    # the dirty rate needs each VM's utilisation: demand / (vCPUs x its host's core MHz)
    with pytest.raises(ValueError, match="maintenance needs core_mhz"):
        failover(np.zeros(1), np.full(1, np.inf), np.ones(1), np.full(1, GIB), np.array([4.0, 4.0]), np.full(2, 8 * GIB),
                 down_host=NONE_I, down_start_s=NONE_F, down_end_s=NONE_F, initial=[0], maintenance=maint([0], [1.0], 1))
