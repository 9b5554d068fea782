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
import math
import re
from typing import Any

import yaml

from densim.errors import InputError, ScenarioInvalid
from densim.tools.serve.guard import echo

#: fields a host group loses when the page picks a catalog server for it (the server defines them)
SERVER_FIELDS = ("cpu", "memory", "power", "rack_units")

_EDITABLE = [
    re.compile(r"^cluster\.hosts\[(\d+)\]\.(count|server)$"),
    re.compile(r"^cluster\.hosts\[(\d+)\]\.gpus\.(model|count|scheduler)$"),
    re.compile(r"^vms\[(\d+)\]\.count$"),
    re.compile(r"^placement\.(cpu_overcommit|memory_overcommit|policy|gpu_policy)$"),
    re.compile(r"^memory\.(model|swap_device|swap_cache_device|swap_cache_size)$"),
    re.compile(r"^storage\.datastores\[(\d+)\]\.(device|raid|drives)$"),
    re.compile(r"^failures\.ha\.(admission|host_failures)$"),
    re.compile(r"^failures\.fail_(largest_hosts|at|for)$"),
]

# The page's failure control, "fail the N largest hosts at time T for D": three fields that are not
# scenario fields. :func:`failure_request` reads them, :func:`add_failures` writes what they mean into
# the scenario as ``failures: {events: [...]}`` (so the downloaded YAML holds the failures, and
# ``densim run`` of it gives what the page shows).
FAIL_N = "failures.fail_largest_hosts"
FAIL_AT = "failures.fail_at"
FAIL_FOR = "failures.fail_for"
PAGE_FIELDS = (FAIL_N, FAIL_AT, FAIL_FOR)
DEFAULT_FAIL_FOR = "4 h"
ADMISSIONS = ["off", "n_plus_k"]
# loader messages about the events the control wrote belong to the control's fields
_EVENT_FIELD = re.compile(r"^failures\.events\[\d+\]\.(time|duration|target)")
_EVENT_ALIAS = {"time": FAIL_AT, "duration": FAIL_FOR, "target": FAIL_N}


# Bounds on what the page sends, checked before anything else reads it (so no value, however hostile,
# reaches a computation that raises): a control's text is a number, a name or a quantity.
MAX_TEXT = 200  # characters of one control's text
MAX_MAGNITUDE = 1e18  # any number typed in any control (a byte count of 1 EB, a count of 10^18)
MAX_OVERCOMMIT = 1000.0  # vCPUs per core, configured memory per byte of host memory
ECHO_PATH = 80  # characters of a refused field path quoted back
# the controls whose value is a number (the loader reads a text such as "1e308" as one)
_NUMBER = re.compile(r"^(cluster\.hosts\[\d+\]\.count|cluster\.hosts\[\d+\]\.gpus\.count|vms\[\d+\]\.count|placement\.(cpu|memory)_overcommit"
                     r"|storage\.datastores\[\d+\]\.drives|failures\.ha\.host_failures|failures\.fail_largest_hosts)$")


def _number_bounds() -> list[tuple[re.Pattern, str, float]]:
    """(control, what it is, upper bound) for the controls whose bound the scenario loader lacks."""
    from densim.spec.scenario import MAX_HOSTS

    return [
        (re.compile(r"^placement\.(cpu|memory)_overcommit$"), "an over-commit ratio", MAX_OVERCOMMIT),
        (re.compile(r"^failures\.ha\.host_failures$"), "a number of hosts", MAX_HOSTS),
        (re.compile(r"^failures\.fail_largest_hosts$"), "a number of hosts", MAX_HOSTS),
    ]


def check_edits(edits: dict[Any, Any]) -> list[tuple[str, str]]:
    """``(control, problem)`` for every edit the page may not send: a path that is not a control, a
    value that is not a number or a text (a list, a mapping), a text longer than :data:`MAX_TEXT`, a
    number that is not finite or is beyond :data:`MAX_MAGNITUDE` or the control's own bound. Values are
    quoted cut to 80 characters. The scenario loader checks the rest (its messages are the CLI's)."""
    bounds = _number_bounds()
    issues: list[tuple[str, str]] = []
    for path, text in edits.items():
        if not isinstance(path, str) or len(path) > MAX_TEXT or not editable(path):
            p = str(path)
            issues.append((p if len(p) <= ECHO_PATH else p[:ECHO_PATH] + "…", "not a field the page can edit"))
            continue
        if not (text is None or isinstance(text, (str, int, float, bool))):
            issues.append((path, f"a number or a text, got a {'list' if isinstance(text, list) else 'mapping'}: "
                                 f"{echo(text)}"))
            continue
        if isinstance(text, str) and len(text) > MAX_TEXT:
            issues.append((path, f"at most {MAX_TEXT} characters, got {echo(text)}"))
            continue
        value = parse_value(text)
        if isinstance(value, str) and _NUMBER.match(path):  # "1e308": a string in YAML, a number to the loader
            try:
                value = float(value)
            except ValueError:
                continue  # the loader's message ("Input should be a valid number")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            issues.append((path, f"a finite number, got {echo(text)}"))
            continue
        limit = next(((what, b) for pat, what, b in bounds if pat.match(path)), ("a number", MAX_MAGNITUDE))
        if abs(value) > limit[1]:
            issues.append((path, f"{limit[0]} of at most {limit[1]:,.0f}, got {echo(text)}"))
    return issues


