"""``densim plan INVENTORY --candidates CANDIDATES.yaml``: hosts needed and TCO per candidate host."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from densim.cli.common import fail


def plan_command(
    inventory: Annotated[Path, typer.Argument(help="RVTools xlsx/CSV, Azure folder, Bitbrains/OpenDC/PlanetLab folder, or generic long CSV/Parquet")],
    candidates: Annotated[Path, typer.Option("--candidates", "-c", help="YAML with candidate host configurations, QoS and cost inputs")],
    out: Annotated[Path, typer.Option("--out", "-o", help="output folder")] = Path("plan-out"),
    fmt: Annotated[str, typer.Option("--format", help="inventory format, or 'auto'")] = "auto",
    policy: Annotated[Optional[str], typer.Option(help="placement policy (overrides the YAML)")] = None,
    windows: Annotated[Optional[int], typer.Option(help="time windows used while placing (overrides the YAML)")] = None,
    rightsize: Annotated[Optional[bool], typer.Option("--rightsize/--no-rightsize", help="right-size VMs first")] = None,
    optimise: Annotated[Optional[bool], typer.Option("--optimise/--no-optimise", help="CP-SAT after the heuristic (reports the gap)")] = None,
    steps: Annotated[Optional[int], typer.Option(help="use only the first N steps of the demand series")] = None,
    snapshot_peak_factor: Annotated[float, typer.Option(help="RVTools only: multiply snapshot demand by this")] = 1.0,
    seed: Annotated[int, typer.Option(help="recorded in the results (the plan itself is deterministic)")] = 0,
) -> None:
    """For each candidate host type: hosts needed so every VM meets its QoS over the whole series, and TCO per VM."""
    from rich.console import Console
    from rich.table import Table

    from densim.tools.plan.capacity import load_plan_spec, plan
    from densim.tools.plan.report import write_outputs
    from densim.errors import InputError
    from densim.workloads.formats import load_inventory

    try:
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
        if rightsize is not None:
            upd["rightsizing"] = spec.rightsizing.model_copy(update={"enabled": rightsize})
        spec = spec.model_copy(update=upd)
        from densim.workloads.formats import detect_format

        fmt = detect_format(inventory) if fmt == "auto" else fmt
        opts = {"snapshot_peak_factor": snapshot_peak_factor} if fmt == "rvtools" else {}
        inv = load_inventory(inventory, fmt, **opts)
        if steps is not None:
            inv = inv.with_series_steps(steps)
        res = plan(inv, spec)
        summary = write_outputs(res, out, seed)
    except InputError as exc:
        fail(exc.one_line())  # one line, never wrapped

    con = Console()
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
            row = [str(i), r.name, str(r.n_hosts), str(r.lower_bound_hosts), f"{r.vms_per_host:.1f}", f"{r.ready_pct_worst:.2f}"]
            row += [f"{r.mem_slowdown_worst:.3f}"] if show_mem else []
            row += [f"{r.io_latency_worst_ms:.2f}" if r.io_latency_worst_ms == r.io_latency_worst_ms else "-"] if show_io else []
            row += [f"{r.cpu_util_mean * 100:.1f} %", f"${r.tco['per_vm_usd']:,.0f}"]
        else:
            row = [str(i), r.name] + ["-"] * (len(cols) - 3) + ["infeasible"]
        t.add_row(*row)
    con.print(t)
    for r in res.ranked():
        for note in r.notes:
            con.print(f"{r.name}: {note}", markup=False, highlight=False)
    for r in res.ranked():
        o = r.optimiser
        if o.get("status") not in (None, "SKIPPED"):
            con.print(f"{r.name}: CP-SAT {o['status']}, {o['hosts']} hosts before spares (heuristic {o['heuristic_hosts']}), "
                      f"proven lower bound {o['lower_bound']}, gap {o['gap'] * 100:.1f} %"
                      + (" - adopted" if o.get("adopted") else ""), markup=False, highlight=False)
        if not r.feasible:
            con.print(f"{r.name}: {r.reason}", markup=False, highlight=False)
    con.print(f"demand rule: {inv.demand_rule}", markup=False, highlight=False)
    con.print(f"wrote {out}/report.html, placement.csv, ranking.csv, summary.json (best: {summary['best']})", markup=False)


def register(app: typer.Typer) -> None:
    app.command("plan")(plan_command)
