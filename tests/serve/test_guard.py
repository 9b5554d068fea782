"""``densim serve`` against hostile requests: foreign ``Host`` names (DNS rebinding), cross-site POSTs
(CSRF), control values no page would send (inf, nan, 10^300, 5 MB texts, nested objects) and runs too
big for memory. Each answer is a refusal with one short line, never a 500 or a run."""

from __future__ import annotations

import http.client
import json
import math
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from densim.cli.main import app as cli

from .conftest import MICRO, wait_done

BASE = "http://127.0.0.1:8765"  # the address the TestClient's requests arrive on (scope["server"])

# MICRO (conftest) with one datastore, so the storage controls exist too
STORAGE = """\
storage:
  model: queueing
  block_size: 4 KiB
  datastores:
    - {name: ds, device: sas-10k-900gb, drives: 4, raid: raid10, controller: lsi-9210-8i, scope: shared}
"""

# every control the page offers for that scenario (test_every_control_is_covered checks the list)
CONTROLS = [
    "cluster.hosts[0].server", "cluster.hosts[0].count", "vms[0].count", "placement.policy", "placement.cpu_overcommit",
    "placement.memory_overcommit", "memory.model", "memory.swap_device", "memory.swap_cache_device", "memory.swap_cache_size",
    "storage.datastores[0].device", "storage.datastores[0].raid", "storage.datastores[0].drives",
    "failures.fail_largest_hosts", "failures.fail_at", "failures.fail_for", "failures.ha.admission", "failures.ha.host_failures",
]

BIG = 5_000_000  # characters: a 5 MB text
HOSTILE = {
    "inf": "inf", ".inf": ".inf", "-.inf": "-.inf", ".nan": ".nan",
    "json-inf": math.inf, "json-minus-inf": -math.inf, "json-nan": math.nan,
    "-1": "-1", "json-minus-1": -1, "1e308": "1e308", "json-1e308": 1e308, "json-minus-1e308": -1e308,
    "huge-int": 10**300, "huge-int-text": "9" * 190, "huge-quantity": "1e300 GiB",
    "word": "abc", "empty": "", "nul": "\x00", "emoji": "\U0001f4a5",
    "5MB-letters": "x" * BIG, "5MB-digits": "1" * BIG, "5MB-quantity": "1" * BIG + " GiB",
    "mapping": {"a": {"b": [1, 2]}}, "list": [1, [2, [3]]], "5MB-list": ["x" * BIG], "true": True, "null": None,
}
MAX_ANSWER = 2_000  # bytes: one or two short lines (a file path, a control, a message, a value cut to 80 characters)


def post(client, body, **headers):
    """POST /api/run with ``body`` as JSON (NaN and infinities written as JavaScript would not, but Python's json reads)."""
    return client.post("/api/run", content=json.dumps(body).encode(), headers={"Content-Type": "application/json", **headers})


@pytest.fixture(scope="module")
def hostile_app(tmp_path_factory):
    """The application as ``densim serve`` builds it (the --max-memory estimate included), over MICRO with a datastore."""
    from densim.cli.estimates import check_run_memory
    from densim.tools.serve.app import create_app
    from densim.tools.serve.runs import Runs
    from densim.tools.serve.sources import Sources, scenario_source

    tmp = tmp_path_factory.mktemp("hostile")
    p = tmp / "micro.yaml"
    p.write_text(MICRO + STORAGE)
    limit = 8 * 2**30
    return create_app(Sources([scenario_source(p, "given", "micro", "given")]), tmp / "out", runs=Runs(max_memory=limit),
                      check=lambda plant, origin: check_run_memory(plant.spec, origin, limit))


@pytest.fixture(scope="module")
def hostile(hostile_app):
    with TestClient(hostile_app, base_url=BASE) as c:  # raise_server_exceptions: a 500 fails the test with its traceback
        yield c


def test_every_control_is_covered(hostile):
    assert [c["path"] for c in hostile.get("/api/sources/given").json()["controls"]] == CONTROLS


@pytest.mark.parametrize("name", list(HOSTILE))
@pytest.mark.parametrize("path", CONTROLS)
def test_hostile_value_is_refused_in_one_short_line_or_run(hostile, path, name):
    value = HOSTILE[name]
    edits = {path: value}
    if path in ("failures.fail_at", "failures.fail_for"):
        edits["failures.fail_largest_hosts"] = 1  # T and D are read only when N > 0
    r = post(hostile, {"source": "given", "edits": edits})
    assert r.status_code in (200, 422), (r.status_code, r.text[:300])
    if r.status_code == 422:
        assert len(r.content) < MAX_ANSWER, r.text[:300]
        body = r.json()
        lines = list(body["errors"].values()) + body["general"]
        assert lines and all("\n" not in line for line in lines)
        field = path.rsplit(".", 1)[-1]  # the control is named (or, by the loader, its field in its group: "vms[0]: missing count")
        assert path in body["errors"] or any(field in line for line in body["general"]), body
    else:  # a value the scenario can take: the run finishes (no internal error in the worker either)
        st = wait_done(hostile, r.json()["key"])
        assert st["state"] == "done", st


