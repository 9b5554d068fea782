"""Host groups resolved against the catalog: server, CPU per socket and count, every field filled in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from densim.catalog.core import Catalog
from densim.models.gpu import GpuSpec
from densim.models.hardware import CpuSpec, HostCpu, ServerSpec


@dataclass(frozen=True)
class HostGroupPlant:
    """``count`` hosts of one resolved server; ``label`` names the group (its name, else the server's)."""

    index: int
    label: str
    server: ServerSpec
    cpu: CpuSpec  # one socket, catalog model merged with the group's overrides
    count: int
    gpu: GpuSpec | None = None  # the GPU model of every host of the group (cluster.hosts[].gpus.model)
    gpu_count: int = 0  # GPUs per host


def resolve_cpu(host_cpu: HostCpu, catalog: Catalog) -> CpuSpec:
    """Merge a host's CPU block over its catalog model into a complete :class:`CpuSpec`."""
    base: dict[str, Any] = {}
    if host_cpu.model is not None:
        base = dict(catalog.raw("cpus", host_cpu.model))
    over = {
        "cores": host_cpu.cores_per_socket,
        "threads_per_core": host_cpu.threads_per_core,
        "base_clock": host_cpu.base_mhz,
        "turbo_clock": host_cpu.turbo_mhz,
        "smt_gain": host_cpu.smt_gain,
    }
    base.update({k: v for k, v in over.items() if v is not None})
    base.setdefault("name", host_cpu.model or "custom")
    return CpuSpec.model_validate(base)


def resolve_server(g, catalog: Catalog) -> ServerSpec:
    """A host group's server: the catalog entry with the group's overrides, or the group's inline parts."""
    if g.server is None:
        return ServerSpec(name=g.name or "custom", cpu=g.cpu, memory=g.memory_bytes, power=g.power, rack_units=g.rack_units or 1.0)
    server = ServerSpec.model_validate(dict(catalog.raw("servers", g.server)))
    upd: dict[str, Any] = {}
    if g.cpu is not None:
        upd["cpu"] = g.cpu
    if g.memory_bytes is not None:
        upd["memory_bytes"] = g.memory_bytes
    if g.power is not None:
        upd["power"] = g.power
    if g.rack_units is not None:
        upd["rack_units"] = g.rack_units
    return server.model_copy(update=upd)


def resolve_host_groups(groups, catalog: Catalog) -> tuple[HostGroupPlant, ...]:
    out = []
    for gi, g in enumerate(groups):
        server = resolve_server(g, catalog)
        gpu = catalog.get("gpus", g.gpus.model, GpuSpec) if g.gpus is not None else None
        out.append(HostGroupPlant(gi, g.name or server.name, server, resolve_cpu(server.cpu, catalog), g.count,
                                  gpu, g.gpus.count if g.gpus is not None else 0))
    return tuple(out)
