"""Max-min fair sharing: allocations worked out by hand, and invariants as property tests."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from densim.models.sharing import maxmin_rates, mmc_stretch, ps_stretch


def test_three_flows_on_two_links():
    # Link L1 (capacity 10) carries flows A and B; link L2 (capacity 6) carries B and C.
    # Progressive filling, all weights 1: every flow grows at rate t.
    #   L1 load = 2t, L2 load = 2t -> L2 fills first at t = 3: B = C = 3 are frozen.
    #   A keeps growing alone on L1: residual 10 - 2*3 = 4 -> A = 3 + 4 = 7.
    # Max-min answer: A = 7, B = 3, C = 3. L1 carries 10 (full), L2 carries 6 (full).
    a = [[1, 0], [1, 1], [0, 1]]
    alloc = maxmin_rates(a, [10, 6])
    assert alloc.rate == pytest.approx([7, 3, 3])
    assert alloc.load == pytest.approx([10, 6])
    assert list(alloc.bottleneck) == [0, 1, 1]


def test_weights_split_one_link_in_proportion():
    # One link of 12 shared by weights 1, 2, 3: rates w*t with 6t = 12 -> t = 2 -> 2, 4, 6.
    alloc = maxmin_rates([[1], [1], [1]], [12], weights=[1, 2, 3])
    assert alloc.rate == pytest.approx([2, 4, 6])


def test_cap_redistributes_unused_share():
    # Link of 9, three flows, the first limited to 1 (a per-volume cap).
    # t grows to 1: first flow hits its cap (load 3). The other two share the residual 6 -> 3 each,
    # so they end at 1 + 3 = 4. Answer: 1, 4, 4 (not 3, 3, 3: the unused share is redistributed).
    alloc = maxmin_rates([[1], [1], [1]], [9], caps=[1, np.inf, np.inf])
    assert alloc.rate == pytest.approx([1, 4, 4])
    assert alloc.bottleneck[0] == -1


def test_incidence_scales_load():
    # A write with replication 2 puts 2 bytes on the network per byte written; a read puts 1.
    # Network of 6: writer w and reader r grow together, load 2t + t = 3t = 6 -> t = 2: both get 2.
    alloc = maxmin_rates([[2], [1]], [6])
    assert alloc.rate == pytest.approx([2, 2])


def test_unbounded_and_zero_capacity():
    alloc = maxmin_rates([[0.0], [1.0]], [0.0])
    assert alloc.rate[1] == 0.0 and alloc.bottleneck[1] == 0
    assert np.isinf(alloc.rate[0]) and alloc.bottleneck[0] == -2


def test_ps_stretch():
    # R = S / (1 - rho): half-loaded component doubles the service time
    assert ps_stretch(0.5) == pytest.approx(2.0)
    assert ps_stretch(1.0, rho_max=0.9) == pytest.approx(10.0)


def test_mmc_stretch_by_hand():
    # One server: the processor-sharing 1/(1 - rho).
    assert mmc_stretch(0.6, 1) == pytest.approx(2.5)
    # Two servers (two drives) at rho = 0.6: offered load A = c rho = 1.2.
    # Erlang C = (A^2/2! * c/(c-A)) / (1 + A + A^2/2! * c/(c-A)) = 1.8 / (1 + 1.2 + 1.8) = 0.45
    # R/S = 1 + C / (c (1 - rho)) = 1 + 0.45 / 0.8 = 1.5625: far less queueing than one server.
    assert mmc_stretch(0.6, 2) == pytest.approx(1.5625)


@st.composite
def problems(draw):
    n_f = draw(st.integers(1, 7))
    n_c = draw(st.integers(1, 5))
    cells = st.one_of(st.just(0.0), st.floats(0.1, 5.0))
    a = np.array(draw(st.lists(st.lists(cells, min_size=n_c, max_size=n_c), min_size=n_f, max_size=n_f)))
    cap = np.array(draw(st.lists(st.floats(0.5, 50.0), min_size=n_c, max_size=n_c)))
    w = np.array(draw(st.lists(st.floats(0.2, 5.0), min_size=n_f, max_size=n_f)))
    lim = np.array(draw(st.lists(st.one_of(st.just(np.inf), st.floats(0.1, 20.0)), min_size=n_f, max_size=n_f)))
    # every flow must be bounded by something
    lim = np.where(a.sum(axis=1) == 0, np.minimum(lim, 10.0), lim)
    return a, cap, w, lim


@settings(max_examples=80, deadline=None)
@given(problems())
def test_no_component_above_capacity(p):
    a, cap, w, lim = p
    alloc = maxmin_rates(a, cap, w, lim)
    assert (alloc.load <= cap * (1 + 1e-7) + 1e-9).all()
    assert (alloc.rate <= lim * (1 + 1e-9) + 1e-12).all()


@settings(max_examples=80, deadline=None)
@given(problems())
def test_every_flow_is_blocked_work_conserving(p):
    # Work conservation / Pareto efficiency: no flow could go faster without overloading something.
    # Every flow is at its cap or crosses a component that is full.
    a, cap, w, lim = p
    alloc = maxmin_rates(a, cap, w, lim)
    full = alloc.load >= cap * (1 - 1e-6)
    for f in range(a.shape[0]):
        at_cap = alloc.rate[f] >= lim[f] * (1 - 1e-6)
        blocked = bool(((a[f] > 0) & full).any())
        assert at_cap or blocked


@settings(max_examples=80, deadline=None)
@given(problems())
def test_maxmin_condition(p):
    # The max-min characterisation: a flow frozen by a full component has the largest
    # rate/weight among the flows on that component (no one there is "richer" than it).
    a, cap, w, lim = p
    alloc = maxmin_rates(a, cap, w, lim)
    level = alloc.rate / w
    for f in range(a.shape[0]):
        c = alloc.bottleneck[f]
        if c >= 0:
            on_c = a[:, c] > 0
            assert level[f] >= level[on_c].max() * (1 - 1e-6) - 1e-9


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(0.1, 20.0), min_size=1, max_size=6), st.floats(1.0, 40.0), st.floats(0.1, 20.0))
def test_adding_a_tenant_never_speeds_up_another(private_caps, shared_cap, new_cap):
    # Tenants each have a private path (their own capacity) and share one target.
    # Adding a tenant can only lower the fair share on the target, so nobody gets faster.
    # (On general networks this is false for max-min: with A on L1, B on L1+L2, a new flow on L2
    # slows B, which frees L1 for A. That is why the job-level test uses a shared target.)
    n = len(private_caps)

    def solve(caps):
        k = len(caps)
        a = np.hstack([np.eye(k), np.ones((k, 1))])
        return maxmin_rates(a, np.append(caps, shared_cap)).rate

    before = solve(np.array(private_caps))
    after = solve(np.array(private_caps + [new_cap]))
    assert (after[:n] <= before * (1 + 1e-9) + 1e-12).all()
