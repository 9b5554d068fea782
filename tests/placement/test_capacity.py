"""One capacity definition and one fit test (densim.placement.capacity), and the placement paths that use them."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from densim.placement import place
from densim.placement.capacity import (EPS, MAX_TOL, _fits, capacity, fits, fits_mask, fits_rows, host_capacity,
                                       tolerance, within)
from densim.spec.scenario import PlacementSpec

GiB = 2**30
TB = 1e12


def test_host_capacity_columns():
    # 16 cores x 4 = 64 vCPUs, 256 GiB x 1.5 = 384 GiB; 32 cores x 4 = 128 vCPUs, 512 GiB x 1.5 = 768 GiB
    hosts = SimpleNamespace(cores=np.array([16.0, 32.0]), mem_bytes=np.array([256.0, 512.0]) * GiB)
    pl = PlacementSpec(cpu_overcommit=4, memory_overcommit=1.5)
    cap = host_capacity(hosts, pl)
    assert cap.shape == (2, 2) and cap.dtype == np.float64
    assert cap.tolist() == [[64.0, 384.0 * GiB], [128.0, 768.0 * GiB]]
    # one host type (the planner): a (2,) row
    assert capacity(48, 100 * GiB, 1.1, 1.0).tolist() == [48 * 1.1, 100.0 * GiB]


def free_after(cap, sizes):
    """Free capacity after placing ``sizes`` one by one, as the kernels keep it (cap - s0 - s1 - ...)."""
    free = cap
    for s in sizes:
        free -= s
    return free


def used_after(sizes):
    """The sum of ``sizes`` added one by one, as the planner's host state keeps it."""
    used = 0.0
    for s in sizes:
        used += s
    return used


# (cpu_free, mem_free, c, m, expected, why)
BOUNDARY = [
    (4.0, 8 * GiB, 4.0, 8 * GiB, True, "exact fit"),
    (3.0, 8 * GiB, 4.0, 8 * GiB, False, "one vCPU short"),
    (4.0, 8 * GiB - 1, 4.0, 8 * GiB, False, "one byte short on 8 GiB (the old 1e-9 x m let 8.6 bytes pass)"),
    (4.0, TB - 1, 4.0, TB, False, "one byte short on 1e12 bytes (the old 1e-9 x m let 1000 bytes pass)"),
    (4.0, 2.0**52 - 1, 4.0, 2.0**52, False, "one byte short at 2**52 bytes, where float64 still counts bytes"),
    (4.0, TB - 0.25, 4.0, TB, True, "a quarter byte short: float noise (tolerance capped at half a unit)"),
    (4.0, TB - 0.75, 4.0, TB, False, "three quarters of a byte short: more than half a unit"),
    # 640 VMs of 0.1 GiB (107374182.4 bytes) fill 64 GiB: 639 added one by one leave 107374182.39931488
    # bytes, 0.0007 bytes (6e-12 of the request) short of the last VM
    (1.0, 64.0 * GiB - used_after([0.1 * GiB] * 639), 1.0, 0.1 * GiB, True, "float sum of 0.1-GiB sizes"),
    # 1.1 x 48 = 52.800000000000004 vCPUs; 52 one-vCPU VMs leave 0.8000000000000043
    (free_after(1.1 * 48, [1.0] * 52), 8 * GiB, 0.8, 1.0, True, "fractional over-commit"),
    (free_after(1.1 * 48, [1.0] * 52), 8 * GiB, 0.81, 1.0, False, "fractional over-commit, 0.01 vCPU short"),
    (-1e-10, 0.0, 0.0, 0.0, True, "a request of 0 against float noise below 0: the tolerance floor EPS"),
    (-1e-8, 0.0, 0.0, 0.0, False, "a request of 0 against 1e-8 below 0: more than the floor"),
    (-1.0, -1.0, 0.0, 0.0, False, "a host taken out of a search tree (-1, -1) takes nothing"),
    (np.inf, np.inf, 1e300, 1e300, True, "unbounded capacity"),
]


