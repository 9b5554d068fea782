"""The ``densim`` command line: a thin layer over the library.

Commands in this module: run, validate, schema, demo, studies, study, models. The others come from
the modules of :mod:`densim.cli.commands` (each module's ``register(app)``), named in
:data:`COMMAND_MODULES`. Every command is built, and its module imported, only when it is asked for
(:mod:`densim.cli.lazy`): ``densim run`` builds ``run`` alone.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from densim.cli.estimates import max_memory_option as _max_memory

from densim.cli.common import (DEFAULT_SEED, CsvOpt, JsonOpt, csv_data, NoProgressOpt, Printer, QuietOpt, SeedOpt, fail,
                               out_file, out_folder, run_guarded)  # noqa: F401 - out_file re-exported
from densim.cli.common import console as _console
from densim.cli.lazy import LazyGroup, command_names, from_module, from_typer

# command name -> the module of densim.cli.commands whose register(app) adds it, in the order
# `densim --help` lists them (after this module's own); tests/core/test_cli_lazy.py checks it
# against what the modules register
COMMAND_MODULES = {
    "forecast": "forecast", "plan": "plan", "serve": "serve", "io": "storage", "calibrate": "storage", "size": "storage",
    "sweep": "sweep", "query": "sweep", "report": "sweep", "tier-ratio": "tiering", "warmup": "warmup",
    "bench": "bench", "gpu": "gpu",
}


class _Densim(LazyGroup):
    """The densim group: this module's commands, then those of :data:`COMMAND_MODULES`, each built on first use."""

    def pending(self):
        own = {name: from_typer(app, _own, name) for name in command_names(_own)}
        return {**own, **{name: from_module(app, f"densim.cli.commands.{mod}") for name, mod in COMMAND_MODULES.items()}}


app = typer.Typer(
    name="densim",
    help="What-if simulator and capacity planner for virtualized data centres.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
    # click's plain help: rich's boxed tables cut long option names ("--snapshot-pea…") at 80 columns
    rich_markup_mode=None,
    cls=_Densim,
)
_own = typer.Typer()  # this module's commands; `app` builds them when asked for (:class:`_Densim`)


def _print_version(value: bool) -> None:
    if value:
        import densim

        typer.echo(f"densim {densim.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", help="print the version and exit", is_eager=True,
                                          callback=_print_version)] = False,
) -> None:
    """What-if simulator and capacity planner for virtualized data centres."""


def console():
    """The stdout console (full width when piped); kept for modules that import it from here."""
    return _console()


def _progress_runner(no_progress: bool):
    """A context manager yielding a progress callback (rich progress bar unless disabled)."""
    from contextlib import contextmanager

    from densim.cli.common import progress_wanted

    @contextmanager
    def cm(label: str):
        if not progress_wanted(no_progress=no_progress):
            yield None
            return
        from rich.progress import BarColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

        with Progress("[progress.description]{task.description}", BarColumn(), "{task.percentage:>3.0f}%",
                      TimeElapsedColumn(), TimeRemainingColumn(), transient=True, console=_console(stderr=True)) as prog:
            task = prog.add_task(label, total=1)

            def cb(done: int, total: int) -> None:
                prog.update(task, completed=done, total=total)

            yield cb

    return cm


def _simulate_and_write(path: Path, out: Path, seed: Optional[int], no_progress: bool, report: bool = True,
                        max_memory: int | None = None, workers: int | None = None, scheduler: str | None = None,
                        trace_cache: bool | None = None):
    from densim.cli.estimates import check_run_memory
    from densim.tools.run import run_file
    from densim.workloads.readers._checks import memory_budget
    from densim.workloads.trace_cache import trace_cache as cache_switch

    out_folder(out, whole=True)
    t0 = time.perf_counter()
    check = None if max_memory is None else (lambda plant: check_run_memory(plant.spec, path, max_memory))
    with memory_budget(max_memory), cache_switch(trace_cache), _progress_runner(no_progress)(f"simulating {Path(path).name}") as cb:
        res = run_file(path, out, seed=seed, report=report, progress=cb, check=check, workers=workers, scheduler=scheduler)
    return res, time.perf_counter() - t0


