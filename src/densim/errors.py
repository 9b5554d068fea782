"""One error type for bad input, rendered as one line: ``FILE:WHERE: problem``."""

from __future__ import annotations

from pathlib import Path


class InputError(ValueError):
    """Bad user input: a scenario, trace, inventory or option.

    Parameters
    ----------
    source:
        The file (or option) the problem is in.
    where:
        Row/column, field path or sheet that locates it, or ``""``.
    problem:
        What is wrong, in a few words.
    """

    def __init__(self, source: str | Path | None, where: str, problem: str) -> None:
        self.source = str(source) if source is not None else ""
        self.where = where
        self.problem = problem
        super().__init__(self.one_line())

    def one_line(self) -> str:
        parts = [p for p in (self.source, self.where) if p]
        head = ":".join(parts)
        text = f"{head}: {self.problem}" if head else self.problem
        return " ".join(text.split())


class ScenarioInvalid(InputError):
    """A scenario file with one or more problems; ``issues`` holds them all."""

    def __init__(self, source: str | Path, issues: list[tuple[str, str]]) -> None:
        self.issues = issues
        first_where, first_problem = issues[0]
        more = f" (+{len(issues) - 1} more)" if len(issues) > 1 else ""
        super().__init__(source, first_where, first_problem + more)

    def lines(self) -> list[str]:
        return [f"{self.source}:{w}: {p}" if w else f"{self.source}: {p}" for w, p in self.issues]


class PartError(InputError):
    """A catalog part (device, controller, target, ...) lacks a figure a model needs.

    The message names the part and the field, e.g. ``device 'foo': seq_read is required by the
    fabric model (give seq_read, or media_rate for an HDD)``.
    """

    def __init__(self, problem: str) -> None:
        super().__init__(None, "", problem)
