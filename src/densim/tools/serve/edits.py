"""The page's controls: which scenario fields it may edit, and how a typed value goes into the mapping.

A control is a field path of the scenario YAML (``placement.memory_overcommit``,
``cluster.hosts[0].count``). The page sends the text the user typed; it is read as a YAML scalar, so
``2`` is the number 2 and ``abc`` the string ``abc``: the value a scenario file with that text would
hold. The edited mapping then goes through the loader ``densim run`` uses, so a bad value gets the
message the CLI prints for the same file. Only the fields listed by :func:`controls` can be edited;
none of them is a file path, so the page cannot make the server read a file the scenario did not name.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import yaml

from densim.errors import InputError, ScenarioInvalid

#: fields a host group loses when the page picks a catalog server for it (the server defines them)
SERVER_FIELDS = ("cpu", "memory", "power", "rack_units")

_EDITABLE = [
    re.compile(r"^cluster\.hosts\[(\d+)\]\.(count|server)$"),
    re.compile(r"^vms\[(\d+)\]\.count$"),
    re.compile(r"^placement\.(cpu_overcommit|memory_overcommit|policy)$"),
    re.compile(r"^memory\.(model|swap_device|swap_cache_device|swap_cache_size)$"),
    re.compile(r"^storage\.datastores\[(\d+)\]\.(device|raid|drives)$"),
]


class EditError(InputError):
    """An edit the page may not make (a field that is not a control)."""


def _choices() -> dict[str, list[str]]:
    import typing

    from densim.catalog.core import builtin_catalog
    from densim.placement import POLICIES
    from densim.spec.memory import MemorySettings
    from densim.spec.storage import RaidName

    cat = builtin_catalog()
    return {
        "servers": cat.names("servers"),
        "devices": cat.names("devices"),
        "policies": POLICIES.names(),
        "memory_models": list(typing.get_args(MemorySettings.model_fields["model"].annotation)),
        "raid": list(typing.get_args(RaidName)),
    }


def _text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def controls(mapping: dict[str, Any]) -> list[dict[str, Any]]:
    """The controls for a scenario mapping: ``{path, label, group, kind, value, options?, help}``.

    ``value`` is the text of the field in the mapping (``""`` when the field is absent: the
    scenario's default applies)."""
    ch = _choices()
    own_servers = [s.get("name") for s in (mapping.get("parts") or {}).get("servers") or [] if isinstance(s, dict)]
    out: list[dict[str, Any]] = []

    def add(path: str, label: str, group: str, kind: str, value: Any, options: list[str] | None = None, help: str = "") -> None:
        c = {"path": path, "label": label, "group": group, "kind": kind, "value": _text(value), "help": help}
        if options is not None:
            c["options"] = options
        out.append(c)

    for i, g in enumerate((mapping.get("cluster") or {}).get("hosts") or []):
        name = g.get("name") or f"group {i}"
        add(f"cluster.hosts[{i}].server", f"host model ({name})", "hosts", "select", g.get("server"),
            [""] + [s for s in own_servers if s] + ch["servers"],
            "a catalog server; picking one replaces the group's inline cpu, memory and power")
        add(f"cluster.hosts[{i}].count", f"hosts ({name})", "hosts", "number", g.get("count", 1))
    for i, v in enumerate(mapping.get("vms") or []):
        if "count" in v:
            add(f"vms[{i}].count", f"VMs ({v.get('name') or i})", "growth", "number", v["count"], help="growth: more or fewer VMs of this group")
    pl = mapping.get("placement") or {}
    add("placement.policy", "placement policy", "placement", "select", pl.get("policy", "first-fit"), ch["policies"])
    add("placement.cpu_overcommit", "vCPU over-commit", "placement", "number", pl.get("cpu_overcommit", 1.0), help="vCPUs per physical core")
    add("placement.memory_overcommit", "memory over-commit", "placement", "number", pl.get("memory_overcommit", 1.0),
        help="configured VM memory per byte of host memory")
    mem = mapping.get("memory") or {}
    add("memory.model", "memory model", "memory", "select", mem.get("model", "none"), ch["memory_models"],
        "vsphere-like: reclamation, swap and the slowdown it causes")
    add("memory.swap_device", "swap device", "memory", "select", mem.get("swap_device", "fc-san-lun"), ch["devices"])
    add("memory.swap_cache_device", "swap cache device", "memory", "select", mem.get("swap_cache_device"), [""] + ch["devices"])
    add("memory.swap_cache_size", "swap cache size", "memory", "text", mem.get("swap_cache_size", "0 GiB"), help="e.g. 64 GiB")
    for i, d in enumerate((mapping.get("storage") or {}).get("datastores") or []):
        name = d.get("name") or f"datastore {i}"
        add(f"storage.datastores[{i}].device", f"device ({name})", "storage", "select", d.get("device"), ch["devices"])
        add(f"storage.datastores[{i}].raid", f"RAID ({name})", "storage", "select", d.get("raid", "jbod"), ch["raid"])
        add(f"storage.datastores[{i}].drives", f"drives ({name})", "storage", "number", d.get("drives", 1))
    return out


def editable(path: str) -> bool:
    return any(p.match(path) for p in _EDITABLE)


def parse_value(text: Any) -> Any:
    """The value a scenario file holds for ``text`` typed after ``field:`` (a YAML scalar)."""
    if not isinstance(text, str):
        return text
    try:
        v = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return v if isinstance(v, (str, int, float, bool)) or v is None else text


def apply_edits(mapping: dict[str, Any], edits: dict[str, Any], origin: str) -> dict[str, Any]:
    """A copy of ``mapping`` with ``edits`` (field path -> typed text) applied.

    An empty text removes the field (the scenario default applies). A path that is not a control,
    or that names a host group, VM group or datastore the scenario lacks, raises
    :class:`ScenarioInvalid` naming that path."""
    from densim.spec.sweep import parse_path

    out = copy.deepcopy(mapping)
    issues: list[tuple[str, str]] = []
    for path, text in edits.items():
        if not isinstance(path, str) or not editable(path):
            issues.append((str(path), "not a field the page can edit"))
            continue
        tokens = parse_path(path)
        node: Any = out
        ok = True
        for i, tok in enumerate(tokens[:-1]):
            nxt = node[tok] if isinstance(node, list) and isinstance(tok, int) and tok < len(node) else (
                node.get(tok) if isinstance(node, dict) else None)
            if nxt is None:
                if isinstance(tok, int) or isinstance(tokens[i + 1], int):
                    issues.append((path, "no such group in this scenario"))
                    ok = False
                    break
                nxt = node[tok] = {}
            node = nxt
        if not ok:
            continue
        last = tokens[-1]
        value = parse_value(text)
        if value is None or value == "":
            node.pop(last, None)
            continue
        node[last] = value
        if path.startswith("cluster.hosts[") and last == "server":
            for k in SERVER_FIELDS:
                node.pop(k, None)
    if issues:
        raise ScenarioInvalid(origin, issues)
    return out


def field_errors(exc: ScenarioInvalid, paths: list[str]) -> tuple[dict[str, str], list[str]]:
    """Split ``exc``'s lines into those of a control (by field path) and the rest.

    An issue belongs to a control when its field path is the control's path or lies under it
    (``cluster.hosts[0].server`` also takes ``cluster.hosts[0].server.cpu``)."""
    by_path: dict[str, str] = {}
    other: list[str] = []
    for (where, _problem), line in zip(exc.issues, exc.lines()):
        hit = next((p for p in sorted(paths, key=len, reverse=True) if where == p or where.startswith(p + ".") or where.startswith(p + "[")), None)
        if hit is not None:
            by_path[hit] = line if hit not in by_path else by_path[hit] + "; " + line
        else:
            other.append(line)
    return by_path, other