@pytest.mark.parametrize("cf, mf, c, m, expected, why", BOUNDARY, ids=[b[-1] for b in BOUNDARY])
def test_boundary_cases(cf, mf, c, m, expected, why):
    assert bool(fits(cf, mf, c, m)) is expected
    assert bool(fits_mask(cf, mf, c, m)) is expected
    assert bool(_fits(cf, mf, c, m)) is expected


def test_boundary_cases_vectorised():
    cf, mf, c, m, expected = (np.array(col) for col in list(zip(*BOUNDARY))[:5])
    assert fits_mask(cf, mf, c, m).tolist() == expected.tolist()
    # the same rule for any number of columns (a capacity table: vCPUs, bytes, ...)
    assert fits_rows(np.stack([cf, mf], axis=1), np.stack([c, m], axis=1)).tolist() == expected.tolist()


def test_tolerance_rule():
    # relative below 5e8 units, half a unit above; a floor of EPS below one unit
    assert tolerance(0.0) == EPS and tolerance(1.0) == EPS
    assert tolerance(0.1 * GiB) == EPS * 0.1 * GiB  # 1e-9 x 107374182.4 = 0.107 bytes (below the cap)
    assert tolerance(8 * GiB) == MAX_TOL  # 1e-9 x 8589934592 = 8.6 bytes, capped at half a byte
    assert tolerance(TB) == MAX_TOL == 0.5
    assert within(np.array([3.0, 4.0]), 4.0).tolist() == [False, True]


finite = st.floats(min_value=-1e13, max_value=1e13, allow_nan=False, allow_infinity=False)
request = st.floats(min_value=0.0, max_value=1e13, allow_nan=False, allow_infinity=False)
# free amounts at the boundary: the request plus a multiple of its tolerance (or a few units)
near = st.tuples(request, st.floats(min_value=-3.0, max_value=3.0, allow_nan=False), st.sampled_from([0, 1]))


def _near(r):
    x, k, unit = r
    return (x + k) if unit else x + k * min(EPS * max(1.0, x), MAX_TOL)


@given(st.lists(st.tuples(finite, finite, request, request), min_size=1, max_size=40))
def test_kernel_and_numpy_agree_random(rows):
    cf, mf, c, m = (np.array(col, dtype=np.float64) for col in zip(*rows))
    mask = fits_mask(cf, mf, c, m)
    one = [bool(fits(*row)) for row in zip(cf, mf, c, m)]
    assert mask.tolist() == one == [bool(_fits(*row)) for row in zip(cf, mf, c, m)]


@given(st.lists(st.tuples(near, near), min_size=1, max_size=40))
def test_kernel_and_numpy_agree_at_the_boundary(rows):
    cf = np.array([_near(a) for a, _ in rows])
    mf = np.array([_near(b) for _, b in rows])
    c = np.array([a[0] for a, _ in rows])
    m = np.array([b[0] for _, b in rows])
    mask = fits_mask(cf, mf, c, m)
    assert mask.tolist() == [bool(fits(*row)) for row in zip(cf, mf, c, m)]


@pytest.mark.parametrize("policy", ["first-fit", "first-fit-decreasing", "best-fit", "worst-fit"])
def test_engine_kernels_refuse_one_byte_short_on_a_terabyte(policy):
    # one host of 4 vCPUs and 1e12 - 1 bytes; a VM of 1 vCPU and 1e12 bytes is one byte too large.
    # The kernels' old rule (1e-9 x 1e12 = 1000 bytes of slack) placed it.
    out = place(policy, [1.0], [TB], np.array([4.0]), np.array([TB - 1]))
    assert out.tolist() == [-1]
    assert place(policy, [1.0], [TB], np.array([4.0]), np.array([TB])).tolist() == [0]


