"""``densim tier-ratio SCENARIO``: the highest DRAM:NVMe memory-tiering ratio that keeps every workload's
slowdown within a bound (:mod:`densim.tools.plan.tiering`; docs/howto/memory-tiering.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from densim.cli.common import CsvOpt, JsonOpt, NoProgressOpt, Printer, QuietOpt, out_folder, run_guarded, status, write_result


def _plan(path: Path, bound: float, ratios: str | None, keep_overcommit: bool, active_rule: bool, phase) -> dict:
    from densim.spec.loader import load_scenario
    from densim.tools.plan.tiering import DEFAULT_RATIOS, tier_ratio_plan

    sc = load_scenario(path)
    rs = DEFAULT_RATIOS if ratios is None else [r.strip() for r in ratios.split(",") if r.strip()]
    return tier_ratio_plan(sc, bound=bound, ratios=rs, keep_overcommit=keep_overcommit, active_rule=active_rule,
                           source=path, progress=phase)


def register(app: typer.Typer) -> None:
    @app.command("tier-ratio")
    def tier_ratio_cmd(
        scenario: Annotated[Path, typer.Argument(help="scenario with memory.model: vsphere-like and memory.tiering")],
        bound: Annotated[float, typer.Option("--bound", help="worst slowdown allowed for every VM group (x, > 1)")] = 1.10,
        ratios: Annotated[Optional[str], typer.Option("--ratios", help="ratios to try, e.g. '1:1,1:2,1:4' (default 1:1,1:1.5,1:2,1:3,1:4)")] = None,
        keep_overcommit: Annotated[bool, typer.Option("--keep-overcommit", help="keep the scenario's memory over-commit instead of packing up to DRAM + tier")] = False,
        active_rule: Annotated[bool, typer.Option("--active-rule", help="also require every host's active memory to fit its DRAM (VMware's sizing rule)")] = False,
        out: Annotated[Optional[Path], typer.Option("--out", "-o", help="output folder for summary.json")] = None,
        json_out: JsonOpt = False, csv_out: CsvOpt = False, quiet: QuietOpt = False, no_progress: NoProgressOpt = False,
    ) -> None:
        """Highest NVMe memory-tiering ratio (DRAM:NVMe) that keeps every workload's slowdown within --bound."""
        from rich.table import Table

        from densim.tools.plan.tiering import headline_lines

        pr = Printer(as_json=json_out, as_csv=csv_out, quiet=quiet)
        if out is not None:
            run_guarded(out_folder, out)
        with status("tier-ratio", quiet=quiet, no_progress=no_progress) as phase:
            ans = run_guarded(_plan, scenario, bound, ratios, keep_overcommit, active_rule, phase)
        if out is not None:
            write_result(out, ans)
        pr.json(ans)
        for line in headline_lines(ans):
            pr.line(line)
        tab = Table(title="per ratio")
        for col in ("ratio", "mem over-commit", "hosts used", "VMs placed", "worst slowdown", "active rule broken", "tier util peak"):
            tab.add_column(col, justify="right")
        for r in ans["ratios"]:
            if "refused" in r:
                tab.add_row(r["ratio"], "-", "-", "-", "refused: " + r["refused"], "-", "-")
                continue
            tab.add_row(r["ratio"], f"{r['memory_overcommit']:g}", str(r["hosts_used"]), f"{r['vms_placed']}/{r['vms']}",
                        f"{r['worst_slowdown']:.3f}", f"{r['hosts_breaking_active_rule']} host(s)", f"{100 * r['tier_device_util_peak']:.1f} %")
        pr.table(tab)
        if out is not None:
            pr.line(f"wrote {out}/summary.json")