@pytest.mark.parametrize(("value", "words"), [
    (math.inf, "a finite number, got inf"),
    (".nan", "a finite number, got '.nan'"),
    (10**300, "a number of hosts of at most 10,000,000"),
    ("x" * BIG, f"at most 200 characters, got '{'x' * 80}'… (5,000,000 characters)"),
    ({"a": 1}, "a number or a text, got a mapping"),
], ids=["inf", "nan", "1e300", "5MB", "mapping"])
def test_fail_largest_hosts_names_the_control(hostile, value, words):
    # inf used to reach int(inf) (OverflowError: a 500); a 5 MB value used to come back whole in the 422
    r = post(hostile, {"source": "given", "edits": {"failures.fail_largest_hosts": value}})
    assert r.status_code == 422
    assert words in r.json()["errors"]["failures.fail_largest_hosts"], r.json()


def test_bounds_the_loader_lacks(hostile):
    # the loader takes any k >= 0 and any over-commit > 0; the page bounds them: hosts the scenario could have
    # (10,000,000) and 1,000 vCPUs per core
    r = post(hostile, {"source": "given", "edits": {"failures.ha.host_failures": 10_000_001, "placement.cpu_overcommit": "1001"}})
    assert r.status_code == 422
    errs = r.json()["errors"]
    assert "a number of hosts of at most 10,000,000, got 10000001" in errs["failures.ha.host_failures"]
    assert "an over-commit ratio of at most 1,000, got '1001'" in errs["placement.cpu_overcommit"]


@pytest.mark.parametrize("body", [
    {"source": "s" * BIG},
    {"source": "given", "slot": "../" * BIG},
    {"source": "given", "edits": ["x" * BIG]},
    {"source": "given", "edits": {f"p{i}": "1" for i in range(201)}},
    ["x" * BIG],
    {"source": "given", "edits": {"y" * BIG: "1"}},
])
def test_unreadable_request_is_one_bounded_line(hostile, body):
    r = post(hostile, body)
    assert r.status_code == 422 and len(r.content) < MAX_ANSWER, r.text[:300]
    body = r.json()
    assert body["general"] or body["errors"]


# ------------------------------------------------------------------------------------------ memory


def serve_app(monkeypatch, micro, tmp_path, *args):
    """The application ``densim serve MICRO *args`` builds (the server itself is not started)."""
    import densim.tools.serve.app as app_mod

    seen = {}
    monkeypatch.setattr(app_mod, "run_server", lambda app, host, port, on_ready=None: seen.update(app=app))
    r = CliRunner().invoke(cli, ["serve", str(micro), "--out", str(tmp_path / "o"), "--examples", str(micro.parent), *args])
    assert r.exit_code == 0, r.output
    return seen["app"]


def test_a_run_too_big_for_memory_is_refused_before_it_starts(monkeypatch, micro, tmp_path):
    # 100,000,000 VMs (the loader's maximum) x 12 steps (1 h of 5 min) on 4 hosts: 300 bytes of state per VM alone is
    # 28 GiB, above densim run's default --max-memory of 8 GiB. It used to be accepted and die in the worker.
    app = serve_app(monkeypatch, micro, tmp_path)
    with TestClient(app, base_url=BASE) as c:
        r = c.post("/api/run", json={"source": "given", "edits": {"vms[0].count": "100000000"}})
        assert r.status_code == 422, r.text[:300]
        (line,) = r.json()["general"]
        assert "100,000,000 VMs x 12 steps on 4 hosts" in line and "more than --max-memory (8.0 GiB)" in line
        assert not app.state.runs._jobs  # nothing started
        assert c.post("/api/run", json={"source": "given"}).status_code == 200  # the scenario itself fits
    # the limit is the option's: 8 VMs x 12 steps need some KiB, above 4 KiB
    app = serve_app(monkeypatch, micro, tmp_path, "--max-memory", "4 KiB")
    with TestClient(app, base_url=BASE) as c:
        r = c.post("/api/run", json={"source": "given"})
        assert r.status_code == 422 and "more than --max-memory (4 KiB)" in r.json()["general"][0]
        # with the failure control too (it builds the hosts: the estimate comes first)
        r = c.post("/api/run", json={"source": "given", "edits": {"failures.fail_largest_hosts": "1"}})
        assert r.status_code == 422 and "--max-memory" in r.json()["general"][0]


# ------------------------------------------------------------------------------------- Host, Origin


def test_foreign_host_is_refused(app):
    # DNS rebinding: evil.example resolves to 127.0.0.1, the browser sends Host: evil.example:8765
    with TestClient(app, base_url=BASE) as c:
        for host in ("evil.example:8765", "127.0.0.1:8766", "localhost", "127.0.0.1.evil.example:8765", "x" * BIG):
            for r in (c.get("/", headers={"Host": host}), c.get("/api/sources", headers={"Host": host}),
                      c.post("/api/run", json={"source": "given"}, headers={"Host": host})):
                assert r.status_code == 421, (host[:40], r.status_code)
                assert "refused: Host" in r.text and len(r.content) < 400
        assert not app.state.runs._jobs  # no run started
        for host in ("127.0.0.1:8765", "localhost:8765", "LOCALHOST:8765", "[::1]:8765"):
            assert c.get("/api/sources", headers={"Host": host}).status_code == 200, host


