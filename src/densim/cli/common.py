"""Helpers every CLI command shares: one-line errors, the shared options and how results are printed.

The conventions (docs/background/cli-conventions.md) in code:

* ``--json`` prints the command's result document as strict JSON (NaN and infinities are ``null``);
* ``--quiet`` prints nothing but errors (and what ``--json`` asked for), and no progress;
* ``--csv`` prints every table as CSV (a table with a title follows a ``# title`` line);
* tables are full width when stdout is not a terminal (never wrapped at 80 columns);
* progress goes to stderr, only when stderr is a terminal and not ``--quiet``;
* ``--out`` is always a folder; a command with one result document writes it as ``OUT/summary.json``;
  its lock is taken when the option is checked (:func:`out_folder`), so a second densim process writing
  the same folder fails at once, and the folder is written whole (:func:`densim.atomic.output_folder`);
* an operating-system error (no space, read-only, permission) is one line naming the file, exit 1;
* ``--seed`` defaults to :data:`densim.rng.DEFAULT_SEED` everywhere.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Iterator

import typer

from densim.errors import InputError, ScenarioInvalid
from densim.rng import DEFAULT_SEED

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

RESULT_FILE = "summary.json"  # the one result document a command with --out writes into its folder
WIDE = 10_000  # console width when stdout is not a terminal: tables at their natural width, never wrapped

JsonOpt = Annotated[bool, typer.Option("--json", help="print the result as strict JSON (NaN and infinities are null) "
                                                      "instead of tables")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="print nothing but errors (and --json output); no progress")]
CsvOpt = Annotated[bool, typer.Option("--csv", help="print tables as CSV (each after a '# title' line) instead of boxes")]
NoProgressOpt = Annotated[bool, typer.Option("--no-progress", help="no progress display (on stderr, only on a terminal)")]
SeedOpt = Annotated[int, typer.Option("--seed", min=0, max=2**64 - 1, help="root seed (0 to 2**64 - 1), recorded in the results")]


def fail(msg: str, code: int = 1) -> None:
    """Print a one-line error to stderr and exit non-zero."""
    typer.echo(f"densim: error: {msg}", err=True)
    raise typer.Exit(code)


def run_guarded(fn, *args, **kwargs):
    """Call ``fn``; turn bad-input errors into one line each on stderr and exit status 1."""
    try:
        return fn(*args, **kwargs)
    except ScenarioInvalid as exc:
        for line in exc.lines():
            typer.echo(f"densim: error: {line}", err=True)
        raise typer.Exit(1) from None
    except InputError as exc:
        fail(exc.one_line())
    except KeyError as exc:  # unknown registry names
        fail(str(exc).strip("'\""))
    except OSError as exc:  # reading or writing a file: the file and the reason, one line
        fail(os_error_line(exc))


def os_error_line(exc: BaseException) -> str:
    """One line for an operating-system error: the file(s) it names and the reason (``out/x: No space left on device``)."""
    from densim.atomic import os_problem, shown_path

    problem = os_problem(exc)
    if problem is None:
        return " ".join(str(exc).split()) or type(exc).__name__
    names = [str(shown_path(n)) for n in (getattr(exc, "filename", None), getattr(exc, "filename2", None)) if n is not None]
    return f"{' -> '.join(names)}: {problem[1]}" if names else " ".join(str(exc).split())


# --------------------------------------------------------------------------------------------
# --out: always a folder


def out_folder(out: Path, option: str = "--out", *, whole: bool = False) -> Path:
    """``out`` must be a folder or not exist yet (a file, /dev/null or a name the file system refuses is an error).

    A new name ending in ``.json`` is refused too: it is the old form of ``--out`` (a result file) of
    ``io``, ``size`` and ``bench tiles``; the result now goes to ``OUT/summary.json``.

    ``whole``: the command replaces the folder whole (:func:`densim.atomic.output_folder`: run, demo,
    study, plan, forecast), so it must be new, empty or a densim result
    (:func:`densim.atomic.check_replaceable`), checked now, before the work."""
    try:
        if out.exists() and not out.is_dir():
            raise InputError(f"{option} {out}", "", "exists and is not a folder; results go to a folder")
        if not out.exists() and out.suffix.lower() == ".json":
            raise InputError(f"{option} {out}", "", f"--out is a folder, not a JSON file: give a folder and the result "
                                                   f"is written to FOLDER/{RESULT_FILE}")
        for parent in out.parents:
            if parent.exists():
                if not parent.is_dir():
                    raise InputError(f"{option} {out}", "", f"{parent} is not a folder")
                break
    except OSError as exc:
        raise InputError(f"{option} {out}", "", f"not a usable folder name: {exc.strerror}") from None
    if whole:
        from densim.atomic import check_replaceable

        check_replaceable(out)
    _claim(out)
    return out


def _claim(out: Path) -> None:
    """Inside a command: hold the lock of output folder ``out`` until the command ends, so a second densim
    process writing it fails now (:class:`~densim.errors.OutputBusy`), not after its work. Outside a
    command (a library call) nothing is held; the writer takes the lock itself."""
    ctx = _current_context()
    if ctx is None:
        return
    from contextlib import ExitStack

    from densim.atomic import output_lock
    from densim.errors import OutputError

    stack = ExitStack()
    try:
        stack.enter_context(output_lock(out))
    except OutputError:
        return  # e.g. a read-only parent folder: the writer reports it, naming the file
    ctx.call_on_close(stack.close)


def _current_context():
    """The click context of the command running now, or None outside a command.

    typer 0.2x runs its commands on its own copy of click (``typer._click``), whose context stack
    click's ``get_current_context`` does not see; older typer runs them on click itself."""
    try:
        from typer._click.globals import get_current_context
    except ImportError:  # typer on click itself
        from click import get_current_context
    return get_current_context(silent=True)


