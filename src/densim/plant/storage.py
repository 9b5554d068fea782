"""Storage-only files (``densim io``, ``densim size``) resolved against the catalog: arrays,
controllers, enclosures, the host's CPU cost per I/O, the sizing candidates. Every problem is
reported at once with its field path."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from densim.catalog.core import Catalog, CatalogError, builtin_catalog
from densim.errors import ScenarioInvalid
from densim.models.devices import DeviceSpec
from densim.models.hardware import ServerSpec
from densim.models.storage import ArrayUnit, ControllerSpec, EnclosureSpec, HostCpuIo, IoStack, raid_check
from densim.plant.hosts import resolve_cpu
from densim.spec.loader import load_spec, validation_issues
from densim.spec.storage import HostIoSpec, IoScenario, SizingScenario


def catalog_with_parts(parts: dict[str, list[dict[str, Any]]], source: str | Path = "<io>") -> Catalog:
    """The built-in catalog with a storage file's own ``parts`` over it."""
    issues = [(f"parts.{sec}[{i}].name", "every part needs a name")
              for sec, entries in (parts or {}).items() for i, e in enumerate(entries or [])
              if not isinstance(e, dict) or not e.get("name")]
    if issues:
        raise ScenarioInvalid(source, issues)
    return builtin_catalog().layered(parts)


def _get(catalog, section: str, name: str, model, where: str, issues: list):
    try:
        return catalog.get(section, name, model)
    except CatalogError as exc:
        issues.append((where, str(exc.args[0])))
    except ValidationError as exc:
        for w, p in validation_issues(exc):
            issues.append((f"{section}[{name}].{w}" if w else f"{section}[{name}]", p))
    return None


def resolve_host(host: HostIoSpec, catalog, issues: list, where: str = "system.host"):
    """(HostCpuIo or None, ServerSpec or None)."""
    server = None
    cores = host.cores
    clock = host.clock_mhz
    if host.server is not None:
        server = _get(catalog, "servers", host.server, ServerSpec, f"{where}.server", issues)
        if server is not None:
            try:
                cpu = resolve_cpu(server.cpu, catalog)
                cores = cores or cpu.cores * server.cpu.sockets
                clock = clock or cpu.base_mhz
            except Exception as exc:  # noqa: BLE001 - reported as an issue with its path
                issues.append((f"{where}.server", f"cannot resolve the server's CPU: {exc}"))
    cycles = host.cycles_per_io
    if cycles is None and host.stack is not None:
        st = _get(catalog, "io_stacks", host.stack, IoStack, f"{where}.stack", issues)
        cycles = st.cycles_per_io if st is not None else None
    if cycles is None or cycles == 0:
        return None, server
    if cores is None or clock is None:
        issues.append((where, "host CPU cost needs 'server' or both 'cores' and 'clock'"))
        return None, server
    return HostCpuIo(int(cores), float(clock) * 1e6, float(cycles)), server


