"""The ``densim`` command group builds a command, and imports its module, only when it is asked for (issue 34).

``densim run --help`` (and ``densim run``) used to import every command module of
:mod:`densim.cli.commands` and build all 20 commands to run one; the group is now lazy
(:mod:`densim.cli.lazy`). These tests check that the lazy group is the same command line: the same
names in the same order, each built from the module that registers it, and that a command's start
imports no other command's module nor a heavy library it does not need.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import typer
import typer.main
from typer.testing import CliRunner

import densim.cli.commands as commands_pkg
from densim.cli.lazy import LazyCommands
from densim.cli.main import COMMAND_MODULES, app

SRC = Path(__file__).resolve().parents[2] / "src"
OWN = ["run", "validate", "schema", "demo", "studies", "study", "models"]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}


def _eager() -> list[str]:
    """The command names the modules of densim.cli.commands register, in typer's order (commands, then groups),
    as the old eager start-up built them: every module imported, in pkgutil order, each register(app) called."""
    eager = typer.Typer()
    eager.callback()(lambda: None)
    for mod in pkgutil.iter_modules(commands_pkg.__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"densim.cli.commands.{mod.name}").register(eager)
    return list(typer.main.get_group(eager).commands)


def test_the_table_names_every_command_of_every_module_in_the_listing_order():
    # a command module added without a COMMAND_MODULES entry would be missing from `densim`: this fails
    assert list(COMMAND_MODULES) == _eager()
    modules = {m.name for m in pkgutil.iter_modules(commands_pkg.__path__) if not m.name.startswith("_")}
    assert set(COMMAND_MODULES.values()) == modules


def test_the_group_lists_the_same_commands_in_the_same_order():
    root = typer.main.get_command(app)
    assert list(root.commands) == OWN + list(COMMAND_MODULES)
    assert root.list_commands(None) == OWN + list(COMMAND_MODULES)


def test_a_command_is_built_only_when_asked_for_and_its_module_builds_all_it_registers():
    root = typer.main.get_command(app)
    cmds = root.commands
    assert isinstance(cmds, LazyCommands)
    assert not any(cmds.is_built(n) for n in cmds)  # nothing built by typer up front
    assert cmds["io"].name == "io"
    # storage.py registers io, calibrate and size: one import builds the three
    assert [n for n in cmds if cmds.is_built(n)] == ["io", "calibrate", "size"]
    assert cmds.get("no-such-command") is None and "no-such-command" not in cmds
    assert cmds["bench"].commands["tiles"].name == "tiles"  # a group (add_typer) comes whole


def test_every_help_prints_as_before_and_a_typo_is_still_suggested():
    runner = CliRunner()
    top = runner.invoke(app, ["--help"])
    assert top.exit_code == 0
    listed = [ln.split()[0] for ln in top.stdout.split("Commands:")[1].splitlines() if ln.strip()]
    assert listed == OWN + list(COMMAND_MODULES)
    r = runner.invoke(app, ["rnu"])
    assert r.exit_code == 2 and "Did you mean 'run'?" in r.output


PROBE = textwrap.dedent("""\
    import json, sys
    sys.argv = ["densim", *sys.argv[1:]]
    from densim.cli.main import main
    try:
        main()
    except SystemExit:
        pass
    print(json.dumps(sorted(sys.modules)), file=sys.stderr)
    """)


def _imported(argv: list[str]) -> set[str]:
    r = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=_env(), timeout=300)
    return set(json.loads(r.stderr.strip().splitlines()[-1]))


def test_run_help_imports_no_command_module_and_no_heavy_library():
    mods = _imported(["run", "--help"])
    assert not [m for m in mods if m.startswith("densim.cli.commands.")]
    heavy = {"numpy", "numba", "polars", "duckdb", "plotly", "scipy", "pyarrow", "dask", "fastapi", "jinja2", "yaml",
             "rich", "pint", "densim.engine", "densim.spec", "densim.plant"}
    assert not heavy & mods


def test_plan_help_imports_its_own_module_only():
    mods = _imported(["plan", "--help"])
    assert [m for m in mods if m.startswith("densim.cli.commands.")] == ["densim.cli.commands.plan"]
