"""The parts catalog: YAML files shipped in ``densim/catalog/`` plus a scenario's own ``parts``.

A catalog file is a mapping ``section -> list of entries``; every entry has a unique ``name``.
Sections are open: each model module validates the entries of the sections it owns with its own
pydantic class (``catalog.get("devices", name, DeviceSpec)``).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from collections.abc import Callable
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


class CatalogError(KeyError):
    pass


class Catalog:
    """Named parts by section; later layers override earlier ones by name.

    The sections are made on first use: :func:`builtin_catalog` parses the shipped YAML files, and
    :meth:`layered` merges a scenario's parts over them, only when a part is first looked up, so a
    run that reads no catalog part (inline servers and CPUs, no storage or memory model) does not
    parse the catalog (about 30 ms)."""

    def __init__(self, sections: dict[str, dict[str, dict[str, Any]]] | None = None, *,
                 make: Callable[[], dict[str, dict[str, dict[str, Any]]]] | None = None) -> None:
        self._made: dict[str, dict[str, dict[str, Any]]] | None = None
        self._make = make
        if make is None:
            self._made = {k: dict(v) for k, v in (sections or {}).items()}

    @property
    def _sections(self) -> dict[str, dict[str, dict[str, Any]]]:
        made = self._made
        if made is None:  # two threads at once: both make the same sections, one is kept
            made = self._made = self._make()
        return made

    def __getstate__(self) -> dict[str, Any]:  # pickled (a distributed run's plant) with its sections made
        return {"_made": self._sections, "_make": None}

    def layered(self, parts: dict[str, list[dict[str, Any]]] | None) -> "Catalog":
        """A new catalog with ``parts`` (a scenario's own) over this one."""
        over: list[tuple[str, str, dict[str, Any]]] = []  # read now: a part without a name fails here, as it did
        for section, entries in (parts or {}).items():
            for entry in entries or []:
                over.append((section, str(entry["name"]).lower(), dict(entry)))

        def make() -> dict[str, dict[str, dict[str, Any]]]:
            sections = {k: dict(v) for k, v in self._sections.items()}
            for section, key, entry in over:
                sections.setdefault(section, {})[key] = entry
            return sections

        return Catalog(make=make)

    def sections(self) -> list[str]:
        return sorted(self._sections)

    def names(self, section: str) -> list[str]:
        return sorted(e["name"] for e in self._sections.get(section, {}).values())

    def raw(self, section: str, name: str) -> dict[str, Any]:
        entries = self._sections.get(section, {})
        key = str(name).lower()
        if key not in entries:
            valid = ", ".join(self.names(section)) or "(none)"
            raise CatalogError(f"no {section[:-1] if section.endswith('s') else section} named {name!r} in the catalog; known: {valid}")
        return entries[key]

    def get(self, section: str, name: str, model: type[M]) -> M:
        return model.model_validate(self.raw(section, name))

    def all(self, section: str, model: type[M]) -> list[M]:
        return [model.model_validate(e) for e in self._sections.get(section, {}).values()]

    def __contains__(self, item: tuple[str, str]) -> bool:
        section, name = item
        return str(name).lower() in self._sections.get(section, {})


def part_schemas() -> dict[str, tuple[str, type[BaseModel]]]:
    """Catalog section -> (kind of part, its one pydantic schema), for every part kind a model reads."""
    from densim.models.virtualization import PlatformSpec
    from densim.models.cost import BomPart
    from densim.models.devices import DeviceSpec
    from densim.models.fabric import NicSpec, SwitchSpec, TargetSpec, TransportSpec
    from densim.models.jobs import BatchProfile
    from densim.models.storage import ControllerSpec, EnclosureSpec, IoStack
    from densim.models.virtualization import ExitCosts, IoPath, ShadowPaging
    from densim.models.workload_memory import MemoryWorkload
    from densim.models.workload_profiles import WorkloadProfile
    from densim.models.hardware import CpuSpec, ServerSpec
    from densim.models.memory_defaults import MemoryModelDefaults
    from densim.models.carbon import EmbodiedCarbon
    from densim.models.licensing import LicenceProduct
    from densim.models.gpu import GpuSpec
    from densim.models.inference import LlmSpec
    from densim.models.page_sharing import GuestImageSharing

    return {
        "devices": ("device", DeviceSpec),
        "controllers": ("controller", ControllerSpec),
        "enclosures": ("enclosure", EnclosureSpec),
        "io_stacks": ("I/O stack", IoStack),
        "nics": ("NIC", NicSpec),
        "switches": ("switch", SwitchSpec),
        "transports": ("transport", TransportSpec),
        "storage_targets": ("storage target", TargetSpec),
        "cpus": ("CPU", CpuSpec),
        "servers": ("server", ServerSpec),
        "batch_profiles": ("batch profile", BatchProfile),
        "virt_exit_costs": ("exit-cost set", ExitCosts),
        "virt_io_paths": ("I/O path", IoPath),
        "virt_platforms": ("virtualization platform", PlatformSpec),
        "virt_shadow_paging": ("shadow-paging model", ShadowPaging),
        "bom_parts": ("priced part", BomPart),
        "memory_models": ("memory model", MemoryModelDefaults),
        "memory_workloads": ("memory workload", MemoryWorkload),
        "workload_profiles": ("workload profile", WorkloadProfile),
        "guest_images": ("guest image", GuestImageSharing),
        "licensing_products": ("licensed product", LicenceProduct),
        "server_embodied_carbon": ("server embodied carbon", EmbodiedCarbon),
        "gpus": ("GPU", GpuSpec),
        "llm_models": ("LLM", LlmSpec),
    }


# libyaml's parser with PyYAML's safe constructor when PyYAML was built with it (the same objects as
# yaml.safe_load, about 6x faster: the built-in catalog is parsed at every run's start)
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_yaml_sections(text: str, origin: str) -> dict[str, list[dict[str, Any]]]:
    data = yaml.load(text, Loader=_SAFE_LOADER) or {}  # noqa: S506 - a safe loader
    if not isinstance(data, dict):
        raise ValueError(f"{origin}: a catalog file must map section names to lists")
    return data


@lru_cache(maxsize=1)
def builtin_catalog() -> Catalog:
    """The catalog shipped with densim (every ``*.yaml`` in ``densim/catalog``), parsed on first use."""
    return Catalog(make=_builtin_sections)


def _builtin_sections() -> dict[str, dict[str, dict[str, Any]]]:
    cat = Catalog()
    root = resources.files("densim") / "catalog"
    for item in sorted(root.iterdir(), key=lambda p: p.name):
        if item.name.endswith((".yaml", ".yml")):
            cat = cat.layered(_load_yaml_sections(item.read_text(encoding="utf-8"), item.name))
    return cat._sections
