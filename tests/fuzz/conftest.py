"""Write each worker's example counts (per format and damage class) when DENSIM_FUZZ_COUNTS names a folder."""

import os
from pathlib import Path


def pytest_sessionfinish(session, exitstatus):  # noqa: ARG001
    folder = os.environ.get("DENSIM_FUZZ_COUNTS")
    if not folder:
        return
    from tests.fuzz.harness import COUNTS, dump_counts

    if COUNTS:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        Path(folder).mkdir(parents=True, exist_ok=True)
        dump_counts(Path(folder) / f"counts-{worker}.json")
