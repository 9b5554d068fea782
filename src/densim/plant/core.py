"""The plant: a scenario resolved once against the catalog.

:func:`resolve` takes the :class:`~densim.spec.scenario.Scenario` the user wrote and returns a
:class:`Plant` in which every catalog reference is looked up and validated once: host groups
(server, CPU), datastores (device, controller), the memory model (parameters, swap devices,
per-group memory profiles), the virtualization platform of each host group (platform, exit costs,
I/O paths) and the batch-job fabric. Every problem is collected with its field path and raised
together as one :class:`~densim.errors.ScenarioInvalid`, so ``densim validate`` reports exactly
what ``densim run`` would refuse. The engine and the tools take the plant, never the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from densim.catalog.core import Catalog, CatalogError, builtin_catalog
from densim.errors import InputError, PartError, ScenarioInvalid
from densim.models.devices import DeviceSpec
from densim.models.hardware import ServerSpec
from densim.models.page_sharing import GuestImageSharing
from densim.models.storage import ControllerSpec
from densim.models.virtualization import ExitCosts, IoPath, PlatformSpec, ShadowPaging
from densim.models.workload_memory import MemoryWorkload
from densim.plant.hosts import HostGroupPlant, resolve_cpu, resolve_server
from densim.spec.loader import validation_issues
from densim.spec.scenario import Scenario
from densim.spec.storage import DatastoreSpec

if TYPE_CHECKING:
    from densim.models.memory_defaults import MemoryParams

DEFAULT_PLATFORM = "ibm-x3650-m3-x5680"  # platform figures for a server with no virt_platforms entry
NET_PATH = {"emulated": "emulated-e1000", "virtio": "virtio-net", "vhost": "vhost-net", "sriov": "sriov-vf"}
DISK_PATH = {"emulated": "emulated-ide", "virtio": "virtio-blk"}


@dataclass(frozen=True)
class DatastorePlant:
    spec: DatastoreSpec
    device: DeviceSpec
    controller: ControllerSpec | None


@dataclass(frozen=True)
class MemoryPlant:
    params: MemoryParams
    swap_device: DeviceSpec
    swap_cache_device: DeviceSpec | None
    profiles: tuple[MemoryWorkload, ...]  # one per VM group
    tier_device: DeviceSpec | None = None  # memory.tiering: the NVMe tier's device (densim.plant.memory.tiering_parts)
    tier_groups: tuple[bool, ...] = ()  # per host group: it has the tier
    # per VM group: the catalog guest image its VMs boot from (``workload.guest_image``), or None
    images: tuple[GuestImageSharing | None, ...] = ()


@dataclass(frozen=True)
class VirtPlatform:
    """The virtualization platform of one host group."""

    platform: PlatformSpec
    own: bool  # the server has its own virt_platforms entry (else DEFAULT_PLATFORM's figures)
    exits: ExitCosts
    net_path: IoPath
    disk_path: IoPath
    shadow: ShadowPaging | None = None  # paging: shadow only: the catalog entry with the scenario's overrides


@dataclass(frozen=True)
class Plant:
    """A scenario with every part resolved; what the engine runs."""

    spec: Scenario
    source: str  # the scenario file (or its name), for error messages
    catalog: Catalog  # the built-in catalog with the scenario's own parts over it
    host_groups: tuple[HostGroupPlant, ...]
    datastores: tuple[DatastorePlant, ...] = ()  # storage model on
    memory: MemoryPlant | None = None  # memory model on
    virtualization: tuple[VirtPlatform, ...] | None = None  # kvm model on: one per host group
    fabric: Any = None  # densim.models.jobs.JobSystem when the fabric model is on
    hci: Any = None  # densim.plant.storage.HciPlant when storage.hci is given

    @property
    def name(self) -> str:
        return self.spec.name


def load_plant(path: str | Path) -> Plant:
    """Load a scenario file and resolve it: every problem, in the file or against the catalog, is raised."""
    from densim.spec.loader import load_scenario

    return resolve(load_scenario(path), source=path)


def plant_from_dict(data: dict[str, Any], *, source: str | Path = "<scenario>", base_dir: str | Path = ".") -> Plant:
    """Validate and resolve a scenario mapping (already merged)."""
    from densim.spec.loader import scenario_from_dict

    return resolve(scenario_from_dict(data, source=source, base_dir=base_dir), source=source)


def validate_file(path: str | Path) -> list[str]:
    """Every problem in ``path`` as ``FILE:field.path: problem`` lines (empty when valid): the checks ``run`` makes."""
    try:
        load_plant(path)
    except ScenarioInvalid as exc:
        return exc.lines()
    return []


def run_fabric(sc: Scenario, catalog: Catalog | None = None, *, source: str = "scenario"):
    """Build (:func:`densim.plant.fabric.build_system`) and simulate the batch jobs of ``sc.fabric`` alone."""
    from densim.models.jobs import simulate_jobs
    from densim.plant.fabric import build_system

    return simulate_jobs(build_system(sc, catalog or catalog_for(sc), source=source))


def catalog_for(sc: Scenario) -> Catalog:
    """The built-in catalog with the scenario's own ``parts`` over it."""
    parts = sc.parts.model_dump(by_alias=True, exclude_none=True)
    return builtin_catalog().layered(parts)