def resolve_system(sc: IoScenario, source: str | Path = "<io>"):
    """``(arrays, cpu, server, enclosures, catalog)`` with every catalog problem reported at once."""
    catalog = catalog_with_parts(sc.parts, source)
    issues: list[tuple[str, str]] = []
    groups: dict[str, tuple[Any, int]] = {}
    for i, g in enumerate(sc.system.controllers):
        ctl = _get(catalog, "controllers", g.model, ControllerSpec, f"system.controllers[{i}].model", issues)
        if g.name in groups:
            issues.append((f"system.controllers[{i}].name", f"duplicate controller group {g.name!r}"))
        groups[g.name] = (ctl, g.count)
    arrays = []
    names = set()
    for i, a in enumerate(sc.system.arrays):
        where = f"system.arrays[{i}]"
        if a.name in names:
            issues.append((f"{where}.name", f"duplicate array name {a.name!r}"))
        names.add(a.name)
        dev = _get(catalog, "devices", a.device, DeviceSpec, f"{where}.device", issues)
        problem = raid_check(a.raid, a.drives)
        if problem:
            issues.append((f"{where}.drives", problem))
        ctl, n = None, 1
        if a.controllers is not None:
            if a.controllers not in groups:
                issues.append((f"{where}.controllers", f"no controller group {a.controllers!r}; known: {', '.join(groups) or '(none)'}"))
            else:
                ctl, n = groups[a.controllers]
        if dev is not None and not problem and (a.controllers is None or ctl is not None):
            arrays.append(ArrayUnit(a.name, dev, a.drives, a.raid, ctl, n, a.share, a.controllers))
    # drives per controller group within the ports/devices limit
    for gname, (ctl, n) in groups.items():
        if ctl is None:
            continue
        drives = sum(a.drives for a in sc.system.arrays if a.controllers == gname)
        if drives > n * ctl.devices_limit:
            idx = next(i for i, g in enumerate(sc.system.controllers) if g.name == gname)
            issues.append((f"system.controllers[{idx}].count",
                           f"{drives} drives need more than {n} x {ctl.name} ({ctl.devices_limit} drives each, {ctl.ports} ports)"))
    encl = []
    for i, e in enumerate(sc.system.enclosures):
        spec = _get(catalog, "enclosures", e.model, EnclosureSpec, f"system.enclosures[{i}].model", issues)
        if spec is not None:
            encl.append((spec, e.count))
    if encl:
        bays = sum(e.bays * n for e, n in encl)
        drives = sum(a.drives for a in sc.system.arrays)
        if drives > bays:
            issues.append(("system.enclosures", f"{drives} drives need more than the enclosures' {bays} bays"))
    cpu, server = resolve_host(sc.system.host, catalog, issues)
    if sum(a.share for a in sc.system.arrays) <= 0:
        issues.append(("system.arrays", "shares must add up to more than 0"))
    if issues:
        raise ScenarioInvalid(source, issues)
    return arrays, cpu, server, encl, catalog


def load_io_scenario(path: str | Path) -> IoScenario:
    """Load and validate a ``densim io`` file (raises ScenarioInvalid with field paths)."""
    sc = load_spec(path, IoScenario, what="io file")
    resolve_system(sc, path)
    return sc


@dataclass(frozen=True)
class SizingPlant:
    """The candidate parts of a sizing file, resolved."""

    devices: list[DeviceSpec]
    controllers: list[ControllerSpec]
    enclosure: EnclosureSpec | None
    cycles_per_io: float


def load_sizing(path: str | Path) -> tuple[SizingScenario, SizingPlant]:
    """Load a ``densim size`` file and resolve its candidates (raises ScenarioInvalid with field paths)."""
    sc = load_spec(path, SizingScenario, what="sizing file")
    catalog = catalog_with_parts(sc.parts, path)
    cand = sc.candidates
    issues: list[tuple[str, str]] = []
    devices = [_get(catalog, "devices", d, DeviceSpec, f"candidates.devices[{i}]", issues) for i, d in enumerate(cand.devices)]
    ctls = [_get(catalog, "controllers", c, ControllerSpec, f"candidates.controllers[{i}]", issues) for i, c in enumerate(cand.controllers)]
    encl = _get(catalog, "enclosures", cand.enclosure, EnclosureSpec, "candidates.enclosure", issues) if cand.enclosure else None
    cycles = cand.cycles_per_io
    if cycles is None:
        stack = _get(catalog, "io_stacks", cand.stack, IoStack, "candidates.stack", issues) if cand.stack else None
        cycles = stack.cycles_per_io if stack is not None else 0.0
    if cand.drives_max < cand.drives_min:
        issues.append(("candidates.drives_max", "must be >= drives_min"))
    if issues:
        raise ScenarioInvalid(path, issues)
    return sc, SizingPlant(devices, ctls, encl, float(cycles))


# --------------------------------------------------------------------------------------------
# hyper-converged datastore (storage.hci)


