"""OpenDC tasks' fragments laid onto a window of steps: read in place per task (``_bin_task_fragments``) gives the
sums of gathering every fragment of the chosen tasks and binning them one by one (the way it was done before
session 15, kept here in plain Python as the reference), to the bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from densim.workloads.tasks import _bin_task_fragments


def _bin_segments(acc, owner, start, dur, value, t0, step):
    """Each segment's mean over the steps it covers, segment by segment in order (float32 cells, float64 terms)."""
    n_steps = acc.shape[0]
    t_end = t0 + n_steps * step
    for i in range(owner.size):
        a = float(start[i])
        if a != a:
            continue
        b = a + float(dur[i])
        if b <= t0 or a >= t_end or dur[i] <= 0.0:
            continue
        lo, hi = max(a, t0), min(b, t_end)
        k = int((lo - t0) // step)
        while k < n_steps and lo < hi:
            seg_hi = min(hi, t0 + (k + 1) * step)
            if seg_hi > lo:
                acc[k, owner[i]] = np.float32(float(acc[k, owner[i]]) + float(value[i]) * ((seg_hi - lo) / step))
            lo = seg_hi
            k += 1


def _gathered(vms, off, start, dur, use, delay, t0, step, n_steps):
    """The way the windows were built before: every fragment of the chosen tasks gathered, then binned in order."""
    lens = off[vms + 1] - off[vms]
    rows = np.concatenate([np.arange(off[v], off[v + 1]) for v in vms]) if vms.size else np.zeros(0, np.int64)
    owner = np.repeat(np.arange(vms.size, dtype=np.int64), lens)
    pos = np.repeat(np.arange(off.size - 1), np.diff(off))
    out = np.zeros((n_steps, vms.size), dtype=np.float32)
    _bin_segments(out, owner, start[rows] + delay[pos[rows]], dur[rows], use[rows], t0, step)
    return out


def _tasks(durations: list[list[float]], submit: list[float]):
    """Task-ordered fragment arrays as the OpenDC reader builds them: starts back to back from each submission."""
    off = np.r_[0, np.cumsum([len(d) for d in durations])].astype(np.int64)
    dur = np.array([x for d in durations for x in d], dtype=np.float64)
    start = np.concatenate([s + np.r_[0.0, np.cumsum(d)[:-1]] if d else np.zeros(0) for d, s in zip(durations, submit)])
    use = np.arange(1, dur.size + 1, dtype=np.float64) * 7.3
    return off, start, dur, use


def test_hand_case_two_tasks_one_window():
    # steps of 300 s from t0 = 600 s, 2 steps (600-1200). Task 0: fragments 300 s at 10 MHz then 600 s at 20 MHz,
    # placed 100 s after submission 0: [100, 400) and [400, 1000). Step 600-900: 20; step 900-1200: 20 x 100/300.
    # Task 1 never placed (NaN delay): nothing.
    off, start, dur, _ = _tasks([[300.0, 600.0], [300.0]], [0.0, 0.0])
    use = np.array([10.0, 20.0, 99.0])
    out = np.zeros((2, 2), np.float32)
    _bin_task_fragments(out, np.array([0, 1]), off, start, dur, use, np.array([100.0, np.nan]), 600.0, 300.0)
    np.testing.assert_allclose(out[:, 0], [20.0, 20.0 / 3], rtol=1e-6)
    assert (out[:, 1] == 0).all()


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_in_place_windows_equal_the_gathered_ones_to_the_bit(data):
    step = data.draw(st.sampled_from([1.0, 300.0, 3600.0]))
    n_tasks = data.draw(st.integers(1, 6))
    # fragment durations: whole steps (ends on step edges), zero, and odd lengths
    frag = st.one_of(st.sampled_from([0.0, step, 2 * step, step / 3]), st.floats(0.0, 5 * step, allow_nan=False))
    durations = [data.draw(st.lists(frag, max_size=8)) for _ in range(n_tasks)]
    submit = [data.draw(st.sampled_from([0.0, step, 2.5 * step, 1e9])) for _ in range(n_tasks)]
    delay = np.array([data.draw(st.sampled_from([0.0, step, 0.5 * step, np.nan])) for _ in range(n_tasks)])
    off, start, dur, use = _tasks(durations, submit)
    t0 = data.draw(st.sampled_from([0.0, step, 3 * step, 1e9 + step]))
    n_steps = data.draw(st.integers(1, 6))
    vms = np.array(sorted(data.draw(st.sets(st.integers(0, n_tasks - 1)))), dtype=np.int64)
    got = np.zeros((n_steps, vms.size), np.float32)
    _bin_task_fragments(got, vms, off, start, dur, use, delay, t0, step)
    want = _gathered(vms, off, start, dur, use, delay, t0, step, n_steps)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("example", ["surf-week"])
def test_the_surf_week_run_reads_its_fragments_in_place(example):
    # the in-place read serves every chunk of the example's run: tasks completed and demand as the example's test
    # (tests/engine/test_lifetimes.py) pins them, here only that a chunk's window equals the gathered one
    from densim.engine.state import build_context
    from densim.plant import resolve
    from densim.spec.loader import load_scenario
    from densim.workloads.tasks import fragments

    ctx = build_context(resolve(load_scenario(f"examples/opendc/{example}.yaml")))
    src = ctx.source
    tr = src.inner.trace
    pos, start, dur, use, off = fragments(tr)
    delay = src.start_s - tr.submission_s
    edges = ctx.grid.edges_s(500, 560)
    vms = np.flatnonzero((src.start_s < edges[-1]) & (src.end_s > edges[0]))
    got = np.zeros((60, vms.size), np.float32)
    _bin_task_fragments(got, vms, off, start, dur, use, delay, float(edges[0]), float(edges[1] - edges[0]))
    want = _gathered(vms, off, start, dur, use, delay, float(edges[0]), float(edges[1] - edges[0]), 60)
    assert vms.size > 100 and got.sum() > 0
    assert np.array_equal(got, want)
