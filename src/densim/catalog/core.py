"""The parts catalog: YAML files shipped in ``densim/catalog/`` plus a scenario's own ``parts``.

A catalog file is a mapping ``section -> list of entries``; every entry has a unique ``name``.
Sections are open: each model module validates the entries of the sections it owns with its own
pydantic class (``catalog.get("devices", name, DeviceSpec)``).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


class CatalogError(KeyError):
    pass


class Catalog:
    """Named parts by section; later layers override earlier ones by name."""

    def __init__(self, sections: dict[str, dict[str, dict[str, Any]]] | None = None) -> None:
        self._sections: dict[str, dict[str, dict[str, Any]]] = {k: dict(v) for k, v in (sections or {}).items()}

    def layered(self, parts: dict[str, list[dict[str, Any]]] | None) -> "Catalog":
        """A new catalog with ``parts`` (a scenario's own) over this one."""
        cat = Catalog(self._sections)
        for section, entries in (parts or {}).items():
            for entry in entries or []:
                cat._sections.setdefault(section, {})[str(entry["name"]).lower()] = dict(entry)
        return cat

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
    """The catalog shipped with densim (every ``*.yaml`` in ``densim/catalog``)."""
    cat = Catalog()
    root = resources.files("densim") / "catalog"
    for item in sorted(root.iterdir(), key=lambda p: p.name):
        if item.name.endswith((".yaml", ".yml")):
            cat = cat.layered(_load_yaml_sections(item.read_text(encoding="utf-8"), item.name))
    return cat
