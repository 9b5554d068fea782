"""Helpers every CLI command shares: one-line errors on stderr and a non-zero exit status."""

from __future__ import annotations

import typer

from densim.errors import InputError, ScenarioInvalid


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
