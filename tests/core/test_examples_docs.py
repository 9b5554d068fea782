"""Examples and documentation snippets run as tests; generated reference docs are up to date."""

import json
import re

import pytest
import yaml
from typer.testing import CliRunner

from densim.cli.main import app

runner = CliRunner()


def test_planetlab_example(repo, traces, tmp_path):
    r = runner.invoke(app, ["run", str(repo / "examples/planetlab.yaml"), "--out", str(tmp_path), "--no-report", "--no-progress"])
    assert r.exit_code == 0, r.output
    s = json.loads((tmp_path / "summary.json").read_text())
    # 10,000 VMs of 2 vCPUs, 16 per 32-core host at over-commit 1 -> 625 hosts used
    assert s["vms_placed"] == 10_000 and s["hosts_used"] == 625
    # demand = sum over VMs of util/100 x 2,000 MHz x 300 s; equals the trace files' total (VM i -> file i mod 1,052)
    from densim.workloads.readers import open_trace

    tr = open_trace("planetlab", traces / "planetlab-20110303")
    import numpy as np

    expected = tr.total_util_pct_s(np.arange(10_000) % 1052) / 100 * 2000
    assert s["totals"]["cpu_demand_mhz_s"] == pytest.approx(expected, rel=1e-6)
    assert s["totals"]["cpu_unserved_mhz_s"] == pytest.approx(0, abs=1e-3 * expected)


def test_howto_density_snippet_runs(repo, traces, tmp_path):
    text = (repo / "docs/howto/density-from-traces.md").read_text()
    block = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    doc = yaml.safe_load(block)
    doc["vms"][0]["trace"]["path"] = str(traces / "gwa-t-12-rnd-2013-8-first250")
    doc["vms"][0]["trace"]["limit"] = 40
    doc["simulation"]["horizon"] = "1 d"
    p = tmp_path / "my.yaml"
    p.write_text(yaml.safe_dump(doc))
    r = runner.invoke(app, ["run", str(p), "--out", str(tmp_path / "o"), "--no-report", "--no-progress"])
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "o/summary.json").read_text())["vms_total"] == 40


def test_generated_reference_is_up_to_date(repo, tmp_path):
    from densim.tools.docgen import generate

    for p in generate(tmp_path):
        committed = repo / "docs/reference" / p.name
        assert committed.exists() and committed.read_text() == p.read_text(), f"run `make docs`: {p.name} is stale"


def test_registries_are_listed_in_a_fresh_process(repo, tmp_path):
    # the registry page and `densim models` import what registers entries themselves: in a fresh
    # interpreter (nothing imported by other tests) the page is the committed one, and the
    # miss-ratio models (registered by the numba memory model, which a run imports only when the
    # memory model is on) are listed
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "densim.tools.docgen", str(tmp_path)], check=True, capture_output=True)
    assert (tmp_path / "models.md").read_text() == (repo / "docs/reference/models.md").read_text()
    code = "import sys; from densim.cli.main import main; sys.argv = ['densim', 'models', '--json']; main()"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    kinds = {row["kind"] for row in json.loads(out.stdout)}
    assert {"miss-ratio", "engine-stage", "placement-policy", "power-model"} <= kinds
