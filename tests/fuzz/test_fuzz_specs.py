"""Damaged YAML/JSON inputs through every command that reads one: validate, run, io, size, plan
(candidates), bench tiles, bench compare, sweep (study file and its base scenario)."""

from hypothesis import HealthCheck, Phase, given, settings

from tests.fuzz.engine import cases, n, run_case

SETTINGS = dict(derandomize=True, deadline=None, database=None, print_blob=False,
                phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])


@settings(max_examples=n(30), **SETTINGS)
@given(cases(["scenario-yaml-validate"]))
def test_scenario_validate(case):
    run_case(*case)


@settings(max_examples=n(30), **SETTINGS)
@given(cases(["scenario-yaml-run", "scenario-json-run"]))
def test_scenario_run(case):
    run_case(*case)


@settings(max_examples=n(20), **SETTINGS)
@given(cases(["scenario-tasks-run"]))
def test_scenario_tasks_run(case):
    run_case(*case)


@settings(max_examples=n(20), **SETTINGS)
@given(cases(["io-yaml"]))
def test_io(case):
    run_case(*case)


@settings(max_examples=n(20), **SETTINGS)
@given(cases(["size-yaml"]))
def test_size(case):
    run_case(*case)


@settings(max_examples=n(20), **SETTINGS)
@given(cases(["plan-spec"]))
def test_plan_candidates(case):
    run_case(*case)


@settings(max_examples=n(15), **SETTINGS)
@given(cases(["tiles-host"]))
def test_bench_tiles(case):
    run_case(*case)


@settings(max_examples=n(12), **SETTINGS)
@given(cases(["tiles-result"]))
def test_bench_compare(case):
    run_case(*case)
