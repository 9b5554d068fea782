"""Crash hygiene of the `densim` entry point: one line and a meaningful exit status, whatever happens."""

from __future__ import annotations

import json
import math
import os
import stat

import pytest

from densim.atomic import dumps_strict, write_json_atomic
from densim.cli.main import main


def _run(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    cap = capsys.readouterr()
    return e.value.code, cap.out, cap.err


def test_version(capsys):
    code, out, _ = _run(["--version"], capsys)
    assert code == 0 and out.startswith("densim ")


def test_usage_errors_exit_2(capsys):
    code, _, err = _run(["no-such-command"], capsys)
    assert code == 2 and "No such command" in err and "Traceback" not in err


def test_unexpected_exception_is_one_line_with_a_debug_pointer(monkeypatch, capsys, repo):
    import densim.plant

    def boom(*a, **k):
        raise RuntimeError("something\nunexpected")

    monkeypatch.setattr(densim.plant, "load_plant", boom)
    code, _, err = _run(["run", str(repo / "examples/planetlab.yaml"), "--no-progress"], capsys)
    assert code == 1
    assert err.strip().splitlines() == ["densim: error: unexpected RuntimeError: something unexpected "
                                        "(run again with --debug for the traceback)"]
    with pytest.raises(RuntimeError):
        main(["run", str(repo / "examples/planetlab.yaml"), "--no-progress", "--debug"])


def test_interrupt_exits_130_with_one_line(monkeypatch, capsys, repo):
    import densim.plant

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(densim.plant, "load_plant", interrupted)
    code, _, err = _run(["run", str(repo / "examples/planetlab.yaml"), "--no-progress"], capsys)
    assert code == 130 and len(err.strip().splitlines()) == 1 and "interrupted" in err


def test_failed_run_leaves_the_previous_result_whole(tmp_path, write_yaml, capsys):
    """A failed run changes nothing in --out: the previous complete result stays, every file of it
    (issue 29: it used to remove the old summary.json and leave the old tables beside nothing)."""
    out = tmp_path / "out"
    good = {"cluster": {"hosts": [{"count": 1, "cpu": {"cores_per_socket": 4, "base_clock": "2 GHz"}, "memory": "16 GiB",
                                   "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]},
            "vms": [{"name": "v", "count": 2, "vcpus": 1, "memory": "1 GiB", "profile": {"kind": "constant", "mean": 0.5}}],
            "simulation": {"step": "5 min", "horizon": "1 h"}}
    code, _, _ = _run(["run", str(write_yaml(good, "good.yaml")), "--out", str(out), "--no-progress", "--no-report"], capsys)
    assert code == 0 and (out / "summary.json").exists()
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    bad = dict(good, vms=[{"name": "v", "count": 2, "vcpus": 1, "memory": "1 GiB", "trace": {"format": "planetlab", "path": str(tmp_path / "missing")}}])
    code, _, err = _run(["run", str(write_yaml(bad, "bad.yaml")), "--out", str(out), "--no-progress", "--no-report"], capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")] == []  # no staging folder or lock left


def test_files_follow_the_umask_not_0600(tmp_path):
    old = os.umask(0o022)
    try:
        p = write_json_atomic(tmp_path / "s.json", {"a": 1})
    finally:
        os.umask(old)
    assert stat.S_IMODE(p.stat().st_mode) == 0o644


def test_summaries_are_strict_json(tmp_path):
    # NaN and infinities are not JSON; strict parsers (JavaScript's JSON.parse, jq) reject them
    p = write_json_atomic(tmp_path / "s.json", {"gap": math.nan, "big": math.inf, "xs": [1.0, -math.inf]})
    text = p.read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict constant {c}")) == {
        "gap": None, "big": None, "xs": [1.0, None]}
    assert dumps_strict({"x": float("nan")}) == '{"x": null}'
