"""Output folders are written whole, by one process at a time, and OS errors are one line (issue 29).

* ``--out`` is written into a temporary sibling that replaces it at the end: a run that fails or is
  stopped leaves the previous complete result, byte for byte, and nothing of its own;
* a second densim process writing the same ``--out`` fails at once, naming the holder's pid;
* no space, a read-only file system, a file in the way: one line naming the file as the user will
  find it (never a temporary name), exit 1, no partial files;
* every densim error survives pickling, so one bad sweep point fails alone under the process backend.
"""

from __future__ import annotations

import errno
import inspect
import os
import pickle
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import densim.errors
from densim.atomic import output_folder, output_lock
from densim.cli.main import main
from densim.errors import InputError, OutputBusy, OutputError

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"

SCENARIO = """\
name: tiny
cluster:
  hosts:
    - count: 2
      cpu: {cores_per_socket: 4, base_clock: 2 GHz}
      memory: 16 GiB
      power: {model: linear, idle: 100 W, peak: 200 W}
vms:
  - {name: v, count: 4, vcpus: 1, memory: 1 GiB, profile: {kind: constant, mean: 0.5}}
simulation: {step: 5 min, horizon: 1 h}
"""


def _run(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    cap = capsys.readouterr()
    return e.value.code, cap.out, cap.err


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture
def scenario(tmp_path) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(SCENARIO)
    return p


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}


# --------------------------------------------------------------------------------------------
# the folder is replaced whole


def test_a_new_result_replaces_the_whole_folder(tmp_path):
    """Every file of the old result goes, even one the new result does not write (an old plan's
    rightsizing.csv beside a new plan without right-sizing used to stay)."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").write_text('{"old": 1}')
    (out / "rightsizing.csv").write_text("old")
    with output_folder(out) as staging:
        assert staging.parent == tmp_path and staging != out and not (staging / "summary.json").exists()
        (staging / "summary.json").write_text('{"new": 1}')
        assert (out / "rightsizing.csv").exists()  # nothing changes in --out until the end
    assert _files(out) == {"summary.json": b'{"new": 1}'}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging folder, no lock file left


def test_an_error_inside_leaves_the_old_folder_and_no_staging(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").write_text("old")
    with pytest.raises(KeyboardInterrupt), output_folder(out) as staging:
        (staging / "hosts.parquet").write_bytes(b"half")
        raise KeyboardInterrupt  # SIGTERM is raised as this in the CLI
    assert _files(out) == {"summary.json": b"old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_folder_that_is_not_a_result_is_never_replaced(tmp_path):
    """--out naming a folder of the user's own files (no summary.json) is refused, not emptied."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(InputError, match="holds files but no summary.json"), output_folder(out):
        pass
    assert _files(out) == {"notes.txt": b"keep me"}


def test_the_current_folder_is_never_replaced(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "summary.json").write_text("{}")
    with pytest.raises(InputError, match="current folder"), output_folder("."):
        pass
    assert (tmp_path / "summary.json").exists()


