"""``densim forecast HISTORY --spec FORECAST.yaml``: time remaining until CPU Ready crosses its bound and memory runs out."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Optional

import typer

from densim.cli.common import JsonOpt, NoProgressOpt, Printer, QuietOpt, fail, status


def _project(text: str) -> dict:
    """``NAME:DATE:VMS`` (the VM size comes from growth.vm or the history's mean VM)."""
    from densim.errors import InputError

    parts = text.split(":")
    if len(parts) != 3:
        raise InputError("--project", "", f"expected NAME:DATE:VMS (e.g. erp:2027-03-01:40), got {text!r}")
    name, date, vms = parts
    try:
        day = dt.date.fromisoformat(date)
    except ValueError:
        raise InputError("--project", "", f"{date!r} is not an ISO date (YYYY-MM-DD) in {text!r}") from None
    if not vms.isdigit() or int(vms) < 1:
        raise InputError("--project", "", f"VMS must be a whole number >= 1, got {vms!r} in {text!r}")
    return {"name": name, "date": day, "vms": int(vms)}


def forecast_command(
    history: Annotated[Path, typer.Argument(help="cluster-history CSV (date, vms, vcpus, cpu_used_mhz, mem_used_gib) or any "
                                            "inventory with a demand series (generic long CSV/Parquet, Bitbrains, ...)")],
    spec_file: Annotated[Optional[Path], typer.Option("--spec", "--growth", "-s", help="YAML with a 'forecast' section: current "
                                                      "hosts, growth, horizon, replications (a plan's candidates file works too)")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="output folder (summary.json, report.html)")] = Path("forecast-out"),
    fmt: Annotated[str, typer.Option("--format", help="'cluster-history', an inventory format, or 'auto'")] = "auto",
    vms_per_month: Annotated[Optional[float], typer.Option(min=0, help="what-if: VMs added per month (overrides the YAML)")] = None,
    project: Annotated[Optional[list[str]], typer.Option(help="what-if: NAME:DATE:VMS, a project's VMs arriving on DATE (repeatable)")] = None,
    horizon_days: Annotated[Optional[int], typer.Option(min=1, max=3650, help="forecast horizon (overrides the YAML)")] = None,
    replications: Annotated[Optional[int], typer.Option(min=10, max=20000, help="simulated paths (overrides the YAML)")] = None,
    seed: Annotated[Optional[int], typer.Option(min=0, max=2**63 - 1, help="seed of the simulated paths (overrides the YAML)")] = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    no_progress: NoProgressOpt = False,
) -> None:
    """When CPU Ready crosses its bound and when memory runs out: fitted trend and season, what-if growth, simulated paths."""
    from densim.errors import InputError
    from densim.spec.forecast import ForecastFile, ForecastSpec, GrowthSpec, Project
    from densim.spec.loader import load_spec
    from densim.tools.plan import forecast as F

    pr = Printer(as_json=json_out, quiet=quiet)
    try:
        from densim.cli.common import out_folder

        out_folder(out, whole=True)  # replaced whole at the end: refuse a folder of other files now
        cpu_ready = 5.0
        if spec_file is None:
            spec = ForecastSpec()
        else:
            import yaml

            try:
                raw = yaml.safe_load(spec_file.read_text()) or {}
            except (OSError, yaml.YAMLError) as exc:
                raise InputError(spec_file, "", f"cannot read: {exc.__class__.__name__}") from None
            if isinstance(raw, dict) and "candidates" in raw:
                from densim.tools.plan.capacity import load_plan_spec

                ps = load_plan_spec(spec_file)
                if ps.forecast is None:
                    raise InputError(spec_file, "forecast", "the candidates file has no forecast section")
                spec, cpu_ready = ps.forecast, ps.qos.cpu_ready_pct
            else:
                spec = load_spec(spec_file, ForecastFile, what="forecast file", imports=False, resolve_paths=False).forecast
        g_upd: dict = {}
        if vms_per_month is not None:
            g_upd["vms_per_month"] = vms_per_month
        if project:
            g_upd["projects"] = list(spec.growth.projects) + [Project.model_validate(_project(p)) for p in project]
        upd: dict = {}
        if g_upd:
            upd["growth"] = GrowthSpec.model_validate(spec.growth.model_dump(by_alias=True) | g_upd)
        for k, v in (("horizon_days", horizon_days), ("replications", replications), ("seed", seed)):
            if v is not None:
                upd[k] = v
        if upd:
            spec = ForecastSpec.model_validate(spec.model_dump(by_alias=True) | upd)
        with status("forecast", quiet=quiet, no_progress=no_progress) as phase:
            phase("reading the history")
            h, _inv = F.load_history(history, fmt, spec)
            from densim.tools.plan.capacity import host_type_of

            clusters = F.clusters_from(spec, host_type_of)
            if not clusters:
                raise InputError(spec_file or "--spec", "forecast.current", "give today's hosts (hosts, cpu, memory) to forecast for")
            phase(f"fitting and simulating {spec.replications} paths")
            tr = F.time_remaining(h, spec, clusters, cpu_ready_pct=cpu_ready)
            phase("writing")
            F.write_outputs(tr, out)
    except InputError as exc:
        fail(exc.one_line())
    pr.json(tr)
    for c in tr["clusters"]:
        pr.line(c["headline"])
    for n in tr["notes"]:
        pr.line(f"note: {n}")
    pr.line(f"wrote {out}/summary.json, report.html (seed {tr['seed']})")


def register(app: typer.Typer) -> None:
    app.command("forecast")(forecast_command)
