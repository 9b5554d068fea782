"""One run over a local Dask cluster (densim.tools.distributed): the single-process result, also
when a worker process is killed in the middle of the run."""

from __future__ import annotations

import os
import signal
import time

import pytest

from densim.engine import simulate
from densim.plant import resolve
from tests.engine.test_cpu_kernel import _mixed
from tests.engine.test_partition import same_result

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.slow


def test_two_workers_give_the_single_process_result():
    from densim.tools.distributed import simulate_distributed

    plant = resolve(_mixed(chunk=4))
    res, info = simulate_distributed(plant, workers=2, parts=3)
    same_result(simulate(plant), res)
    assert info.workers == 2 and len(info.parts) == 3
    assert sum(p.vms for p in info.parts) == res.summary["vms_total"]
    assert sum(p.hosts[1] - p.hosts[0] for p in info.parts) == res.summary["hosts_total"]
    assert all(p.bytes_in > 0 and p.bytes_out > 0 for p in info.parts)


def test_a_local_cluster_does_not_take_port_8787(recwarn):
    # with dashboard_address=None Dask still bound its HTTP server to 8787 and warned "Port 8787 is already in use"
    # whenever another process (another cluster, a notebook's dashboard) held it; the local cluster now takes a free
    # loopback port. Hold 8787 here (if nobody else does) and run: no such warning
    import socket

    from densim.tools.distributed import LOCAL_DASHBOARD, simulate_distributed

    assert LOCAL_DASHBOARD == "127.0.0.1:0"
    held = socket.socket()
    try:
        try:
            held.bind(("0.0.0.0", 8787))
            held.listen()
        except OSError:
            pass  # another process holds it already: the same situation
        plant = resolve(_mixed(chunk=4))
        simulate_distributed(plant, workers=1, parts=2)
    finally:
        held.close()
    assert not [w for w in recwarn if "8787" in str(w.message)]


def test_a_killed_worker_s_part_is_run_again():
    from densim.tools.distributed import simulate_distributed

    plant = resolve(_mixed(chunk=4))
    killed = {}

    def kill_a_busy_worker(client, futures):
        # wait until a part is running (each part first sleeps 3 s), then SIGKILL its worker process
        deadline = time.monotonic() + 180  # a hang guard only: a part starts once the workers are up (seconds)
        while time.monotonic() < deadline:
            busy = {w: keys for w, keys in client.processing().items() if keys}
            if busy:
                worker = sorted(busy)[0]
                pid = client.run(os.getpid, workers=[worker])[worker]
                os.kill(pid, signal.SIGKILL)
                killed["worker"], killed["pid"] = worker, pid
                return
            time.sleep(0.05)
        raise AssertionError("no part started running")

    res, info = simulate_distributed(plant, workers=2, parts=2, on_submitted=kill_a_busy_worker, _delay_s=3.0)
    assert killed, "the test killed no worker"
    assert killed["worker"] not in {p.worker for p in info.parts}  # every part finished somewhere else
    same_result(simulate(plant), res)


def test_cli_workers_option(tmp_path, repo, traces):
    import json

    from typer.testing import CliRunner

    from densim.cli.main import app

    one, two = tmp_path / "one", tmp_path / "two"
    ex = str(repo / "examples" / "planetlab.yaml")
    for out, extra in ((one, []), (two, ["--workers", "2"])):
        r = CliRunner().invoke(app, ["run", ex, "--out", str(out), "--no-report", "--no-progress", *extra])
        assert r.exit_code == 0, r.output
    a, b = (json.loads((d / "summary.json").read_text()) for d in (one, two))
    part = b.pop("partition")  # how the run was split (issue 34): not in a one-process run
    assert "partition" not in a and part["workers"] == 2 and part["vm_steps"] == a["vms_total"] * a["grid"]["n_steps"]
    assert a == b


def test_cli_unreachable_scheduler_is_one_line(tmp_path, repo, traces):
    from typer.testing import CliRunner

    from densim.cli.main import app

    r = CliRunner().invoke(app, ["run", str(repo / "examples" / "planetlab.yaml"), "--out", str(tmp_path / "o"),
                                 "--no-report", "--no-progress", "--scheduler", "tcp://127.0.0.1:9"])
    assert r.exit_code == 1
    assert "cannot reach the Dask scheduler" in r.output and "Traceback" not in r.output