class _Issues(list):
    """``(field path, problem)`` pairs collected while resolving."""

    def get(self, catalog: Catalog, section: str, name: str, model, where: str):
        try:
            return catalog.get(section, name, model)
        except CatalogError as exc:
            self.append((where, str(exc.args[0]).strip("'\"")))
        except ValidationError as exc:
            loc, problem = validation_issues(exc)[0]
            self.append((where, f"{loc}: {problem}" if loc else problem))
        return None


def resolve(sc: Scenario, *, source: str | Path | None = None) -> Plant:
    """Resolve ``sc`` against the catalog; raises :class:`ScenarioInvalid` listing every problem."""
    src = str(source) if source is not None else sc.name
    issues = _Issues(part_issues(sc.parts.model_dump(by_alias=True, exclude_none=True)))
    if issues:
        raise ScenarioInvalid(src, list(issues))
    catalog = catalog_for(sc)
    issues += model_part_issues(sc, catalog)
    hosts = _host_groups(sc, catalog, issues)
    _vm_groups(sc, issues)
    _placement(sc, issues)
    if hosts is not None and (any(g.gpu is not None for g in sc.vms) or any(h.gpu is not None for h in hosts)):
        from densim.plant.gpu import gpu_issues

        issues += gpu_issues(sc, hosts)
    datastores = _datastores(sc, catalog, issues) if sc.storage.model != "none" else ()
    hci = None
    if sc.storage.model != "none" and sc.storage.hci is not None:
        from densim.plant.storage import resolve_hci

        hci = resolve_hci(sc, catalog, issues)
    memory = _memory(sc, catalog, issues, src, hosts) if sc.memory.model != "none" else None
    if sc.memory.model == "none":
        for gi, g in enumerate(sc.vms):
            if "guest_image" in (g.workload or {}):
                issues.append((f"vms[{gi}].workload.guest_image", "page sharing by guest image is part of the memory "
                               "model: set memory.model: vsphere-like"))
    virt = _virtualization(sc, catalog, hosts, issues) if sc.virtualization.model == "kvm" and hosts is not None else None
    if not issues:
        from densim.plant.checks import scenario_issues

        issues += scenario_issues(sc, hosts, datastores, src)
    fabric = None
    if not issues and sc.fabric.model != "none":
        from densim.plant.fabric import build_system

        try:
            fabric = build_system(sc, catalog, source=src)
        except InputError as exc:
            issues.append((exc.where, exc.problem))
    if issues:
        raise ScenarioInvalid(src, list(issues))
    return Plant(spec=sc, source=src, catalog=catalog, host_groups=hosts, datastores=datastores, memory=memory,
                 virtualization=virt, fabric=fabric, hci=hci)