def out_file(out: Path, option: str = "--out") -> Path:
    """``out`` must be a regular file or not exist yet (not a folder or a device); for options that name a file
    (``report --html``), never ``--out``."""
    try:
        if out.is_dir():
            raise InputError(f"{option} {out}", "", "is a folder; give a file name")
        if out.exists() and not out.is_file():
            raise InputError(f"{option} {out}", "", "is not a regular file (a device or FIFO)")
        if out.parent.exists() and not out.parent.is_dir():
            raise InputError(f"{option} {out}", "", f"{out.parent} is not a folder")
    except OSError as exc:
        raise InputError(f"{option} {out}", "", f"not a usable file name: {exc.strerror}") from None
    return out


def write_result(out: Path, doc: Any, name: str = RESULT_FILE) -> Path:
    """Write ``doc`` as strict JSON to ``OUT/name`` (atomically, with the process umask)."""
    from densim.atomic import write_json_atomic

    return write_json_atomic(Path(out) / name, doc)


# --------------------------------------------------------------------------------------------
# printing


def console(stderr: bool = False) -> Console:
    """A rich console; on a pipe or file (not a terminal) full width, so tables are never wrapped at 80 columns."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(file=stream, highlight=False, width=None if stream.isatty() else WIDE, soft_wrap=not stream.isatty())


def csv_data(tab: Table, header: list[str], rows: list[list[Any]]) -> Table:
    """Attach what ``--csv`` writes for ``tab`` instead of its printed cells: ``header`` names one quantity per
    column with its unit (``latency_ms``, ``cpu_use_pct``), ``rows`` hold plain numbers (``None``: empty cell) or
    text for names. The printed table keeps its formatted cells ("10,000 / 10,000", "1.2 ms")."""
    rows = [list(r) for r in rows]
    for r in rows:
        if len(r) != len(header):
            raise ValueError(f"csv row of {len(r)} cells for {len(header)} columns: {r!r}")
    tab.csv_rows = (list(header), rows)  # type: ignore[attr-defined]
    return tab


def _csv_value(v: Any) -> Any:
    """A number as Python writes it (shortest round-trip), a bool as true/false, None as an empty cell."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return v
    if hasattr(v, "item"):  # numpy scalar
        return _csv_value(v.item())
    return str(v)


