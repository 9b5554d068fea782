"""Property tests: conservation, and slowdown monotonic in oversubscription and device latency."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from densim.models import memory as M

GIB = M.GIB

vm_sizes = st.lists(st.floats(1.0, 64.0), min_size=1, max_size=6)
fracs = st.floats(0.0, 1.0)


def _host(cfg, act_frac, **kw):
    cfg = np.asarray(cfg) * GIB
    return cfg, cfg * act_frac, np.zeros(cfg.size, np.int64)


@settings(max_examples=60, deadline=None)
@given(vm_sizes, fracs, st.floats(0.1, 2.0), fracs, fracs, fracs, st.floats(1.0, 4.0), st.floats(0.0, 0.3), st.floats(0.0, 64.0))
def test_conservation_per_vm(sizes, a, cap_ratio, zf, bas, pc, kappa, ccf, cache_gib):
    cfg, act, seg = _host(sizes, a)
    cap = cap_ratio * cfg.sum()
    r = M.reclaim(cfg, act, seg, 1, cap, zero_page_fraction=zf, balloon_active_share=bas, compressible_fraction=pc,
                  compression_ratio=kappa, compression_cache_fraction=ccf, swap_cache_bytes=cache_gib * GIB)
    np.testing.assert_allclose(r.total_bytes(), cfg, rtol=1e-9, atol=1.0)
    for arr in (r.resident_bytes, r.shared_bytes, r.ballooned_bytes, r.compressed_bytes, r.swapped_bytes):
        assert (arr >= -1.0).all()
    assert (r.ballooned_bytes <= 0.65 * cfg + 1.0).all()
    if r.unmet_bytes[0] == 0:
        assert r.resident_bytes.sum() + r.compression_cache_bytes[0] <= cap + 1e-6 * cfg.sum() + 1.0


def _slowdown(sizes, a, host_gib, read_s, rate, bas):
    cfg, act, _ = _host(sizes, a)
    n = host_gib.size
    cfg_all = np.tile(cfg, n)
    act_all = np.tile(act, n)
    seg = np.repeat(np.arange(n), cfg.size)
    dev = M.DeviceArrays(np.asarray(read_s), np.asarray(read_s * 0.5), np.asarray(2000.0), np.asarray(4000.0), np.asarray(np.nan))
    p = M.MemoryParams(software_s=50e-6)
    res = M.evaluate(cfg_all, act_all, seg, n, host_gib * GIB, p, store=dev, access_rate_per_s=rate,
                     balloon_active_share=bas, compressible_fraction=0.3)
    return res.tp.slowdown.reshape(n, cfg.size)


@settings(max_examples=40, deadline=None)
@given(vm_sizes, st.floats(0.3, 1.0), st.floats(1e-4, 2e-2), st.floats(10.0, 5000.0), fracs)
def test_slowdown_monotonic_in_oversubscription(sizes, a, read_s, rate, bas):
    total = float(np.sum(sizes))
    host_gib = total * np.array([1.2, 1.0, 0.8, 0.6, 0.45, 0.3])  # less memory = more oversubscription
    s = _slowdown(sizes, a, host_gib, read_s, rate, bas)
    assert (np.diff(s, axis=0) >= -1e-9).all()


@settings(max_examples=40, deadline=None)
@given(vm_sizes, st.floats(0.3, 1.0), st.floats(0.2, 0.9), st.floats(10.0, 5000.0), fracs)
def test_slowdown_monotonic_in_device_latency(sizes, a, host_share, rate, bas):
    host_gib = np.array([float(np.sum(sizes)) * host_share])
    prev = None
    for read_s in (50e-6, 200e-6, 1e-3, 5e-3, 12e-3):
        s = _slowdown(sizes, a, host_gib, read_s, rate, bas)
        if prev is not None:
            assert (s >= prev - 1e-9).all()
        prev = s