# ---------------------------------------------------------------------------------------- checks
def part_issues(parts: dict[str, list[dict[str, Any]]]) -> list[tuple[str, str]]:
    """Every problem of a scenario's own ``parts``, each validated with its part kind's schema.

    One issue per part: ``(parts.devices[0].read_latency, "device 'foo': ...")``.
    """
    from densim.catalog.core import part_schemas

    if not any(parts.values() if parts else ()):
        return []
    schemas = part_schemas()
    issues: list[tuple[str, str]] = []
    for section, entries in (parts or {}).items():
        if section not in schemas or not isinstance(entries, list):
            continue
        kind, model = schemas[section]
        for i, entry in enumerate(entries):
            where = f"parts.{section}[{i}]"
            if not isinstance(entry, dict) or not entry.get("name"):
                issues.append((f"{where}.name", "every part needs a name"))
                continue
            try:
                model.model_validate(entry)
            except ValidationError as exc:
                loc, problem = validation_issues(exc)[0]
                head = f"{kind} {entry['name']!r}"
                if problem == "required field is missing" and loc:
                    problem = f"{head}: {loc} is required"
                elif not problem.startswith(head):
                    problem = f"{head}: {loc + ': ' if loc else ''}{problem}"
                issues.append((where, problem))
    return issues


def model_part_issues(sc: Scenario, catalog: Catalog) -> list[tuple[str, str]]:
    """Parts a switched-on model will read, checked for the fields that model needs."""
    issues: list[tuple[str, str]] = []

    def device(name: str) -> DeviceSpec | None:
        try:
            return catalog.get("devices", name, DeviceSpec)
        except (CatalogError, ValidationError):
            return None  # reported as an unknown name or an invalid part elsewhere

    fab = sc.fabric
    if fab.model != "none":
        from densim.models.fabric import TargetSpec, check_fabric_device  # only when the fabric model is on

        for i, p in enumerate(fab.pools):
            dev_name = p.device
            if dev_name is None:
                try:
                    dev_name = catalog.get("storage_targets", p.target, TargetSpec).device
                except (CatalogError, ValidationError) as exc:
                    issues.append((f"fabric.pools[{i}].target", str(exc).splitlines()[0].strip("'\"")))
                    continue
            dev = device(dev_name)
            try:
                if dev is not None:
                    check_fabric_device(dev)
            except PartError as exc:
                issues.append((f"fabric.pools[{i}].device", exc.problem))
        if fab.local_storage is not None:
            dev = device(fab.local_storage.device)
            try:
                if dev is not None:
                    check_fabric_device(dev)
                    dev.capacity("fabric model")
            except PartError as exc:
                issues.append(("fabric.local_storage.device", exc.problem))
    st = sc.storage
    if st.model != "none":
        from densim.models.devices import block_service

        for i, ds in enumerate(st.datastores):
            dev = device(ds.device)
            try:
                if dev is not None:
                    block_service(dev, st.block_size_bytes, 1.0)
                    block_service(dev, st.block_size_bytes, 0.0)
            except PartError as exc:
                issues.append((f"storage.datastores[{i}].device", exc.problem))
    return issues


def _host_groups(sc: Scenario, catalog: Catalog, issues: _Issues) -> tuple[HostGroupPlant, ...] | None:
    out = []
    ok = True
    for i, g in enumerate(sc.cluster.hosts):
        where = f"cluster.hosts[{i}]"
        if g.server is not None and ("servers", g.server) not in catalog:
            issues.append((f"{where}.server", f"unknown server {g.server!r}; known: {', '.join(catalog.names('servers')) or '(none)'}"))
            ok = False
            continue
        cpu = g.cpu
        if cpu is None and g.server is not None:
            cpu = ServerSpec.model_validate(catalog.raw("servers", g.server)).cpu
        if cpu is not None and cpu.model is not None and ("cpus", cpu.model) not in catalog:
            issues.append((f"{where}.cpu.model", f"unknown CPU {cpu.model!r}; known: {', '.join(catalog.names('cpus'))}"))
            ok = False
            continue
        gpu = None
        if g.gpus is not None:
            from densim.models.gpu import GpuSpec

            gpu = issues.get(catalog, "gpus", g.gpus.model, GpuSpec, f"{where}.gpus.model")
            if gpu is None:
                ok = False
                continue
        try:
            server = resolve_server(g, catalog)
            out.append(HostGroupPlant(i, g.name or server.name, server, resolve_cpu(server.cpu, catalog), g.count,
                                      gpu, g.gpus.count if g.gpus is not None else 0))
        except (ValidationError, CatalogError) as exc:
            issues.append((f"{where}.cpu", str(exc).splitlines()[0]))
            ok = False
    return tuple(out) if ok else None


