"""What the page starts from: the scenario (or inventory) given on the command line, the built-in demo,
the scenario files of an examples folder and the points of its sweep studies.

Each source is a merged scenario mapping (``densim.spec.loader.load_mapping``: imports merged, file
paths made absolute) with the name ``densim run`` would print in its errors. The page picks a source
by its id only; it never names a file.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from densim.errors import InputError

#: trace formats a scenario's VM group can read whole (VM count and sizes from the trace)
INVENTORY_FORMATS = ("bitbrains", "opendc", "azure")


@dataclass(frozen=True)
class Source:
    id: str
    label: str
    kind: str  # given | builtin | example | study
    mapping: dict[str, Any]  # merged scenario mapping (absolute paths)
    origin: str  # the file errors name (as ``densim run FILE`` would)
    base_dir: str

    def fresh(self) -> dict[str, Any]:
        return copy.deepcopy(self.mapping)

    def describe(self) -> dict[str, str]:
        return {"id": self.id, "label": self.label, "kind": self.kind}


def scenario_source(path: Path, sid: str, label: str, kind: str) -> Source:
    """A scenario file as a source; raises :class:`~densim.errors.InputError` when it does not load."""
    from densim.spec.loader import load_mapping, load_scenario

    load_scenario(path)  # every problem of the file, as `densim run` reports it
    return Source(sid, label, kind, load_mapping(path), str(path), str(Path(path).resolve().parent))


def inventory_source(path: Path, server: str | None, hosts: int | None) -> Source:
    """A trace inventory (Bitbrains, OpenDC, Azure folder) as a scenario: its VMs on ``hosts`` x ``server``.

    An inventory says nothing about hosts, so both must be given (no silent default host)."""
    from densim.plant import plant_from_dict
    from densim.workloads.formats import detect_format

    fmt = detect_format(path)
    if fmt not in INVENTORY_FORMATS:
        raise InputError(path, "", f"serve reads {', '.join(INVENTORY_FORMATS)} inventory folders directly (VM sizes and demand "
                                   f"from the files); for a {fmt} inventory write a scenario that names it (see examples/) or use 'densim plan'")
    if server is None or hosts is None:
        raise InputError(path, "", "an inventory gives VMs, not hosts: give --server NAME (a catalog server) and --hosts N")
    mapping = {
        "name": Path(path).name,
        "description": f"{fmt} inventory {path}",
        "cluster": {"hosts": [{"name": "host", "server": server, "count": hosts}]},
        "vms": [{"name": Path(path).name, "trace": {"format": fmt, "path": str(Path(path).resolve())}}],
    }
    origin = str(path)
    plant_from_dict(mapping, source=origin, base_dir=Path(path).resolve().parent)  # fails here, not on the page
    return Source("given", f"{Path(path).name} (inventory, {fmt})", "given", mapping, origin, str(Path(path).resolve().parent))


def _looks_like(path: Path, keys: tuple[str, ...]) -> bool:
    from densim.textio import read_mapping_file

    try:
        data = read_mapping_file(path, "file")
    except InputError:
        return False
    return isinstance(data, dict) and all(k in data for k in keys)


def folder_sources(folder: Path, *, with_studies: bool = True) -> tuple[list[Source], list[str]]:
    """Every scenario file under ``folder`` and every point of its sweep studies.

    Files that are neither, or that do not load, are skipped; the second value lists them with the
    reason (the server prints it), so nothing is dropped silently."""
    folder = Path(folder).resolve()
    out: list[Source] = []
    skipped: list[str] = []
    for p in sorted(folder.rglob("*.yaml")):
        rel = p.relative_to(folder).as_posix()
        try:
            if _looks_like(p, ("cluster", "vms")):
                out.append(scenario_source(p, f"example/{rel}", rel, "example"))
            elif with_studies and _looks_like(p, ("scenario", "axes")):
                from densim.tools.sweep.expand import load_sweep

                sw = load_sweep(p)
                if sw.spec.runner != "engine":
                    continue
                base_dir = sw.extra["base_dir"]
                origin = str((p.parent / sw.spec.scenario))
                for pt in sw.points:
                    where = ", ".join(f"{k}={v}" for k, v in pt.values.items())
                    out.append(Source(f"study/{rel}#{pt.id}", f"{rel}: {where}", "study", pt.mapping, origin, base_dir))
        except InputError as exc:
            skipped.append(exc.one_line())
        except (KeyError, ValueError) as exc:  # e.g. an unknown runner name
            skipped.append(f"{rel}: {exc}")
    return out, skipped


def builtin_sources() -> list[Source]:
    from densim.builtin import builtin_path

    return [scenario_source(builtin_path("demo.yaml"), "builtin/demo", "built-in demo", "builtin")]


class Sources:
    """The sources of one server, by id (the given one first)."""

    def __init__(self, items: list[Source]) -> None:
        self._items = {s.id: s for s in items}

    def __getitem__(self, sid: str) -> Source:
        return self._items[sid]

    def __contains__(self, sid: object) -> bool:
        return sid in self._items

    def list(self) -> list[dict[str, str]]:
        return [s.describe() for s in self._items.values()]

    @property
    def first(self) -> Source:
        return next(iter(self._items.values()))