def table_csv(tab: Table) -> str:
    """A rich table as CSV text: the numbers attached with :func:`csv_data` (one quantity per column, units in the
    header), else the header row and every row as printed (text tables: names, descriptions)."""
    import csv
    import io

    from densim.csvsafe import safe_row

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    data = getattr(tab, "csv_rows", None)
    if data is not None:
        w.writerow(safe_row(data[0]))
        for r in data[1]:
            w.writerow(safe_row(_csv_value(v) for v in r))
        return buf.getvalue()
    cols = list(tab.columns)
    if tab.show_header:
        w.writerow(safe_row(str(c.header) for c in cols))
    cells = [[str(x) for x in c.cells] for c in cols]
    for row in zip(*cells):
        w.writerow(safe_row(row))  # a VM name such as '=HYPERLINK(...)' is not run by a spreadsheet
    return buf.getvalue()


class Printer:
    """Where a command's output goes, by --json / --csv / --quiet.

    ``table`` and ``line`` print in the default (table) and CSV modes (in CSV mode, lines go to stderr
    so stdout stays CSV); ``json`` prints in JSON mode only. ``--quiet`` silences tables and lines."""

    def __init__(self, *, as_json: bool = False, as_csv: bool = False, quiet: bool = False) -> None:
        if as_json and as_csv:
            fail("--json and --csv: give one of them", code=2)
        self.as_json, self.as_csv, self.quiet = as_json, as_csv, quiet
        self._con: Console | None = None
        self._tables = 0

    @property
    def con(self) -> Console:
        if self._con is None:
            self._con = console()
        return self._con

    @property
    def shows_text(self) -> bool:
        return not (self.quiet or self.as_json)

    def table(self, tab: Table) -> None:
        if not self.shows_text:
            return
        if self.as_csv:
            if self._tables:
                sys.stdout.write("\n")
            if tab.title:
                sys.stdout.write(f"# {tab.title}\n")
            sys.stdout.write(table_csv(tab))
            sys.stdout.flush()
            self._tables += 1
        else:
            self.con.print(tab)

    def line(self, text: str = "") -> None:
        if not self.shows_text:
            return
        if self.as_csv:
            typer.echo(text, err=True)
        else:
            self.con.print(text, markup=False, highlight=False)

    def json(self, doc: Any) -> None:
        if self.as_json:
            from densim.atomic import dumps_strict

            typer.echo(dumps_strict(doc, indent=2))


# --------------------------------------------------------------------------------------------
# progress: on stderr, only on a terminal


def progress_wanted(quiet: bool = False, no_progress: bool = False) -> bool:
    return not (quiet or no_progress) and sys.stderr.isatty()


@contextmanager
def status(label: str, *, quiet: bool = False, no_progress: bool = False) -> Iterator[Any]:
    """A spinner with the elapsed time on stderr while a step without a count runs; yields
    ``update(text)`` to name the current phase (a no-op when no progress is shown)."""
    if not progress_wanted(quiet, no_progress):
        yield lambda text: None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console(stderr=True),
                  transient=True) as prog:
        task = prog.add_task(label, total=None)
        # drawn at once (refresh=True): a phase shorter than the 0.1 s auto-refresh would otherwise never be shown
        yield lambda text: prog.update(task, description=f"{label}: {text}", refresh=True)


@contextmanager
def bar(label: str, total: int, *, quiet: bool = False, no_progress: bool = False) -> Iterator[Any]:
    """A progress bar on stderr for ``total`` items; yields ``advance(description)`` (a no-op when hidden)."""
    if not progress_wanted(quiet, no_progress):
        yield lambda text=None: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console(stderr=True), transient=True) as prog:
        task = prog.add_task(label, total=total)

        def advance(text: str | None = None) -> None:
            prog.update(task, advance=1, description=label if text is None else f"{label}: {text}")

        yield advance


__all__ = ["DEFAULT_SEED", "RESULT_FILE", "Printer", "bar", "console", "fail", "os_error_line", "out_file", "out_folder", "run_guarded",
           "status", "table_csv", "write_result"]