def _vm_groups(sc: Scenario, issues: _Issues) -> None:
    names = set()
    for i, vg in enumerate(sc.vms):
        if vg.name in names:
            issues.append((f"vms[{i}].name", f"duplicate VM group name {vg.name!r}"))
        names.add(vg.name)
        if vg.trace is not None and not Path(vg.trace.path).exists():
            issues.append((f"vms[{i}].trace.path", f"not found: {vg.trace.path}"))
        if vg.sizes is not None and not _beside(sc, vg.sizes).is_file():
            issues.append((f"vms[{i}].sizes", f"not found: {_beside(sc, vg.sizes)}"))


def _beside(sc: Scenario, path: str) -> Path:
    """A file a scenario names, relative to the scenario's folder."""
    p = Path(path)
    return p if p.is_absolute() else Path(sc.base_dir) / p


def _placement(sc: Scenario, issues: _Issues) -> None:
    from densim.models.cpu import CPU_CONTENTION
    from densim.placement import POLICIES, engine_policies

    pol = sc.placement.policy
    if pol not in POLICIES:
        issues.append(("placement.policy", f"unknown placement policy {pol!r}; valid: {', '.join(engine_policies())}"))
    elif POLICIES.get(pol).kernel is None:
        issues.append(("placement.policy", f"placement policy {pol!r} opens hosts as it places (densim plan); onto the "
                       f"scenario's hosts: {', '.join(engine_policies())}"))
    if pol == "given":
        if not _beside(sc, sc.placement.assignment).is_file():
            issues.append(("placement.assignment", f"not found: {_beside(sc, sc.placement.assignment)}"))
        if sc.failures is not None and sc.failures.ha.restart_policy is None:
            from densim.placement.online import ONLINE_POLICIES

            issues.append(("failures.ha.restart_policy", "placement 'given' lands each VM on its listed host at the start; "
                           "VMs restarted after a host failure need a rule: set failures.ha.restart_policy to one of: "
                           f"{', '.join(ONLINE_POLICIES)}"))
    if sc.simulation.cpu_model not in CPU_CONTENTION:
        issues.append(("simulation.cpu_model", f"unknown CPU contention model {sc.simulation.cpu_model!r}; valid: "
                       f"{', '.join(CPU_CONTENTION.names())}"))


def _datastores(sc: Scenario, catalog: Catalog, issues: _Issues) -> tuple[DatastorePlant, ...]:
    st = sc.storage
    out = []
    for i, d in enumerate(st.datastores):
        dev = issues.get(catalog, "devices", d.device, DeviceSpec, f"storage.datastores[{i}].device")
        ctl = issues.get(catalog, "controllers", d.controller, ControllerSpec, f"storage.datastores[{i}].controller") if d.controller else None
        if dev is not None:
            out.append(DatastorePlant(d, dev, ctl))
    names = {d.name for d in st.datastores} | ({st.hci.name} if st.hci is not None else set())
    for i, g in enumerate(sc.vms):
        if g.datastore is not None and g.datastore not in names:
            issues.append((f"vms[{i}].datastore", f"unknown datastore {g.datastore!r}; storage.datastores: {', '.join(names)}"))
    return tuple(out)


def resolve_memory(sc: Scenario, catalog: Catalog, source: str = "scenario") -> MemoryPlant:
    """The memory model's parts alone (parameters, swap devices, profiles); raises :class:`ScenarioInvalid`."""
    issues = _Issues()
    mem = _memory(sc, catalog, issues, source)
    if issues:
        raise ScenarioInvalid(source, list(issues))
    return mem


