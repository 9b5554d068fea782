"""``out_folder`` holds ``--out``'s lock for the whole command (docs/background/cli-conventions.md, "one writer").

typer 0.2x runs commands on its own copy of click (``typer._click``); ``click.get_current_context``
then finds no command running, so ``out_folder`` held no lock and a second densim process writing
the same folder failed only when its writer started, after its work. The context is now looked up
where typer keeps it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import typer
from typer.testing import CliRunner

from densim.cli.common import out_folder

SRC = Path(__file__).resolve().parents[2] / "src"

PROBE = textwrap.dedent("""\
    import sys
    from densim.atomic import output_lock
    from densim.errors import OutputBusy
    try:
        with output_lock(sys.argv[1]):
            print("free")
    except OutputBusy as e:
        print(e.pid)
    """)


def _probe(out: Path) -> str:
    """What another process sees of ``out``'s lock: the holder's pid, or 'free'."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", PROBE, str(out)], capture_output=True, text=True, env=env,
                          timeout=120).stdout.strip()


def test_out_folder_holds_the_lock_until_the_command_ends(tmp_path):
    out = tmp_path / "out"
    seen = {}
    app = typer.Typer()

    @app.command()
    def work() -> None:
        out_folder(out)
        seen["during"] = _probe(out)  # the command's work would run here

    r = CliRunner().invoke(app, [])
    assert r.exit_code == 0, r.output
    assert seen["during"] == str(os.getpid())  # another process is refused, naming this one
    assert _probe(out) == "free" and not (tmp_path / ".out.lock").exists()  # let go when the command ended


def test_out_folder_outside_a_command_holds_nothing(tmp_path):
    out = tmp_path / "out"
    out_folder(out)  # a library call: the writer takes the lock itself
    assert _probe(out) == "free"
