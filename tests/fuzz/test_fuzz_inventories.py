"""Damaged inventories and traces of every format through ``densim plan`` (the readers' checks)."""

from hypothesis import HealthCheck, Phase, given, settings

from tests.fuzz.engine import cases, n, run_case

SETTINGS = dict(derandomize=True, deadline=None, database=None, print_blob=False,
                phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])


@settings(max_examples=n(45), **SETTINGS)
@given(cases(["generic-csv"]))
def test_generic_csv(case):
    run_case(*case)


@settings(max_examples=n(35), **SETTINGS)
@given(cases(["azure"]))
def test_azure(case):
    run_case(*case)


@settings(max_examples=n(40), **SETTINGS)
@given(cases(["rvtools-csv"]))
def test_rvtools_csv(case):
    run_case(*case)


@settings(max_examples=n(25), **SETTINGS)
@given(cases(["rvtools-xlsx"]))
def test_rvtools_xlsx(case):
    run_case(*case)


@settings(max_examples=n(35), **SETTINGS)
@given(cases(["bitbrains"]))
def test_bitbrains(case):
    run_case(*case)


@settings(max_examples=n(25), **SETTINGS)
@given(cases(["planetlab"]))
def test_planetlab(case):
    run_case(*case)


@settings(max_examples=n(35), **SETTINGS)
@given(cases(["opendc"]))
def test_opendc(case):
    run_case(*case)


@settings(max_examples=n(25), **SETTINGS)
@given(cases(["opendc-run"]))
def test_opendc_tasks_replayed_by_run(case):
    # the same damaged OpenDC files, read by the engine as tasks that arrive and leave
    run_case(*case)


@settings(max_examples=n(25), **SETTINGS)
@given(cases(["failure-trace-run"]))
def test_failure_trace_replayed_by_run(case):
    run_case(*case)


@settings(max_examples=n(20), **SETTINGS)
@given(cases(["grid-series-run"]))
def test_carbon_grid_series(case):
    run_case(*case)


@settings(max_examples=n(25), **SETTINGS)
@given(cases(["forecast-history"]))
def test_forecast_history(case):
    run_case(*case)
