"""Every damaged file in ``corpus/`` (inputs that once failed: a traceback, a hang, or accepted
although wrong) still gives a clean outcome.

``case.json``: the format and the file damaged (see ``inputs.py``), the damage, whether the input
must be refused, ``replace_with`` when the file became a directory, FIFO or link to /dev/zero,
``"xfail"`` (with the reason) for a bug in code owned elsewhere that is still open (strict: the
fix shows up as an XPASS), and ``"isolate": true`` to run it in a subprocess with a memory limit
and a timeout (inputs that hang or fill memory until fixed)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.fuzz.engine import CORPUS
from tests.fuzz.harness import check_outcome, record, run_cli, run_isolated
from tests.fuzz.inputs import ALL, build

CASES = sorted(p for p in CORPUS.iterdir() if (p / "case.json").is_file()) if CORPUS.is_dir() else []


def _params():
    for case in CASES:
        meta = json.loads((case / "case.json").read_text())
        marks = [pytest.mark.xfail(strict=True, reason=meta["xfail"])] if meta.get("xfail") else []
        yield pytest.param(case, meta, id=case.name, marks=marks)


def _apply(meta: dict, case: Path, target: Path) -> None:
    kind = meta.get("replace_with")
    if kind is None:
        shutil.copyfile(case / "input", target)
        return
    if target.is_dir():
        shutil.rmtree(target)
    else:
        target.unlink()
    if kind == "directory":
        target.mkdir()
        (target / "inside.txt").write_text("1\n")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "dev-zero":
        target.symlink_to("/dev/zero")
    else:  # pragma: no cover
        raise ValueError(kind)


@pytest.mark.parametrize("case,meta", list(_params()))
def test_corpus_case(case, meta):
    fmt = ALL[meta["format"]]
    root = Path(tempfile.mkdtemp(prefix="densim-corpus-"))
    try:
        d = root / "t"
        build(fmt, d)
        _apply(meta, case, d / meta["target"])
        argv, expect = fmt.argv(d)
        o = run_isolated(argv) if meta.get("isolate") else run_cli(argv)
        record(fmt.name, "corpus")
        check_outcome(o, expect, must_fail=meta["must_fail"], label=f"{case.name}: {meta['damage']}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_corpus_is_not_empty():
    assert len(CASES) >= 10
