"""``densim bench tiles HOST.yaml`` and ``densim bench compare A B``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from densim.cli.common import RESULT_FILE, CsvOpt, JsonOpt, NoProgressOpt, Printer, QuietOpt, csv_data, fail


def _result_path(p: Path) -> Path:
    """A tile result named by its file or by the folder ``bench tiles --out`` wrote it to."""
    return p / RESULT_FILE if p.is_dir() else p


def register(app: typer.Typer) -> None:
    bench = typer.Typer(help="Consolidation benchmark in tiles (web, NFS, Java app, DB, IMAP mail, idle VM).", no_args_is_help=True,
                        rich_markup_mode=None)

    @bench.command("tiles")
    def tiles(
        host: Annotated[Path, typer.Argument(help="host file: server (catalog name), virtualization switches, run settings")],
        out: Annotated[Path, typer.Option("--out", "-o", help=f"output folder: the result is OUT/{RESULT_FILE}")]
            = Path("out/bench-tiles"),
        seed: Annotated[Optional[int], typer.Option("--seed", min=0, max=2**64 - 1, help="override the host file's run.seed "
                                                    "(0 to 2**64 - 1; a host file without one uses 42)")] = None,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
        no_progress: NoProgressOpt = False,
    ) -> None:
        """Add tiles until a workload misses its QoS; write tile count, score and QoS margins to OUT/summary.json."""
        from densim.cli.common import out_folder, status, write_result
        from densim.errors import InputError
        from densim.tools.tiles.core import load_host, run_bench

        pr = Printer(as_json=json_out, quiet=quiet)
        try:
            out_folder(out)  # a folder or a new name, never a file or a device such as /dev/null
            h = load_host(host)
            if seed is not None:
                h = h.model_copy(update={"run": h.run.model_copy(update={"seed": seed})})
            with status(f"bench tiles {h.name}: adding tiles", quiet=quiet, no_progress=no_progress):
                doc = run_bench(h)
        except InputError as exc:
            fail(exc.one_line())
        write_result(out, doc)
        pr.json(doc)
        r = doc["result"]
        pr.line(f"{h.name}: {r['tiles']} tiles ({r['vms']} VMs incl. partial tile; {r['tiles_fractional']:.2f} with partial), "
                f"score {r['score']:.2f}, limited by {r['limiting_workload']} (seed {doc['seed']})")
        for w in r["workloads"]:
            if w["qos_margin"] is not None:
                pr.line(f"  {w['name']:<6} QoS margin {w['qos_margin'] * 100:+6.1f} %  throughput {w['throughput_per_s']:.1f}/s")
        pr.line(f"wrote {out / RESULT_FILE}")

    @bench.command("compare")
    def compare(
        a: Annotated[Path, typer.Argument(help="first result: a 'bench tiles' --out folder or its summary.json")],
        b: Annotated[Path, typer.Argument(help="second result: a folder or a result JSON")],
        json_out: JsonOpt = False,
        as_csv: CsvOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        """Show two tile benchmark results side by side."""
        from densim.errors import InputError
        from densim.tools.tiles.compare import comparison_rows, format_comparison, load_result

        pr = Printer(as_json=json_out, as_csv=as_csv, quiet=quiet)
        pa, pb = _result_path(a), _result_path(b)
        try:
            da, db = load_result(pa), load_result(pb)
        except InputError as exc:
            fail(exc.one_line())
        rows = comparison_rows(da, db)
        pr.json({"a": str(pa), "b": str(pb), "rows": [{"figure": lab, "a": va, "b": vb} for lab, va, vb in rows]})
        if not pr.shows_text:
            return
        if pr.as_csv:
            from rich.table import Table

            tab = Table("figure", a.name, b.name, title="tile benchmark results side by side")
            for row in rows:
                tab.add_row(*row)
            csv_data(tab, ["figure", "unit", a.name, b.name], _compare_csv_rows(rows, da, db))
            pr.table(tab)
        else:
            typer.echo(format_comparison(da, db, a.name, b.name))

    app.add_typer(bench, name="bench")


def _compare_csv_rows(rows: list[tuple[str, str, str]], da: dict, db: dict) -> list[list]:
    """``bench compare --csv``: the hardware and configuration rows as text, the results as numbers with their unit
    (tiles, score, and per workload its QoS margin, percentile response and bound instead of one formatted cell)."""
    out: list[list] = [[lab, "", va, vb] for lab, va, vb in rows
                       if lab not in ("memory", "tiles", "tiles (with partial)", "VMs", "score") and not lab.startswith("QoS margin ")]
    out.insert(3, ["memory", "GiB", da["host"]["server"]["memory"] / 1024**3, db["host"]["server"]["memory"] / 1024**3])
    ra, rb = da["result"], db["result"]
    out += [["tiles", "tiles", ra["tiles"], rb["tiles"]], ["tiles (with partial)", "tiles", ra["tiles_fractional"], rb["tiles_fractional"]],
            ["VMs", "VMs", ra["vms"], rb["vms"]], ["score", "", ra["score"], rb["score"]]]
    wa = {w["name"]: w for w in ra["workloads"]}
    wb = {w["name"]: w for w in rb["workloads"]}
    for name in dict.fromkeys([*wa, *wb]):
        def get(w, key, scale):
            return None if w is None or w.get(key) is None else w[key] * scale
        a, b = wa.get(name), wb.get(name)
        out += [[f"QoS margin {name}", "%", get(a, "qos_margin", 100), get(b, "qos_margin", 100)],
                [f"response percentile {name}", "%", get(a, "qos_share", 100), get(b, "qos_share", 100)],
                [f"response at the percentile {name}", "ms", get(a, "p_response_s", 1000), get(b, "p_response_s", 1000)],
                [f"response bound {name}", "ms", get(a, "qos_bound_s", 1000), get(b, "qos_bound_s", 1000)]]
    return out
