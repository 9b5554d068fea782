"""``densim io FILE`` (storage-only scenario, or a fio result as a device profile), ``densim calibrate
FILE --device PART`` (a catalog device fitted to fio measurements) and ``densim size FILE`` (sizing solver).

The command functions are thin: :func:`densim.tools.storage.run_io`, :func:`~densim.tools.storage.run_calibrate`
and :func:`~densim.tools.storage.run_size` do the work and return plain dicts; the CLI prints them as tables or JSON.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from densim.cli.common import CsvOpt, JsonOpt, NoProgressOpt, Printer, QuietOpt, csv_data, status
from densim.cli.common import run_guarded as _guard
from densim.tools.storage import run_calibrate, run_io, run_size


def _fmt_s(x: float) -> str:
    if x is None or not math.isfinite(x):
        return "inf"
    if x < 1e-3:
        return f"{x * 1e6:.1f} us"
    if x < 1:
        return f"{x * 1e3:.3f} ms"
    return f"{x:.3f} s"


def _fmt_n(x: float) -> str:
    return "inf" if not math.isfinite(x) else f"{x:,.0f}"


# --------------------------------------------------------------------------------------------
# densim io


def _fmt_opt_s(x: float | None) -> str:
    return "-" if x is None else _fmt_s(x)


def _ms(x: float | None) -> float | None:
    """Seconds as milliseconds for a CSV cell (None stays empty; an infinite latency stays inf)."""
    return None if x is None else 1e3 * x


def _fmt_bs(b: float) -> str:
    return f"{b / 1024:g} KiB" if b < 1024 * 1024 else f"{b / 1024 / 1024:g} MiB"


def _print_fio_profile(out: dict[str, Any], pr: Printer) -> None:
    from rich.table import Table

    tab = Table(title=f"fio device profile: {out['file']} ({out['fio_version']}), one row per reporting group")
    for col in ("rw", "block", "depth", "IOPS", "MB/s", "mean latency", "p99", "reads", "jobs"):
        tab.add_column(col, justify="left" if col in ("rw", "jobs") else "right")
    for p in out["points"]:
        tab.add_row(p["rw"], _fmt_bs(p["block_bytes"]), str(p["depth"]), _fmt_n(p["iops"]), f"{p['bandwidth_bps'] / 1e6:,.1f}",
                    _fmt_opt_s(p["mean_latency_s"]), _fmt_opt_s(p["p99_latency_s"]), f"{100 * p['read_fraction']:.0f} %",
                    f"{p['job']} ({p['where']})")
    csv_data(tab, ["rw", "block_bytes", "depth", "iops", "bandwidth_MBps", "mean_latency_ms", "p99_latency_ms", "read_pct", "job",
                   "where"],
             [[p["rw"], p["block_bytes"], p["depth"], p["iops"], p["bandwidth_bps"] / 1e6, _ms(p["mean_latency_s"]),
               _ms(p["p99_latency_s"]), 100 * p["read_fraction"], p["job"], p["where"]] for p in out["points"]])
    pr.table(tab)
    for note in out["notes"]:
        pr.line(f"note: {note}")


def _print_calibration(out: dict[str, Any], pr: Printer) -> None:
    from rich.table import Table

    tab = Table(title=f"{out['device']} fitted to {out['file']} (scipy least_squares on log IOPS and log latency)")
    for col in ("figure", "catalog", "fitted", "unit", "fitted / catalog"):
        tab.add_column(col, justify="left" if col in ("figure", "unit") else "right")
    for q in out["parameters"]:
        cat = q["catalog"]
        tab.add_row(q["field"], "-" if cat is None else f"{cat:,.4g}",
                    f"{q['fitted']:,.4g}" + ("" if q["fitted_to_data"] else " (not constrained: catalog value kept)"), q["unit"],
                    "-" if not cat else f"{q['fitted'] / cat:.3f}")
    for d, c in out["parallelism"].items():
        tab.add_row(f"{d} parallelism (IOPS x QD1 latency)", "", f"{c:,.2f}", "servers", "")
    csv_data(tab, ["figure", "catalog", "fitted", "unit", "fitted_to_data", "fitted_over_catalog"],
             [[q["field"], q["catalog"], q["fitted"], q["unit"], bool(q["fitted_to_data"]),
               q["fitted"] / q["catalog"] if q["catalog"] else None] for q in out["parameters"]]
             + [[f"{d} parallelism (IOPS x QD1 latency)", None, c, "servers", True, None] for d, c in out["parallelism"].items()])
    pr.table(tab)
    pts = Table(title="fit error per point")
    for col in ("rw", "block", "depth", "IOPS", "model IOPS", "error", "latency", "model latency", "error"):
        pts.add_column(col, justify="left" if col == "rw" else "right")
    for p in out["points"]:
        le = p["latency_error_pct"]
        pts.add_row(p["rw"], _fmt_bs(p["block_bytes"]), str(p["depth"]), _fmt_n(p["iops"]), _fmt_n(p["model_iops"]),
                    f"{p['iops_error_pct']:+.2f} %", _fmt_opt_s(p["mean_latency_s"]), _fmt_s(p["model_latency_s"]),
                    "-" if le is None else f"{le:+.2f} %")
    csv_data(pts, ["rw", "block_bytes", "depth", "iops", "model_iops", "iops_error_pct", "latency_ms", "model_latency_ms",
                   "latency_error_pct"],
             [[p["rw"], p["block_bytes"], p["depth"], p["iops"], p["model_iops"], p["iops_error_pct"], _ms(p["mean_latency_s"]),
               _ms(p["model_latency_s"]), p["latency_error_pct"]] for p in out["points"]])
    pr.table(pts)
    mape_l = out["mape_latency_pct"]
    pr.line(f"MAPE: IOPS {out['mape_iops_pct']:.2f} %, latency " + ("-" if mape_l is None else f"{mape_l:.2f} %")
            + f" over {len(out['points'])} points")
    if out["mape_iops_pct"] > 10 or (mape_l is not None and mape_l > 10):
        pr.line(f"the fit does not match these measurements: {out['device']}'s other figures (or the part itself) "
                f"cannot reproduce them; look at the rows with the largest errors")
    if out["not_constrained"]:
        pr.line(f"not constrained by these points (catalog values kept): {', '.join(out['not_constrained'])}")
    for note in out["notes"]:
        pr.line(f"note: {note}")
    pr.line("as a part for a scenario's parts: devices: " + ", ".join(f"{k}: {v}" for k, v in out["fitted_part"].items()))


def _print_io(out: dict[str, Any], pr: Printer) -> None:
    from rich.table import Table

    if out.get("kind") == "fio-profile":
        _print_fio_profile(out, pr)
        return

    head = Table(title=f"densim io: {out['scenario']} ({out['mode']} workload)", show_header=False)
    head.add_row("throughput", f"{_fmt_n(out['throughput_iops'])} IOPS  ({out['bandwidth_bps'] / 1e6:,.1f} MB/s)")
    head.add_row("latency mean / p99", f"{_fmt_s(out['mean_latency_s'])} / {_fmt_s(out['p99_latency_s'])}")
    head.add_row("outstanding I/Os", f"{out['outstanding']:,.2f}")
    head.add_row("max IOPS (bound)", _fmt_n(out["max_iops"]))
    head.add_row("bound", out["bound"])
    head.add_row("bottleneck", out["bottleneck"] + ("  (saturated)" if out["saturated"] else ""))
    for note in out.get("not_modelled", []):
        head.add_row("not modelled", note)
    head.add_row("drives / usable", f"{out['drives']} / {out['usable_bytes'] / 1e12:,.2f} TB")
    head.add_row("storage power", f"{out['storage_power_w']:,.1f} W")
    csv_data(head, ["throughput_iops", "bandwidth_MBps", "mean_latency_ms", "p99_latency_ms", "outstanding_ios", "max_iops", "bound",
                    "bottleneck", "saturated", "drives", "usable_TB", "storage_power_w", "not_modelled"],
             [[out["throughput_iops"], out["bandwidth_bps"] / 1e6, _ms(out["mean_latency_s"]), _ms(out["p99_latency_s"]),
               out["outstanding"], out["max_iops"], out["bound"], out["bottleneck"], bool(out["saturated"]), out["drives"],
               out["usable_bytes"] / 1e12, out["storage_power_w"], "; ".join(out.get("not_modelled", []))]])
    pr.table(head)
    tab = Table(title="components")
    for col in ("component", "kind", "stations", "utilisation", "time per I/O", "mean queue"):
        tab.add_column(col, justify="right" if col not in ("component", "kind") else "left")
    for c in sorted(out["components"], key=lambda d: -d["utilisation"]):
        tab.add_row(c["component"], c["kind"], str(c["stations"]), f"{100 * c['utilisation']:.1f} %",
                    _fmt_s(c["residence_s"]), f"{c['queue']:.2f}")
    csv_data(tab, ["component", "kind", "stations", "utilisation_pct", "time_per_io_ms", "mean_queue"],
             [[c["component"], c["kind"], c["stations"], 100 * c["utilisation"], _ms(c["residence_s"]), c["queue"]]
              for c in sorted(out["components"], key=lambda d: -d["utilisation"])])
    pr.table(tab)
    lim = Table(title="what bounds the IOPS (each resource alone; the first binds)")
    for col in ("resource", "part", "count", "max IOPS", "max MB/s", "limit"):
        lim.add_column(col, justify="right" if col in ("count", "max IOPS", "max MB/s") else "left")
    for b in out["bounds"]:
        lim.add_row(b["resource"], b["part"], str(b["count"]), _fmt_n(b["max_iops"]), f"{b['max_bandwidth_bps'] / 1e6:,.0f}",
                    b["limit"])
    csv_data(lim, ["resource", "part", "count", "max_iops", "max_MBps", "limit"],
             [[b["resource"], b["part"], b["count"], b["max_iops"], b["max_bandwidth_bps"] / 1e6, b["limit"]] for b in out["bounds"]])
    pr.table(lim)


# --------------------------------------------------------------------------------------------
# densim size


def _print_size(out: dict[str, Any], pr: Printer) -> None:
    from rich.table import Table

    rows = ([out["winner"]] if out["winner"] else []) + out["runners_up"]
    pr.line(f"densim size: {out['scenario']}: {out['evaluated']:,} configurations evaluated, "
              f"{out['feasible_combinations']} combinations feasible")
    if not rows:
        pr.line("no configuration in the candidate set meets the target; widen drives_max, cores or devices")
        return
    tab = Table(title="cheapest configurations meeting the target (first = winner)")
    for col in ("#", "drives", "RAID", "controllers", "cores", "cost $", "power W", "U", "mean lat", "p99 lat",
                "response", "CPU", "busiest at the target", "bound"):
        tab.add_column(col)
    for i, c in enumerate(rows):
        ctl = f"{c['controllers']} x {c['controller']}" if c["controllers"] else c["controller"]
        tab.add_row(str(i + 1), f"{c['drives']} x {c['device']}", c["raid"], ctl, str(c["cores"]), f"{c['cost_usd']:,.0f}",
                    f"{c['power_w']:,.0f}", f"{c['rack_units']:g}", _fmt_s(c["mean_latency_s"]), _fmt_s(c["p99_latency_s"]),
                    _fmt_s(c["response_s"]) if c["response_s"] is not None else "-", f"{100 * c['cpu_utilisation']:.0f} %",
                    f"{c['bottleneck']} ({100 * c['bottleneck_utilisation']:.0f} %)", c["bound"].split(":")[0] + ")")
    csv_data(tab, ["rank", "drives", "device", "raid", "controllers", "controller", "cores", "cost_usd", "power_w", "rack_units",
                   "mean_latency_ms", "p99_latency_ms", "response_ms", "cpu_utilisation_pct", "bottleneck", "bottleneck_utilisation_pct",
                   "bound"],
             [[i + 1, c["drives"], c["device"], c["raid"], c["controllers"], c["controller"], c["cores"], c["cost_usd"], c["power_w"],
               c["rack_units"], _ms(c["mean_latency_s"]), _ms(c["p99_latency_s"]), _ms(c["response_s"]), 100 * c["cpu_utilisation"],
               c["bottleneck"], 100 * c["bottleneck_utilisation"], c["bound"]] for i, c in enumerate(rows)])
    pr.table(tab)


# --------------------------------------------------------------------------------------------


def _emit(res: dict[str, Any], pr: Printer, out: Optional[Path], printer) -> None:
    """Write ``OUT/summary.json`` (strict JSON) when --out is given; print JSON or tables."""
    if out is not None:
        from densim.cli.common import write_result

        write_result(out, res)
    pr.json(res)
    if pr.shows_text:
        printer(res, pr)
        if out is not None:
            pr.line(f"wrote {out}/summary.json")


def _out_checked(out: Optional[Path]) -> None:
    """``--out`` must be a folder or a new name (never a file or a device such as /dev/null), checked before any work."""
    if out is not None:
        from densim.cli.common import out_folder

        _guard(out_folder, out)


def register(app: typer.Typer) -> None:
    from densim.cli.estimates import DEFAULT_MAX_CONFIGURATIONS

    @app.command("io")
    def io_cmd(
        file: Annotated[Path, typer.Argument(help="storage-only scenario (system + workload), or a fio result "
                                                  "(fio --output-format=json) to print as a device profile")],
        json_out: JsonOpt = False,
        out: Annotated[Optional[Path], typer.Option("--out", "-o", help="also write the result to OUT/summary.json (a folder)")] = None,
        as_csv: CsvOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        """Solve a storage system under an open or closed I/O workload: throughput, latency, bottleneck.

        Given fio's JSON output instead, print the device profile it measured (IOPS, bandwidth and latency
        per rw mode, block size and queue depth)."""
        pr = Printer(as_json=json_out, as_csv=as_csv, quiet=quiet)
        _out_checked(out)
        res = _guard(run_io, file)
        _emit(res, pr, out, _print_io)

    @app.command("calibrate")
    def calibrate_cmd(
        file: Annotated[Path, typer.Argument(help="fio result (fio --output-format=json; fio's text before the JSON is skipped)")],
        device: Annotated[str, typer.Option("--device", "-d", help="catalog device to fit (densim models lists the catalog)")],
        json_out: JsonOpt = False,
        out: Annotated[Optional[Path], typer.Option("--out", "-o", help="also write the result to OUT/summary.json (a folder)")] = None,
        as_csv: CsvOpt = False,
        quiet: QuietOpt = False,
        no_progress: NoProgressOpt = False,
    ) -> None:
        """Fit a catalog device's latency, IOPS and bandwidth to fio measurements; print the fit error per point."""
        pr = Printer(as_json=json_out, as_csv=as_csv, quiet=quiet)
        _out_checked(out)
        with status(f"calibrate {device} to {file.name}: fitting", quiet=quiet, no_progress=no_progress):
            res = _guard(run_calibrate, file, device)
        _emit(res, pr, out, _print_calibration)

    @app.command("size")
    def size_cmd(
        file: Annotated[Path, typer.Argument(help="sizing file (target + candidates)")],
        json_out: JsonOpt = False,
        out: Annotated[Optional[Path], typer.Option("--out", "-o", help="also write the result to OUT/summary.json (a folder)")] = None,
        max_configurations: Annotated[int, typer.Option(
            "--max-configurations", min=1, help="refuse a search that could evaluate more configurations (devices x RAID "
            "levels x drive counts x controllers x controller counts x core counts) than this, before searching")]
            = DEFAULT_MAX_CONFIGURATIONS,
        as_csv: CsvOpt = False,
        quiet: QuietOpt = False,
        no_progress: NoProgressOpt = False,
    ) -> None:
        """Find the cheapest drives x RAID x controllers x cores meeting an IOPS or users target."""
        from densim.cli.estimates import check_sizing_space

        pr = Printer(as_json=json_out, as_csv=as_csv, quiet=quiet)
        _out_checked(out)
        with status(f"size {file.name}: searching", quiet=quiet, no_progress=no_progress):
            res = _guard(run_size, file, check=lambda sc: check_sizing_space(sc, file, max_configurations))
        _emit(res, pr, out, _print_size)
