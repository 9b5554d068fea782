"""``densim warmup``: compile the numba kernels of a run ahead of use, into numba's on-disk cache.

Every densim kernel is compiled with ``cache=True`` (:mod:`densim._jit`): the first process that
calls a kernel compiles it (tens of seconds for the CPU kernel and the placement kernels on a
2-core machine) and every later one loads the machine code from ``__pycache__``. A fresh clone
would pay that inside its first ``densim demo``, silently; ``make demo`` (``scripts/bootstrap.sh``)
runs this command once at install time instead, with a line saying what it is doing.

What it runs: the built-in demo scenario, simulated in memory (nothing is written), so the kernels
compiled are exactly those of the demo and of any plain run (CPU kernel, first-fit placement);
models a scenario switches on later (memory, storage faults) compile their own kernels on first use.
"""

from __future__ import annotations

import time
from typing import Any

import typer

from densim.cli.common import JsonOpt, Printer, QuietOpt, run_guarded


def warmup() -> dict[str, Any]:
    """Simulate the built-in demo once (in memory) so its kernels are compiled and cached; returns what ran."""
    from densim._jit import HAVE_NUMBA
    from densim.builtin import builtin_path
    from densim.engine import simulate
    from densim.engine.preload import run_kernels
    from densim.plant import load_plant

    t0 = time.perf_counter()
    plant = load_plant(builtin_path("demo.yaml"))
    kernels = run_kernels(plant.spec)
    if HAVE_NUMBA:
        simulate(plant)
    return {"numba": HAVE_NUMBA, "scenario": "demo", "kernels": kernels, "seconds": time.perf_counter() - t0}


def register(app: typer.Typer) -> None:
    @app.command("warmup")
    def warmup_cmd(json_out: JsonOpt = False, quiet: QuietOpt = False) -> None:
        """Compile the numba kernels of a run ahead of use (one time, about a minute; `make demo` runs it at install)."""
        pr = Printer(as_json=json_out, quiet=quiet)
        if not quiet:
            typer.echo("compiling kernels (one time, about a minute)...", err=True)
        res = run_guarded(warmup)
        pr.json(res)
        if not res["numba"]:
            pr.line("numba is not installed: nothing to compile (kernels run as plain Python)")
        else:
            pr.line(f"kernels compiled and cached in {res['seconds']:.1f} s (the demo's: {', '.join(res['kernels'])}, "
                    f"and the placement kernels)")
