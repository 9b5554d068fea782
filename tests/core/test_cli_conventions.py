"""The CLI conventions of issue 17 (docs/background/cli-conventions.md), one test (or more) each:

--version; shell completion; --json on every command that reports (strict JSON); --quiet; progress on
stderr for the slow commands (plan included); --out always a folder; one default seed, recorded;
exit 1 with every candidate's reason when no plan candidate is feasible; files written with the
process umask; full-width tables or CSV when piped; unplaced counts that count every VM.

The first tests read the command tree itself, so a command added later (forecast, ...) that misses a
convention fails here without a test of its own.
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from densim.cli.main import app
from densim.rng import DEFAULT_SEED
from tests.fuzz.inputs import ALL, HOST, IO, SCENARIO, SIZE, STUDY, build

runner = CliRunner()

# commands whose whole output is a document already (schema prints the JSON Schema), or that serve
# rather than report (serve runs a web server until stopped; its pages download summary.json);
# every other command reports and must take --json and --quiet
NOT_REPORTING = {"schema", "serve"}
# commands that can take more than a second on the shipped inputs: progress on stderr (--no-progress to hide)
SLOW = {"run", "demo", "plan", "study", "studies", "size", "sweep", "report", "bench tiles", "forecast", "tier-ratio"}


def _commands() -> dict[str, object]:
    """Every leaf command of ``densim`` by its full name ('bench tiles'), as click sees it."""
    root = typer.main.get_command(app)
    out = {}

    def walk(group, prefix):
        for name, cmd in group.commands.items():
            full = f"{prefix}{name}"
            if hasattr(cmd, "commands"):
                walk(cmd, f"{full} ")
            else:
                out[full] = cmd

    walk(root, "")
    return out


def _option(cmd, flag: str):
    return next((p for p in cmd.params if flag in getattr(p, "opts", [])), None)


def _strict(text: str):
    """Parse JSON as a strict parser does: NaN, Infinity and -Infinity are errors."""
    def refuse(token):
        raise ValueError(f"{token} is not JSON")
    return json.loads(text, parse_constant=refuse)


# ------------------------------------------------------------------------------------ the command tree


def test_every_reporting_command_takes_json_and_quiet():
    missing = [(name, flag) for name, cmd in _commands().items() if name not in NOT_REPORTING
               for flag in ("--json", "--quiet") if _option(cmd, flag) is None]
    assert not missing, f"commands without a convention option: {missing}"


def test_every_slow_command_shows_progress_that_can_be_switched_off():
    cmds = _commands()
    assert SLOW <= set(cmds)
    assert not [n for n in SLOW if _option(cmds[n], "--no-progress") is None]


def test_every_seed_option_defaults_to_the_one_default_seed():
    # a --seed either defaults to 42 or to None, which means the input file's seed, itself 42 by default
    seeds = {name: _option(cmd, "--seed").default for name, cmd in _commands().items() if _option(cmd, "--seed")}
    assert set(seeds) >= {"run", "plan", "study", "studies", "bench tiles"}
    assert {v for v in seeds.values()} <= {DEFAULT_SEED, None}, seeds
    from densim.spec.scenario import SimulationSpec
    from densim.spec.sweep import SweepSpec
    from densim.spec.tiles import RunSpec

    assert DEFAULT_SEED == 42
    assert SimulationSpec.model_fields["seed"].default == SweepSpec.model_fields["seed"].default \
        == RunSpec.model_fields["seed"].default == DEFAULT_SEED


def test_every_out_option_is_a_folder():
    # one meaning for --out: help never says "file" (a result file is OUT/summary.json)
    for name, cmd in _commands().items():
        opt = _option(cmd, "--out")
        if opt is not None:
            assert "file" not in (opt.help or "").replace("summary.json", "").replace(".schema.json", ""), (name, opt.help)


# ------------------------------------------------------------------------------------ --version, completion


def test_version_prints_the_package_version():
    import densim

    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.stdout.strip() == f"densim {densim.__version__}"


def test_shell_completion_is_on():
    # click's completion protocol: the shell sets _DENSIM_COMPLETE and the words typed so far
    env = dict(os.environ, _DENSIM_COMPLETE="complete_bash", COMP_WORDS="densim pl", COMP_CWORD="1")
    r = subprocess.run([sys.executable, "-m", "densim.cli.main"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.split() == ["plan"], r.stderr
    env.update(COMP_WORDS="densim plan --cand", COMP_CWORD="2")
    r = subprocess.run([sys.executable, "-m", "densim.cli.main"], env=env, capture_output=True, text=True, timeout=300)
    assert "--candidates" in r.stdout.split()
    assert "--install-completion" in runner.invoke(app, ["--help"]).stdout


# ------------------------------------------------------------------------------------ the commands, run


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """Small valid inputs for every command (the fuzz suite's valid examples), a sweep run once and a
    tile result written once, so query, report and bench compare have something to read."""
    d = tmp_path_factory.mktemp("conventions")
    build(ALL["generic-csv"], d / "plan")
    scen = {k: v for k, v in SCENARIO.items()}
    (d / "s.yaml").write_text(yaml.safe_dump(scen))
    (d / "io.yaml").write_text(yaml.safe_dump(IO))
    (d / "size.yaml").write_text(yaml.safe_dump(SIZE))
    host = dict(HOST, server="ibm-x3650-m3-x5680", run={"intervals": 2, "warmup_intervals": 1})  # no seed: the default
    (d / "host.yaml").write_text(yaml.safe_dump(host))
    (d / "base.yaml").write_text(yaml.safe_dump(SCENARIO))
    (d / "study.yaml").write_text(yaml.safe_dump(STUDY))
    r = runner.invoke(app, ["sweep", str(d / "study.yaml"), "--out", str(d / "results"), "--backend", "inprocess", "--quiet"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["bench", "tiles", str(d / "host.yaml"), "--out", str(d / "tiles"), "--quiet"])
    assert r.exit_code == 0, r.output
    return d


def _argv(name: str, d: Path, tmp: Path) -> list[str]:
    return {
        "validate": ["validate", str(d / "s.yaml")],
        "models": ["models"],
        "run": ["run", str(d / "s.yaml"), "--out", str(tmp / "run"), "--no-report"],
        "plan": ["plan", str(d / "plan" / "w.csv"), "-c", str(d / "plan" / "cand.yaml"), "--out", str(tmp / "plan")],
        "io": ["io", str(d / "io.yaml")],
        "size": ["size", str(d / "size.yaml")],
        "study": ["study", "boot-drive", "--out", str(tmp / "study")],
        "bench tiles": ["bench", "tiles", str(d / "host.yaml"), "--out", str(tmp / "tiles")],
        "bench compare": ["bench", "compare", str(d / "tiles"), str(d / "tiles" / "summary.json")],
        "sweep": ["sweep", str(d / "study.yaml"), "--out", str(d / "results"), "--backend", "inprocess"],
        "query": ["query", str(d / "study.yaml"), "--out", str(d / "results"), "SELECT scenario, seed FROM results"],
        "report": ["report", str(d / "study.yaml"), "--out", str(d / "results"), "--html", str(tmp / "r.html")],
        "tier-ratio": ["tier-ratio", str(Path(__file__).resolve().parents[2] / "examples" / "memory" / "nvme-tiering.yaml"),
                       "--ratios", "1:1,1:2", "--out", str(tmp / "tier")],
    }[name]


RUN_HERE = ["validate", "models", "run", "plan", "io", "size", "study", "bench tiles", "bench compare", "sweep", "query", "report",
            "tier-ratio"]


@pytest.mark.parametrize("name", RUN_HERE)
def test_json_is_strict_and_the_only_stdout(inputs, tmp_path, name):
    r = runner.invoke(app, [*_argv(name, inputs, tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    doc = _strict(r.stdout)  # the whole of stdout is one strict JSON document
    assert isinstance(doc, (dict, list)) and doc


@pytest.mark.parametrize("name", RUN_HERE)
def test_quiet_prints_nothing_on_success(inputs, tmp_path, name):
    r = runner.invoke(app, [*_argv(name, inputs, tmp_path), "--quiet"])
    assert r.exit_code == 0, r.output
    assert r.stdout == "" and r.stderr == ""


@pytest.mark.parametrize("name", ["models", "run", "plan", "io", "size", "study", "bench compare", "query"])
def test_csv_tables_parse_as_csv(inputs, tmp_path, name):
    r = runner.invoke(app, [*_argv(name, inputs, tmp_path), "--csv"])
    assert r.exit_code == 0, r.output
    blocks = [b for b in r.stdout.split("\n\n") if b.strip()]
    assert blocks
    for block in blocks:
        lines = [ln for ln in block.splitlines() if not ln.startswith("# ")]
        rows = list(csv.reader(io.StringIO("\n".join(lines))))
        assert rows and len({len(row) for row in rows}) == 1, block  # every row as wide as the header


def test_studies_json_is_strict(monkeypatch):
    # every study is run by 'studies' (10 s); two of them show the document's shape
    import densim.tools.studies.base as base

    keep = {k: v for k, v in base.all_studies().items() if k in ("boot-drive", "ssd-as-memory")}
    monkeypatch.setattr(base, "all_studies", lambda: keep)
    r = runner.invoke(app, ["studies", "--json"])
    assert r.exit_code == 0, r.output
    doc = _strict(r.stdout)
    assert doc["seed"] == DEFAULT_SEED and [s["name"] for s in doc["studies"]] == ["boot-drive", "ssd-as-memory"]


def test_json_and_csv_together_is_a_usage_error():
    r = runner.invoke(app, ["models", "--json", "--csv"])
    assert r.exit_code == 2 and "--json and --csv" in r.stderr


# ------------------------------------------------------------------------------------ strict JSON files


def test_result_files_are_strict_json_with_nan_as_null(tmp_path):
    # a value that is not a number (CP-SAT gap when the optimiser is off, a TCO with no users) is null
    from densim.cli.common import write_result

    p = write_result(tmp_path / "o", {"gap": float("nan"), "xs": [1.0, float("inf")]})
    assert p == tmp_path / "o" / "summary.json"
    assert _strict(p.read_text()) == {"gap": None, "xs": [1.0, None]}


def test_plan_summary_is_strict_json(inputs, tmp_path):
    r = runner.invoke(app, _argv("plan", inputs, tmp_path) + ["--quiet"])
    assert r.exit_code == 0
    _strict((tmp_path / "plan" / "summary.json").read_text())


# ------------------------------------------------------------------------------------ --out


@pytest.mark.parametrize("name", ["run", "plan", "study", "bench tiles"])
def test_out_given_an_existing_file_is_refused(inputs, tmp_path, name):
    argv = _argv(name, inputs, tmp_path)
    i = argv.index("--out") + 1
    f = tmp_path / "afile"
    f.write_text("keep me\n")
    argv[i] = str(f)
    r = runner.invoke(app, argv)
    assert r.exit_code == 1 and r.stderr.strip() == f"densim: error: --out {f}: exists and is not a folder; results go to a folder"
    assert f.read_text() == "keep me\n"


@pytest.mark.parametrize("cmd,file", [("io", "io.yaml"), ("size", "size.yaml")])
def test_out_is_a_folder_holding_summary_json(inputs, tmp_path, cmd, file):
    out = tmp_path / "res"
    r = runner.invoke(app, [cmd, str(inputs / file), "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    assert _strict((out / "summary.json").read_text()) == _strict(r.stdout)
    # the old form, a new name ending in .json, is refused with what to give instead
    r = runner.invoke(app, [cmd, str(inputs / file), "--out", str(tmp_path / "result.json")])
    assert r.exit_code == 1 and "--out is a folder, not a JSON file" in r.stderr
    assert not (tmp_path / "result.json").exists()


def test_schema_out_is_a_folder(tmp_path):
    r = runner.invoke(app, ["schema", "--out", str(tmp_path / "s")])
    assert r.exit_code == 0
    assert _strict((tmp_path / "s" / "scenario.schema.json").read_text())["title"] == "Scenario"


# ------------------------------------------------------------------------------------ seeds recorded


def test_the_default_seed_is_recorded_in_results(inputs, tmp_path):
    noseed = dict(SCENARIO, simulation={"step": "5 min", "horizon": "1 h"})
    (tmp_path / "n.yaml").write_text(yaml.safe_dump(noseed))
    r = runner.invoke(app, ["run", str(tmp_path / "n.yaml"), "--out", str(tmp_path / "run"), "--no-report", "--json"])
    assert _strict(r.stdout)["seed"] == DEFAULT_SEED
    r = runner.invoke(app, _argv("plan", inputs, tmp_path) + ["--json"])
    assert _strict(r.stdout)["seed"] == DEFAULT_SEED
    assert _strict((inputs / "tiles" / "summary.json").read_text())["seed"] == DEFAULT_SEED  # host file without run.seed


# ------------------------------------------------------------------------------------ plan: nothing feasible


def test_plan_with_no_feasible_candidate_exits_1_with_every_reason(inputs, tmp_path):
    spec = yaml.safe_load((inputs / "plan" / "cand.yaml").read_text())
    base = spec["candidates"][0]
    # 8 GiB hosts that keep all their memory for the hypervisor: neither candidate can take a VM
    spec["candidates"] = [dict(base, name="tiny-a", memory="8 GiB", hypervisor_memory="8 GiB"),
                          dict(base, name="tiny-b", memory="8 GiB", hypervisor_memory="8 GiB")]
    cands = tmp_path / "c.yaml"
    cands.write_text(yaml.safe_dump(spec))
    out = tmp_path / "o"
    r = runner.invoke(app, ["plan", str(inputs / "plan" / "w.csv"), "-c", str(cands), "--out", str(out), "--quiet"])
    assert r.exit_code == 1
    assert r.stdout == ""  # --quiet: the reasons are errors, on stderr
    lines = r.stderr.strip().splitlines()
    assert lines[0].startswith("densim: error: no candidate is feasible (2 tried); the closest, ")
    assert [ln.split(":")[2].strip() for ln in lines[1:]] == ["tiny-a", "tiny-b"]
    assert all(ln.startswith("densim: error: ") and ln.endswith("hypervisor memory >= host memory") for ln in lines)
    s = json.loads((out / "summary.json").read_text())  # outputs still written
    assert s["best"] is None
    r = runner.invoke(app, ["plan", str(inputs / "plan" / "w.csv"), "-c", str(cands), "--out", str(out)])
    assert r.exit_code == 1 and "best: None" not in r.stdout and "no candidate is feasible" in r.stdout


# ------------------------------------------------------------------------------------ umask


def test_output_files_follow_the_process_umask(inputs, tmp_path):
    old = os.umask(0o002)  # a team umask: group may write
    try:
        r = runner.invoke(app, ["io", str(inputs / "io.yaml"), "--out", str(tmp_path / "io"), "--quiet"])
        assert r.exit_code == 0
        r = runner.invoke(app, _argv("plan", inputs, tmp_path) + ["--quiet"])
        assert r.exit_code == 0
    finally:
        os.umask(old)
    for p in (tmp_path / "io" / "summary.json", tmp_path / "plan" / "summary.json", tmp_path / "plan" / "ranking.csv"):
        assert stat.S_IMODE(p.stat().st_mode) == 0o664, p  # 0o666 & ~0o002, not mkstemp's 0o600


# ------------------------------------------------------------------------------------ piped tables, progress


def test_piped_tables_are_full_width(inputs):
    # a real pipe, no COLUMNS: rich would lay the table out in 80 columns and wrap every long description
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    r = subprocess.run([sys.executable, "-m", "densim.cli.main", "models"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0
    assert max(len(ln) for ln in r.stdout.splitlines()) > 120
    desc = "independent vCPUs, each runnable with its VM's utilisation u_j"  # the binomial CPU model's description, unbroken
    assert any(desc in ln for ln in r.stdout.splitlines())


def _on_a_terminal(argv: list[str], tmp_path: Path) -> tuple[int, str, str]:
    """Run densim with stderr on a pseudo-terminal (stdout a pipe); return (status, stdout, what the terminal got)."""
    import pty
    import select

    master, slave = pty.openpty()
    env = dict(os.environ, TERM="xterm", COLUMNS="120")
    p = subprocess.Popen([sys.executable, "-m", "densim.cli.main", *argv], stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    got = b""
    while True:
        ready, _, _ = select.select([master], [], [], 300)  # a hang guard between two writes to the terminal
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        got += chunk
    out = p.stdout.read()
    p.wait(timeout=300)
    os.close(master)
    return p.returncode, out.decode(), got.decode(errors="replace")


def test_plan_shows_progress_on_a_terminal_and_not_when_quiet(inputs, tmp_path):
    code, out, term = _on_a_terminal(_argv("plan", inputs, tmp_path), tmp_path)
    assert code == 0 and "candidate 1/1 small" in term  # the phase names reach the terminal (stderr)
    assert "candidate 1/1" not in out  # never on stdout
    code, out, term = _on_a_terminal(_argv("plan", inputs, tmp_path) + ["--quiet"], tmp_path)
    assert code == 0 and out == "" and "candidate" not in term


# ------------------------------------------------------------------------------------ unplaced counts


def test_unplaced_count_counts_every_vm_not_the_listed_names(tmp_path):
    # 1,200 VMs of 100 GiB on one 64 GiB host: none fits; summary.json lists 1,000 names, the count is 1,200
    sc = {"name": "nofit", "cluster": {"hosts": [{"count": 1, "cpu": {"cores_per_socket": 4, "base_clock": "2 GHz"},
                                                  "memory": "64 GiB", "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}]},
          "vms": [{"name": "big", "count": 1200, "vcpus": 1, "vcpu_speed": "1 GHz", "memory": "100 GiB",
                   "profile": {"kind": "constant", "mean": 0.1}}],
          "placement": {"policy": "first-fit"}, "simulation": {"step": "5 min", "horizon": "10 min"}}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(sc))
    out = tmp_path / "o"
    r = runner.invoke(app, ["run", str(tmp_path / "s.yaml"), "--out", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    s = json.loads((out / "summary.json").read_text())
    assert s["vms_unplaced"] == 1200 and len(s["unplaced_vms"]) == 1000
    assert "1,200 placed nowhere; summary.json lists the first 1,000" in r.stdout
    html = (out / "report.html").read_text()
    assert "1,200 VM(s) fit nowhere" in html and "1000 VM(s)" not in html


@pytest.mark.parametrize("argv", [["plan", "--help"], ["run", "--help"], ["sweep", "--help"], ["bench", "tiles", "--help"]])
def test_help_is_readable_at_80_columns(argv):
    # issue 31: rich's boxed help cut option names ("--snapshot-pea…", "--rightsize-sn…") at 80 columns
    import re

    from densim.cli.main import app

    res = CliRunner().invoke(app, argv, env={"COLUMNS": "80"}, terminal_width=80)
    assert res.exit_code == 0
    lines = res.stdout.splitlines()
    assert lines and max(len(ln) for ln in lines) <= 80
    assert "…" not in res.stdout
    # every option the command has is printed whole
    cmd = app
    import typer.main

    click_cmd = typer.main.get_command(cmd)
    for name in argv[:-1]:
        click_cmd = click_cmd.commands[name]
    for param in click_cmd.params:
        for opt in param.opts:
            if opt.startswith("--"):
                assert re.search(rf"(^|[\s,/]){re.escape(opt)}($|[\s,=/\[])", res.stdout, re.M), opt
