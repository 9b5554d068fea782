"""Registries: models and policies chosen by name.

Every plugin kind (power models, CPU contention models, placement policies, trace readers,
memory models, ...) has one :class:`Registry`. Entries carry a one-line description and a
source (paper, datasheet) so that ``densim models`` can list them and the docs can be generated.
An unknown name raises an error that lists the valid names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Entry(Generic[T]):
    name: str
    obj: T
    description: str
    source: str


class Registry(Generic[T]):
    """A name -> object table with helpful errors."""

    _all: dict[str, "Registry"] = {}

    def __init__(self, kind: str, default: str | None = None) -> None:
        self.kind = kind
        self.default = default
        self._entries: dict[str, Entry[T]] = {}
        Registry._all[kind] = self

    def register(self, name: str, *, description: str, source: str = "") -> Callable[[T], T]:
        def deco(obj: T) -> T:
            key = name.lower()
            if key in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[key] = Entry(name, obj, description, source)
            return obj

        return deco

    def add(self, name: str, obj: T, *, description: str, source: str = "") -> None:
        self.register(name, description=description, source=source)(obj)

    def get(self, name: str | None) -> T:
        key = (name or self.default or "").lower()
        if key not in self._entries:
            raise KeyError(f"unknown {self.kind} {name!r}; valid names: {', '.join(self.names())}")
        return self._entries[key].obj

    def entry(self, name: str) -> Entry[T]:
        self.get(name)
        return self._entries[name.lower()]

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._entries

    def __iter__(self) -> Iterator[Entry[T]]:
        return iter(sorted(self._entries.values(), key=lambda e: e.name))

    @classmethod
    def all(cls) -> dict[str, "Registry"]:
        return dict(cls._all)
