"""The synthetic trace generator: chunk-invariant, seeded, with the stated mean; streams through the engine."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from densim.workloads.synthetic_trace import SyntheticTrace, SyntheticTraceSpec

SPEC = SyntheticTraceSpec(n_vms=300, n_steps=288, seed=5)


def test_blocks_do_not_depend_on_chunking():
    tr = SyntheticTrace(SPEC)
    whole = tr.utilisation(0, SPEC.n_steps)
    pieces = np.zeros_like(whole)
    for t0, t1, v0, v1, blk in tr.blocks(t_chunk=37, v_chunk=41):
        pieces[t0:t1, v0:v1] = blk
    assert np.array_equal(whole, pieces)


@settings(max_examples=25, deadline=None)
@given(t0=st.integers(0, 287), dt=st.integers(1, 50), v0=st.integers(0, 299), dv=st.integers(1, 80))
def test_any_block_equals_the_same_cut_of_the_whole(t0, dt, v0, dv):
    tr = SyntheticTrace(SPEC)
    t1, v1 = min(288, t0 + dt), min(300, v0 + dv)
    blk = tr.utilisation(t0, t1, v0, v1)
    assert blk.shape == (t1 - t0, v1 - v0)
    assert np.array_equal(blk, tr.utilisation(0, 288)[t0:t1, v0:v1])
    assert blk.min() >= 0.0 and blk.max() <= 1.0


def test_seed_matters_and_is_reproducible():
    a = SyntheticTrace(SPEC).utilisation(0, 10)
    b = SyntheticTrace(SPEC).utilisation(0, 10)
    c = SyntheticTrace(SyntheticTraceSpec(n_vms=300, n_steps=288, seed=6)).utilisation(0, 10)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_mean_utilisation_matches_the_closed_form():
    # E[m] = m_lo + (m_hi - m_lo)/(k+1) = 0.02 + 0.48/4 = 0.14 over whole days (wave and noise average out);
    # clipping at 0 lifts it slightly, so allow 0.01 on 20,000 VMs x 1 day.
    spec = SyntheticTraceSpec(n_vms=20000, n_steps=288, seed=1)
    u = SyntheticTrace(spec).utilisation(0, 288)
    assert abs(spec.expected_mean - 0.14) < 1e-12
    assert abs(float(u.mean()) - spec.expected_mean) < 0.01


def test_streams_through_the_engine_with_the_same_energy_as_summed_by_hand():
    # 64 VMs x 2 vCPUs x 1000 MHz on 8 hosts of 32 cores: first-fit puts 16 VMs on each of hosts 0..3,
    # no host is overloaded, so host utilisation = sum of its VMs' demand / 32,000 MHz and
    # energy = sum over steps and hosts of (100 + 150 u) W x 300 s (idle hosts draw 100 W).
    from densim.engine import simulate
    from densim.plant import resolve
    from densim.spec.loader import scenario_from_dict

    spec = SyntheticTraceSpec(n_vms=64, n_steps=48, seed=3)
    tr = SyntheticTrace(spec, vm_block=10)
    sc = scenario_from_dict({
        "cluster": {"hosts": [{"count": 8, "cpu": {"cores_per_socket": 32, "base_clock": "1000 MHz"},
                               "memory": "128 GiB", "power": {"model": "linear", "idle": 100, "peak": 250}}]},
        "vms": [{"name": "placeholder", "count": 1, "vcpus": 2, "memory": "2 GiB", "profile": {"mean": 0.1}}],
        "simulation": {"step": 300, "horizon": "4 h", "chunk_steps": 7},
    })
    res = simulate(resolve(sc), source=tr)
    demand = tr.utilisation(0, 48).astype(np.float64) * 2000.0
    host_u = demand.reshape(48, 4, 16).sum(axis=2) / 32000.0
    expected_j = ((100 + 150 * host_u).sum() + 4 * 48 * 100) * 300.0
    assert res.summary["vms_placed"] == 64 and res.summary["hosts_used"] == 4
    assert abs(res.summary["totals"]["energy_j"] - expected_j) / expected_j < 1e-5


def test_numba_pass_equals_the_numpy_formulation():
    # the one-pass generator (numba) and the array formulation give the same float32 values, bit for bit,
    # for the whole trace, an inner block, a subset of VMs, and the engine's window (utilisation x capacity)
    tr = SyntheticTrace(SyntheticTraceSpec(n_vms=2000, n_steps=600, seed=11, start_s=1234.0))
    assert np.array_equal(tr.utilisation(0, 600), tr.utilisation_numpy(0, 600))
    assert np.array_equal(tr.utilisation(123, 456, 77, 1999), tr.utilisation_numpy(123, 456, 77, 1999))
    idx = np.array([3, 500, 1999])
    assert np.array_equal(tr.subset(idx).utilisation(0, 600), tr.utilisation_numpy(0, 600)[:, idx])
    w = tr.window(tr.grid(), 10, 40, ("cpu_mhz",))["cpu_mhz"]
    assert np.array_equal(w, tr.utilisation_numpy(10, 40) * np.float32(2000.0))


def test_fast_cos_rounds_like_the_library_cos():
    # the polynomial cos with its float32 rounding check equals float32(np.cos(x)): random arguments
    # over the trace's range and beyond, arguments next to the zeros of cos (tiny values, where the
    # check sends them to the library) and past 1e6 (library)
    from densim.workloads.synthetic_trace import cos_f32

    rng = np.random.default_rng(8)
    near_zeros = (np.arange(-40, 40) + 0.5) * np.pi
    x = np.concatenate([rng.uniform(-60, 60, 2_000_000), rng.uniform(-1e5, 1e5, 200_000), near_zeros,
                        np.nextafter(near_zeros, np.inf), np.nextafter(near_zeros, -np.inf), [0.0, -0.0, 1e6, 3e7, -2e6]])
    out = np.empty(x.size, np.float32)
    cos_f32(x, out)
    assert np.array_equal(out, np.cos(x).astype(np.float32))