def _print_run(res, out: Path, wall_s: float, pr: Printer) -> None:
    if not pr.shows_text:  # --json or --quiet: nothing of this is printed (and rich is not imported)
        return
    from rich.table import Table

    s = res.summary
    t = s["totals"]
    tab = Table(title=f"densim run: {s['scenario']}", show_header=False)
    tab.add_row("VMs placed / total", f"{s['vms_placed']:,} / {s['vms_total']:,}" + _unplaced_text(s))
    tab.add_row("hosts used / total", f"{s['hosts_used']:,} / {s['hosts_total']:,}")
    tab.add_row("CPU demand", f"{t['cpu_demand_mhz_s'] / 3.6e6:,.1f} GHz·h")
    tab.add_row("CPU delivered", f"{100 * t['cpu_delivered_mhz_s'] / max(t['cpu_demand_mhz_s'], 1e-9):.3f} % of demand")
    tab.add_row("CPU Ready", f"mean {s['qos']['cpu_ready_pct_mean']:.2f} %, VMs > 5 %: {s['qos']['vms_ready_over_5pct']}")
    tab.add_row("energy", f"{t['energy_kwh']:,.2f} kWh")
    tab.add_row("seed", str(s["seed"]))
    tab.add_row("wall time", f"{wall_s:.2f} s")
    csv_data(tab, ["vms_placed", "vms_total", "vms_unplaced", "hosts_used", "hosts_total", "cpu_demand_ghz_h",
                   "cpu_delivered_pct_of_demand", "cpu_ready_mean_pct", "vms_ready_over_5pct", "energy_kwh", "seed", "wall_s"],
             [[s["vms_placed"], s["vms_total"], s["vms_unplaced"], s["hosts_used"], s["hosts_total"], t["cpu_demand_mhz_s"] / 3.6e6,
               100 * t["cpu_delivered_mhz_s"] / max(t["cpu_demand_mhz_s"], 1e-9), s["qos"]["cpu_ready_pct_mean"],
               s["qos"]["vms_ready_over_5pct"], t["energy_kwh"], s["seed"], wall_s]])
    pr.table(tab)
    pr.line(f"results in {out}/ (summary.json, *.parquet); report: {out / 'report.html'}")


def _unplaced_text(s) -> str:
    """The count of every VM placed nowhere (summary.json lists at most 1,000 of their names)."""
    n = s["vms_unplaced"]
    if not n:
        return ""
    listed = len(s["unplaced_vms"])
    return f"  ({n:,} placed nowhere" + (f"; summary.json lists the first {listed:,}" if listed < n else "") + ")"


