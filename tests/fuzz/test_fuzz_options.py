"""Bad option values and arguments for every command: exit 2 (usage) or 1 (one line), no traceback,
no output that looks complete. ``@`` values stand for paths made in the example's folder."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fuzz.engine import n
from tests.fuzz.harness import Expect, check_outcome, known_bug, record, run_cli
from tests.fuzz.inputs import ALL, build

SETTINGS = dict(derandomize=True, deadline=None, database=None, print_blob=False,
                phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])

VALUES = ["0", "-1", "1.5", "1e400", "nan", "inf", "-inf", "abc", "", " ", "99999999999999999999999", "18446744073709551616",
          "-9223372036854775809", "8 GiB", "0 B", "-5 GiB", "1e-300", "@dir", "@file", "@devnull", "@under-a-file", "@long",
          "@missing", "\u00e9\u00e8", "--help-me"]

# (format whose valid inputs are built, argv with {V} where the bad value goes, output that a success writes)
COMMANDS = [
    ("scenario-yaml-run", ["run", "@s.yaml", "--out", "@out", "--no-progress", "--no-report", "--seed", "{V}"], "out/summary.json"),
    ("scenario-yaml-run", ["run", "@s.yaml", "--out", "{V}", "--no-progress", "--no-report"], None),
    ("scenario-yaml-run", ["run", "@s.yaml", "--out", "@out", "--no-progress", "--no-report", "--max-memory", "{V}"], "out/summary.json"),
    ("scenario-yaml-run", ["run", "{V}", "--out", "@out", "--no-progress"], "out/summary.json"),
    ("scenario-yaml-validate", ["validate", "{V}"], None),
    ("generic-csv", ["plan", "@w.csv", "--candidates", "@cand.yaml", "--out", "@out", "--steps", "{V}"], "out/summary.json"),
    ("generic-csv", ["plan", "@w.csv", "--candidates", "@cand.yaml", "--out", "@out", "--windows", "{V}"], "out/summary.json"),
    ("generic-csv", ["plan", "@w.csv", "--candidates", "@cand.yaml", "--out", "@out", "--seed", "{V}"], "out/summary.json"),
    ("generic-csv", ["plan", "@w.csv", "--candidates", "@cand.yaml", "--out", "{V}"], None),
    ("generic-csv", ["plan", "@w.csv", "--candidates", "@cand.yaml", "--out", "@out", "--format", "{V}"], "out/summary.json"),
    ("generic-csv", ["plan", "@w.csv", "--candidates", "@cand.yaml", "--out", "@out", "--policy", "{V}"], "out/summary.json"),
    ("generic-csv", ["plan", "@w.csv", "--candidates", "@cand.yaml", "--out", "@out", "--max-memory", "{V}"], "out/summary.json"),
    ("generic-csv", ["plan", "{V}", "--candidates", "@cand.yaml", "--out", "@out"], "out/summary.json"),
    ("generic-csv", ["plan", "@w.csv", "--candidates", "{V}", "--out", "@out"], "out/summary.json"),
    ("rvtools-xlsx", ["plan", "@rv.xlsx", "--candidates", "@cand.yaml", "--out", "@out", "--snapshot-peak-factor", "{V}"], "out/summary.json"),
    ("sweep-study", ["sweep", "@study.yaml", "--out", "@results", "--backend", "inprocess", "--workers", "{V}"], None),
    ("sweep-study", ["sweep", "@study.yaml", "--out", "@results", "--backend", "inprocess", "--retries", "{V}"], None),
    ("sweep-study", ["sweep", "@study.yaml", "--out", "@results", "--backend", "{V}"], None),
    ("sweep-study", ["sweep", "@study.yaml", "--out", "@results", "--backend", "inprocess", "--max-runs", "{V}"], None),
    ("sweep-study", ["sweep", "@study.yaml", "--out", "{V}", "--backend", "inprocess"], None),
    ("sweep-study", ["sweep", "{V}", "--out", "@results", "--backend", "inprocess"], None),
    ("store-query", ["query", "@study.yaml", "--out", "@results", "{V}"], None),
    ("store-query", ["query", "@study.yaml", "--out", "@results", "--format", "{V}", "SELECT 1"], None),
    ("store-query", ["query", "{V}", "--out", "@results", "SELECT 1"], None),
    ("store-report", ["report", "@study.yaml", "--out", "@results", "--metric", "{V}", "--html", "@r.html"], "r.html"),
    ("store-report", ["report", "@study.yaml", "--out", "@results", "--html", "{V}"], None),
    ("scenario-yaml-run", ["schema", "--out", "{V}"], None),
    ("scenario-yaml-run", ["study", "{V}"], None),
    ("tiles-host", ["bench", "tiles", "@host.yaml", "--out", "@tiles", "--seed", "{V}"], "tiles/summary.json"),
    ("tiles-host", ["bench", "tiles", "@host.yaml", "--out", "{V}"], None),
    ("io-yaml", ["io", "{V}"], None),
    ("io-yaml", ["io", "@io.yaml", "--out", "{V}"], None),
    ("size-yaml", ["size", "{V}"], None),
    ("size-yaml", ["size", "@size.yaml", "--out", "{V}"], None),
    ("size-yaml", ["size", "@size.yaml", "--out", "@sized", "--max-configurations", "{V}"], "sized/summary.json"),
]
# values a command would accept and then run for long (a built-in study, a local Dask cluster, the demo)
SLOW_VALID = {("study", v) for v in ("mail-server", "shared-flash")}
SQL = ["SELECT", "SELECT * FROM nowhere", "COPY (SELECT 1) TO '@file'", "ATTACH '@file' AS x", "INSTALL httpfs",
       "SELECT 1; DROP VIEW results", "PRAGMA threads=1", "SELECT count(*) FROM results WHERE", "'; --", "\x00", "SELECT 1e400",
       "SELECT " + "(" * 5000 + "1" + ")" * 5000]


def _value(v: str, d: Path) -> str:
    if v == "@dir":
        (d / "adir").mkdir(exist_ok=True)
        return str(d / "adir")
    if v == "@file":
        (d / "afile").write_text("x\n")
        return str(d / "afile")
    if v == "@devnull":  # a link to /dev/null: a command that wrongly replaces its --out replaces the link, not the device
        link = d / "devnull"
        if not link.is_symlink():
            link.symlink_to("/dev/null")
        return str(link)
    if v == "@under-a-file":
        (d / "afile").write_text("x\n")
        return str(d / "afile" / "inside")
    if v == "@long":
        return str(d / ("x" * 300))
    if v == "@missing":
        return str(d / "missing" / "thing.yaml")
    return v.replace("@file", str(d / "afile"))


@st.composite
def option_cases(draw):
    fmt, argv, result = draw(st.sampled_from(COMMANDS))
    pool = VALUES + (SQL if argv[0] == "query" and "{V}" == argv[-1] else [])
    v = draw(st.sampled_from(pool))
    return fmt, argv, result, v


@settings(max_examples=n(110), **SETTINGS)
@given(option_cases())
def test_bad_options(case):
    fmt_name, template, result, raw = case
    root = Path(tempfile.mkdtemp(prefix="densim-fuzz-opt-"))
    try:
        d = root / "t"
        build(ALL[fmt_name], d)
        v = _value(raw, d)
        argv = [v if a == "{V}" else (str(d / a[1:]) if a.startswith("@") else a) for a in template]
        if (argv[0], v) in SLOW_VALID:
            return
        cwd = os.getcwd()
        os.chdir(d)  # a relative value such as "0" or "-1" given as --out lands in the example's folder
        try:
            o = run_cli(argv)
        finally:
            os.chdir(cwd)
        i = template.index("{V}")
        record("options", f"{' '.join(template[:2]) if template[0] == 'bench' else template[0]} "
                          f"{template[i - 1] if template[i - 1].startswith('--') else 'argument'}")
        complete = [d / result] if result else []
        label = f"{' '.join(template[:2]) if template[0] == 'bench' else template[0]} " \
                f"{template[i - 1] if template[i - 1].startswith('--') else 'argument'}: {raw!r}"
        try:
            check_outcome(o, Expect(names=[v, str(d)], complete=complete if o.code else [],
                                    multi_line=template[0] in ("run", "validate", "sweep")),
                          must_fail=False, label=f"options {label}")
        except AssertionError:
            if os.environ.get("DENSIM_FUZZ_COLLECT") == "1":
                print(f"OPTIONS-FAIL {label} exit={o.code} {o.err.strip()[:200]}", file=sys.__stderr__)
                return
            if known_bug("options", label, o):
                record("options", "known-bug")
                return
            raise
        if o.code == 0 and result:
            assert (d / result).exists(), f"exit 0 without {result}"
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("seed", ["-1", "18446744073709551616"])
def test_bench_tiles_seed_out_of_range_is_a_usage_error(tmp_path, seed):
    # numpy seeds are 0 .. 2**64 - 1 (as for run and plan): -1 reached numpy as an unexpected ValueError
    build(ALL["tiles-host"], tmp_path / "t")
    o = run_cli(["bench", "tiles", tmp_path / "t" / "host.yaml", "--out", tmp_path / "tiles", "--seed", seed])
    check_outcome(o, Expect(names=[str(tmp_path)], complete=[tmp_path / "tiles" / "summary.json"]), must_fail=True,
                  label=f"bench tiles --seed {seed}")
    assert o.code == 2 and "Invalid value for '--seed'" in o.err


@pytest.mark.parametrize("fmt,cmd", [("io-yaml", ["io", "@io.yaml"]), ("size-yaml", ["size", "@size.yaml"]),
                                     ("tiles-host", ["bench", "tiles", "@host.yaml"])])
def test_out_device_is_refused(tmp_path, fmt, cmd):
    # --out was written with write_text_atomic whatever it was: given /dev/null (as root) the device node
    # became a regular file. Now it is checked like run's (cli.common.out_folder: --out is a folder) before any work.
    d = tmp_path / "t"
    build(ALL[fmt], d)
    link = d / "devnull"
    link.symlink_to("/dev/null")  # the link stands for the device: replacing it harms nothing
    o = run_cli([str(d / a[1:]) if a.startswith("@") else a for a in cmd] + ["--out", link])
    assert o.code == 1 and link.is_symlink(), f"exit {o.code}; --out {'kept' if link.is_symlink() else 'replaced by a file'}"
    assert o.err.strip() == f"densim: error: --out {link}: exists and is not a folder; results go to a folder", o.err