@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.example"},
    {"Origin": "http://evil.example:8765"},  # a rebinding page (its Host would be refused too)
    {"Origin": "http://localhost:3000"},  # another local port: the same site, another origin
    {"Origin": "null"},  # a sandboxed frame, a file:// page
    {"Origin": "https://127.0.0.1:8765"},
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},
    {"Origin": BASE, "Sec-Fetch-Site": "cross-site"},
])
def test_cross_site_post_is_refused(app, headers):
    with TestClient(app, base_url=BASE) as c:
        r = c.post("/api/run", json={"source": "given"}, headers=headers)
        assert r.status_code == 403 and "another site" in r.text, r.text
        assert not app.state.runs._jobs
        assert c.get("/api/sources", headers=headers).status_code == 200  # reading needs CORS, which the server never grants


@pytest.mark.parametrize("headers", [
    {"Origin": BASE, "Sec-Fetch-Site": "same-origin"},  # the page itself
    {"Origin": "http://localhost:8765", "Sec-Fetch-Site": "same-origin", "Host": "localhost:8765"},
    {},  # curl, a script
])
def test_same_origin_post_is_accepted(app, headers):
    with TestClient(app, base_url=BASE) as c:
        r = c.post("/api/run", json={"source": "given"}, headers=headers)
        assert r.status_code == 200, r.text
        assert wait_done(c, r.json()["key"])["state"] == "done"


def test_cross_site_websocket_is_refused(app):
    from starlette.websockets import WebSocketDisconnect

    with TestClient(app, base_url=BASE) as c:
        with pytest.raises(WebSocketDisconnect) as exc:
            with c.websocket_connect("ws://127.0.0.1:8765/ws", headers={"Origin": "http://evil.example"}):
                pass
        assert exc.value.code == 1008  # policy violation (the app has no websocket: a same-origin one gets 1000)
        with pytest.raises(WebSocketDisconnect) as exc:
            with c.websocket_connect("ws://127.0.0.1:8765/ws", headers={"Origin": BASE}):
                pass
        assert exc.value.code == 1000


def test_allowed_hosts_follow_the_bound_address():
    from densim.tools.serve.guard import allowed_hosts

    loop = {"127.0.0.1:8765", "localhost:8765", "[::1]:8765"}
    assert allowed_hosts(("127.0.0.1", 8765)) == loop
    assert allowed_hosts(("::1", 8765)) == loop
    assert allowed_hosts(("192.168.1.5", 8765)) == {"192.168.1.5:8765"}  # --host 0.0.0.0, reached from the network
    assert allowed_hosts(("fe80::1", 8765), ["MyHost.lan"]) == {"[fe80::1]:8765", "myhost.lan:8765"}
    names = {"127.0.0.1", "localhost", "[::1]"}
    assert allowed_hosts(("127.0.0.1", 80)) == {f"{n}:80" for n in names} | names  # port 80: a browser leaves it out
    assert allowed_hosts(None) == frozenset()  # a Unix socket: nothing


def test_allow_host_option(monkeypatch, micro, tmp_path):
    app = serve_app(monkeypatch, micro, tmp_path, "--allow-host", "MyHost.lan")
    with TestClient(app, base_url=BASE) as c:
        assert c.get("/api/sources", headers={"Host": "myhost.lan:8765"}).status_code == 200
        assert c.post("/api/run", json={"source": "given"}, headers={"Host": "myhost.lan:8765",
                                                                      "Origin": "http://myhost.lan:8765"}).status_code == 200
        assert c.get("/api/sources", headers={"Host": "other.lan:8765"}).status_code == 421
    for bad in ("http://x", "x:80", "a b", ""):
        r = CliRunner().invoke(cli, ["serve", str(micro), "--out", str(tmp_path / "o"), "--allow-host", bad])
        assert r.exit_code == 2 and "--allow-host" in r.output + r.stderr


def test_real_server_checks_the_socket_address(served):
    # uvicorn gives the address and port the connection arrived on: the check works for --port 0 without configuration
    port = int(served.rsplit(":", 1)[1])

    def get(host: str) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        conn.request("GET", "/api/sources", headers={"Host": host})
        status = conn.getresponse().status
        conn.close()
        return status

    assert get(f"127.0.0.1:{port}") == 200 and get(f"localhost:{port}") == 200
    assert get(f"evil.example:{port}") == 421 and get(f"127.0.0.1:{port + 1}") == 421


def test_page_script_is_same_origin(client):
    # the page's own requests are relative URLs (same origin), so the browser sends Origin/Sec-Fetch-Site it accepts
    js = client.get("/static/app/app.js").text
    assert "http://" not in js and "https://" not in js
