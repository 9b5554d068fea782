"""The ``densim serve`` API through FastAPI's TestClient: runs, the cache, field errors with the CLI's
messages, refused paths and the loopback default."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from densim.cli.main import app as cli

from .conftest import wait_done


def run(client, edits=None, slot="a", source="given"):
    return client.post("/api/run", json={"source": source, "edits": edits or {}, "slot": slot})


def cli_summary(path: Path, tmp: Path) -> dict:
    r = CliRunner().invoke(cli, ["run", str(path), "--out", str(tmp), "--no-report", "--no-progress", "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def cli_error(path: Path) -> str:
    """The line `densim validate` prints for ``path``, without ``densim: error: FILE:``."""
    r = CliRunner().invoke(cli, ["validate", str(path)])
    assert r.exit_code == 1
    line = r.stderr.strip().splitlines()[0]
    prefix = f"densim: error: {path}:"
    assert line.startswith(prefix), line
    return line[len(prefix):]


def test_run_headline_is_the_summary_of_densim_run(client, micro, tmp_path):
    r = run(client, {"placement.memory_overcommit": "2"})
    assert r.status_code == 200
    st = wait_done(client, r.json()["key"])
    assert st["state"] == "done", st
    heads = {h["key"]: h for h in st["view"]["headline"]}
    assert heads["hosts_used"]["value"] == 2  # 16 GiB / 4 GiB = 4 VMs per host, 8 VMs -> 2 hosts (conftest)
    # the scenario YAML of what is on screen, run by the CLI, gives the same figures
    y = client.get(f"/api/runs/{st['key']}/scenario.yaml")
    assert y.status_code == 200 and "memory_overcommit: 2" in y.text
    f = tmp_path / "on-screen.yaml"
    f.write_text(y.text)
    s = cli_summary(f, tmp_path / "cli-out")
    assert heads["hosts_used"]["value"] == s["hosts_used"]
    assert heads["energy_kwh"]["value"] == s["totals"]["energy_kwh"]
    assert heads["cpu_ready_pct_mean"]["value"] == s["qos"]["cpu_ready_pct_mean"]
    assert {p["id"] for p in st["view"]["plots"]} == {"power", "util", "ready"}
    assert [t["id"] for t in st["view"]["tables"]][:2] == ["energy", "worst"]
    base = wait_done(client, run(client).json()["key"])
    assert {h["key"]: h for h in base["view"]["headline"]}["hosts_used"]["value"] == 4  # 8 GiB / 4 GiB = 2 per host -> 4 hosts


def test_cache_hit_by_resolved_scenario(client):
    k1 = run(client, {"placement.memory_overcommit": "1.5"}).json()["key"]
    wait_done(client, k1)
    again = run(client, {"placement.memory_overcommit": "1.50"}).json()  # other text, same scenario
    assert again["key"] == k1 and again["cached"] is True and again["state"] == "done"
    assert "view" in again
    other = run(client, {"placement.memory_overcommit": "1.6"}).json()
    assert other["key"] != k1


def test_bad_value_answers_with_the_cli_message_per_field(client, micro, tmp_path):
    r = run(client, {"placement.memory_overcommit": "abc"})
    assert r.status_code == 422
    body = r.json()
    msg = body["errors"]["placement.memory_overcommit"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(micro.read_text().replace("memory_overcommit: 1.0", "memory_overcommit: abc"))
    assert msg == f"{micro}:" + cli_error(bad)
    assert "Input should be a valid number" in msg
    # a check made while resolving (the catalog) lands on its field too
    r = run(client, {"cluster.hosts[0].server": "no-such-server"})
    assert r.status_code == 422
    assert "no-such-server" in r.json()["errors"]["cluster.hosts[0].server"]
    # the server stays up
    assert run(client).status_code == 200


def test_only_controls_can_be_edited(client):
    for path in ("vms[0].trace.path", "simulation.seed", "base_dir", "imports", "../../etc/passwd"):
        r = run(client, {path: "/etc"})
        assert r.status_code == 422, path
        assert "not a field the page can edit" in r.json()["errors"][path]
    r = run(client, {"cluster.hosts[5].count": "2"})  # no sixth host group
    assert r.status_code == 422 and "no such group" in r.json()["errors"]["cluster.hosts[5].count"]
    assert run(client, source="../micro.yaml").status_code == 404
    assert run(client, source="/etc/passwd").status_code == 404
    assert client.post("/api/run", json={"source": "given", "slot": "../x"}).status_code == 422
    assert client.post("/api/run", content=b"{not json", headers={"Content-Type": "application/json"}).status_code == 422


def test_paths_outside_the_served_folders_are_refused(client, app, tmp_path):
    key = run(client).json()["key"]
    wait_done(client, key)
    names = client.get(f"/api/runs/{key}/files").json()
    assert {"summary.json", "hosts.parquet", "vms.parquet", "report.html"} <= set(names)
    assert client.get(f"/api/runs/{key}/files/summary.json").json()["hosts_used"] == 4
    for url in (f"/api/runs/{key}/files/..%2F..%2F..%2Fscenarios%2Fmicro.yaml", f"/api/runs/{key}/files/../../../scenarios/micro.yaml",
                f"/api/runs/{key}/files/%2Fetc%2Fpasswd", f"/api/runs/{key}/files/%2E%2E", "/api/runs/..%2F..%2Fetc/files/passwd",
                "/static/app/..%2F..%2Fapp.py", "/static/app/../app.py", "/static/app/%2e%2e/app.py", "/api/sources/..%2F..%2Fetc%2Fpasswd"):
        r = client.get(url)
        assert r.status_code == 404, (url, r.status_code)
        assert "root:" not in r.text and "create_app" not in r.text
    # everything written is under the output folder
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert written and all(p.is_relative_to(app.state.out) for p in written)


def test_page_and_plotly_are_served_locally(client):
    page = client.get("/")
    assert page.status_code == 200 and "/static/plotly.min.js" in page.text and "cdn" not in page.text.lower()
    js = client.get("/static/plotly.min.js")
    assert js.status_code == 200 and len(js.content) > 1_000_000
    assert client.get("/static/app/app.js").status_code == 200


def test_side_by_side_diff(client):
    ka = run(client, slot="a").json()["key"]
    kb = run(client, {"placement.memory_overcommit": "2"}, slot="b").json()["key"]
    wait_done(client, ka), wait_done(client, kb)
    d = client.get(f"/api/diff?a={ka}&b={kb}").json()
    assert d["fields"] == [{"path": "placement.memory_overcommit", "a": 1.0, "b": 2}]
    hosts = next(h for h in d["headline"] if h["key"] == "hosts_used")
    assert hosts["delta"] == 2 - 4


def test_superseded_run_is_cancelled(monkeypatch):
    """A slot's new configuration cancels its previous run at the next progress call; a run another
    slot still waits for is kept."""
    import densim.engine
    import densim.tools.serve.view as view_mod
    from densim.tools.serve.runs import Runs

    gate, entered = threading.Event(), threading.Event()

    def fake_simulate(plant, progress=None, **kw):
        progress(1, 2)
        entered.set()
        gate.wait(10)
        progress(2, 2)
        return plant

    monkeypatch.setattr(densim.engine, "simulate", fake_simulate)
    monkeypatch.setattr(view_mod, "view", lambda res: {"headline": []})
    runs = Runs()
    j1, _, g1 = runs.submit("1" * 64, "p1", {}, "o", "a")
    assert entered.wait(10)
    j2, _, g2 = runs.submit("2" * 64, "p2", {}, "o", "b")  # another slot: j1 keeps running
    assert not j1.cancel.is_set()
    j3, _, g3 = runs.submit("3" * 64, "p3", {}, "o", "a")  # slot a moves on: j1 is superseded
    assert g3 == g1 + 1 and j1.cancel.is_set() and not j2.cancel.is_set()
    gate.set()
    for j in (j1, j2, j3):
        assert j.finished.wait(10)
    assert (j1.state, j2.state, j3.state) == ("cancelled", "done", "done")
    assert runs.is_current("a", "3" * 64) and not runs.is_current("a", "1" * 64)
    again, cached, _ = runs.submit("2" * 64, None, {}, "o", "a")  # going back: the cached run
    assert again is j2 and cached
    runs.shutdown()


def test_cli_binds_to_loopback_unless_told(monkeypatch, micro, tmp_path):
    import densim.tools.serve.app as app_mod

    seen = {}
    monkeypatch.setattr(app_mod, "run_server", lambda app, host, port, on_ready=None: seen.update(host=host, port=port))
    r = CliRunner().invoke(cli, ["serve", str(micro), "--out", str(tmp_path / "o"), "--examples", str(micro.parent)])
    assert r.exit_code == 0, r.output
    assert seen["host"] == "127.0.0.1" and "warning" not in r.stderr
    r = CliRunner().invoke(cli, ["serve", str(micro), "--host", "0.0.0.0", "--port", "9000", "--out", str(tmp_path / "o")])
    assert r.exit_code == 0 and seen == {"host": "0.0.0.0", "port": 9000}
    assert "warning: listening on 0.0.0.0" in r.stderr


@pytest.mark.parametrize("args, expect", [
    (["missing.yaml"], "missing.yaml"),
    (["{micro}", "--server", "x"], "--server/--hosts: only for an inventory"),
    (["{micro}", "--examples", "{micro}"], "is not a folder"),
])
def test_cli_bad_input_is_one_line(monkeypatch, micro, tmp_path, args, expect):
    import densim.tools.serve.app as app_mod

    monkeypatch.setattr(app_mod, "run_server", lambda *a, **k: pytest.fail("must not start"))
    r = CliRunner().invoke(cli, ["serve", *[a.format(micro=micro) for a in args], "--out", str(tmp_path / "o")])
    assert r.exit_code == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("densim: error:") and expect in lines[0], r.stderr


def test_inventory_folder_runs_with_the_given_hosts(traces, tmp_path):
    from fastapi.testclient import TestClient

    from densim.errors import InputError
    from densim.tools.serve.app import create_app
    from densim.tools.serve.sources import Sources, inventory_source

    folder = traces / "gwa-t-12-rnd-2013-8-first250"
    with pytest.raises(InputError, match="give --server NAME"):
        inventory_source(folder, None, None)  # an inventory names no hosts: no silent default
    with pytest.raises(InputError, match="for a planetlab inventory write a scenario"):
        inventory_source(traces / "planetlab-20110303", "hp-dl380-g7", 4)
    src = inventory_source(folder, "hp-dl380-g7", 40)
    with TestClient(create_app(Sources([src]), tmp_path / "out")) as c:
        st = wait_done(c, run(c).json()["key"])
        assert st["state"] == "done", st
        heads = {h["key"]: h["value"] for h in st["view"]["headline"]}
        assert heads["vms_placed"] + heads["vms_unplaced"] == 250  # the folder's 250 VM files
        assert run(c, {"cluster.hosts[0].count": "41"}).json()["key"] != st["key"]


def test_failure_control_moves_the_headline_to_what_densim_run_gives(client, tmp_path):
    # memory_overcommit 2: 4 VMs of 4 GiB per 16 GiB host, first-fit -> small-0 and small-1 carry 4 VMs each
    # (conftest). The 4 hosts are alike, so "the largest" is the first: small-0 fails at 0.5 h for 4 h.
    # Its 4 VMs restart on an empty host after detection 30 s + boot 120 s (failures.ha defaults):
    # restart delay 150 s each, VM-minutes down 4 x 150 s / 60 = 10; nobody waited: the reservation held.
    edits = {"placement.memory_overcommit": "2", "failures.fail_largest_hosts": "1", "failures.fail_at": "0.5",
             "failures.fail_for": "4 h", "failures.ha.admission": "n_plus_k"}
    st = wait_done(client, run(client, edits).json()["key"])
    assert st["state"] == "done", st
    heads = {h["key"]: h for h in st["view"]["headline"]}
    assert heads["vm_minutes_down"]["value"] == pytest.approx(10.0)
    assert heads["restart_delay_s_mean"]["text"] == "150 s mean, 150 s max"
    assert heads["reservation_held"]["text"] == "yes" and "n_plus_k" in heads["reservation_held"]["label"]
    assert "cpu_ready_pct_during_failures" in heads
    # the downloaded scenario holds the failures as the failures spec names them; densim run of it gives the headline
    y = client.get(f"/api/runs/{st['key']}/scenario.yaml").text
    import yaml

    fs = yaml.safe_load(y)["failures"]
    assert fs == {"ha": {"admission": "n_plus_k"}, "events": [{"time": "0.5 h", "target": "small-0", "duration": "4 h"}]}
    f = tmp_path / "on-screen.yaml"
    f.write_text(y)
    from densim.tools.serve.view import headline

    assert [(h["key"], h["text"]) for h in headline(cli_summary(f, tmp_path / "cli"))] == [(h["key"], h["text"]) for h in st["view"]["headline"]]
    # without room to restart (memory_overcommit 1: every host full), the 2 VMs of small-0 stay down to the end of
    # the 1 h run: 2 x 30 min = 60 VM-minutes, and the reservation did not hold
    off = wait_done(client, run(client, {"failures.fail_largest_hosts": "1", "failures.fail_at": "0.5"}).json()["key"])
    h2 = {h["key"]: h for h in off["view"]["headline"]}
    assert h2["vm_minutes_down"]["value"] == pytest.approx(60.0)
    assert h2["reservation_held"]["text"].startswith("no: 2 restart(s) waited")
    # no failure: no failure figures
    assert "vm_minutes_down" not in {h["key"] for h in wait_done(client, run(client).json()["key"])["view"]["headline"]}


@pytest.mark.parametrize(("edits", "path", "words"), [
    ({"failures.fail_largest_hosts": "9"}, "failures.fail_largest_hosts", "has 4 host(s), cannot fail 9"),
    ({"failures.fail_largest_hosts": "1.5"}, "failures.fail_largest_hosts", "a whole number of hosts"),
    ({"failures.fail_largest_hosts": "1", "failures.fail_at": "2"}, "failures.fail_at", "not before the end of the run"),
    ({"failures.fail_largest_hosts": "1", "failures.fail_for": "-3"}, "failures.fail_for", "must be > 0"),
])
def test_failure_control_errors_name_the_control(client, edits, path, words):
    r = run(client, edits)
    assert r.status_code == 422 and words in r.json()["errors"][path], r.json()


def test_largest_hosts_by_cpu_capacity_then_memory_then_order():
    from types import SimpleNamespace

    import numpy as np

    from densim.tools.serve.edits import largest_hosts

    hosts = SimpleNamespace(n=4, names=np.array(["a-0", "a-1", "b-2", "b-3"], dtype=object),
                            capacity_mhz=np.array([64e3, 64e3, 128e3, 64e3]), mem_bytes=np.array([256.0, 512.0, 128.0, 512.0]))
    # b-2 has the most CPU; a-1 and b-3 tie on CPU and memory: the first in order wins
    assert largest_hosts(hosts, 3) == ["b-2", "a-1", "b-3"]
