"""``densim sweep``, ``densim query`` and ``densim report``: what-if sweeps and their results store."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from densim.cli.common import CsvOpt, JsonOpt, NoProgressOpt, Printer, QuietOpt
from densim.cli.common import fail as _fail
from densim.cli.common import run_guarded as _guard


def register(app: typer.Typer) -> None:
    @app.command("sweep")
    def sweep(
        study: Annotated[Path, typer.Argument(help="study file (YAML): base scenario, axes, replications, seed")],
        out: Annotated[Path, typer.Option("--out", "-o", help="results root; the store is OUT/<study name>")] = Path("results"),
        backend: Annotated[Optional[str], typer.Option(help="inprocess, process (default) or dask (the default with "
                                                       "--scheduler or --dask-local)")] = None,
        workers: Annotated[Optional[int], typer.Option("--workers", "-j", min=1, help="worker processes (default: CPU count)")] = None,
        scheduler: Annotated[Optional[str], typer.Option(help="Dask scheduler address of an existing cluster, e.g. tcp://HOST:8786")] = None,
        dask_local: Annotated[Optional[int], typer.Option("--dask-local", min=1, help="start a local Dask cluster of N worker processes")] = None,
        retries: Annotated[int, typer.Option(min=0, help="resubmissions of a task whose worker died")] = 3,
        fresh: Annotated[bool, typer.Option("--fresh", help="discard the existing store first (default: resume)")] = False,
        no_progress: NoProgressOpt = False,
        max_runs: Annotated[Optional[int], typer.Option("--max-runs", min=1, help="refuse a study that expands to more runs "
                                                        "(scenario points x replications) than this [default: 100,000]")] = None,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        """Run every scenario x replication of a study; rerunning resumes where it stopped.

        --out is the results root folder: the store is OUT/<study name>/ (one root holds many studies)."""
        from densim.cli.common import progress_wanted
        from densim.tools.sweep import load_sweep, run_sweep
        from densim.tools.sweep.run import BACKENDS

        # where it runs is checked before the study is read or the store touched
        if backend is not None and backend not in BACKENDS:
            _fail(f"--backend: unknown backend {backend!r}; use {', '.join(BACKENDS)}", code=2)
        on_dask = [opt for opt, v in (("--scheduler", scheduler), ("--dask-local", dask_local)) if v is not None]
        if backend not in (None, "dask") and on_dask:
            _fail(f"{on_dask[0]}: runs the sweep on Dask, not with --backend {backend}; drop one of them", code=2)
        if scheduler is not None:
            from densim.tools.sweep.backends import check_scheduler_address

            try:
                check_scheduler_address(scheduler)
            except ValueError as exc:
                _fail(f"--scheduler: {exc}", code=2)
        backend = backend or ("dask" if on_dask else "process")
        st = _guard(load_sweep, study, max_runs=max_runs)
        n = len(st.tasks())
        pr = Printer(as_json=json_out, quiet=quiet)
        pr.line(f"{st.name}: {len(st.points)} scenarios x {st.spec.replications} replications = {n} tasks "
                f"(root seed {st.spec.seed})")
        show_bar = progress_wanted(quiet, no_progress)
        if show_bar:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)

            from densim.cli.common import console

            prog = Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), transient=False,
                            console=console(stderr=True))
            bar = {"id": None}

            def on_event(event: str, info: dict) -> None:
                if event == "start":
                    bar["id"] = prog.add_task(st.name, total=info["total"], completed=info["skipped"])
                elif event == "task":
                    prog.update(bar["id"], completed=info["done"])
                elif event in ("retry", "rerun"):
                    prog.console.print(f"{event}: {info['task']}: {info.get('error', '')}", markup=False, highlight=False)

            with prog:
                outcome = _guard(run_sweep, st, out=out, backend=backend, workers=workers, scheduler=scheduler,
                                 dask_local=dask_local, retries=retries, fresh=fresh, progress=on_event)
        else:
            def on_plain(event: str, info: dict) -> None:
                # failures are listed once, as error lines, at the end
                if event in ("retry", "rerun"):
                    typer.echo(f"{event}: {info['task']}: {info.get('error', '')}", err=True)

            outcome = _guard(run_sweep, st, out=out, backend=backend, workers=workers, scheduler=scheduler,
                             dask_local=dask_local, retries=retries, fresh=fresh, progress=on_plain)
        pr.json({"study": st.name, "store": str(outcome.store), "seed": st.spec.seed, "tasks": n, "ran": outcome.done,
                 "already_done": outcome.skipped, "retried": outcome.retries, "wall_s": outcome.wall_s,
                 "failed": [{"task": key, "error": msg} for key, msg in outcome.failed]})
        pr.line(f"ran {outcome.done}, already done {outcome.skipped}, retried {outcome.retries}, "
                f"failed {len(outcome.failed)} in {outcome.wall_s:.1f} s -> {outcome.store}")
        for key, msg in outcome.failed:
            typer.echo(f"densim: error: {key}: {msg}", err=True)
        if outcome.failed:
            raise typer.Exit(1)

    @app.command("query")
    def query(
        study: Annotated[str, typer.Argument(help="study file, store folder, or study name under --out")],
        sql: Annotated[str, typer.Argument(help="SQL over the views scenarios, summary, results, hosts, vms, host_steps, ...")],
        out: Annotated[Path, typer.Option("--out", "-o", help="results root folder (as given to sweep)")] = Path("results"),
        fmt: Annotated[str, typer.Option("--format", "-f", help="table, csv or json")] = "table",
        allow_writes: Annotated[bool, typer.Option("--allow-writes", help="allow statements other than SELECT/EXPLAIN "
                                                   "(COPY, ATTACH, CREATE, SET, ...) and file access outside the store")] = False,
        timeout: Annotated[float, typer.Option("--timeout", help="stop the query after this many seconds")] = 60.0,
        memory_limit: Annotated[str, typer.Option("--memory-limit", help="DuckDB memory limit, e.g. 2GB")] = "2GB",
        max_rows: Annotated[int, typer.Option("--max-rows", min=1, help="refuse a result of more rows than this")] = 100_000,
        json_out: JsonOpt = False,
        as_csv: CsvOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        """Run DuckDB SQL over a sweep's results store, in place (read-only unless --allow-writes)."""
        from densim.tools.sweep.query import resolve_store, run_query

        if json_out or as_csv:
            if fmt != "table" or (json_out and as_csv):
                _fail("give one of --json, --csv and --format", code=2)
            fmt = "json" if json_out else "csv"
        if fmt not in ("table", "csv", "json"):
            _fail(f"--format: use table, csv or json, not {fmt!r}", code=2)
        store = _guard(resolve_store, study, out)
        cols, rows = _guard(run_query, store, sql, allow_writes=allow_writes, timeout_s=timeout,
                            memory_limit=memory_limit, max_rows=max_rows)
        if quiet and fmt == "table":
            return
        if fmt == "csv":
            import csv

            from densim.csvsafe import safe_row

            w = csv.writer(sys.stdout)
            w.writerow(safe_row(cols))
            w.writerows(safe_row(r) for r in rows)
        elif fmt == "json":
            from densim.atomic import dumps_strict

            typer.echo(dumps_strict([{c: (v if v is None or isinstance(v, (bool, int, float, str)) else str(v))
                                      for c, v in zip(cols, r)} for r in rows]))
        else:
            from rich.table import Table

            from densim.cli.common import console

            tab = Table(*cols)
            for r in rows:
                tab.add_row(*("" if v is None else f"{v:.6g}" if isinstance(v, float) else str(v) for v in r))
            console().print(tab)

    @app.command("report")
    def report(
        study: Annotated[str, typer.Argument(help="study file, store folder, or study name under --out")],
        out: Annotated[Path, typer.Option("--out", "-o", help="results root folder (as given to sweep)")] = Path("results"),
        metric: Annotated[Optional[list[str]], typer.Option("--metric", "-m", help="summary field to compare (repeatable)")] = None,
        html_out: Annotated[Optional[Path], typer.Option("--html", help="write the report here (default: STORE/report.html)")] = None,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
        no_progress: NoProgressOpt = False,
    ) -> None:
        """Comparison report across the sweep's axes: tables (mean +/- 95 % CI) and plotly plots."""
        from densim.cli.common import out_file, status
        from densim.tools.sweep.query import resolve_store
        from densim.tools.sweep.report import render

        if html_out is not None:
            _guard(out_file, html_out, "--html")
        store = _guard(resolve_store, study, out)
        metrics = list(metric) if metric else None
        if metrics is None and Path(study).is_file():
            from densim.spec.sweep import load_sweep_spec

            metrics = list(_guard(load_sweep_spec, Path(study)).metrics) or None
        with status(f"report {Path(store).name}", quiet=quiet, no_progress=no_progress):
            path = _guard(render, store, metrics=metrics, out=html_out)
        pr = Printer(as_json=json_out, quiet=quiet)
        pr.json({"store": str(store), "report": str(path.resolve()), "metrics": metrics})
        pr.line(f"report: {path.resolve()}")
