"""Run a densim entry point in-process on a (damaged) input and check that it fails cleanly.

``run_cli(argv)`` calls :func:`densim.cli.main.main` as the ``densim`` script would, with stdout
and stderr captured and a wall-clock bound (an alarm raises :class:`Hang`, which the CLI's
last-resort handler cannot swallow). ``check_outcome`` asserts what every bad input must give:

* exit status 1 (2 for a usage error), or 0 when the damage left a valid input;
* on failure: every line of stderr an error line (``densim: error: ...`` or naming the file), one
  line unless the command lists every problem of a scenario; no traceback; not the last-resort
  "unexpected" message (that is a bug the fuzzer found); no output that looks complete;
* on success: the complete output is there;
* inputs marked ``must_fail`` (NaN in a required column, a NUL byte, ...) are never accepted.
"""

from __future__ import annotations

import contextlib
import faulthandler
import io
import json
import os
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

# A hang guard, not a speed test: an example normally ends in well under a second (a few seconds for
# the engine runs, more under load on a shared 2-core machine); 60 s is 10-20x that, so only a real
# hang (a blocked read of a FIFO, an unbounded loop) reaches it.
TIME_BOUND_S = float(os.environ.get("DENSIM_FUZZ_TIME_BOUND", "60"))
COUNTS: Counter = Counter()  # (format, damage class) -> examples run in this process


class Hang(BaseException):
    """The entry point ran past the time bound (BaseException: not caught by the CLI)."""


@dataclass
class Outcome:
    argv: list[str]
    code: int
    out: str
    err: str
    wall_s: float