@_own.command()
def run(
    scenario: Annotated[Path, typer.Argument(help="scenario file (YAML or JSON)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="output folder")] = Path("out/run"),
    seed: Annotated[Optional[int], typer.Option(min=0, max=2**64 - 1, help="override the scenario's seed (0 to 2**64 - 1; "
                                                f"a scenario without one uses {DEFAULT_SEED})")] = None,
    no_report: Annotated[bool, typer.Option("--no-report", help="skip report.html")] = False,
    no_progress: NoProgressOpt = False,
    json_out: JsonOpt = False,
    as_csv: CsvOpt = False,
    quiet: QuietOpt = False,
    max_memory: Annotated[str, typer.Option("--max-memory", callback=_max_memory, help="refuse a run whose arrays are estimated to need more "
                                            "memory than this, before allocating them (e.g. '32 GiB')")] = "8 GiB",
    workers: Annotated[Optional[int], typer.Option("--workers", min=1, max=4096, help="split the run by host partitions over a "
                                                   "local Dask cluster of this many worker processes (same result)")] = None,
    scheduler: Annotated[Optional[str], typer.Option("--scheduler", help="split the run over a running Dask cluster: its "
                                                     "scheduler address, e.g. tcp://10.0.0.5:8786")] = None,
    no_trace_cache: Annotated[bool, typer.Option("--no-trace-cache", help="parse the trace files again instead of using "
                                                 "the cache of parsed traces (also DENSIM_TRACE_CACHE=0)")] = False,
) -> None:
    """Simulate SCENARIO and write summary.json, Parquet tables and report.html to --out."""
    pr = Printer(as_json=json_out, as_csv=as_csv, quiet=quiet)
    limit = int(max_memory)
    res, wall = run_guarded(_simulate_and_write, scenario, out, seed, no_progress or quiet, not no_report, limit, workers, scheduler,
                            False if no_trace_cache else None)
    pr.json(res.summary.to_dict())
    _print_run(res, out, wall, pr)
    for note in res.summary.get("notes", []):  # what the readers and the run noticed (also in summary.json)
        typer.echo(f"densim: note: {note}", err=True)


@_own.command()
def validate(
    scenario: Annotated[Path, typer.Argument(help="scenario file")],
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Check SCENARIO and list every problem with its field path; exit 1 if any."""
    from densim.plant import validate_file

    problems = run_guarded(validate_file, scenario)
    Printer(as_json=json_out, quiet=quiet).json({"file": str(scenario), "valid": not problems, "problems": list(problems)})
    if problems:
        for p in problems:  # the lines 'densim run' prints for the same file (on stderr even with --quiet)
            typer.echo(f"densim: error: {p}", err=True)
        raise typer.Exit(1)
    if not (quiet or json_out):
        typer.echo(f"{scenario}: valid")


SCHEMA_FILE = "scenario.schema.json"


@_own.command()
def schema(out: Annotated[Optional[Path], typer.Option("--out", "-o", help=f"write OUT/{SCHEMA_FILE} (a folder) "
                                                      "instead of printing")] = None) -> None:
    """Print the JSON Schema of scenario files (for editor completion)."""
    from densim.atomic import dumps_strict
    from densim.spec.scenario import Scenario

    text = dumps_strict(Scenario.model_json_schema(by_alias=True), indent=2)
    if out:
        from densim.atomic import write_text_atomic

        run_guarded(out_folder, out)
        write_text_atomic(out / SCHEMA_FILE, text + "\n")
    else:
        typer.echo(text)


@_own.command()
def demo(
    out: Annotated[Path, typer.Option("--out", "-o", help="output folder")] = Path("out/demo"),
    no_progress: NoProgressOpt = False,
    json_out: JsonOpt = False,
    as_csv: CsvOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Run the built-in demo scenario (no external data needed)."""
    from densim.builtin import builtin_path

    pr = Printer(as_json=json_out, as_csv=as_csv, quiet=quiet)
    res, wall = run_guarded(_simulate_and_write, builtin_path("demo.yaml"), out, None, no_progress or quiet, True)
    pr.json(res.summary.to_dict())
    _print_run(res, out, wall, pr)
    pr.line(f"Open the report: {out.resolve() / 'report.html'}")


def _published_text(h: dict) -> str:
    """A headline's published value; a target shows its bound, never as a published figure."""
    if h.get("role") == "target":
        return f"target {h['tolerance']}"
    return f"{h['published']:g}"


def studies_overview(seed: int = DEFAULT_SEED, progress=None) -> dict:
    """Every built-in study run once (in a scratch folder): area, headline counts by role and
    predictions passing, plus the totals. Calibration figures never count as validation passes.
    ``progress(name)`` is called after each study."""
    import tempfile

    from densim.tools.studies.base import ROLES, all_studies
    from densim.tools.studies.runner import evaluate_study

    rows = []
    total = {"studies": 0, "headlines": 0, "roles": dict.fromkeys(ROLES, 0), "predictions_passed": 0, "predictions_total": 0,
             "saturated_resources": 0}
    with tempfile.TemporaryDirectory(prefix="densim-studies-") as tmp:
        for name, st in all_studies().items():
            s = evaluate_study(st, Path(tmp) / name, seed)
            heads = s["headline"]
            rows.append({
                "name": name, "area": st.area, "description": st.description, "headlines": len(heads),
                "roles": s["roles"], "predictions_passed": s["predictions_passed"], "predictions_total": s["predictions_total"],
                "saturated_resources": len(s["saturation"]),
                "saturated_headlines": sum(1 for h in heads if h["saturated"]),
            })
            total["studies"] += 1
            total["headlines"] += len(heads)
            for r in ROLES:
                total["roles"][r] += s["roles"][r]
            total["predictions_passed"] += s["predictions_passed"]
            total["predictions_total"] += s["predictions_total"]
            total["saturated_resources"] += len(s["saturation"])
            if progress is not None:
                progress(name)
    return {"seed": seed, "studies": rows, "total": total}


def _print_validation(seed: int, pr: Printer) -> None:
    from rich.table import Table

    from densim.cli.common import status
    from densim.tools.studies.validation import SPECPOWER, _err, _num, fit_text, run_all

    with status("validation: every study and its cross-validation", quiet=pr.quiet):
        res = run_guarded(run_all, None, seed)
    pr.json({"seed": seed, "predictions": res["rows"], "areas": res["areas"],
             "not_predictions": res["not_predictions"],
             "cross_validation": {"specpower": res["loo"], **res["loo_fits"]}})
    if not pr.shows_text:
        return
    tab = Table(title="every prediction (no parameter fitted to it) against its published measurement")
    for col in ("study", "figure", "measured", "predicted", "error", "tolerance", "within"):
        tab.add_column(col, justify="right" if col in ("measured", "predicted", "error") else "left")
    for r in res["rows"]:
        tab.add_row(r["study"], r["figure"], _num(r["measured"], r["unit"]), _num(r["predicted"], r["unit"]),
                    _err(r), r["tolerance"], "yes" if r["within"] else "MISS")

    def fin(x):
        return x if x is not None and math.isfinite(x) else None

    csv_data(tab, ["study", "figure", "unit", "measured", "predicted", "error_pct", "error_kind", "tolerance", "within"],
             [[r["study"], r["figure"], r["unit"], fin(r["measured"]), fin(r["predicted"]),
               None if _err(r) in ("no model", "bound") else r["error_pct"], _err(r) if _err(r) in ("no model", "bound") else "",
               r["tolerance"], bool(r["within"])] for r in res["rows"]])
    pr.table(tab)
    area = Table(title="per area (MAPE leaves out bounds and rows without a model value)")
    for col in ("area", "predictions", "in MAPE", "MAPE", "within tolerance"):
        area.add_column(col)
    for name, a in sorted(res["areas"].items(), key=lambda kv: (kv[0] == "all", kv[0])):
        mape = f"{a['mape_pct']:.1f} %" if a["mape_pct"] == a["mape_pct"] else "-"
        area.add_row(name, f"{a['predictions']:.0f}", f"{a['with_error']:.0f}", mape,
                     f"{a['within']:.0f} ({100 * a['within_share']:.0f} %)")
    csv_data(area, ["area", "predictions", "in_mape", "mape_pct", "within_tolerance", "within_tolerance_pct"],
             [[name, int(a["predictions"]), int(a["with_error"]), fin(a["mape_pct"]), int(a["within"]), 100 * a["within_share"]]
              for name, a in sorted(res["areas"].items(), key=lambda kv: (kv[0] == "all", kv[0]))])
    pr.table(area)
    nots = Table(title="figures that are not predictions (identities, restated datasheets, inputs set with the figure known)")
    for col in ("study", "figure", "role", "why"):
        nots.add_column(col)
    for r in res["not_predictions"]:
        nots.add_row(r["study"], r["figure"], r["role"], r["why"])
    pr.table(nots)
    loo = Table(title="cross-validation: SPECpower load levels left out one at a time (mean |error|)")
    for col in ("server", "table", "line"):
        loo.add_column(col)
    loo_rows = [[SPECPOWER[key]["label"], *(100 * sum(abs(e[f"{k}_error"]) for e in rows) / len(rows) for k in ("table", "line"))]
                for key, rows in res["loo"].items()]
    for r in loo_rows:
        loo.add_row(r[0], *(f"{x:.1f} %" for x in r[1:]))
    csv_data(loo, ["server", "table_mean_abs_error_pct", "line_mean_abs_error_pct"], loo_rows)
    pr.table(loo)
    fits = Table(title="cross-validation of the older studies' fits: fit on all figures but one, predict the one left out")
    # "reference": the published figure, or the guide's illustrative (E) step split where the row says so
    for col in ("study", "left out", "reference", "predicted", "error", "re-fitted"):
        fits.add_column(col, justify="right" if col in ("reference", "predicted", "error") else "left")
    for study, rows in res["loo_fits"].items():
        for r in rows:
            fits.add_row(study, r["left_out"], f"{r['measured']:.4g}", f"{r['predicted']:.4g}",
                         f"{100 * r['error']:+.1f} %", fit_text(r["fit"]))
    csv_data(fits, ["study", "left_out", "reference", "predicted", "error_pct", "refitted"],
             [[study, r["left_out"], r["measured"], r["predicted"], 100 * r["error"], fit_text(r["fit"])]
              for study, rows in res["loo_fits"].items() for r in rows])
    pr.table(fits)
    pr.line("Sources, set-ups, the cross-validation details and the misses' suspected mechanisms: docs/background/validation.md")


@_own.command()
def studies(
    json_out: JsonOpt = False,
    seed: SeedOpt = DEFAULT_SEED,
    validation: Annotated[bool, typer.Option("--validation", help="every prediction with its measured value and "
                                             "error, and the error per area")] = False,
    as_csv: CsvOpt = False,
    quiet: QuietOpt = False,
    no_progress: NoProgressOpt = False,
) -> None:
    """List the built-in studies: area, headline figures by role, predictions passing.

    Runs every study once in a scratch folder (a few seconds). Only predictions count as
    validation; calibration figures (a parameter was fitted to them) never do.
    """
    from rich.table import Table

    from densim.cli.common import bar
    from densim.tools.studies.base import ROLES, all_studies

    pr = Printer(as_json=json_out, as_csv=as_csv, quiet=quiet)
    if validation:
        _print_validation(seed, pr)
        return
    with bar("studies", len(all_studies()), quiet=quiet, no_progress=no_progress) as advance:
        ov = run_guarded(studies_overview, seed, advance)
    pr.json(ov)
    if not pr.shows_text:
        return
    from rich import box

    tab = Table(title="built-in studies: headline figures by role", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    tab.add_column("name", no_wrap=True)
    tab.add_column("area", no_wrap=True)
    short = {"calibration": "calib", "arithmetic": "arith", "prediction": "pred", "target": "target"}
    for col in ROLES:
        tab.add_column(short[col], justify="right", no_wrap=True, min_width=len(short[col]))
    tab.add_column("passing", no_wrap=True)
    tab.add_column("sat.", justify="right", no_wrap=True)
    def pred(d: dict) -> str:
        return f"{d['predictions_passed']}/{d['predictions_total']}" if d["predictions_total"] else "-"
    for r in ov["studies"]:
        tab.add_row(r["name"], r["area"], *(str(r["roles"][k]) for k in ROLES), pred(r),
                    str(r["saturated_resources"]) if r["saturated_resources"] else "-")
    t = ov["total"]
    if not pr.as_csv:  # a CSV has one row per study; the totals are the column sums
        tab.add_section()
        tab.add_row(f"total: {t['studies']}", "", *(str(t["roles"][k]) for k in ROLES), pred(t), str(t["saturated_resources"]))
    csv_data(tab, ["name", "area", *ROLES, "predictions_passed", "predictions_total", "saturated_resources"],
             [[r["name"], r["area"], *(r["roles"][k] for k in ROLES), r["predictions_passed"], r["predictions_total"],
               r["saturated_resources"]] for r in ov["studies"]])
    pr.table(tab)
    pr.line(f"{t['headlines']} headline figures: " + ", ".join(f"{t['roles'][k]} {k}" for k in ROLES)
            + f"; predictions {t['predictions_passed']}/{t['predictions_total']} pass (seed {seed}). Calibration figures agree by "
            "construction and never count as validation. 'passing': predictions that pass; 'sat.': resources >= 90 % busy in the runs "
            "the study evaluates. 'densim studies --json' for details.")


@_own.command()
def study(
    name: Annotated[str, typer.Argument(help="study name (see 'densim studies')")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="output folder [default: out/NAME]")] = None,
    seed: SeedOpt = DEFAULT_SEED,
    json_out: JsonOpt = False,
    as_csv: CsvOpt = False,
    quiet: QuietOpt = False,
    no_progress: NoProgressOpt = False,
) -> None:
    """Run a built-in study; writes summary.json (with the headline comparison) and report.html to --out."""
    from densim.cli.common import status
    from densim.tools.studies.base import ROLES, all_studies
    from densim.tools.studies.runner import run_study

    pr = Printer(as_json=json_out, as_csv=as_csv, quiet=quiet)
    found = all_studies()
    if name not in found:
        fail(f"unknown study {name!r}; built-in studies: {', '.join(found) or '(none)'}")
    out = out or Path("out") / name
    run_guarded(out_folder, out, whole=True)
    with status(f"study {name}", quiet=quiet, no_progress=no_progress):
        summary = run_guarded(_run_study_into, run_study, found[name], out, seed)
    pr.json(summary)
    from rich.table import Table

    tab = Table(title=f"study {name} ({found[name].area})")
    for col in ("figure", "role", "published", "simulated", "tolerance", "result"):
        tab.add_column(col)
    for h in summary.get("headline", []):
        result = "pass" if h["passed"] else "FAIL"
        if h["role"] == "calibration" and h["passed"]:
            result += " (fitted)"
        if h.get("saturated"):
            result += " (saturated)"
        tab.add_row(h["name"], h["role"], _published_text(h),
                    "refused by the model" if h["simulated"] is None else f"{h['simulated']:.4g}", str(h["tolerance"]), result)
    csv_data(tab, ["figure", "role", "published", "simulated", "tolerance", "passed", "saturated"],
             [[h["name"], h["role"], None if h["role"] == "target" else h["published"], h["simulated"], str(h["tolerance"]),
               bool(h["passed"]), bool(h.get("saturated"))] for h in summary.get("headline", [])])
    pr.table(tab)
    counts = ", ".join(f"{summary['roles'][r]} {r}" for r in ROLES)
    pr.line(f"roles: {counts}; predictions: {summary['predictions_passed']}/{summary['predictions_total']} pass (validation); "
            f"saturated resources: {len(summary.get('saturation', []))}; seed {seed}")
    pr.line(f"report: {out / 'report.html'}")


def _run_study_into(run_study, st, out: Path, seed: int) -> dict:
    """A study written whole into ``out`` (:func:`densim.atomic.output_folder`)."""
    from densim.atomic import output_folder

    with output_folder(out) as staging:
        return run_study(st, staging, seed)


@_own.command()
def models(json_out: JsonOpt = False, as_csv: CsvOpt = False, quiet: QuietOpt = False) -> None:
    """List every registry (models, policies, readers) and its entries."""
    from rich.table import Table

    import densim.engine.stages as stages
    import densim.models.cpu  # noqa: F401
    import densim.models.memory  # noqa: F401  (miss-ratio models)
    import densim.models.power  # noqa: F401
    import densim.catalog.profiles  # noqa: F401  (catalog workload classes)
    import densim.placement  # noqa: F401
    import densim.workloads.readers  # noqa: F401
    from densim.registry import Registry

    pr = Printer(as_json=json_out, as_csv=as_csv, quiet=quiet)
    stages.load_plugins()
    rows = [{"kind": kind, "name": e.name, "default": reg.default == e.name, "description": e.description, "source": e.source}
            for kind, reg in sorted(Registry.all().items()) for e in reg]
    pr.json(rows)
    tab = Table(title="registries")
    for col in ("kind", "name", "description", "source"):
        tab.add_column(col)
    for r in rows:
        tab.add_row(r["kind"], r["name"] + (" (default)" if r["default"] else ""), r["description"], r["source"])
    pr.table(tab)


def main(argv: list[str] | None = None) -> None:
    """The ``densim`` entry point: every failure is one line on stderr, never a traceback.

    Exit status: 0 done, 1 bad input, an operating-system error (no space, read-only, permission:
    one line naming the file) or an unexpected error (one line, with a pointer to ``--debug`` for the
    traceback), 2 bad usage, 130 interrupted (Ctrl-C, SIGINT), 143 terminated (SIGTERM). SIGTERM is
    handled as Ctrl-C: finished work is kept, worker processes are stopped, one line.
    """
    import atexit
    import gc
    import os
    import signal

    from densim.atomic import os_problem  # imported now: an EMFILE or a full disk must not stop it later
    from densim.cli.common import os_error_line

    got: dict[str, int] = {}

    def _terminate(signum, frame):  # SIGTERM: unwind as Ctrl-C does (finally blocks stop pools, remove staging)
        got["signal"] = signum
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread (an embedding caller): leave its handlers alone
        previous = None

    def interrupted() -> int:
        signum = got.get("signal")
        if signum is None:
            print("densim: interrupted; work finished before it is kept, nothing half-written looks complete",
                  file=sys.stderr)
            return 130
        print(f"densim: terminated ({signal.Signals(signum).name}); work finished before it is kept, nothing "
              "half-written looks complete", file=sys.stderr)
        return 128 + signum

    # at exit the interpreter's last garbage collection walks every object of the run (0.1 s after a
    # 100k-VM run); frozen objects are left alone, and the operating system reclaims the memory.
    # Not after duckdb was used: its bindings (nanobind) then report every object left as a leak.
    atexit.register(lambda: None if "duckdb" in sys.modules else gc.freeze())
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get("DENSIM_DEBUG") == "1"
    args = [a for a in args if a != "--debug"]
    try:
        rv = app(args=args, prog_name="densim", standalone_mode=False)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        sys.exit(interrupted())
    except typer.TyperException as exc:  # usage errors: click's own message, exit 2
        exc.show()
        sys.exit(getattr(exc, "exit_code", 2))
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, not a traceback
        if debug:
            raise
        if os_problem(exc) is not None:  # a file that cannot be read or written: the file and the reason
            print(f"densim: error: {os_error_line(exc)[:500]}", file=sys.stderr)
            sys.exit(1)
        text = " ".join(str(exc).split())[:300] or type(exc).__name__
        print(f"densim: error: unexpected {type(exc).__name__}: {text} (run again with --debug for the traceback)",
              file=sys.stderr)
        sys.exit(1)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    code = rv if isinstance(rv, int) else 0
    if code == 130:  # typer turns Ctrl-C into a silent exit 130 before it reaches us
        code = interrupted()
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