@dataclass(frozen=True)
class HciPlant:
    """``storage.hci`` resolved: the capacity disk, the storage adapter and each VM group's policy."""

    spec: Any  # densim.spec.storage.HciSpec
    device: DeviceSpec
    nic: Any  # densim.models.fabric.NicSpec
    group_policy: dict[str, Any]  # VM group name -> HciPolicyGroup
    hosts: int  # every host of the cluster gives disks_per_host disks

    @property
    def raw_per_host_bytes(self) -> float:
        return self.spec.disks_per_host * self.device.capacity("HCI model")

    def per_host_resync_Bps(self) -> float:
        from densim.models.storage.hci import host_resync_Bps

        d = self.device
        return host_resync_Bps(self.spec.disks_per_host, d.seq_bps(False, "HCI model"), d.seq_bps(True, "HCI model"),
                               self.nic.bandwidth_bps)


def hci_vm_groups(sc) -> list[int]:
    """Indices of the VM groups whose disks live on the HCI datastore."""
    st = sc.storage
    if st.hci is None:
        return []
    return [i for i, g in enumerate(sc.vms) if (g.datastore or st.default_datastore) == st.hci.name]


def resolve_hci(sc, catalog, issues: list) -> HciPlant | None:
    """``storage.hci`` against the catalog, the VM groups and the cluster (appends ``(field path, problem)`` to ``issues``)."""
    from densim.errors import PartError
    from densim.models.devices import block_service
    from densim.models.fabric import NicSpec
    from densim.models.storage.hci import POLICIES

    h = sc.storage.hci
    if h is None:
        return None
    n0 = len(issues)
    dev = _get(catalog, "devices", h.device, DeviceSpec, "storage.hci.device", issues)
    if dev is not None:
        try:
            dev.capacity("HCI model")
            dev.seq_bps(False, "HCI model (resync)")
            dev.seq_bps(True, "HCI model (resync)")
            block_service(dev, sc.storage.block_size_bytes, 1.0)
            block_service(dev, sc.storage.block_size_bytes, 0.0)
        except PartError as exc:
            issues.append(("storage.hci.device", exc.problem))
    nic = _get(catalog, "nics", h.nic, NicSpec, "storage.hci.nic", issues)
    groups = {g.name for g in sc.vms}
    for i, p in enumerate(h.policies):
        if p.vms not in groups:
            issues.append((f"storage.hci.policies[{i}].vms", f"no VM group {p.vms!r}; groups: {', '.join(sorted(groups))}"))
    named = {p.vms: p for p in h.policies}
    for i in hci_vm_groups(sc):
        if sc.vms[i].name not in named:
            issues.append((f"vms[{i}].datastore", f"VM group {sc.vms[i].name!r} lives on the HCI datastore {h.name!r} but "
                           "storage.hci.policies gives it no policy (add an entry with its policy and disk)"))
    n_hosts = sum(g.count for g in sc.cluster.hosts)
    for i, p in enumerate(h.policies):
        need = POLICIES[p.policy].min_hosts
        if n_hosts < need:
            issues.append((f"storage.hci.policies[{i}].policy", f"{p.policy} places its components on at least {need} "
                           f"hosts; the cluster has {n_hosts}"))
    if len(issues) > n0 or dev is None or nic is None:
        return None
    plant = HciPlant(h, dev, nic, named, n_hosts)
    groups = [sc.vms[i] for i in hci_vm_groups(sc)]
    if groups and all(g.count is not None for g in groups):  # (a trace's VM count is known at run time: checked then)
        from densim.models.storage.hci import TIB, GroupData, used_raw

        data = [GroupData(g.name, named[g.name].policy, g.count * named[g.name].disk_bytes, named[g.name].cold_fraction or 0.0)
                for g in groups]
        used, raw = used_raw(data, n_hosts, h.dedupe_compression), n_hosts * plant.raw_per_host_bytes
        if used > raw:
            issues.append(("storage.hci.policies", f"the VMs' data takes {used / TIB:,.1f} TiB raw at their policies but the "
                           f"{n_hosts} hosts have {raw / TIB:,.1f} TiB raw ({h.disks_per_host} x {dev.name} each): it cannot "
                           "be stored (add hosts or disks, or a cheaper policy)"))
            return None
    return plant
