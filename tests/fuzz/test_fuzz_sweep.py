"""Damaged sweep studies and base scenarios through ``densim sweep`` (in-process backend)."""

from hypothesis import HealthCheck, Phase, given, settings

from tests.fuzz.engine import cases, n, run_case

SETTINGS = dict(derandomize=True, deadline=None, database=None, print_blob=False,
                phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])


@settings(max_examples=n(25), **SETTINGS)
@given(cases(["sweep-study"]))
def test_study_file(case):
    run_case(*case)


@settings(max_examples=n(15), **SETTINGS)
@given(cases(["sweep-base"]))
def test_base_scenario(case):
    run_case(*case)
