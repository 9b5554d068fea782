"""A results store with a damaged file (deleted, truncated, flipped, replaced) through ``densim query``
and ``densim report``: a one-line error naming the store, never fewer rows without a word."""

from hypothesis import HealthCheck, Phase, given, settings

from tests.fuzz.engine import cases, n, run_case

SETTINGS = dict(derandomize=True, deadline=None, database=None, print_blob=False,
                phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])


@settings(max_examples=n(20), **SETTINGS)
@given(cases(["store-query"]))
def test_query_damaged_store(case):
    run_case(*case)


@settings(max_examples=n(12), **SETTINGS)
@given(cases(["store-report"]))
def test_report_damaged_store(case):
    run_case(*case)