def test_a_kill_between_the_two_renames_is_undone_next_time(tmp_path):
    """Killed after renaming the old result away and before renaming the new one in: the next writer
    finds no --out and the old result beside it, and puts it back before it starts."""
    out = tmp_path / "out"
    old = tmp_path / ".out.old-123-abcd"
    old.mkdir()
    (old / "summary.json").write_text("old")
    (tmp_path / ".out.new-xyz").mkdir()  # a killed writer's staging folder
    with pytest.raises(RuntimeError), output_folder(out):
        assert _files(out) == {"summary.json": b"old"}
        raise RuntimeError("this run fails too")
    assert _files(out) == {"summary.json": b"old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_failed_cli_run_over_an_old_result_changes_nothing(tmp_path, scenario, capsys, monkeypatch):
    """A run stopped while writing its tables (the old code removed the old summary.json first and
    left old and new tables mixed): the previous result stays, byte for byte."""
    out = tmp_path / "out"
    code, _, _ = _run(["run", str(scenario), "--out", str(out), "--no-progress"], capsys)
    assert code == 0
    before = _files(out)
    assert {"summary.json", "vms.parquet", "hosts.parquet", "report.html"} <= set(before)
    import polars as pl

    real = pl.DataFrame.write_parquet
    calls = []

    def second_table_interrupted(self, path, *a, **k):
        calls.append(path)
        if len(calls) == 2:
            raise KeyboardInterrupt  # as SIGTERM arrives half-way through the tables
        return real(self, path, *a, **k)

    monkeypatch.setattr(pl.DataFrame, "write_parquet", second_table_interrupted)
    code, _, err = _run(["run", str(scenario), "--out", str(out), "--no-progress", "--seed", "5"], capsys)
    assert code == 130 and len(err.strip().splitlines()) == 1
    assert _files(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "s.yaml"]


# --------------------------------------------------------------------------------------------
# one writer at a time

# the lock protocol, spelled out: flock on ".NAME.lock" beside the folder, the holder's pid in it
HOLD = """\
import fcntl, os, sys
from pathlib import Path
out = Path(sys.argv[1])
fd = os.open(out.parent / f".{out.name}.lock", os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, f"{os.getpid()}\\n".encode())
print("locked", flush=True)
sys.stdin.read()
os.unlink(out.parent / f".{out.name}.lock")
"""


def test_a_second_writer_fails_at_once_naming_the_first(tmp_path, scenario, capsys):
    """Another densim process holds --out: `densim run` says so in one line, before any work, and
    leaves the folder alone; once the holder lets go, the run goes through."""
    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=_env())
    try:
        assert holder.stdout.readline().strip() == "locked"
        code, _, err = _run(["run", str(scenario), "--out", str(out), "--no-progress"], capsys)
        assert code == 1
        assert err.strip().splitlines() == [f"densim: error: {out} is being written by another densim process (pid {holder.pid})"]
        assert not out.exists()
    finally:
        holder.communicate("", timeout=60)
    assert not (tmp_path / ".out.lock").exists()  # the holder removed its lock file as it let go
    code, _, err = _run(["run", str(scenario), "--out", str(out), "--no-progress", "--no-report"], capsys)
    assert code == 0, err


def test_the_lock_is_reentrant_in_one_process_and_refused_across(tmp_path):
    out = tmp_path / "out"
    with output_lock(out), output_lock(out), output_folder(out) as staging:
        (staging / "summary.json").write_text("{}")
        probe = subprocess.run([sys.executable, "-c", textwrap.dedent("""\
            import sys
            from densim.atomic import output_lock
            from densim.errors import OutputBusy
            try:
                with output_lock(sys.argv[1]):
                    print("got it")
            except OutputBusy as e:
                print(e.pid)
            """), str(out)], capture_output=True, text=True, env=_env(), timeout=120)
        assert probe.stdout.strip() == str(os.getpid())
    assert (out / "summary.json").exists() and not (tmp_path / ".out.lock").exists()


# --------------------------------------------------------------------------------------------
# operating-system errors: one line naming the file, exit 1, nothing partial


def _enospc(*a, **k):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_no_space_while_writing_a_table_is_one_line_naming_the_file(tmp_path, scenario, capsys, monkeypatch):
    import polars as pl

    monkeypatch.setattr(pl.DataFrame, "write_parquet", _enospc)
    out = tmp_path / "out"
    code, _, err = _run(["run", str(scenario), "--out", str(out), "--no-progress"], capsys)
    assert code == 1
    assert err.strip().splitlines() == [f"densim: error: cannot write {out}/vms.parquet: No space left on device"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]  # no --out, no staging, no lock


def test_a_polars_error_wrapping_an_os_error_is_mapped(tmp_path, scenario, capsys, monkeypatch):
    """Polars reports a failed write as ``ComputeError: ... (os error 28)``."""
    import polars as pl
    from polars.exceptions import ComputeError

    def full(*a, **k):
        raise ComputeError("failed to write parquet: No space left on device (os error 28)")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", full)
    out = tmp_path / "out"
    code, _, err = _run(["run", str(scenario), "--out", str(out), "--no-progress"], capsys)
    assert code == 1
    assert err.strip().splitlines() == [f"densim: error: cannot write {out}/vms.parquet: No space left on device"]
    assert not out.exists()


