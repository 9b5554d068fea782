"""``densim io FILE`` (storage-only scenario) and ``densim size FILE`` (sizing solver).

The command functions are thin: :func:`run_io` and :func:`run_size` do the work and return plain
dicts (also used by tests and docs); the CLI prints them as tables or JSON.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from densim.cli.common import run_guarded as _guard


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


def _tty() -> bool:
    import sys

    return sys.stdout.isatty()


# --------------------------------------------------------------------------------------------
# densim io


def run_io(path: str | Path) -> dict[str, Any]:
    """Solve the storage-only scenario in ``path``; returns the result as a dict."""
    from densim.models.storage import IoPattern, arrays_power_w, build_stations, solve_closed, solve_open
    from densim.spec.storage import _load, IoScenario, resolve_system

    sc = _load(path, IoScenario)
    arrays, cpu, server, encl, _ = resolve_system(sc, path)
    w = sc.workload
    pattern = IoPattern(w.read_fraction, w.block_size_bytes, w.access == "sequential", w.arrival_cv2, w.service_cv2)
    stations = build_stations(arrays, cpu, pattern)
    if w.mode == "open":
        res = solve_open(stations, float(w.iops), pattern)
    else:
        res = solve_closed(stations, w.outstanding, w.think_time_s, pattern)
    out = res.as_dict()
    out["scenario"] = sc.name
    out["stations"] = len(stations)
    out["drives"] = sum(a.drives for a in arrays)
    out["usable_bytes"] = sum(a.usable_bytes for a in arrays)
    out["storage_power_w"] = arrays_power_w(arrays, res) + sum(e.power_w * n for e, n in encl)
    out["enclosure_rack_units"] = sum(e.rack_units * n for e, n in encl)
    if w.mode == "closed":
        out["little_check"] = {"outstanding": res.outstanding, "x_times_r_plus_z": res.throughput_iops * (res.mean_latency_s + res.think_s)}
    return out


def _print_io(out: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(highlight=False, width=None if _tty() else 120)
    head = Table(title=f"densim io: {out['scenario']} ({out['mode']} workload)", show_header=False)
    head.add_row("throughput", f"{_fmt_n(out['throughput_iops'])} IOPS  ({out['bandwidth_bps'] / 1e6:,.1f} MB/s)")
    head.add_row("latency mean / p99", f"{_fmt_s(out['mean_latency_s'])} / {_fmt_s(out['p99_latency_s'])}")
    head.add_row("outstanding I/Os", f"{out['outstanding']:,.2f}")
    head.add_row("max IOPS (bound)", _fmt_n(out["max_iops"]))
    head.add_row("bottleneck", out["bottleneck"] + ("  (saturated)" if out["saturated"] else ""))
    head.add_row("drives / usable", f"{out['drives']} / {out['usable_bytes'] / 1e12:,.2f} TB")
    head.add_row("storage power", f"{out['storage_power_w']:,.1f} W")
    con.print(head)
    tab = Table(title="components")
    for col in ("component", "kind", "stations", "utilisation", "time per I/O", "mean queue"):
        tab.add_column(col, justify="right" if col not in ("component", "kind") else "left")
    for c in sorted(out["components"], key=lambda d: -d["utilisation"]):
        tab.add_row(c["component"], c["kind"], str(c["stations"]), f"{100 * c['utilisation']:.1f} %",
                    _fmt_s(c["residence_s"]), f"{c['queue']:.2f}")
    con.print(tab)


# --------------------------------------------------------------------------------------------
# densim size


def run_size(path: str | Path) -> dict[str, Any]:
    """Search the candidate set of the sizing file ``path``; returns winner and runners-up."""
    from densim.models.devices import DeviceSpec
    from densim.models.storage import ControllerSpec, EnclosureSpec, IoPattern, IoStack
    from densim.models.storage.sizing import Costs, Target, distinct, search
    from densim.spec.storage import _catalog, load_sizing

    sc = load_sizing(path)
    cat = _catalog(sc.parts, path)
    cand = sc.candidates
    devices = [cat.get("devices", d, DeviceSpec) for d in cand.devices]
    ctls = [cat.get("controllers", c, ControllerSpec) for c in cand.controllers]
    encl = cat.get("enclosures", cand.enclosure, EnclosureSpec) if cand.enclosure else None
    cycles = cand.cycles_per_io
    if cycles is None:
        cycles = cat.get("io_stacks", cand.stack, IoStack).cycles_per_io if cand.stack else 0.0
    t = sc.target
    target = Target(
        iops=t.iops, max_latency_s=t.max_latency_s, latency_metric=t.latency_metric, capacity_bytes=t.capacity_bytes,
        users=t.users, iops_per_user=t.iops_per_user or 0.0, requests_per_user_s=t.requests_per_user_s or 0.0,
        ios_per_request=t.ios_per_request, cpu_per_request_s=t.cpu_per_request_s, max_response_s=t.max_response_s,
        max_cpu_utilisation=t.max_cpu_utilisation,
    )
    w = sc.workload
    pattern = IoPattern(w.read_fraction, w.block_size_bytes, w.access == "sequential", w.arrival_cv2, w.service_cv2)
    costs = Costs(**sc.costs.model_dump())
    found, tried = search(devices, list(cand.raid), ctls, list(cand.cores), cand.clock_mhz * 1e6, cycles, pattern,
                          target, costs, cand.drives_min, cand.drives_max, cand.extra_controllers, encl)
    best = distinct(found, sc.top)
    return {
        "scenario": sc.name,
        "target": sc.target.model_dump(exclude_none=True),
        "evaluated": tried,
        "feasible_combinations": len(found),
        "winner": best[0].as_dict() if best else None,
        "runners_up": [c.as_dict() for c in best[1:]],
    }


def _print_size(out: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(highlight=False, width=None if _tty() else 200)
    rows = ([out["winner"]] if out["winner"] else []) + out["runners_up"]
    con.print(f"densim size: {out['scenario']}: {out['evaluated']:,} configurations evaluated, "
              f"{out['feasible_combinations']} combinations feasible")
    if not rows:
        con.print("no configuration in the candidate set meets the target; widen drives_max, cores or devices")
        return
    tab = Table(title="cheapest configurations meeting the target (first = winner)")
    for col in ("#", "drives", "RAID", "controllers", "cores", "cost $", "power W", "U", "mean lat", "p99 lat",
                "response", "CPU", "bottleneck"):
        tab.add_column(col)
    for i, c in enumerate(rows):
        ctl = f"{c['controllers']} x {c['controller']}" if c["controllers"] else c["controller"]
        tab.add_row(str(i + 1), f"{c['drives']} x {c['device']}", c["raid"], ctl, str(c["cores"]), f"{c['cost_usd']:,.0f}",
                    f"{c['power_w']:,.0f}", f"{c['rack_units']:g}", _fmt_s(c["mean_latency_s"]), _fmt_s(c["p99_latency_s"]),
                    _fmt_s(c["response_s"]) if c["response_s"] is not None else "-", f"{100 * c['cpu_utilisation']:.0f} %",
                    f"{c['bottleneck']} ({100 * c['bottleneck_utilisation']:.0f} %)")
    con.print(tab)


# --------------------------------------------------------------------------------------------


def _emit(out: dict[str, Any], json_out: bool, out_file: Optional[Path], printer) -> None:
    text = json.dumps(out, indent=2, default=float)
    if out_file is not None:
        from densim.atomic import write_text_atomic

        write_text_atomic(out_file, text + "\n")
    if json_out:
        typer.echo(text)
    else:
        printer(out)


def register(app: typer.Typer) -> None:
    @app.command("io")
    def io_cmd(
        file: Annotated[Path, typer.Argument(help="storage-only scenario (system + workload)")],
        json_out: Annotated[bool, typer.Option("--json", help="print JSON instead of tables")] = False,
        out: Annotated[Optional[Path], typer.Option("--out", "-o", help="also write the result as JSON here")] = None,
    ) -> None:
        """Solve a storage system under an open or closed I/O workload: throughput, latency, bottleneck."""
        res = _guard(run_io, file)
        _emit(res, json_out, out, _print_io)

    @app.command("size")
    def size_cmd(
        file: Annotated[Path, typer.Argument(help="sizing file (target + candidates)")],
        json_out: Annotated[bool, typer.Option("--json", help="print JSON instead of a table")] = False,
        out: Annotated[Optional[Path], typer.Option("--out", "-o", help="also write the result as JSON here")] = None,
    ) -> None:
        """Find the cheapest drives x RAID x controllers x cores meeting an IOPS or users target."""
        res = _guard(run_size, file)
        _emit(res, json_out, out, _print_size)