class EditError(InputError):
    """An edit the page may not make (a field that is not a control)."""


def _choices() -> dict[str, list[str]]:
    import typing

    from densim.catalog.core import builtin_catalog
    from densim.placement import POLICIES
    from densim.spec.gpu import HostGpus
    from densim.spec.memory import MemorySettings
    from densim.spec.storage import RaidName

    cat = builtin_catalog()
    return {
        "servers": cat.names("servers"),
        "devices": cat.names("devices"),
        "policies": POLICIES.names(),
        "memory_models": list(typing.get_args(MemorySettings.model_fields["model"].annotation)),
        "raid": list(typing.get_args(RaidName)),
        "gpus": cat.names("gpus"),
        "gpu_schedulers": list(typing.get_args(HostGpus.model_fields["scheduler"].annotation)),
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
        gp = g.get("gpus")
        if isinstance(gp, dict):  # a GPU host group: its GPU model, GPUs per host and vGPU scheduler
            add(f"cluster.hosts[{i}].gpus.model", f"GPU model ({name})", "gpus", "select", gp.get("model"), ch["gpus"])
            add(f"cluster.hosts[{i}].gpus.count", f"GPUs per host ({name})", "gpus", "number", gp.get("count", 1))
            add(f"cluster.hosts[{i}].gpus.scheduler", f"vGPU scheduler ({name})", "gpus", "select",
                gp.get("scheduler", "best-effort"), ch["gpu_schedulers"],
                "time-sliced vGPUs: best-effort (idle vGPUs cede their time), equal-share (1/N each), fixed-share "
                "(1/max per GPU each)")
    for i, v in enumerate(mapping.get("vms") or []):
        if "count" in v:
            add(f"vms[{i}].count", f"VMs ({v.get('name') or i})", "growth", "number", v["count"], help="growth: more or fewer VMs of this group")
    pl = mapping.get("placement") or {}
    add("placement.policy", "placement policy", "placement", "select", pl.get("policy", "first-fit"), ch["policies"])
    add("placement.cpu_overcommit", "vCPU over-commit", "placement", "number", pl.get("cpu_overcommit", 1.0), help="vCPUs per physical core")
    add("placement.memory_overcommit", "memory over-commit", "placement", "number", pl.get("memory_overcommit", 1.0),
        help="configured VM memory per byte of host memory")
    if any(isinstance(g.get("gpus"), dict) for g in (mapping.get("cluster") or {}).get("hosts") or []):
        add("placement.gpu_policy", "GPU of a host for a shared request", "gpus", "select", pl.get("gpu_policy", "pack"),
            ["pack", "spread"], "pack: the fullest GPU that fits (keeps GPUs whole); spread: the emptiest")
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
    fs = mapping.get("failures") or {}
    ha = fs.get("ha") or {}
    add(FAIL_N, "fail N largest hosts", "failures", "number", 0,
        help="N hosts with the most CPU capacity (then memory) fail at time T for D; 0: none. Writes failures.events "
             "(replacing the scenario's own events)")
    add(FAIL_AT, "at time T", "failures", "text", default_fail_at(mapping), help="from the start of the run: a number is hours, or e.g. 90 min, 1 d")
    add(FAIL_FOR, "for D", "failures", "text", DEFAULT_FAIL_FOR, help="down this long: a number is hours, or e.g. 30 min")
    adm = ha.get("admission", "off")
    add("failures.ha.admission", "HA admission", "failures", "select", adm, ADMISSIONS + ([adm] if adm not in ADMISSIONS else []),
        "n_plus_k: keep the capacity of the k largest hosts free at every power-on; restarts are never refused")
    add("failures.ha.host_failures", "k of N+k", "failures", "number", ha.get("host_failures", 1))
    return out


def default_fail_at(mapping: dict[str, Any]) -> str:
    """Half the scenario's horizon in hours (``1 h`` when it has none: the traces' span)."""
    from densim.units import UnitError, parse

    h = (mapping.get("simulation") or {}).get("horizon")
    try:
        return f"{parse(h, 's') / 2 / 3600:.4g} h" if h is not None else "1 h"
    except (UnitError, ValueError, TypeError):
        return "1 h"


def _hours(text: Any) -> Any:
    """A typed time: a number is hours (written ``N h``), anything else as typed (the loader checks it)."""
    v = parse_value(text)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return f"{v:g} h"
    return v


def failure_request(mapping: dict[str, Any], edits: dict[str, Any], origin: str) -> dict[str, Any] | None:
    """``{n, time, duration}`` of the page's failure control, or None when N is 0 (or not given).

    T and D not among ``edits`` take the control's defaults. Raises :class:`ScenarioInvalid` naming the
    control for an N that is not a whole number >= 0, or a T or D left empty."""
    issues: list[tuple[str, str]] = []
    n_raw = parse_value(edits.get(FAIL_N, 0))
    if n_raw is None or n_raw == "":
        n_raw = 0
    if (isinstance(n_raw, bool) or not isinstance(n_raw, (int, float)) or not math.isfinite(n_raw) or n_raw != int(n_raw)
            or n_raw < 0):
        raise ScenarioInvalid(origin, [(FAIL_N, f"a whole number of hosts >= 0, got {echo(edits.get(FAIL_N))}")])
    n = int(n_raw)
    if n == 0:
        return None
    at = _hours(edits.get(FAIL_AT, default_fail_at(mapping)))
    dur = _hours(edits.get(FAIL_FOR, DEFAULT_FAIL_FOR))
    for path, v in ((FAIL_AT, at), (FAIL_FOR, dur)):
        if v is None or v == "":
            issues.append((path, "give a time (a number is hours, or e.g. 90 min)"))
    if not issues:
        from densim.units import UnitError, parse

        h = (mapping.get("simulation") or {}).get("horizon")
        try:
            t_s, h_s = parse(at, "s"), (parse(h, "s") if h is not None else None)
        except (UnitError, ValueError, TypeError):
            t_s = h_s = None  # the loader gives the CLI's message for the event
        if t_s is not None and h_s is not None and t_s >= h_s:
            issues.append((FAIL_AT, f"{at} is not before the end of the run (simulation.horizon {h})"))
    if issues:
        raise ScenarioInvalid(origin, issues)
    return {"n": n, "time": at, "duration": dur}


def largest_hosts(hosts, n: int) -> list[str]:
    """Names (``<group>-<index>``, as hosts.parquet and failure events name them) of the ``n`` hosts with
    the most CPU capacity (cores x clock x SMT gain), then the most memory, then the first in order."""
    import numpy as np

    order = np.lexsort((np.arange(hosts.n), -hosts.mem_bytes, -hosts.capacity_mhz))
    return [str(hosts.names[i]) for i in order[:n]]


def add_failures(mapping: dict[str, Any], request: dict[str, Any], plant, origin: str) -> dict[str, Any]:
    """A copy of ``mapping`` whose ``failures.events`` fail the ``n`` largest hosts of ``plant`` (the
    mapping resolved) at ``time`` for ``duration``; the rest of its ``failures`` section is kept."""
    from densim.engine.state import build_hosts

    hosts = build_hosts(plant)
    n = request["n"]
    if n > hosts.n:
        raise ScenarioInvalid(origin, [(FAIL_N, f"the scenario has {hosts.n} host(s), cannot fail {n}")])
    out = copy.deepcopy(mapping)
    fs = dict(out.get("failures") or {})
    fs["events"] = [{"time": request["time"], "target": name, "duration": request["duration"]} for name in largest_hosts(hosts, n)]
    out["failures"] = fs
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
    or that names a host group, VM group or datastore the scenario lacks, or a value
    :func:`check_edits` refuses, raises :class:`ScenarioInvalid` naming that path."""
    from densim.spec.sweep import parse_path

    issues = check_edits(edits)
    if issues:
        raise ScenarioInvalid(origin, issues)
    out = copy.deepcopy(mapping)
    for path, text in edits.items():
        if path in PAGE_FIELDS:  # the failure control: failure_request / add_failures
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
        m = _EVENT_FIELD.match(where)
        if m is not None and _EVENT_ALIAS[m.group(1)] in paths:
            where = _EVENT_ALIAS[m.group(1)]
        hit = next((p for p in sorted(paths, key=len, reverse=True) if where == p or where.startswith(p + ".") or where.startswith(p + "[")), None)
        if hit is not None:
            by_path[hit] = line if hit not in by_path else by_path[hit] + "; " + line
        else:
            other.append(line)
    return by_path, other
