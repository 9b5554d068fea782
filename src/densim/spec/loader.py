"""The one loader of user files (scenario, io, size, plan, tiles host, sweep study): YAML or JSON with
``imports``, every problem reported with its file and field path."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from pydantic import BaseModel

from densim.errors import ScenarioInvalid
from densim.spec.scenario import Scenario

M = TypeVar("M", bound=BaseModel)

# keys whose string values are file paths, resolved relative to the file that contains them
_PATH_KEYS = {"path", "file", "trace_path", "inventory"}


def _read_mapping(path: Path, what: str = "scenario file") -> dict[str, Any]:
    from densim.errors import InputError
    from densim.textio import read_mapping_file

    try:
        return read_mapping_file(path, what)
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


MAX_IMPORT_DEPTH = 16  # files importing files importing files ...
MAX_IMPORT_FILES = 256  # distinct files one scenario reads through its imports


class _ImportState:
    """One top-level load: every file read once (by resolved path), the count of files read."""

    def __init__(self, sections: frozenset[str] | None) -> None:
        self.done: dict[Path, dict[str, Any]] = {}
        self.sections = sections


def load_mapping(path: str | Path, _seen: tuple[Path, ...] = (), *, sections: frozenset[str] | None = None,
                 _state: _ImportState | None = None) -> dict[str, Any]:
    """Read a scenario file and its ``imports`` into one merged mapping (paths made absolute).

    Each file is read and merged once, however often it is imported (a file imported twice by
    each of 40 files is read once, not 2**40 times); imports nest at most ``MAX_IMPORT_DEPTH``
    levels and name at most ``MAX_IMPORT_FILES`` files. ``sections`` (the top-level keys the
    schema knows) makes an imported file with any other top-level key an error that names the file
    and says it is no scenario fragment, without repeating its content (default: the scenario's sections).
    """
    state = _state if _state is not None else _ImportState(sections or schema_sections(Scenario))
    path = Path(path).resolve()
    if path in _seen:
        chain = " -> ".join(p.name for p in (*_seen, path))
        raise ScenarioInvalid(path, [("imports", f"import cycle: {chain}")])
    if path in state.done:
        return state.done[path]
    data = _resolve_paths(_read_mapping(path), path.parent)
    if _state is None and data and not any(isinstance(k, str) and k in state.sections for k in data):
        # not one known section: some other file (never list its keys: they may be its content)
        raise ScenarioInvalid(path, [("", f"not a scenario file: none of its {len(data):,} top-level keys is a "
                                          "section of this kind of file")])
    imports = data.get("imports") or []
    if not isinstance(imports, list):
        raise ScenarioInvalid(path, [("imports", "must be a list of file paths")])
    merged: dict[str, Any] = {}
    for i, imp in enumerate(imports):
        if not isinstance(imp, str):
            raise ScenarioInvalid(path, [(f"imports[{i}]", "must be a file path")])
        target = (path.parent / imp).resolve()
        if not target.is_file():
            raise ScenarioInvalid(path, [(f"imports[{i}]", f"imported file not found: {imp}")])
        if len(_seen) + 1 >= MAX_IMPORT_DEPTH:
            raise ScenarioInvalid(path, [(f"imports[{i}]", f"imports nest more than {MAX_IMPORT_DEPTH} files deep")])
        if target not in state.done and len(state.done) >= MAX_IMPORT_FILES:
            raise ScenarioInvalid(path, [(f"imports[{i}]", f"imports read more than {MAX_IMPORT_FILES} files")])
        part = load_mapping(target, (*_seen, path), _state=state)
        if state.sections is not None:
            foreign = [k for k in part if not isinstance(k, str) or k not in state.sections]
            if foreign:
                # name the file, never its content: an imported file may be anything (/etc/shadow)
                raise ScenarioInvalid(path, [(f"imports[{i}]", f"{target} is not a valid scenario fragment: "
                                              f"{len(foreign)} of its top-level keys are not scenario sections")])
        merged = _merge(merged, part)
    merged = _merge(merged, data)
    merged["imports"] = [str((path.parent / i).resolve()) for i in imports]
    state.done[path] = merged
    return merged


def schema_sections(schema: type[BaseModel]) -> frozenset[str]:
    """The top-level keys a file of ``schema`` may have (field names and their aliases)."""
    out = {"imports"}
    for name, f in schema.model_fields.items():
        out.add(name)
        if f.alias:
            out.add(f.alias)
    return frozenset(out)


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


def validate_mapping(data: dict[str, Any], schema: type[M], source: str | Path) -> M:
    """Validate a mapping into ``schema`` or raise :class:`ScenarioInvalid` listing every issue with its field path."""
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise ScenarioInvalid(source, validation_issues(exc)) from None


def load_spec(path: str | Path, schema: type[M], *, what: str = "scenario file", imports: bool = True,
              resolve_paths: bool = True, base_dir_field: str | None = None) -> M:
    """The one loader: read ``path`` (YAML or JSON; with its ``imports`` merged when ``imports``),
    make relative file paths absolute unless ``resolve_paths`` is False, and validate it into ``schema``.

    Every problem raises :class:`ScenarioInvalid` (an :class:`~densim.errors.InputError`) naming the
    file and the field path. ``base_dir_field`` names a schema field that receives the file's folder.
    """
    path = Path(path)
    if imports:
        data = load_mapping(path, sections=schema_sections(schema))
    else:
        data = _read_mapping(path, what) or {}
        if resolve_paths:
            data = _resolve_paths(data, path.resolve().parent)
    if "imports" not in schema.model_fields:
        data.pop("imports", None)  # merged already; a schema without the field does not keep the list
    if base_dir_field is not None:
        data = {**data, base_dir_field: str(path.resolve().parent)}
    return validate_mapping(data, schema, path)


def scenario_from_dict(data: dict[str, Any], *, source: str | Path = "<scenario>", base_dir: str | Path = ".") -> Scenario:
    """Validate a mapping (already merged) into a :class:`Scenario`, or raise with every issue.

    This checks what the scenario says; :func:`densim.plant.resolve` then checks it against the
    catalog (part names, the fields each switched-on model needs, trace paths).
    """
    return validate_mapping({**data, "base_dir": str(base_dir)}, Scenario, source)


def load_scenario(path: str | Path) -> Scenario:
    """Load a scenario file with its imports; raises :class:`ScenarioInvalid` listing every problem."""
    return load_spec(path, Scenario, base_dir_field="base_dir")