def test_no_space_in_forecast_and_plan_report_is_one_line(tmp_path, capsys, monkeypatch):
    """The HTML report (forecast, plan, study, sweep report) goes through the same writer."""
    from tests.planning.test_forecast import _linear_history, _spec_file, _write_history

    import densim.reports

    hist = _write_history(tmp_path / "h.csv", _linear_history())
    spec = _spec_file(tmp_path)
    monkeypatch.setattr(densim.reports, "render", lambda *a, **k: "<html>")
    real = Path.write_text

    def full(self, *a, **k):
        if self.name.startswith(".report.html."):
            _enospc()
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "write_text", full)
    out = tmp_path / "o"
    code, _, err = _run(["forecast", str(hist), "--spec", str(spec), "--out", str(out), "--quiet"], capsys)
    assert code == 1
    assert err.strip().splitlines() == [f"densim: error: cannot write {out}/report.html: No space left on device"]
    assert not out.exists() and not list(tmp_path.glob(".o.*"))


def test_out_under_a_file_is_one_line(tmp_path, scenario, capsys):
    (tmp_path / "f").write_text("a file")
    code, _, err = _run(["run", str(scenario), "--out", str(tmp_path / "f" / "out"), "--no-progress"], capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "is not a folder" in err and "unexpected" not in err


def test_errors_raised_outside_a_writer_name_the_file(capsys, monkeypatch, tmp_path, scenario):
    """The last line of defence: any OSError that reaches the entry point is its file and reason."""
    import densim.plant

    def denied(*a, **k):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(tmp_path / "trace.csv"))

    monkeypatch.setattr(densim.plant, "load_plant", denied)
    code, _, err = _run(["run", str(scenario), "--out", str(tmp_path / "out"), "--no-progress"], capsys)
    assert code == 1
    assert err.strip().splitlines() == [f"densim: error: {tmp_path / 'trace.csv'}: Permission denied"]


def _mount_tmpfs(where: Path, size: str, *extra: str) -> None:
    where.mkdir()
    try:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", *extra, "tmpfs", str(where)],
                           capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")


def _umount(where: Path) -> None:
    subprocess.run(["umount", str(where)], capture_output=True, timeout=300)


BIG = SCENARIO.replace("count: 4, vcpus: 1", "count: 400, vcpus: 1").replace("horizon: 1 h", "horizon: 2 d")


def test_a_full_file_system_for_real(tmp_path):
    """A 64 KiB tmpfs: the tables of 400 VMs x 2 days do not fit. One line naming the file, exit 1,
    and the file system is left empty."""
    mnt = tmp_path / "small"
    _mount_tmpfs(mnt, "64k")
    try:
        (tmp_path / "s.yaml").write_text(BIG)
        r = subprocess.run([sys.executable, "-m", "densim.cli.main", "run", str(tmp_path / "s.yaml"), "--out",
                            str(mnt / "out"), "--no-progress"], capture_output=True, text=True, env=_env(), timeout=600)
        assert r.returncode == 1, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and re.fullmatch(rf"densim: error: cannot write {re.escape(str(mnt))}/out(/[a-z_.]+\.[a-z]+)?: "
                                                "No space left on device", lines[0]), lines
        assert list(mnt.iterdir()) == []
    finally:
        _umount(mnt)


def test_a_read_only_file_system_for_real(tmp_path, scenario):
    """As root, chmod does not stop writes: a read-only tmpfs does."""
    mnt = tmp_path / "ro"
    _mount_tmpfs(mnt, "1m", "-o", "ro")
    try:
        r = subprocess.run([sys.executable, "-m", "densim.cli.main", "run", str(scenario), "--out", str(mnt / "out"),
                            "--no-progress"], capture_output=True, text=True, env=_env(), timeout=600)
        assert r.returncode == 1
        assert r.stderr.strip().splitlines() == [f"densim: error: cannot write {mnt}/out: Read-only file system"]
    finally:
        _umount(mnt)


# --------------------------------------------------------------------------------------------
# errors cross process boundaries


def _samples() -> dict[type, BaseException]:
    from densim.tools.serve.edits import EditError

    return {
        InputError: InputError("a.yaml", "vms[0].count", "must be >= 1"),
        densim.errors.ScenarioInvalid: densim.errors.ScenarioInvalid("a.yaml", [("vms[0]", "bad"), ("cluster", "worse")]),
        densim.errors.PartError: densim.errors.PartError("device 'x': seq_read is required"),
        OutputError: OutputError("out/hosts.parquet", "No space left on device", errno.ENOSPC),
        OutputBusy: OutputBusy("out", 1234),
        EditError: EditError("page", "cpu", "not a control"),
    }