def test_planner_capacity_filter_absorbs_float_sums():
    # one host type: 64 logical CPUs x 10 = 640 vCPUs, 64 GiB usable; 640 VMs of 1 vCPU and 0.1 GiB
    # fill one host exactly. Added one by one the memory comes to 64 GiB + 0.0007 bytes (float noise,
    # 6e-12 of a VM); the filter's old rule (+1e-6 bytes) opened a second host for the last VM.
    from densim.placement.prefabs import HostType, PackingProblem
    from densim.placement.prefabs import place as plan_place

    host = HostType("h", sockets=1, cores_per_socket=64, threads_per_core=1, core_mhz=2000.0, mem_bytes=64.0 * GiB)
    n = 640
    assert used_after([0.1 * GiB] * n) - 64 * GiB == pytest.approx(0.0007, abs=1e-4)
    p = PackingProblem(host=host, vcpus=np.ones(n), mem_bytes=np.full(n, 0.1 * GiB), cpu_overcommit=10.0)
    assert p.capacity.tolist() == [640.0, 64.0 * GiB]
    r = plan_place(p, "first-fit")
    assert r.n_hosts == 1 and not r.unplaceable
    # one more VM does not fit: 641 vCPUs > 640
    p2 = PackingProblem(host=host, vcpus=np.ones(n + 1), mem_bytes=np.full(n + 1, 0.1 * GiB), cpu_overcommit=10.0)
    assert plan_place(p2, "first-fit").n_hosts == 2


def test_ffd_vector_uses_the_fit_rule():
    from densim.placement.optimiser import ffd_vector

    # capacity (4 vCPUs, 10 MiB): sizes (2, 5), (2, 5) share host 0; (1, 1) opens host 1
    host_of = ffd_vector(np.array([[2, 5], [2, 5], [1, 1]]), np.array([4, 10]))
    assert host_of.tolist() == [0, 0, 1]
    with pytest.raises(ValueError, match="does not fit an empty host"):
        ffd_vector(np.array([[5, 1]]), np.array([4, 10]))


def test_numa_auto_start_uses_the_fit_rule():
    from densim.placement.numa import place_auto_start

    # one node of 0.3 GiB (322122547.2 bytes); three VMs of 0.1 GiB fill it exactly, but summed in
    # float they come to 322122547.20000005 > 0.3 GiB: the old exact test left the third VM unbound.
    # The fourth (0.4 GiB in all) does not fit.
    node = place_auto_start(np.array([1.0, 1.0, 1.0, 1.0]), np.full(4, 0.1 * GiB), 1, 8, 0.3 * GiB)
    assert node.tolist() == [0, 0, 0, -1]


def test_migration_refuses_a_destination_one_byte_short():
    # two hosts of 2 cores and 2 TiB (2199023255552 bytes); first-fit puts a (1 TiB + 1 byte) and
    # c (0.5 TiB) on h-0, b (1 TiB) does not fit beside them and goes to h-1, which keeps 1 TiB free.
    # h-0 enters maintenance: VMs leave largest first. a needs 1 TiB + 1 byte: one byte short on h-1,
    # stranded (the migration's old rule, 1e-12 x 2 TiB = 2.2 bytes of slack, moved it, and then
    # stranded c); c (0.5 TiB) moves to h-1.
    from densim.engine import simulate
    from densim.plant import resolve
    from tests.core.helpers import const_vms, host, scenario

    tib = 2**40
    vms = [const_vms("a", 1, 1, 2000, 0.5, mem=tib + 1), const_vms("c", 1, 1, 2000, 0.5, mem=tib // 2),
           const_vms("b", 1, 1, 2000, 0.5, mem=tib)]
    sc = scenario([host(count=2, cores=2, mhz=2000, mem="2 TiB")], vms, step="1 min", horizon="10 min",
                  migration={"model": "precopy", "maintenance": [{"host": "h-0", "at": "5 min"}]})
    r = simulate(resolve(sc))
    m = r.summary["migration"]
    ev = m["evacuations"][0]
    assert ev["stranded"] == 1 and ev["vms"] == 1
    assert [(x["vm"], x["to"]) for x in m["log"]] == [("c-0", "h-1")]
