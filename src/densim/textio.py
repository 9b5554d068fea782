"""Reading the text files users give densim (scenarios, candidates, studies, tile hosts), safely.

One function, :func:`read_mapping_file`, is the only way a command reads a YAML or JSON file:

* the path must be a regular, readable file (not a directory, a device such as ``/dev/zero`` or a
  FIFO) of at most :data:`MAX_BYTES`, UTF-8 text without NUL bytes;
* YAML duplicate keys are errors (the last one winning silently hides mistakes), and so are JSON
  duplicate keys;
* aliases may not expand the document beyond :data:`MAX_NODES` nodes (a "billion laughs" bomb is
  a few hundred bytes that expand to 10^9 nodes), nor nest deeper than :data:`MAX_DEPTH`.

Problems raise :class:`densim.errors.InputError` with the file, the line and column, and what is
wrong.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import yaml

from densim.errors import InputError

MAX_BYTES = 64 * 1024 * 1024
MAX_NODES = 2_000_000
MAX_DEPTH = 200


def regular_file_stat(path: str | Path, what: str = "file") -> os.stat_result:
    """``path``'s stat when it is an existing regular file (not a folder, device, FIFO or socket),
    else an :class:`InputError` saying which; every reader checks its inputs with this."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(path, "", f"{what} not found") from None
    except OSError as exc:
        raise InputError(path, "", f"cannot read {what}: {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(path, "", f"is a directory, expected a {what}")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(path, "", f"is not a regular file (a device, FIFO or socket), expected a {what}")
    return st


def read_text_file(path: str | Path, what: str = "file") -> str:
    """The UTF-8 text of a regular file, or an :class:`InputError` saying why not."""
    p = Path(path)
    st = regular_file_stat(p, what)
    if st.st_size > MAX_BYTES:
        raise InputError(p, "", f"{what} is {st.st_size / 2**20:.0f} MiB, more than the {MAX_BYTES // 2**20} MiB a text input may be")
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(p, "", f"cannot read {what}: {exc.strerror}") from None
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise InputError(p, f"byte {nul}", f"binary data (a NUL byte) where a text {what} is expected")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(p, f"byte {exc.start}", f"not UTF-8 text: a {what} must be UTF-8") from None


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(None, None, "a mapping key must be a plain value",
                                                    key_node.start_mark) from None
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first at line {seen[key].start_mark.line + 1})", key_node.start_mark)
        seen[key] = key_node
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

MAX_INT_DIGITS = 100  # a YAML integer with more digits is refused (Python refuses to convert 4,300 or more)


def _construct_int(loader: _StrictLoader, node: yaml.ScalarNode) -> int:
    """An integer, with the YAML 1.1 forms that read as something else than they look refused:
    ``014`` (octal: 12), ``1:30`` (base 60: 90); and integers too long to be a real figure."""
    text = str(node.value).replace("_", "")
    body = text.lstrip("+-")
    if len(body) > 1 and body[0] == "0" and body[1].isdigit():
        raise yaml.constructor.ConstructorError(
            None, None, f"{node.value} has a leading zero, which YAML 1.1 reads as an octal number ({text} = "
            f"{loader.construct_yaml_int(node)}); write it without the leading zero, or quote it", node.start_mark)
    if ":" in body:
        raise yaml.constructor.ConstructorError(
            None, None, f"{node.value} is a base-60 number in YAML 1.1 ({loader.construct_yaml_int(node)}); write the "
            "number out, or quote it", node.start_mark)
    if len(body) > MAX_INT_DIGITS:
        raise yaml.constructor.ConstructorError(
            None, None, f"an integer of {len(body):,} digits is too large (at most {MAX_INT_DIGITS})", node.start_mark)
    return loader.construct_yaml_int(node)


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _expanded_size(root: yaml.Node) -> int:
    """Nodes the document has once every alias is expanded (memoised, so a bomb is cheap to size)."""
    memo: dict[int, int] = {}
    # iterative post-order walk; the node graph is a DAG (PyYAML rejects recursive aliases later)
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 0, False)]
    while stack:
        node, depth, done = stack.pop()
        if id(node) in memo:
            continue
        if depth > MAX_DEPTH:
            raise _TooDeep(node)
        if isinstance(node, yaml.ScalarNode):
            memo[id(node)] = 1
            continue
        children = [c for pair in node.value for c in pair] if isinstance(node, yaml.MappingNode) else list(node.value)
        if done:
            total = 1 + sum(memo.get(id(c), 0) for c in children)
            memo[id(node)] = min(total, MAX_NODES + 1)
            continue
        stack.append((node, depth, True))
        stack.extend((c, depth + 1, False) for c in children if id(c) not in memo)
    return memo[id(root)]


class _TooDeep(Exception):
    def __init__(self, node: yaml.Node) -> None:
        self.node = node


def parse_yaml(text: str, origin: str | Path) -> Any:
    """Parse YAML text with duplicate keys, alias bombs and runaway nesting refused."""
    try:
        loader = _StrictLoader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            try:
                size = _expanded_size(node)
            except _TooDeep as exc:
                m = exc.node.start_mark
                raise InputError(origin, f"line {m.line + 1} column {m.column + 1}",
                                 f"nested more than {MAX_DEPTH} levels deep") from None
            if size > MAX_NODES:
                raise InputError(origin, "", f"aliases expand the document to more than {MAX_NODES:,} values "
                                             "(an alias bomb?)")
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except RecursionError:
        raise InputError(origin, "", f"nested too deeply (more than {MAX_DEPTH} levels)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(origin, where, f"invalid YAML: {problem}") from None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def _not_json(token: str) -> Any:
    raise ValueError(f"{token} is not a JSON number")


def _json_depth(value: Any) -> int:
    """Deepest nesting of lists and mappings (iterative, so a deep document cannot overflow the stack)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            deepest = max(deepest, d)
            if d <= MAX_DEPTH:
                stack.extend((c, d + 1) for c in (v.values() if isinstance(v, dict) else v))
    return deepest


def parse_json(text: str, origin: str | Path) -> Any:
    """Parse JSON text with duplicate keys, NaN/Infinity and runaway nesting refused (as :func:`parse_yaml`)."""
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_not_json)
        if _json_depth(value) > MAX_DEPTH:
            raise InputError(origin, "", f"nested more than {MAX_DEPTH} levels deep")
        return value
    except json.JSONDecodeError as exc:
        raise InputError(origin, f"line {exc.lineno} column {exc.colno}", f"invalid JSON: {exc.msg}") from None
    except ValueError as exc:
        raise InputError(origin, "", f"invalid JSON: {exc}") from None
    except RecursionError:
        raise InputError(origin, "", "nested too deeply") from None


def read_mapping_file(path: str | Path, what: str = "file") -> dict[str, Any]:
    """A YAML or JSON file (by suffix) that must hold a mapping; ``{}`` for an empty file."""
    p = Path(path)
    text = read_text_file(p, what)
    data = parse_json(text, p) if p.suffix.lower() == ".json" else parse_yaml(text, p)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(p, "", f"a {what} must be a mapping of keys to values, not a {type(data).__name__}")
    return data
