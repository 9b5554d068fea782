"""SIGTERM is handled as Ctrl-C, and a sweep's workers never outlive their driver (issue 29).

Real processes: a ``densim sweep`` (process backend, the toy runner of tests/sweep sleeping in every
task) and a ``densim run`` are started, signalled, and their process trees checked. Every wait is
a bounded poll, far above the normal time; no assertion is on wall time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]
SWEEP_TESTS = ROOT / "tests" / "sweep"  # toy_runner.py and its entry point (runner: toy)

BASE = """\
name: tiny
cluster:
  hosts:
    - count: 2
      cpu: {cores_per_socket: 8, base_clock: 2 GHz}
      memory: 64 GiB
      power: {model: linear, idle: 100 W, peak: 250 W}
vms:
  - {name: web, count: 6, vcpus: 2, vcpu_speed: 2 GHz, memory: 4 GiB, profile: {kind: diurnal, mean: 0.3, amplitude: 0.2}}
simulation: {step: 5 min, horizon: 2 h}
"""


def _env(**extra: str) -> dict[str, str]:
    path = [str(SWEEP_TESTS), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p), **extra}


def _poll(cond, limit_s: float = 120.0, every_s: float = 0.1):
    """``cond()`` once it is truthy, or its last value after ``limit_s`` (a hang guard, not a timing)."""
    end = time.monotonic() + limit_s
    while True:
        v = cond()
        if v or time.monotonic() > end:
            return v
        time.sleep(every_s)


def _alive(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


def _workers(driver: int) -> list[int]:
    """The driver's pool workers (children running Python; the multiprocessing resource tracker too)."""
    try:
        return [c.pid for c in psutil.Process(driver).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


@pytest.fixture
def sweep_study(tmp_path) -> Path:
    (tmp_path / "base.yaml").write_text(BASE)
    study = tmp_path / "study.yaml"
    study.write_text("name: toy\nscenario: base.yaml\nseed: 7\nreplications: 2\nrunner: toy\n"
                     "axes:\n  placement.cpu_overcommit: [1, 2]\n")
    return study


def _start_sweep(study: Path, out: Path) -> tuple[subprocess.Popen, list[int]]:
    """A sweep of 4 tasks that each sleep 300 s, on 2 workers; returns once both workers run."""
    p = subprocess.Popen([sys.executable, "-m", "densim.cli.main", "sweep", str(study), "--out", str(out), "--workers", "2",
                          "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=_env(DENSIM_TOY_SLEEP="300"), start_new_session=True)
    workers = _poll(lambda: (lambda w: w if len(w) >= 2 else [])(_workers(p.pid)))
    assert len(workers) >= 2, "the sweep did not start its workers"
    time.sleep(1.0)  # let the tasks reach their sleep (not a timing assertion: any value works)
    return p, _workers(p.pid)


def _cleanup(p: subprocess.Popen, pids: list[int]) -> None:
    for pid in _alive(pids) + ([p.pid] if p.poll() is None else []):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    p.communicate(timeout=60)


def test_sigterm_stops_the_sweep_and_its_workers(sweep_study, tmp_path):
    """SIGTERM to the driver: exit 143, one line, no worker left (old code: the driver died at once and
    both workers, each holding a task, ran on)."""
    p, pids = _start_sweep(sweep_study, tmp_path / "res")
    try:
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=120)
        assert p.returncode == 143, err
        assert [ln for ln in err.splitlines() if ln.startswith("densim:")] == [
            "densim: terminated (SIGTERM); work finished before it is kept, nothing half-written looks complete"]
        assert _poll(lambda: not _alive(pids), limit_s=60) is True, f"workers still running: {_alive(pids)}"
        # the store is as after a Ctrl-C: nothing recorded as done, so a rerun resumes all 4 tasks
        assert (tmp_path / "res" / "toy").is_dir() and not list((tmp_path / "res" / "toy").rglob("summary.json"))
    finally:
        _cleanup(p, pids)


def test_workers_die_with_a_killed_driver(sweep_study, tmp_path):
    """SIGKILL cannot be handled: the workers go because the kernel kills them with their parent
    (PR_SET_PDEATHSIG). Old code: they stayed, about 310 MB each for an engine sweep."""
    p, pids = _start_sweep(sweep_study, tmp_path / "res")
    try:
        p.kill()
        p.wait(timeout=60)
        assert _poll(lambda: not _alive(pids), limit_s=60) is True, f"workers still running: {_alive(pids)}"
    finally:
        _cleanup(p, pids)


def test_the_worker_initializer_refuses_an_orphan():
    """A worker whose parent died before it asked for PDEATHSIG exits at once."""
    code = ("import os\nfrom densim.tools.sweep.backends import die_with_parent\n"
            "die_with_parent(os.getppid() + 1)\nprint('still here')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120)
    assert r.returncode == 1 and "still here" not in r.stdout and r.stderr == ""


BIG = BASE.replace("count: 6, vcpus: 2", "count: 3000, vcpus: 1").replace("count: 2\n", "count: 400\n").replace(
    "horizon: 2 h", "horizon: 14 d")


def test_sigterm_during_a_run_keeps_the_previous_result(tmp_path):
    """``densim run`` over an earlier result, SIGTERMed while it works: exit 143, one line, and --out is
    the earlier result, every file as it was (old code: the earlier summary.json was removed at the
    start and its tables left behind, or the process died with the default action)."""
    small = tmp_path / "small.yaml"
    small.write_text(BASE)
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "densim.cli.main", "run", str(small), "--out", str(out), "--no-progress"],
                       capture_output=True, text=True, env=_env(), timeout=600)
    assert r.returncode == 0, r.stderr
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    big = tmp_path / "big.yaml"
    big.write_text(BIG)
    p = subprocess.Popen([sys.executable, "-m", "densim.cli.main", "run", str(big), "--out", str(out), "--no-progress"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        # the staging folder appears as the run starts, before the scenario is even read (the old code
        # removed the earlier summary.json instead)
        started = _poll(lambda: list(tmp_path.glob(".out.new-*")) or not (out / "summary.json").exists(), every_s=0.01)
        assert started, "the run never started writing"
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 143, err
    assert err.strip().splitlines() == [
        "densim: terminated (SIGTERM); work finished before it is kept, nothing half-written looks complete"]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(x.name for x in tmp_path.iterdir()) == ["big.yaml", "out", "small.yaml"]
