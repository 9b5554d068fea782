"""``densim serve [SCENARIO or INVENTORY] [--port N]``: the what-if page, served locally."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from densim.cli.common import fail
from densim.cli.estimates import DEFAULT_MAX_MEMORY
from densim.cli.estimates import max_memory_option as _max_memory

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _host_names(ctx, param, value: Optional[list[str]]) -> list[str]:  # noqa: ARG001 - a typer/click option callback
    """``--allow-host`` values: host names (or IPv4 addresses) without port, scheme or path."""
    import re

    out = []
    for v in value or []:
        name = v.strip().lower()
        if not re.fullmatch(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?", name):
            raise typer.BadParameter(f"a host name without port or scheme, such as 'myhost.lan', got {v[:80]!r}")
        out.append(name)
    return out


def serve_command(
    scenario: Annotated[Optional[Path], typer.Argument(help="scenario file, or an inventory folder (Bitbrains, OpenDC, Azure) "
                                                     "with --server and --hosts")] = None,
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, help="TCP port (0: any free port)")] = 8765,
    host: Annotated[str, typer.Option("--host", help="address to listen on; anything but loopback exposes the page "
                                                     "and its files to the network")] = "127.0.0.1",
    out: Annotated[Path, typer.Option("--out", "-o", help="folder for downloadable results (the only folder the server writes)")] = Path("out/serve"),
    examples: Annotated[Optional[Path], typer.Option("--examples", help="folder of scenario files and sweep studies to offer "
                                                     "(default: ./examples when it exists)")] = None,
    server: Annotated[Optional[str], typer.Option("--server", help="inventory only: catalog server of the hosts")] = None,
    hosts: Annotated[Optional[int], typer.Option("--hosts", min=1, help="inventory only: number of hosts")] = None,
    max_memory: Annotated[str, typer.Option("--max-memory", callback=_max_memory, help="refuse a run whose arrays are estimated "
                                            "to need more memory than this, before it starts (as densim run)")] = DEFAULT_MAX_MEMORY,
    allow_host: Annotated[Optional[list[str]], typer.Option("--allow-host", callback=_host_names, help="another name the page is reached by "
                                                            "(requests naming any other host are refused); repeatable")] = None,
) -> None:
    """Start a local web page to change a scenario and see the results update; prints its address."""
    from densim.cli.estimates import check_run_memory
    from densim.cli.main import out_folder
    from densim.errors import InputError
    from densim.tools.serve.app import create_app, run_server
    from densim.tools.serve.runs import Runs
    from densim.tools.serve.sources import Sources, builtin_sources, folder_sources, inventory_source, scenario_source

    items = []
    try:
        out_folder(out)
        if scenario is not None:
            if scenario.is_dir():
                items.append(inventory_source(scenario, server, hosts))
            else:
                if server is not None or hosts is not None:
                    raise InputError(None, "--server/--hosts", "only for an inventory; a scenario file names its hosts")
                items.append(scenario_source(scenario, "given", f"{scenario.name} (given)", "given"))
        items += builtin_sources()
        folder = examples if examples is not None else (Path("examples") if Path("examples").is_dir() else None)
        if folder is not None:
            if not folder.is_dir():
                raise InputError(None, "--examples", f"{folder} is not a folder")
            found, skipped = folder_sources(folder)
            items += found
            for line in skipped:
                typer.echo(f"densim serve: not offered: {line}", err=True)
    except InputError as exc:
        fail(exc.one_line())
    if host not in LOOPBACK:
        typer.echo(f"densim serve: warning: listening on {host}: anyone who can reach this address can run scenarios and "
                   "download their results (there is no login)", err=True)
    limit = int(max_memory)
    app = create_app(Sources(items), out, runs=Runs(max_memory=limit), allow_hosts=tuple(allow_host or ()),
                     check=lambda plant, origin: check_run_memory(plant.spec, origin, limit))
    run_server(app, host, port, on_ready=lambda url: typer.echo(f"densim serve: {url}  (Ctrl-C stops)"))


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_command)
