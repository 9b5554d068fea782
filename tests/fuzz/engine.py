"""The fuzz loop shared by the test modules: pick a format, a target file and a damage; build,
damage, run, check. A failing example can be saved to the corpus (``DENSIM_FUZZ_SAVE=1``)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from hypothesis import strategies as st

from tests.fuzz.damage import (Damage, bytes_damage, kind_damage, lines_damage, mapping_damage, parquet_damage,
                               table_damage, xlsx_damage)
from tests.fuzz.harness import check_outcome, known_bug, record, run_cli
from tests.fuzz.inputs import ALL, Format, build

CORPUS = Path(__file__).resolve().parent / "corpus"
SCALE = float(os.environ.get("DENSIM_FUZZ_SCALE", "1"))  # more examples for a longer exploration run


def n(examples: int) -> int:
    return max(1, int(examples * SCALE))


@functools.cache
def _valid_tree(name: str) -> Path:
    d = Path(tempfile.mkdtemp(prefix=f"densim-fuzz-valid-{name}-"))
    build(ALL[name], d / "t")
    return d / "t"


def valid_bytes(name: str, rel: str) -> bytes:
    return (_valid_tree(name) / rel).read_bytes()


@st.composite
def cases(draw, names: list[str]) -> tuple[Format, str, Damage]:
    fmt = ALL[draw(st.sampled_from(names))]
    rel = draw(st.sampled_from(sorted(fmt.targets)))
    target = fmt.targets[rel]
    data = valid_bytes(fmt.name, rel)
    roll = draw(st.integers(0, 99))
    if roll < 12:
        dmg = draw(kind_damage(target))
    elif target.kind == "parquet":
        dmg = draw(parquet_damage(data, target))
    elif target.kind == "xlsx":
        dmg = draw(xlsx_damage(data, target))
    elif roll < 35:
        dmg = draw(bytes_damage(data, target))
    elif target.kind == "table":
        dmg = draw(table_damage(data, target))
    elif target.kind == "lines":
        dmg = draw(lines_damage(data, target))
    elif target.kind == "mapping":
        import yaml

        doc = json.loads(data) if target.json else yaml.safe_load(data)
        dmg = draw(mapping_damage(doc, target, free=fmt.free))
    else:
        dmg = draw(bytes_damage(data, target))
    return fmt, rel, dmg


def run_case(fmt: Format, rel: str, dmg: Damage) -> None:
    label = f"{dmg.cls}: {dmg.detail}"
    if known_bug(fmt.name, label, None) and os.environ.get("DENSIM_FUZZ_COLLECT") != "1":
        record(fmt.name, "known-bug")  # would hang or fill memory: its corpus case runs it isolated
        return
    root = Path(tempfile.mkdtemp(prefix="densim-fuzz-"))
    try:
        d = root / "t"
        build(fmt, d)
        dmg.apply(d / rel)
        argv, expect = fmt.argv(d)
        if os.environ.get("DENSIM_FUZZ_VERBOSE") == "1":
            print(f"fuzz: {fmt.name} {rel} {dmg!r}", file=sys.__stderr__, flush=True)
        o = run_cli(argv)
        record(fmt.name, dmg.cls)
        try:
            check_outcome(o, expect, must_fail=dmg.must_fail, label=f"{fmt.name} {rel} {dmg!r}")
        except AssertionError:
            if known_bug(fmt.name, label, o) and os.environ.get("DENSIM_FUZZ_COLLECT") != "1":
                record(fmt.name, "known-bug")
                return
            if os.environ.get("DENSIM_FUZZ_SAVE") == "1":
                save_case(fmt, rel, dmg, d / rel)
                if os.environ.get("DENSIM_FUZZ_COLLECT") == "1":  # keep going: collect every failing example
                    return
            raise
    finally:
        shutil.rmtree(root, ignore_errors=True)


def save_case(fmt: Format, rel: str, dmg: Damage, damaged: Path) -> Path:
    """Keep a failing damaged file in the corpus (a regular file's bytes, or the kind of file it became)."""
    meta = {"format": fmt.name, "target": rel, "damage": f"{dmg.cls}: {dmg.detail}", "must_fail": dmg.must_fail}
    if damaged.is_symlink():
        meta["replace_with"] = "dev-zero"
        blob = b""
    elif damaged.is_dir():
        meta["replace_with"] = "directory"
        blob = b""
    elif damaged.exists() and not damaged.is_file():
        meta["replace_with"] = "fifo"
        blob = b""
    else:
        blob = damaged.read_bytes()
    h = hashlib.sha256(json.dumps(meta, sort_keys=True).encode() + blob).hexdigest()[:10]
    case = CORPUS / f"{fmt.name}__{Path(rel).name}__{h}"
    case.mkdir(parents=True, exist_ok=True)
    (case / "case.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    if "replace_with" not in meta:
        (case / "input").write_bytes(blob)
    return case
