"""The run tool: a scenario file -> the plant -> the engine -> result files and the run report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def write_run(res, out: str | Path, *, report: bool = True) -> Path:
    """Write a :class:`~densim.engine.result.Result` to ``out``: tables, ``report.html`` (unless
    ``report`` is False) and, last, ``summary.json``."""

    def write_report(folder: Path) -> None:
        from densim.reports.html import render_run_report

        render_run_report(res, folder / "report.html")

    return res.write(out, extra=write_report if report else None)


def run_file(path: str | Path, out: str | Path, *, seed: int | None = None, report: bool = True,
             progress: Callable[[int, int], None] | None = None, check: Callable | None = None,
             workers: int | None = None, scheduler: str | None = None):
    """Load, resolve and simulate the scenario file ``path``; write its results to ``out``.

    ``out`` is written all at once (:func:`densim.atomic.output_folder`): its lock is taken before the
    scenario is read, so a second run writing the same folder fails at once; the results go to a
    temporary sibling that replaces ``out`` when they are all written. A run that fails or is killed
    leaves the previous complete result (or nothing). ``check(plant)`` runs after resolving and before the engine
    (the CLI's up-front memory estimate). ``workers`` (a local Dask cluster of that many worker
    processes) or ``scheduler`` (the address of a running one) split the run by host partitions
    (:mod:`densim.tools.distributed`); the result is the same as in one process.
    """
    from densim.atomic import output_folder
    from densim.engine import simulate
    from densim.plant import load_plant

    with output_folder(out) as staging:
        plant = load_plant(path)
        if check is not None:
            check(plant)
        if workers or scheduler:
            from densim.tools.distributed import simulate_distributed

            res, _info = simulate_distributed(plant, workers=workers or 2, scheduler=scheduler, seed=seed, progress=progress)
        else:
            res = simulate(plant, seed=seed, progress=progress)
        write_run(res, staging, report=report)
    return res