def test_every_densim_error_survives_pickling():
    samples = _samples()
    classes = {c for _, c in inspect.getmembers(densim.errors, inspect.isclass)
               if issubclass(c, BaseException) and c.__module__ == "densim.errors"}
    assert classes <= set(samples), f"add a sample for {classes - set(samples)}"
    for cls, exc in samples.items():
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is cls and str(back) == str(exc) and back.__dict__ == exc.__dict__
        assert back.one_line() == exc.one_line()
    assert pickle.loads(pickle.dumps(samples[densim.errors.ScenarioInvalid])).lines() == [
        "a.yaml:vms[0]: bad", "a.yaml:cluster: worse"]


def test_a_runner_error_that_does_not_pickle_crosses_as_text():
    from densim.tools.sweep.runners import TaskError, _portable

    class Local(Exception):  # a class pickle cannot find by name
        pass

    e = _portable(Local("bad\npoint"))
    assert type(e) is TaskError and str(e) == "Local: bad point"
    assert pickle.loads(pickle.dumps(e)).args == e.args
    ok = InputError("a", "b", "c")
    assert _portable(ok) is ok


STUDY_BASE = SCENARIO.replace("simulation:", "carbon: {lifetime_years: 4, grid_gco2_per_kwh: 300}\nsimulation:")


def test_one_bad_point_fails_alone_under_the_process_backend(tmp_path):
    """Point 2 reads a PlanetLab trace whose line 7 is not a number, found only when the worker reads
    it (an InputError in the worker; the driver checks each point's scenario, not its trace files'
    contents). Old code: the error did not unpickle in the driver, the pool broke, both tasks failed
    with BrokenProcessPool after 3 retries each, and the real error was never shown."""
    base = SCENARIO.replace("memory: 1 GiB, profile: {kind: constant, mean: 0.5}}",
                            "memory: 1 GiB, vcpu_speed: 1 GHz, trace: {format: planetlab, path: good}}")
    (tmp_path / "base.yaml").write_text(base)
    for name in ("good", "bad"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "vm1").write_text("".join(f"{5 * i}\n" if (name, i) != ("bad", 7) else "abc\n"
                                                     for i in range(1, 13)))
    (tmp_path / "study.yaml").write_text("name: bad\nscenario: base.yaml\nseed: 7\nreplications: 1\n"
                                         f"axes:\n  vms[0].trace.path: [{tmp_path / 'good'}, {tmp_path / 'bad'}]\n")
    r = subprocess.run([sys.executable, "-m", "densim.cli.main", "sweep", str(tmp_path / "study.yaml"), "--out",
                        str(tmp_path / "res"), "--workers", "2", "--no-progress"],
                       capture_output=True, text=True, env=_env(), timeout=900)
    assert r.returncode == 1
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("densim: error:")]
    assert len(errors) == 1 and "BrokenProcessPool" not in r.stderr
    assert errors[0].endswith(f"InputError: {tmp_path / 'bad' / 'vm1'}:line 7: not a number: 'abc'")
    assert "ran 1, already done 0, retried 0, failed 1" in r.stdout


def test_a_folder_of_other_files_is_refused_before_the_work(tmp_path, capsys, monkeypatch):
    """plan and forecast write at the end: the refusal must come first, not after the computing."""
    from tests.planning.test_forecast import _linear_history, _spec_file, _write_history

    import densim.tools.plan.forecast as F

    def worked(*a, **k):
        raise AssertionError("the forecast ran before --out was checked")

    monkeypatch.setattr(F, "time_remaining", worked)
    hist = _write_history(tmp_path / "h.csv", _linear_history())
    spec = _spec_file(tmp_path)
    code, _, err = _run(["forecast", str(hist), "--spec", str(spec), "--out", str(tmp_path), "--quiet"], capsys)
    assert code == 1
    assert err.strip().splitlines() == [f"densim: error: --out {tmp_path}: holds files but no summary.json, so it is not "
                                        "a densim result that a new one may replace: give a new or empty folder"]
    assert (tmp_path / "h.csv").exists()
