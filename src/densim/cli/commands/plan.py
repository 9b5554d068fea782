"""``densim plan INVENTORY --candidates CANDIDATES.yaml``: hosts needed and TCO per candidate host."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from densim.cli.estimates import max_memory_option as _max_memory

from densim.cli.common import DEFAULT_SEED, CsvOpt, JsonOpt, NoProgressOpt, Printer, QuietOpt, csv_data, fail


def plan_command(
    inventory: Annotated[Path, typer.Argument(help="RVTools xlsx/CSV, Azure folder, Bitbrains/OpenDC/PlanetLab folder, or generic long CSV/Parquet")],
    candidates: Annotated[Path, typer.Option("--candidates", "-c", help="YAML with candidate host configurations, QoS and cost inputs")],
    out: Annotated[Path, typer.Option("--out", "-o", help="output folder")] = Path("plan-out"),
    fmt: Annotated[str, typer.Option("--format", help="inventory format, or 'auto'")] = "auto",
    policy: Annotated[Optional[str], typer.Option(help="placement policy (overrides the YAML)")] = None,
    windows: Annotated[Optional[int], typer.Option(min=1, help="time windows used while placing (overrides the YAML)")] = None,
    rightsize: Annotated[Optional[bool], typer.Option("--rightsize/--no-rightsize", help="right-size VMs first")] = None,
    rightsize_snapshot: Annotated[Optional[bool], typer.Option(
        "--rightsize-snapshot/--no-rightsize-snapshot",
        help="right-size even from one sample per VM (an RVTools snapshot; off by default: one sample says nothing about peaks)")] = None,
    optimise: Annotated[Optional[bool], typer.Option("--optimise/--no-optimise", help="CP-SAT after the heuristic (reports the gap)")] = None,
    steps: Annotated[Optional[int], typer.Option(min=1, help="use only the first N steps of the demand series")] = None,
    snapshot_peak_factor: Annotated[float, typer.Option(help="RVTools only: multiply snapshot demand by this (> 0)")] = 1.0,
    unknown_cpu_pct: Annotated[float, typer.Option(
        "--unknown-cpu-pct", help="RVTools only: CPU demand, in % of vCPUs x MHz, of a VM whose usage was not exported "
        "(no vCPU 'Overall', host not in vHost); 100 = busy on every vCPU")] = 100.0,
    unknown_vms: Annotated[str, typer.Option("--unknown-vms", help="Azure only: readings of VMs not in vmtable are skipped and "
                                             "counted (skip) or refused (error)")] = "skip",
    seed: Annotated[int, typer.Option(min=0, max=2**64 - 1, help="draws the day resamples of the host-count interval; recorded in the results")]
        = DEFAULT_SEED,
    max_memory: Annotated[str, typer.Option("--max-memory", callback=_max_memory, help="refuse an inventory whose demand arrays are estimated to "
                                            "need more memory than this, before allocating them (e.g. '32 GiB')")] = "8 GiB",
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="run chosen-scenario.yaml (the chosen candidate as a "
                                         "scenario) through the engine and set its QoS figures beside the plan's (summary.json "
                                         "'verify', the report)")] = False,
    verify_all: Annotated[bool, typer.Option("--verify-all", help="run every feasible candidate, written as a scenario with "
                                             "its placement and sizes, through the engine (summary.json 'verify_all', the "
                                             "report); one engine run per candidate")] = False,
    groups: Annotated[Optional[Path], typer.Option("--groups", help="CSV vm,group: VMs that move together in one migration "
                                                   "wave (overrides waves.groups.file; needs a waves: section)")] = None,
    json_out: JsonOpt = False,
    as_csv: CsvOpt = False,
    quiet: QuietOpt = False,
    no_progress: NoProgressOpt = False,
) -> None:
    """For each candidate host type: hosts needed so every VM meets its QoS over the whole series, and TCO per VM.

    Exit status 1 when no candidate is feasible (the outputs are still written, with each candidate's reason)."""
    from densim.cli.common import status
    from densim.tools.plan.capacity import load_plan_spec, plan
    from densim.tools.plan.report import write_outputs
    from densim.errors import InputError
    from densim.workloads.formats import load_inventory

    import math

    from densim.cli.estimates import plan_bytes
    from densim.cli.common import out_folder
    from densim.workloads.readers._checks import check_budget, memory_budget

    limit = int(max_memory)
    pr = Printer(as_json=json_out, as_csv=as_csv, quiet=quiet)

    if not (math.isfinite(snapshot_peak_factor) and 0 < snapshot_peak_factor <= 100):
        fail(f"--snapshot-peak-factor: must be a number > 0 (and at most 100), got {snapshot_peak_factor:g}", code=2)
    if not (math.isfinite(unknown_cpu_pct) and 0 <= unknown_cpu_pct <= 100):
        fail(f"--unknown-cpu-pct: must be a number from 0 to 100, got {unknown_cpu_pct:g}", code=2)
    if unknown_vms not in ("skip", "error"):
        fail(f"--unknown-vms: must be skip or error, got {unknown_vms!r}", code=2)
    try:
        out_folder(out, whole=True)  # replaced whole at the end: refuse a folder of other files now
        spec = load_plan_spec(candidates)
        upd = {}
        if policy is not None:
            from densim.placement import POLICIES, planner_policies

            if policy not in POLICIES or POLICIES.get(policy).recipe is None:
                raise InputError(None, "--policy", f"unknown planner policy {policy!r}; valid: {', '.join(planner_policies())}")
            upd["policy"] = policy
        if windows is not None:
            upd["windows"] = windows
        if optimise is not None:
            upd["optimise"] = spec.optimise.model_copy(update={"enabled": optimise})
        rs_upd = {k: v for k, v in (("enabled", rightsize), ("from_snapshot", rightsize_snapshot)) if v is not None}
        if rs_upd:
            upd["rightsizing"] = spec.rightsizing.model_copy(update=rs_upd)
        spec = spec.model_copy(update=upd)
        from densim.workloads.formats import detect_format

        fmt = detect_format(inventory) if fmt == "auto" else fmt
        opts = {"rvtools": {"snapshot_peak_factor": snapshot_peak_factor, "unknown_cpu_pct": unknown_cpu_pct}, "azure": {"unknown_vms": unknown_vms}}.get(fmt, {})
        with status("plan", quiet=quiet, no_progress=no_progress) as phase:
            phase(f"reading {inventory.name}")
            with memory_budget(limit):
                inv = load_inventory(inventory, fmt, **opts)
                if steps is not None:
                    inv = inv.with_series_steps(steps)
                check_budget(plan_bytes(inv.n_vms, inv.n_steps), f"the plan ({inv.n_vms:,} VMs x {max(inv.n_steps, 1):,} steps)",
                             inventory)
            n_cand = len(spec.candidates)
            seen: list[str] = []

            def on_candidate(name: str) -> None:
                seen.append(name)
                phase(f"candidate {len(seen)}/{n_cand} {name} ({inv.n_vms:,} VMs)")

            res = plan(inv, spec, progress=on_candidate, seed=seed, phase=phase, groups_file=groups)
            scenario, ver, files = _chosen_scenario(res, inventory, fmt, verify, phase)
            ver_all = None
            if verify_all:
                from densim.tools.plan import replay

                ver_all = replay.verify_candidates(res, inventory, fmt, lambda name: phase(f"running {name} through the "
                                                                                           "engine (--verify-all)"))
            phase("writing the outputs and report")
            summary = write_outputs(res, out, seed, scenario=scenario, verify=ver, scenario_files=files, verify_all=ver_all)
    except InputError as exc:
        fail(exc.one_line())  # one line, never wrapped

    pr.json(summary)
    _print_plan(pr, res, inv, spec, out, summary)
    if not any(r.feasible for r in res.results):
        # every candidate's reason was printed above (and is in summary.json and ranking.csv)
        near = res.closest()
        typer.echo(f"densim: error: no candidate is feasible ({len(res.results)} tried)"
                   + (f"; the closest, {near.name}, fails: {near.reason}" if near is not None else ""), err=True)
        for r in res.ranked():
            typer.echo(f"densim: error: {r.name}: {r.reason}", err=True)
        raise typer.Exit(1)


def _chosen_scenario(res, inventory: Path, fmt: str, verify: bool, phase) -> tuple[str | None, dict | None, dict[str, str]]:
    """The text of ``chosen-scenario.yaml`` (None when no candidate is feasible), with ``--verify`` its engine run
    (the scenario is run from a temporary folder with the files it names: its trace path is absolute), and the files
    it names beside it (the plan's placement, the right-sized sizes)."""
    import tempfile

    from densim.tools.plan import replay

    got = replay.chosen_scenario(res, inventory, fmt)
    if got is None:
        return None, None, {}
    text = replay.scenario_text(*got)
    files = replay.chosen_files(res, fmt)
    if not verify:
        return text, None, files
    phase("running chosen-scenario.yaml through the engine (--verify)")
    with tempfile.TemporaryDirectory(prefix="densim-plan-verify-") as d:
        path = Path(d) / "chosen-scenario.yaml"
        path.write_text(text, encoding="utf-8")
        for name, body in files.items():
            (Path(d) / name).write_text(body, encoding="utf-8")
        ver = replay.verify(res, path)
    ver["dropped"] = got[1]
    return text, ver, files


def _ranking_csv_header(show_mem: bool, show_io: bool) -> list[str]:
    return (["rank", "candidate", "feasible", "hosts", "lower_bound_hosts", "vms_per_host", "worst_ready_pct"]
            + (["worst_memory_slowdown"] if show_mem else []) + (["worst_io_latency_ms"] if show_io else [])
            + ["mean_cpu_util_pct", "tco_per_vm_year_usd"])


def _ranking_csv_row(i: int, r, show_mem: bool, show_io: bool) -> list:
    """The ranking as numbers for --csv: an infeasible candidate has its name and no figures; NaN (not checked) is empty."""
    import math

    def fin(x):
        return float(x) if x is not None and math.isfinite(x) else None

    if not r.feasible:
        return [i, r.name, False] + [None] * (len(_ranking_csv_header(show_mem, show_io)) - 3)
    return ([i, r.name, True, r.n_hosts, r.lower_bound_hosts, r.vms_per_host, fin(r.ready_pct_worst)]
            + ([fin(r.mem_slowdown_worst)] if show_mem else []) + ([fin(r.io_latency_worst_ms)] if show_io else [])
            + [None if fin(r.cpu_util_mean) is None else 100 * r.cpu_util_mean, r.tco["per_vm_usd"]])


def _print_plan(pr: Printer, res, inv, spec, out: Path, summary: dict) -> None:
    import math

    from rich.table import Table

    from densim.tools.plan.report import headline_lines

    if not pr.shows_text:
        return
    # the answer first (the report's headline, the same sentences), then the ranking behind it
    from densim.tools.plan.confidence import confidence_lines
    from densim.tools.plan.readiness import readiness_lines

    for line in headline_lines(summary):
        pr.line(line)
    from densim.tools.plan.waves import waves_lines

    for line in ((confidence_lines(summary["confidence"]) if summary.get("confidence") else []) + readiness_lines(summary)
                 + waves_lines(summary.get("waves"))):
        pr.line(line)
    pr.line()
    t = Table(title=f"densim plan: {inv.describe()}")
    show_mem = spec.memory is not None and spec.memory.model != "none"
    show_io = any(c.storage is not None for c in spec.candidates)
    cols = ["rank", "candidate", "hosts", "lower bound", "VMs/host", "worst ready %"]
    cols += ["worst mem slowdown"] if show_mem else []
    cols += ["worst I/O ms"] if show_io else []
    cols += ["mean CPU util", "TCO/VM-year"]
    for col in cols:
        t.add_column(col, justify="right" if col != "candidate" else "left")
    for i, r in enumerate(res.ranked(), start=1):
        if r.feasible:
            ready = f"{r.ready_pct_worst:.2f}" if math.isfinite(r.ready_pct_worst) else "-"
            row = [str(i), r.name, str(r.n_hosts), str(r.lower_bound_hosts), f"{r.vms_per_host:.1f}", ready]
            row += [f"{r.mem_slowdown_worst:.3f}"] if show_mem else []
            row += [f"{r.io_latency_worst_ms:.2f}" if r.io_latency_worst_ms == r.io_latency_worst_ms else "-"] if show_io else []
            row += [f"{r.cpu_util_mean * 100:.1f} %" if math.isfinite(r.cpu_util_mean) else "-", f"${r.tco['per_vm_usd']:,.0f}"]
        else:
            row = [str(i), r.name] + ["-"] * (len(cols) - 3) + ["infeasible"]
        t.add_row(*row)
    csv_data(t, _ranking_csv_header(show_mem, show_io), [_ranking_csv_row(i, r, show_mem, show_io) for i, r in enumerate(res.ranked(), 1)])
    pr.table(t)
    for r in res.ranked():
        for note in r.notes:
            pr.line(f"{r.name}: {note}")
    for r in res.ranked():
        o = r.optimiser
        if o.get("status") not in (None, "SKIPPED"):
            pr.line(f"{r.name}: CP-SAT {o['status']}, {o['hosts']} hosts before spares (heuristic {o['heuristic_hosts']}), "
                    f"proven lower bound {o['lower_bound']}, gap {o['gap'] * 100:.1f} %" + (" - adopted" if o.get("adopted") else ""))
        if not r.feasible and summary.get("best"):  # with none feasible the reasons are the error lines (stderr)
            pr.line(f"{r.name}: infeasible: {r.reason}")
    for r in res.ranked():  # GPU candidates: the answer in one line with what decides it (tools/plan/gpu.py)
        g = r.gpu
        if r.feasible and g:
            inf = f", {g['hosts_inference']} of them for LLM inference" if g.get("hosts_inference") else ""
            pr.line(f"{r.name}: buy {r.n_hosts} x host with {g['gpus_per_host']} x {g['model']} (limited by "
                    f"{g['limiting_factor']}: CPU/memory {g['hosts_cpu_memory']} hosts, GPU VMs {g['hosts_gpu_vms']}{inf})")
    pr.line(f"demand rule: {inv.demand_rule}")
    for note in res.notes:
        pr.line(f"note: {note}")
    best = f"best: {summary['best']}" if summary.get("best") else "no candidate is feasible"
    extra = ", readiness.csv" if inv.readiness is not None else ""
    extra += ", chosen-scenario.yaml" if summary.get("chosen_scenario") else ""
    extra += "".join(f", {f}" for f in summary.get("chosen_scenario_files", []))
    extra += ", waves.csv" if (summary.get("waves") or {}).get("planned") else ""
    v = summary.get("verify")
    if v:
        p, e = v["plan"], v["engine"]
        ready = "-" if p["cpu_ready_pct_max"] is None else f"{p['cpu_ready_pct_max']:.2f}"
        mean = "-" if p.get("cpu_ready_pct_mean") is None else f"{p['cpu_ready_pct_mean']:.2f}"
        pr.line(f"verify ({v['candidate']}, engine run of chosen-scenario.yaml): hosts used {e['hosts_used']} (plan "
                f"{p['hosts_packed']} before spares), VMs placed {e['vms_placed']} (plan {p['vms_placed']}), worst CPU Ready "
                f"{e['cpu_ready_pct_max']:.2f} % (plan {ready} %), mean {e['cpu_ready_pct_mean']:.2f} % (plan {mean} %)")
    for v in summary.get("verify_all") or []:
        p, e = v["plan"], v["engine"]
        fmt = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
        pr.line(f"verify-all {v['candidate']}: hosts used {e['hosts_used']} (plan {p['hosts_packed']}), unplaced "
                f"{e['vms_unplaced']}, worst CPU Ready {fmt(e['cpu_ready_pct_max'])} % (plan {fmt(p['cpu_ready_pct_max'])} %)")
    pr.line(f"wrote {out}/report.html, placement.csv, ranking.csv{extra}, summary.json ({best}; seed {summary.get('seed')})")


def register(app: typer.Typer) -> None:
    app.command("plan")(plan_command)
