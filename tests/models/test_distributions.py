"""``densim._distributions`` against ``scipy.stats`` (which the models no longer import: about 0.55 s of
start-up), and a run with every stage that used it imports ``scipy.special`` but not ``scipy.stats``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st
from scipy import stats

from densim._distributions import binom_pmf, binom_sf, gamma_ppf, t_ppf

from tests.conftest import REPO

# scipy.stats' Boost density overflows for p below about 1e-300 (p = 2.2e-308: "ibeta_derivative ...
# Overflow Error"); the models clip p at 1e-9 or more, and 0 and 1 are covered exactly
PROB = st.one_of(st.just(0.0), st.just(1.0), st.floats(1e-300, 1.0))


def test_binom_pmf_by_hand():
    # K ~ Binomial(4, 0.25): P(K = 2) = C(4,2) x 0.25^2 x 0.75^2 = 6 x 0.0625 x 0.5625 = 0.2109375
    assert binom_pmf(2, 4, 0.25) == pytest.approx(0.2109375, rel=1e-14)
    # outside 0..n, and not an integer: 0, as scipy.stats gives
    assert binom_pmf(-1, 4, 0.25) == 0.0 and binom_pmf(5, 4, 0.25) == 0.0 and binom_pmf(1.5, 4, 0.25) == 0.0
    # p = 0 and p = 1: all the mass on 0 and on n (0 x log 0 = 0)
    assert list(binom_pmf(np.arange(5), 4, 0.0)) == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert list(binom_pmf(np.arange(5), 4, 1.0)) == [0.0, 0.0, 0.0, 0.0, 1.0]


def test_binom_sf_by_hand():
    # P(K > 2) for Binomial(4, 0.5) = (C(4,3) + C(4,4)) / 16 = 5 / 16
    assert binom_sf(2, 4, 0.5) == pytest.approx(5 / 16, rel=1e-14)
    assert binom_sf(-1, 4, 0.5) == 1.0 and binom_sf(4, 4, 0.5) == 0.0 and binom_sf(2.7, 4, 0.5) == binom_sf(2, 4, 0.5)


@given(n=st.integers(0, 600), p=PROB)
def test_binom_pmf_matches_scipy_stats(n, p):
    k = np.arange(-1, n + 2)
    ours, ref = binom_pmf(k, n, p), stats.binom.pmf(k, n, p)
    big = ref > 1e-290  # below that both are denormal noise
    np.testing.assert_allclose(ours[big], ref[big], rtol=5e-11)
    assert np.all(np.abs(ours[~big] - ref[~big]) <= 1e-290)


@given(n=st.integers(0, 600), p=PROB, k=st.floats(-3, 603))
def test_binom_sf_matches_scipy_stats(n, p, k):
    np.testing.assert_allclose(binom_sf(k, n, p), stats.binom.sf(k, n, p), rtol=1e-10, atol=1e-300)


@given(q=st.floats(1e-6, 1 - 1e-6), shape=st.floats(1e-3, 1e4), scale=st.floats(1e-6, 1e3))
def test_gamma_ppf_matches_scipy_stats(q, shape, scale):
    np.testing.assert_allclose(gamma_ppf(q, shape, scale), stats.gamma.ppf(q, shape, scale=scale), rtol=1e-12)


@pytest.mark.parametrize("df", [1, 2, 5, 40, 1000])
def test_t_ppf_matches_scipy_stats(df):
    # df 40: 2.021, not the normal 1.96
    assert t_ppf(0.975, df) == pytest.approx(stats.t.ppf(0.975, df), rel=1e-14)


def test_a_run_with_virtualization_numa_and_storage_does_not_import_scipy_stats(tmp_path):
    # examples/combined/everything-on.yaml turns on the virtualization stage (binomial clock curve),
    # over-commit, swap to a RAID 5 datastore (response-time percentiles) and more, at once
    code = (
        "import json, sys\n"
        "from densim.cli.main import main\n"
        f"sys.argv = ['densim', 'run', {str(REPO / 'examples/combined/everything-on.yaml')!r}, '--out', {str(tmp_path / 'o')!r}, '-q', '--no-report']\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('scipy.'))))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    mods = json.loads(out.stdout.strip().splitlines()[-1])
    assert "scipy.special" in mods  # the stages ran and used the special functions
    assert not [m for m in mods if m == "scipy.stats" or m.startswith("scipy.stats.")], mods