def _memory(sc: Scenario, catalog: Catalog, issues: _Issues, src: str, hosts=None) -> MemoryPlant | None:
    from densim.plant.memory import memory_params, tiering_parts

    s = sc.memory
    n0 = len(issues)
    try:
        params = memory_params(s, catalog)
    except CatalogError as exc:
        issues.append(("memory.model", str(exc.args[0]).strip("'\"")))
        params = None
    store = issues.get(catalog, "devices", s.swap_device, DeviceSpec, "memory.swap_device")
    cache = issues.get(catalog, "devices", s.swap_cache_device, DeviceSpec, "memory.swap_cache_device") if s.swap_cache_device else None
    if s.swap_datastore is not None:
        _check_swap_datastore(sc, issues)
    tier_device, tier_groups = tiering_parts(s, catalog, hosts, issues)
    profiles, images = [], []
    for gi, g in enumerate(sc.vms):
        wl = dict(g.workload or {})
        image = wl.pop("guest_image", None)
        if image is None:
            images.append(None)
        elif not isinstance(image, str):
            issues.append((f"vms[{gi}].workload.guest_image", f"must be the name of a catalog guest image, got {image!r}"))
        else:
            images.append(issues.get(catalog, "guest_images", image, GuestImageSharing, f"vms[{gi}].workload.guest_image"))
        name = wl.pop("memory_profile", None) or s.workload
        base = issues.get(catalog, "memory_workloads", name, MemoryWorkload, f"vms[{gi}].workload.memory_profile")
        over = {k[len("memory_"):]: v for k, v in wl.items() if k.startswith("memory_")}
        if base is not None and over:
            try:
                base = MemoryWorkload.model_validate({**base.model_dump(by_alias=True), **over})
            except ValidationError as exc:
                issues.append((f"vms[{gi}].workload", f"bad memory_* override: {exc}"))
        profiles.append(base)
    if len(issues) > n0:
        return None
    return MemoryPlant(params=params, swap_device=store, swap_cache_device=cache, profiles=tuple(profiles),
                       images=tuple(images) if any(i is not None for i in images) else (),
                       tier_device=tier_device, tier_groups=tier_groups)


def _check_swap_datastore(sc: Scenario, issues: _Issues) -> None:
    where = sc.memory.swap_datastore
    st = sc.storage
    if st.model == "none":
        issues.append(("memory.swap_datastore", "needs the storage stage (storage.model: queueing)"))
        return
    names = [d.name for d in st.datastores]
    if where == "vm":
        for i, g in enumerate(sc.vms):
            if not (g.datastore or st.default_datastore):
                issues.append((f"vms[{i}].datastore", "memory.swap_datastore: vm puts each VM's swap on its own "
                               "datastore; name one (vms[].datastore or storage.default_datastore)"))
                return
    elif where not in names:
        issues.append(("memory.swap_datastore", f"unknown datastore {where!r}; 'vm' or one of storage.datastores: {', '.join(names)}"))


def _virtualization(sc: Scenario, catalog: Catalog, hosts, issues: _Issues) -> tuple[VirtPlatform, ...] | None:
    hv = sc.virtualization.hypervisor
    out = []
    n0 = len(issues)
    shadow = _shadow(hv.shadow, catalog, issues) if hv.paging == "shadow" else None
    for gi, hg in enumerate(hosts):
        own = ("virt_platforms", hg.server.name) in catalog
        name = hg.server.name if own else DEFAULT_PLATFORM
        where = f"cluster.hosts[{gi}].server"
        plat = issues.get(catalog, "virt_platforms", name, PlatformSpec, where)
        if plat is None:
            continue
        exits = issues.get(catalog, "virt_exit_costs", hv.exit_costs or plat.exit_costs, ExitCosts,
                           "virtualization.hypervisor.exit_costs" if hv.exit_costs else where)
        net = issues.get(catalog, "virt_io_paths", NET_PATH[hv.network], IoPath, "virtualization.hypervisor.network")
        disk = issues.get(catalog, "virt_io_paths", DISK_PATH[hv.storage], IoPath, "virtualization.hypervisor.storage")
        out.append(VirtPlatform(plat, own, exits, net, disk, shadow))
    return tuple(out) if len(issues) == n0 else None


def shadow_paging(settings, catalog: Catalog) -> ShadowPaging:
    """The ``virt_shadow_paging`` entry ``settings.model`` with every field the scenario sets laid over it.

    Raises :class:`~densim.catalog.core.CatalogError` (unknown entry) or pydantic's ValidationError.
    """
    base = dict(catalog.raw("virt_shadow_paging", settings.model))
    base.update(settings.model_dump(exclude={"model"}, exclude_none=True))
    return ShadowPaging.model_validate(base)


def _shadow(settings, catalog: Catalog, issues: _Issues) -> ShadowPaging | None:
    try:
        return shadow_paging(settings, catalog)
    except CatalogError as exc:
        issues.append(("virtualization.hypervisor.shadow.model", str(exc.args[0]).strip("'\"")))
    except ValidationError as exc:
        loc, problem = validation_issues(exc)[0]
        issues.append(("virtualization.hypervisor.shadow" + (f".{loc}" if loc else ""), problem))
    return None
