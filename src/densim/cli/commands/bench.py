"""``densim bench tiles HOST.yaml`` and ``densim bench compare A.json B.json``."""

from __future__ import annotations

from pathlib import Path

import typer

from densim.cli.common import fail


def register(app: typer.Typer) -> None:
    bench = typer.Typer(help="Consolidation benchmark in tiles (web, NFS, Java app, DB, IMAP mail, idle VM).", no_args_is_help=True)

    @bench.command("tiles")
    def tiles(
        host: Path = typer.Argument(..., help="host file: server (catalog name), virtualization switches, run settings"),
        out: Path = typer.Option(Path("bench-tiles.json"), "--out", "-o", help="result JSON file"),
        seed: int | None = typer.Option(None, "--seed", min=0, max=2**64 - 1,
                                        help="override the host file's run.seed (0 to 2**64 - 1)"),
    ) -> None:
        """Add tiles until a workload misses its QoS; write tile count, score and QoS margins as JSON."""
        from densim.atomic import write_json_atomic
        from densim.cli.main import out_file
        from densim.tools.tiles.core import load_host, run_bench
        from densim.errors import InputError

        try:
            out_file(out)  # a regular file or a new name, never a folder or a device such as /dev/null
            h = load_host(host)
            if seed is not None:
                h = h.model_copy(update={"run": h.run.model_copy(update={"seed": seed})})
            doc = run_bench(h)
        except InputError as exc:
            fail(exc.one_line())
        write_json_atomic(out, doc)
        r = doc["result"]
        typer.echo(f"{h.name}: {r['tiles']} tiles ({r['vms']} VMs incl. partial tile; {r['tiles_fractional']:.2f} with partial), "
                   f"score {r['score']:.2f}, limited by {r['limiting_workload']}")
        for w in r["workloads"]:
            if w["qos_margin"] is not None:
                typer.echo(f"  {w['name']:<6} QoS margin {w['qos_margin'] * 100:+6.1f} %  throughput {w['throughput_per_s']:.1f}/s")
        typer.echo(f"wrote {out}")

    @bench.command("compare")
    def compare(a: Path = typer.Argument(..., help="first result JSON"), b: Path = typer.Argument(..., help="second result JSON")) -> None:
        """Show two tile benchmark results side by side."""
        from densim.tools.tiles.compare import format_comparison, load_result
        from densim.errors import InputError

        try:
            da, db = load_result(a), load_result(b)
        except InputError as exc:
            fail(exc.one_line())
        typer.echo(format_comparison(da, db, a.name, b.name))

    app.add_typer(bench, name="bench")
