"""Golden outputs of the studies: each case's figures equal its reviewed snapshot (each at its tolerance rule, tests/golden/tolerances.py)."""

import pytest

from tests.golden.check import cases_with, check_case


@pytest.mark.parametrize("case", cases_with(("study-", )))
def test_golden(case, tmp_path):
    check_case(case, tmp_path)
