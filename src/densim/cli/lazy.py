"""The ``densim`` command group with its commands built on first use.

typer turns every registered command into a click command when the program starts: it reads each
command function's signature and evaluates its annotations, and the command modules of
:mod:`densim.cli.commands` (and what they import) had to be imported to register them. For
``densim run`` that was about 20 commands built and nine modules imported to run one. Here
the group holds, per command name, how to build it: :class:`LazyCommands` builds a command (and
imports its module) the first time it is asked for by name, so ``densim run`` builds ``run`` only.
Listing every command (``densim --help``, shell completion of a command name) builds them all.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

import typer
import typer.main
from typer.core import TyperGroup

Builder = Callable[[], dict[str, Any]]  # () -> {name: click command}: the commands one builder makes


class LazyCommands(MutableMapping):
    """Click commands by name, in the order ``densim --help`` lists them; one not built yet is built on first access.

    ``pending`` maps each name to the builder that makes it; a builder may make several commands (a
    module registering ``io``, ``calibrate`` and ``size``), all kept when it runs."""

    def __init__(self, built: dict[str, Any], pending: dict[str, Builder]) -> None:
        self._built = dict(built)
        self._pending = {k: v for k, v in pending.items() if k not in self._built}
        self._order = list(dict.fromkeys([*self._built, *self._pending]))

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            build = self._pending[name]  # KeyError: no such command
            made = build()
            if name not in made:
                raise RuntimeError(f"the builder of command {name!r} made {sorted(made)} instead")
            for key, cmd in made.items():
                self._built[key] = cmd
                self._pending.pop(key, None)
                if key not in self._order:
                    self._order.append(key)
        return self._built[name]

    def __contains__(self, name: object) -> bool:
        return name in self._built or name in self._pending

    def __iter__(self) -> Iterator[str]:
        return iter([k for k in self._order if k in self])

    def __len__(self) -> int:
        return sum(1 for k in self._order if k in self)

    def __setitem__(self, name: str, cmd: Any) -> None:
        self._built[name] = cmd
        self._pending.pop(name, None)
        if name not in self._order:
            self._order.append(name)

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._built.pop(name, None)
        self._pending.pop(name, None)

    def is_built(self, name: str) -> bool:
        """Whether ``name`` has been built already (for tests)."""
        return name in self._built


class LazyGroup(TyperGroup):
    """A :class:`typer.core.TyperGroup` whose commands come from :meth:`pending` and are built on first use.

    A subclass gives ``pending()``: ``{name: builder}`` in listing order. typer still builds the commands
    registered on the Typer app itself (none, for ``densim``), and they are listed first."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.commands = LazyCommands(dict(self.commands), self.pending())

    def pending(self) -> dict[str, Builder]:
        return {}


def typer_like(app: typer.Typer) -> typer.Typer:
    """An empty Typer app with ``app``'s settings that shape its commands (help mark-up, exceptions)."""
    return typer.Typer(rich_markup_mode=app.rich_markup_mode, pretty_exceptions_enable=app.pretty_exceptions_enable,
                       pretty_exceptions_short=app.pretty_exceptions_short,
                       pretty_exceptions_show_locals=app.pretty_exceptions_show_locals, add_completion=False)


def _group_commands(sub: typer.Typer) -> dict[str, Any]:
    return dict(typer.main.get_group(sub).commands)


def from_module(app: typer.Typer, module: str) -> Builder:
    """The builder of the commands that ``module``'s ``register(app)`` adds: imports the module when run."""
    def build() -> dict[str, Any]:
        sub = typer_like(app)
        importlib.import_module(module).register(sub)
        return _group_commands(sub)

    return build


def from_typer(app: typer.Typer, source: typer.Typer, name: str) -> Builder:
    """The builder of command ``name`` registered (``@source.command()``) on the Typer app ``source``."""
    def build() -> dict[str, Any]:
        sub = typer_like(app)
        sub.registered_commands = [c for c in source.registered_commands
                                   if (c.name or typer.main.get_command_name(c.callback.__name__)) == name]
        return _group_commands(sub)

    return build


def command_names(source: typer.Typer) -> list[str]:
    """The names of the commands registered on ``source``, in order."""
    return [c.name or typer.main.get_command_name(c.callback.__name__) for c in source.registered_commands]
