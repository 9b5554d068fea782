"""One error type for bad input, rendered as one line: ``FILE:WHERE: problem``.

Every class here survives pickling (``pickle.loads(pickle.dumps(e))`` gives an equal error with the
same attributes): a sweep task's error crosses from a worker process to the driver, and an error
that cannot be rebuilt there would break the whole process pool instead of failing one task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _rebuild(cls: type, args: tuple, state: dict[str, Any]) -> BaseException:
    """Unpickle a densim error without calling its ``__init__`` (whose signature differs from ``args``)."""
    exc = cls.__new__(cls)
    exc.args = args
    exc.__dict__.update(state)
    return exc


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

    def __reduce__(self) -> tuple:
        # the default (cls(*self.args)) calls __init__ with the one-line text alone: a TypeError when
        # unpickling, which breaks a ProcessPoolExecutor for every task (issue 29)
        return _rebuild, (type(self), self.args, dict(self.__dict__))

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


class OutputError(InputError):
    """A result that cannot be written: the file (as the user will find it, never a temporary name) and
    the operating system's reason, e.g. ``cannot write out/x/hosts.parquet: No space left on device``.

    ``errno`` is the operating system's error number when there is one (``errno.ENOSPC``, ...)."""

    def __init__(self, path: str | Path, problem: str, errno: int | None = None, *, verb: str = "write") -> None:
        self.path = str(path)
        self.errno = errno
        self.verb = verb
        super().__init__(None, "", f"cannot {verb} {path}: {problem}")


class OutputBusy(InputError):
    """Another densim process holds the lock of an output folder (it is writing it now)."""

    def __init__(self, path: str | Path, pid: int | None) -> None:
        self.path = str(path)
        self.pid = pid
        who = f" (pid {pid})" if pid else ""
        super().__init__(None, "", f"{path} is being written by another densim process{who}")
