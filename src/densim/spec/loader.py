"""Load scenario files (YAML or JSON) with ``imports``, and report every problem with its path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from densim.errors import ScenarioInvalid
from densim.catalog.core import Catalog, CatalogError, builtin_catalog
from densim.models.hardware import CpuSpec, HostCpu, ServerSpec
from densim.spec.scenario import Scenario

# keys whose string values are file paths, resolved relative to the file that contains them
_PATH_KEYS = {"path", "file", "trace_path", "inventory"}


def _read_mapping(path: Path) -> dict[str, Any]:
    from densim.errors import InputError
    from densim.textio import read_mapping_file

    try:
        return read_mapping_file(path, "scenario file")
    except InputError as exc:
        raise ScenarioInvalid(path, [(exc.where, exc.problem)]) from None


def _resolve_paths(node: Any, base: Path) -> Any:
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k in _PATH_KEYS and isinstance(v, str) and not Path(v).is_absolute():
                out[k] = str((base / v).resolve())
            else:
                out[k] = _resolve_paths(v, base)
        return out
    if isinstance(node, list):
        return [_resolve_paths(v, base) for v in node]
    return node


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` wins; mappings merge recursively; ``parts`` lists concatenate."""
    out = dict(base)
    for k, v in over.items():
        if k in out and isinstance(out[k], dict) and isinstance(v, dict):
            if k == "parts":
                merged = dict(out[k])
                for sec, items in v.items():
                    merged[sec] = list(merged.get(sec) or []) + list(items or [])
                out[k] = merged
            else:
                out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def load_mapping(path: str | Path, _seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Read a scenario file and its ``imports`` into one merged mapping (paths made absolute)."""
    path = Path(path).resolve()
    if path in _seen:
        chain = " -> ".join(p.name for p in (*_seen, path))
        raise ScenarioInvalid(path, [("imports", f"import cycle: {chain}")])
    data = _resolve_paths(_read_mapping(path), path.parent)
    imports = data.get("imports") or []
    if not isinstance(imports, list):
        raise ScenarioInvalid(path, [("imports", "must be a list of file paths")])
    merged: dict[str, Any] = {}
    for i, imp in enumerate(imports):
        if not isinstance(imp, str):
            raise ScenarioInvalid(path, [(f"imports[{i}]", "must be a file path")])
        target = (path.parent / imp).resolve()
        if not target.exists():
            raise ScenarioInvalid(path, [(f"imports[{i}]", f"imported file not found: {imp}")])
        merged = _merge(merged, load_mapping(target, (*_seen, path)))
    merged = _merge(merged, data)
    merged["imports"] = [str((path.parent / i).resolve()) for i in imports]
    return merged


def format_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and part.startswith(("function-", "tagged-union")):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out


def _message(err: dict[str, Any]) -> str:
    t = err.get("type", "")
    ctx = err.get("ctx") or {}
    if t == "greater_than":
        return f"must be > {ctx.get('gt')}"
    if t == "greater_than_equal":
        return f"must be >= {ctx.get('ge')}"
    if t == "less_than_equal":
        return f"must be <= {ctx.get('le')}"
    if t == "missing":
        return "required field is missing"
    if t == "extra_forbidden":
        return "unknown field"
    if t == "too_short":
        return "must not be empty"
    msg = str(err.get("msg", "invalid"))
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix) :]
    return msg


def validation_issues(exc: ValidationError) -> list[tuple[str, str]]:
    return [(format_loc(tuple(e["loc"])), _message(e)) for e in exc.errors()]


def scenario_from_dict(data: dict[str, Any], *, source: str | Path = "<scenario>", base_dir: str | Path = ".") -> Scenario:
    """Validate a mapping (already merged) into a :class:`Scenario`, or raise with every issue."""
    try:
        sc = Scenario.model_validate({**data, "base_dir": str(base_dir)})
    except ValidationError as exc:
        raise ScenarioInvalid(source, validation_issues(exc)) from None
    issues = semantic_issues(sc)
    if issues:
        raise ScenarioInvalid(source, issues)
    return sc


def load_scenario(path: str | Path) -> Scenario:
    """Load and fully validate a scenario file; raises :class:`ScenarioInvalid` listing every problem."""
    path = Path(path)
    data = load_mapping(path)
    return scenario_from_dict(data, source=path, base_dir=path.resolve().parent)


def validate_file(path: str | Path) -> list[str]:
    """Every problem in ``path`` as ``FILE:field.path: problem`` lines (empty when valid)."""
    try:
        load_scenario(path)
    except ScenarioInvalid as exc:
        return exc.lines()
    return []


def catalog_for(sc: Scenario) -> Catalog:
    parts = sc.parts.model_dump(by_alias=True, exclude_none=True)
    return builtin_catalog().layered(parts)


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


def resolve_servers(sc: Scenario, catalog: Catalog | None = None) -> list[tuple[ServerSpec, CpuSpec, int]]:
    """Each host group as (server, cpu per socket, count), with catalog references filled in."""
    catalog = catalog or catalog_for(sc)
    out = []
    for g in sc.cluster.hosts:
        if g.server is not None:
            raw = dict(catalog.raw("servers", g.server))
            server = ServerSpec.model_validate(raw)
            upd: dict[str, Any] = {}
            if g.cpu is not None:
                upd["cpu"] = g.cpu
            if g.memory_bytes is not None:
                upd["memory_bytes"] = g.memory_bytes
            if g.power is not None:
                upd["power"] = g.power
            if g.rack_units is not None:
                upd["rack_units"] = g.rack_units
            server = server.model_copy(update=upd)
        else:
            server = ServerSpec(
                name=g.name or "custom", cpu=g.cpu, memory=g.memory_bytes, power=g.power, rack_units=g.rack_units or 1.0
            )
        out.append((server, resolve_cpu(server.cpu, catalog), g.count))
    return out


def part_issues(parts: dict[str, list[dict[str, Any]]]) -> list[tuple[str, str]]:
    """Every problem of a scenario's own ``parts``, each validated with its part kind's schema.

    One issue per part: ``(parts.devices[0].read_latency, "device 'foo': ...")``.
    """
    from densim.catalog.core import part_schemas

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
    from densim.errors import PartError
    from densim.models.devices import DeviceSpec, block_service
    from densim.models.fabric import TargetSpec, check_fabric_device

    issues: list[tuple[str, str]] = []

    def device(name: str, where: str) -> DeviceSpec | None:
        try:
            return catalog.get("devices", name, DeviceSpec)
        except (CatalogError, ValidationError):
            return None  # reported as an unknown name or an invalid part elsewhere

    fab = sc.fabric
    if fab.model != "none":
        for i, p in enumerate(fab.pools):
            dev_name = p.device
            if dev_name is None:
                try:
                    dev_name = catalog.get("storage_targets", p.target, TargetSpec).device
                except (CatalogError, ValidationError) as exc:
                    issues.append((f"fabric.pools[{i}].target", str(exc).splitlines()[0].strip("'\"")))
                    continue
            dev = device(dev_name, f"fabric.pools[{i}].device")
            try:
                if dev is not None:
                    check_fabric_device(dev)
            except PartError as exc:
                issues.append((f"fabric.pools[{i}].device", exc.problem))
        if fab.local_storage is not None:
            dev = device(fab.local_storage.device, "fabric.local_storage.device")
            try:
                if dev is not None:
                    check_fabric_device(dev)
                    dev.capacity("fabric model")
            except PartError as exc:
                issues.append(("fabric.local_storage.device", exc.problem))
    st = sc.storage
    if st.model != "none":
        for i, ds in enumerate(st.datastores):
            dev = device(ds.device, f"storage.datastores[{i}].device")
            try:
                if dev is not None:
                    block_service(dev, st.block_size_bytes, 1.0)
                    block_service(dev, st.block_size_bytes, 0.0)
            except PartError as exc:
                issues.append((f"storage.datastores[{i}].device", exc.problem))
    return issues


def semantic_issues(sc: Scenario) -> list[tuple[str, str]]:
    """Cross-reference checks pydantic cannot do: parts are complete, catalog names exist, trace paths exist."""
    issues: list[tuple[str, str]] = part_issues(sc.parts.model_dump(by_alias=True, exclude_none=True))
    if issues:
        return issues
    catalog = catalog_for(sc)
    issues += model_part_issues(sc, catalog)
    for i, g in enumerate(sc.cluster.hosts):
        where = f"cluster.hosts[{i}]"
        if g.server is not None and ("servers", g.server) not in catalog:
            issues.append((f"{where}.server", f"unknown server {g.server!r}; known: {', '.join(catalog.names('servers')) or '(none)'}"))
            continue
        cpu = g.cpu
        if cpu is None and g.server is not None:
            cpu = ServerSpec.model_validate(catalog.raw("servers", g.server)).cpu
        if cpu is not None and cpu.model is not None and ("cpus", cpu.model) not in catalog:
            issues.append((f"{where}.cpu.model", f"unknown CPU {cpu.model!r}; known: {', '.join(catalog.names('cpus'))}"))
        elif cpu is not None:
            try:
                resolve_cpu(cpu, catalog)
            except (ValidationError, CatalogError) as exc:
                issues.append((f"{where}.cpu", str(exc).splitlines()[0]))
    names = set()
    for i, vg in enumerate(sc.vms):
        if vg.name in names:
            issues.append((f"vms[{i}].name", f"duplicate VM group name {vg.name!r}"))
        names.add(vg.name)
        if vg.trace is not None and not Path(vg.trace.path).exists():
            issues.append((f"vms[{i}].trace.path", f"not found: {vg.trace.path}"))
    return issues
