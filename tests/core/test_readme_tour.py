"""The README's five-minute tour, run as written: every command exits 0, and every figure its comment
promises is the figure the command prints.

The tour block is read from README.md itself (not copied here), so a command added to it is run by
this test, and a comment whose figure goes stale fails it (in session 18 the `gpu size` comment still
said 7 replicas, from before the tensor-parallel all-reduce term made it 8). Changes to the block
itself: `--out out/<x>` writes under the test's tmp folder, `<name>` is a built-in study, `> file`
is the command's output written to that file. Two commands are not run: `densim serve` (a server that
runs until stopped: tests/serve) and `densim --install-completion` (it edits the user's shell files).
"""

from __future__ import annotations

import json
import re
import shlex

import pytest
from typer.testing import CliRunner

from densim.cli.main import app

from tests.conftest import REPO, TRACES

runner = CliRunner()
NOT_RUN = {"densim serve": "a server that runs until stopped (tests/serve)",
           "densim --install-completion": "edits the user's shell start-up files"}
STUDY = "val-optane-p4800x"  # for the tour's `densim study <name>`: a small study


def tour() -> list[tuple[str, str]]:
    """``(command, comment)`` per line of the tour's shell block, continuation lines joined."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"^## A five-minute tour\n+```sh\n(.*?)^```", text, re.S | re.M)
    assert block, "README.md has no '## A five-minute tour' section with a ```sh block"
    joined = re.sub(r"\\\n\s*", "", block.group(1))
    out = []
    for line in joined.splitlines():
        if not line.strip():
            continue
        cmd, _, comment = line.partition("  # ")
        out.append((cmd.strip(), comment.strip()))
    return out


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def _summary(out_dir) -> dict:
    return json.loads((out_dir / "summary.json").read_text())


def _vms_on_hosts(pattern: str, comment: str, summary: dict, vms_key: str) -> None:
    """A comment's "N ... VMs ... on M hosts" against the run's summary."""
    m = re.search(pattern, comment)
    assert m, f"the tour's comment no longer says {pattern!r}: {comment!r}"
    assert (summary[vms_key], summary["hosts_total"]) == (_number(m.group(1)), _number(m.group(2)))


def check_claims(cmd: str, comment: str, output: str, outs: dict) -> None:
    """The figures the tour's comment states, against what the command gave."""
    if "examples/bitbrains-small.yaml" in cmd:
        _vms_on_hosts(r"([\d,]+) Bitbrains VMs .* on ([\d,]+) hosts", comment, _summary(outs["bb"]), "vms_total")
    elif "examples/opendc/surf-week.yaml" in cmd:
        m = re.search(r"([\d,]+) tasks arrive", comment)
        sched = _summary(outs["surf"])["scheduling"]
        assert sched["tasks_total"] == sched["completed"] == _number(m.group(1))
    elif "examples/planetlab.yaml" in cmd and cmd.startswith("densim run"):
        _vms_on_hosts(r"([\d,]+) PlanetLab VMs on ([\d,]+) hosts", comment, _summary(outs["pl"]), "vms_placed")
    elif "candidates-hci.yaml" in cmd:
        m = re.search(r"(\d+) hosts, storage-bound \(compute alone needs (\d+)\)", comment)
        ans = _summary(outs["plan-hci"])["answer"]
        assert ans["hosts"] == int(m.group(1))
        assert ans["hosts_packed"] + ans["ha_spare_hosts"] == int(m.group(2))
        assert "Limiting resource: storage" in output
    elif cmd.startswith("densim tier-ratio"):
        m = re.search(r"\((1:[\d.]+) here\)", comment)
        assert f"Highest DRAM:NVMe ratio within 1.05x slowdown: {m.group(1)} " in output
    elif cmd.startswith("densim gpu size"):
        m = re.search(r"(\d+) hosts x (\d+) H100, (\d+) replicas x tp (\d+)", comment)
        hosts, per_host, replicas, tp = map(int, m.groups())
        assert f"{hosts} host(s) x {per_host} GPUs ({replicas * tp} GPUs used: {replicas} replica(s) x tp {tp})" in output


def test_tour_block_is_found_and_complete():
    cmds = [c for c, _ in tour()]
    # the two commands of the quick start are the tour's subject; these are its stops
    assert cmds[0] == ". .venv/bin/activate"
    assert sum(c.startswith("densim run ") for c in cmds) >= 4
    assert any(c.startswith("densim plan ") for c in cmds) and any(c.startswith("densim gpu size") for c in cmds)


def not_run(cmd: str) -> bool:
    return any(cmd.startswith(prefix) for prefix in NOT_RUN)


def test_only_the_named_commands_are_not_run():
    # each command left out is in the tour (a stale entry here would hide nothing, but says so)
    cmds = [c for c, _ in tour()]
    assert {p for p in NOT_RUN if any(c.startswith(p) for c in cmds)} == set(NOT_RUN)
    assert sum(not_run(c) for c in cmds) == len(NOT_RUN)


@pytest.mark.parametrize("cmd, comment", [t for t in tour() if t[0] != ". .venv/bin/activate" and not not_run(t[0])],
                         ids=lambda v: v[:60] if isinstance(v, str) else None)
def test_tour_command_runs_as_written(cmd, comment, tmp_path, monkeypatch):
    if "../shared/" in cmd and not TRACES.exists():
        pytest.skip("../shared/traces is not beside the repository")
    monkeypatch.chdir(REPO)  # the tour runs from the clone's root (../shared beside it)
    words = shlex.split(cmd.replace("<name>", STUDY))
    assert words[0] == "densim", cmd
    redirect = None
    if ">" in words:
        i = words.index(">")
        words, redirect = words[:i], words[i + 1]
    outs = {}
    for i, w in enumerate(words):
        if w.startswith("out/"):
            outs[w[4:]] = tmp_path / w[4:]
            words[i] = str(outs[w[4:]])
    r = runner.invoke(app, words[1:], catch_exceptions=False)
    assert r.exit_code == 0, f"{cmd}\n{r.output}"
    if redirect:
        (tmp_path / redirect).write_text(r.stdout)
        json.loads((tmp_path / redirect).read_text())  # `densim schema` writes one JSON document
    for d in outs.values():
        assert d.is_dir() and any(d.iterdir()), f"{cmd}: wrote nothing to {d}"
    check_claims(cmd, comment, r.output, outs)