def run_cli(argv: list[str], bound_s: float = TIME_BOUND_S) -> Outcome:
    from densim.cli.main import main

    out, err = io.StringIO(), io.StringIO()

    def on_alarm(signum, frame):  # noqa: ARG001
        raise Hang(f"densim {' '.join(map(str, argv))} ran longer than {bound_s:g} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, bound_s)
    # a hang in native code (a thread pool blocked on a FIFO) never returns to Python to see the
    # alarm: then dump every thread's stack and end the process, a visible failure instead of a hang
    faulthandler.dump_traceback_later(bound_s + 15, exit=True, file=sys.__stderr__)
    t0 = time.perf_counter()
    code: int | str | None = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main([str(a) for a in argv])
            except SystemExit as exc:
                code = exc.code
            except Hang as exc:
                err.write(f"HANG: {exc}\n")
                code = -1
    finally:
        faulthandler.cancel_dump_traceback_later()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    import stat as _stat

    assert _stat.S_ISCHR(os.stat("/dev/null").st_mode), f"densim {' '.join(map(str, argv))} replaced /dev/null with a file"
    if code is None:
        code = 0
    if not isinstance(code, int):
        err.write(str(code))
        code = 1
    return Outcome(list(map(str, argv)), code, out.getvalue(), err.getvalue(), time.perf_counter() - t0)


@dataclass
class Expect:
    """What a clean outcome means for one entry point."""

    names: list[str] = field(default_factory=list)  # stderr must name one of these (file paths) or say densim: error:
    complete: list[Path] = field(default_factory=list)  # files a success writes (absent after a failure)
    multi_line: bool = False  # validate/run list every problem of a scenario, one line each
    complete_json: list[tuple[Path, str, str]] = field(default_factory=list)  # (folder, glob, key): a JSON file whose key
    # is true marks a complete result (a sweep store's manifest.json "complete")


def _complete_json(expect: Expect) -> list[Path]:
    done = []
    for folder, pattern, key in expect.complete_json:
        for p in Path(folder).glob(pattern):
            try:
                if json.loads(p.read_text()).get(key):
                    done.append(p)
            except (OSError, ValueError, AttributeError):
                pass
    return done


# Bugs the fuzzer finds in code this harness's author does not own (the lead's spec/engine, other
# helpers' tools). Each entry: format (regex), damage (regex over "class: detail"), outcome (regex
# over "exit=<code>\n<stderr>", or None: the input is not run at all because it would hang or fill
# memory), and the reason. An example matching one counts as a known bug; each entry has an
# xfail(strict=True) case in corpus/, so a fix shows up there as an XPASS (then delete the entry
# here and the "xfail" of the case).
KNOWN: list[tuple[str, str, str | None, str]] = []  # none open


def known_bug(fmt: str, damage: str, o: Outcome | None) -> str | None:
    """The reason of the KNOWN entry this example matches (``o`` None: entries that are not run)."""
    import re

    for f, dmg, outcome, reason in KNOWN:
        if not (re.fullmatch(f, fmt) and re.search(dmg, damage)):
            continue
        if o is None:
            if outcome is None:
                return reason
        elif outcome is not None and re.search(outcome, f"exit={o.code}\n{o.err}", re.M):
            return reason
    return None


def check_outcome(o: Outcome, expect: Expect, *, must_fail: bool, label: str) -> None:
    names = list(expect.names)
    for n in expect.names:  # a link is reported by the file it points to
        try:
            names.append(os.path.realpath(n))
        except (OSError, ValueError):
            pass
    expect = Expect(names=names, complete=expect.complete, multi_line=expect.multi_line, complete_json=expect.complete_json)
    ctx = f"[{label}] densim {' '.join(o.argv)}\nexit {o.code}\nstderr:\n{o.err[-2000:]}\nstdout:\n{o.out[-800:]}"
    assert o.code != -1 and o.wall_s < TIME_BOUND_S, f"hang: took {o.wall_s:.1f} s\n{ctx}"
    assert "Traceback" not in o.err and "Traceback" not in o.out, f"traceback\n{ctx}"
    if o.code == 0:
        assert not must_fail, f"accepted although wrong\n{ctx}"
        for p in expect.complete:
            assert Path(p).exists(), f"exit 0 but {p} is missing\n{ctx}"
        if expect.complete_json:
            assert _complete_json(expect), f"exit 0 but no complete result\n{ctx}"
        return
    lines = [ln for ln in o.err.splitlines() if ln.strip()]
    if o.code == 1 and lines and lines[0].startswith("densim: error: no candidate is feasible"):
        # densim plan ran but no candidate is feasible: outputs written; the closest, then every candidate's reason
        assert not must_fail, f"accepted although wrong\n{ctx}"
        assert all(ln.startswith("densim: error: ") for ln in lines), f"not an error line on stderr\n{ctx}"
        for p in expect.complete:
            assert Path(p).exists(), f"no candidate feasible but {p} is missing\n{ctx}"
        return
    assert o.code in (1, 2), f"exit status {o.code}\n{ctx}"
    lines = [ln for ln in o.err.splitlines() if ln.strip()]
    if o.code == 2:  # a usage error: click's own message, ending with an "Error:" line
        assert lines and any("Error" in ln or ln.startswith("densim: error:") for ln in lines), f"usage error without a message\n{ctx}"
    else:
        assert lines, f"exit 1 without a message\n{ctx}"
        assert "unexpected" not in lines[0], f"an unexpected exception reached the last-resort handler\n{ctx}"
        if not expect.multi_line:
            assert len(lines) == 1, f"{len(lines)} lines on stderr\n{ctx}"
        for ln in lines:
            assert ln.startswith("densim: error:") or any(str(n) in ln for n in expect.names), f"not an error line: {ln!r}\n{ctx}"
        assert "\n" not in lines[0]
    for p in expect.complete:
        assert not Path(p).exists(), f"failed but left {p}, which looks like a complete result\n{ctx}"
    assert not _complete_json(expect), f"failed but left {_complete_json(expect)}, which looks complete\n{ctx}"


def record(fmt: str, damage: str) -> None:
    COUNTS[(fmt, damage)] += 1


def dump_counts(path: Path) -> None:
    """Add this process's counts to ``path`` (JSON), for the table in README.md."""
    old = json.loads(path.read_text()) if path.exists() else {}
    for (fmt, dmg), n in COUNTS.items():
        old[f"{fmt}|{dmg}"] = old.get(f"{fmt}|{dmg}", 0) + n
    path.write_text(json.dumps(old, indent=1, sort_keys=True))


_ISOLATED = """
import sys
from densim.cli.main import main
main(sys.argv[1:])
"""


def run_isolated(argv: list, bound_s: float = TIME_BOUND_S, max_bytes: int = 3 * 2**30) -> Outcome:
    """Run the entry point in a subprocess with an address-space limit and a timeout (for inputs
    known to hang or to fill memory: a FIFO, /dev/zero, an unbounded loop in code still to be fixed).

    The timeout is the same hang guard as in-process (a fresh interpreter importing densim takes 1-3 s,
    4.2 s was seen under load: a 4 s bound failed a clean case)."""
    import resource
    import subprocess

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (max_bytes, max_bytes))

    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-c", _ISOLATED, *map(str, argv)], capture_output=True, text=True,
                           timeout=bound_s, preexec_fn=limit)
        code, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as exc:
        code, out = -1, (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = f"HANG: densim {' '.join(map(str, argv))} ran longer than {bound_s:g} s\n"
    return Outcome(list(map(str, argv)), code, out, err, time.perf_counter() - t0)
