"""The golden comparison shared by the test modules (split in three so pytest-xdist spreads them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.golden.cases import CASES, diff, format_diff, load_snapshot


def cases_with(prefixes: tuple[str, ...]) -> list[str]:
    return [c for c in CASES if c.startswith(prefixes)]


def check_case(case: str, tmp_path: Path) -> None:
    if case.startswith(("run-bitbrains", "run-storage", "plan-", "run-sweeps-base", "run-opendc", "study-ha-bitbrains")) or "planetlab" in case:
        from tests.conftest import TRACES

        if not TRACES.exists():
            pytest.skip("../shared/traces is not beside the repository")
    golden = load_snapshot(case)
    assert golden is not None, f"no snapshot for {case}: run `make golden CASES={case}` and review it"
    now = CASES[case](tmp_path)
    rows = diff(golden, now, case)  # each figure at its rule's tolerance (tests/golden/tolerances.py)
    assert not rows, "\n" + format_diff(case, rows) + "\n(if the change is deliberate: `make golden`, and say why in the commit)"
