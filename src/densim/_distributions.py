"""The few distribution functions the models need, from ``scipy.special`` instead of ``scipy.stats``.

Importing ``scipy.stats`` costs 0.5-1.0 s of start-up beyond ``scipy.special`` on this project's
2-core machine (numpy and numba already loaded: 0.53-0.61 s in a bare interpreter, about 1 s inside a run), paid by every run with the
virtualization stage, the component power model, NUMA co-stop or a storage response-time percentile
(``examples/combined/everything-on.yaml``: 3.10 -> 2.10 s, benchmarks/RESULTS.md). These are the same special
functions ``scipy.stats`` evaluates:

* ``binom_pmf(k, n, p)``: ``exp(ln C(n, k) + k ln p + (n - k) ln(1 - p))`` with ``ln C`` from
  ``gammaln`` and the two products from ``xlogy``/``xlog1py`` (exactly 0 * log 0 = 0 at p = 0 or 1);
  ``scipy.stats.binom.pmf`` evaluates Boost's binomial density instead: the two agree to about 1e-12
  relative where the pmf is above 1e-300 (tests/models/test_distributions.py, hypothesis);
* ``binom_sf(k, n, p) = P(K > k)``: ``scipy.special.bdtrc`` (the regularised incomplete beta);
* ``gamma_ppf(q, shape, scale)``: ``gammaincinv(shape, q) * scale``, which is what
  ``scipy.stats.gamma.ppf`` computes;
* ``t_ppf(q, df)``: ``stdtrit(df, q)``, which is what ``scipy.stats.t.ppf`` computes.
"""

from __future__ import annotations

import numpy as np

from densim._lazy import lazy

special = lazy("scipy.special")  # imported at the first call, as scipy.stats was before


def binom_pmf(k, n, p):
    """``P(K = k)`` for ``K ~ Binomial(n, p)``, broadcast over ``k``, ``n`` and ``p``; 0 outside ``0..n``."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    p = np.asarray(p, dtype=float)
    inside = (k >= 0) & (k <= n) & (k == np.floor(k))
    kk = np.where(inside, k, 0.0)
    log_pmf = (special.gammaln(n + 1.0) - special.gammaln(kk + 1.0) - special.gammaln(n - kk + 1.0)
               + special.xlogy(kk, p) + special.xlog1py(n - kk, -p))
    out = np.where(inside, np.exp(log_pmf), 0.0)
    return out[()] if out.ndim == 0 else out


def binom_sf(k, n, p):
    """``P(K > k)`` for ``K ~ Binomial(n, p)`` (``k`` is floored, as ``scipy.stats.binom.sf`` does)."""
    k = np.floor(np.asarray(k, dtype=float))
    n = np.asarray(n, dtype=np.int64)
    kk = np.clip(k, 0, np.maximum(n - 1, 0)).astype(np.int64)  # bdtrc takes integers; ends set below
    out = np.where(k < 0, 1.0, np.where(k >= n, 0.0, special.bdtrc(kk, n, p)))
    return out[()] if out.ndim == 0 else out


def gamma_ppf(q, shape, scale=1.0):
    """Quantile ``q`` of a gamma distribution of ``shape`` and ``scale``."""
    return special.gammaincinv(shape, q) * scale


def t_ppf(q, df):
    """Quantile ``q`` of Student's t with ``df`` degrees of freedom."""
    return special.stdtrit(df, q)
