"""Write files and output folders so that a crash never leaves a complete-looking partial output.

* :func:`write_atomic` writes one file under a temporary name and renames it into place.
* :func:`output_folder` is how every command with ``--out`` writes its folder: everything goes into
  a temporary sibling folder, which replaces ``--out`` whole at the end (the old folder is renamed
  away, the new one renamed in, the old one removed), under a lock that a second densim process
  writing the same folder finds at once (:class:`~densim.errors.OutputBusy`). A run that fails or is
  killed leaves the previous complete result, or nothing that looks complete.
* An operating-system error while writing (no space, read-only file system, permission, a path that
  is a file) becomes one :class:`~densim.errors.OutputError` naming the file as the user will find
  it (never a temporary name), and the partial files are removed. Polars wraps such errors in its
  own exceptions (``ComputeError: ... (os error 28)``); those are mapped too.
"""

from __future__ import annotations

import errno as _errno
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from densim.errors import InputError, OutputBusy, OutputError


def _process_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: str | Path, writer: Callable[[Path], None]) -> Path:
    """Call ``writer(tmp_path)`` then rename the temporary file onto ``path``.

    The file gets the permissions any new file of the process gets (``0o666`` less the umask), not
    the ``0o600`` of the temporary file, so results can be shared as the user's umask allows.
    """
    path = Path(path)
    tmp_path: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        tmp_path = Path(tmp)
        writer(tmp_path)
        os.chmod(tmp_path, 0o666 & ~_process_umask())
        os.replace(tmp_path, path)
    except BaseException as exc:
        if tmp_path is not None:
            try:
                tmp_path.unlink(missing_ok=True)
            except OSError:
                pass
        if isinstance(exc, InputError):
            raise
        problem = os_problem(exc)
        if problem is None:
            raise
        raise OutputError(shown_path(path), problem[1], problem[0]) from None
    return path


_OS_ERROR_TEXT = re.compile(r"\(os error (\d+)\)|\[Errno (\d+)\]")


def os_problem(exc: BaseException) -> tuple[int | None, str] | None:
    """``(errno, reason)`` when ``exc`` is an operating-system error, including the ones Polars and
    Arrow wrap in their own exceptions (``... (os error 28)``); ``None`` for anything else."""
    if isinstance(exc, FileExistsError) and exc.errno == _errno.EEXIST:
        # mkdir of a folder whose name is taken by a file: say so, not "File exists"
        return _errno.ENOTDIR, f"{exc.filename} is a file, not a folder" if exc.filename else "a file is in the way"
    if isinstance(exc, OSError) and exc.errno is not None:
        return exc.errno, exc.strerror or os.strerror(exc.errno)
    text = str(exc)
    m = _OS_ERROR_TEXT.search(text)
    if m is not None and (isinstance(exc, OSError) or type(exc).__module__.split(".")[0] in ("polars", "pyarrow")):
        n = int(m.group(1) or m.group(2))
        return n, os.strerror(n)
    return None


# temporary output folders being written -> the folder they become (to name files as the user finds them)
_STAGING: dict[str, Path] = {}


def shown_path(path: str | Path) -> Path:
    """``path`` with a temporary output folder (:func:`output_folder`) replaced by the folder it becomes."""
    p = Path(path)
    for tmp, final in list(_STAGING.items()):
        try:
            return final / p.relative_to(tmp)
        except ValueError:
            continue
    return p


def write_text_atomic(path: str | Path, text: str) -> Path:
    return write_atomic(path, lambda p: p.write_text(text, encoding="utf-8"))


def strict_json(obj: Any) -> Any:
    """``obj`` with every NaN or infinite float replaced by ``None`` (strict JSON has neither)."""
    import math

    import numpy as np

    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return strict_json(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def dumps_strict(obj: Any, **kwargs: Any) -> str:
    """JSON text that strict parsers accept: NaN and infinities become ``null``."""
    return json.dumps(strict_json(obj), allow_nan=False, default=_json_default, **kwargs)


def write_json_atomic(path: str | Path, obj: Any) -> Path:
    return write_text_atomic(path, dumps_strict(obj, indent=2, sort_keys=False) + "\n")


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


# --------------------------------------------------------------------------------------------
# output folders: a lock, a temporary sibling, one swap at the end


class _Held:
    def __init__(self, fd: int, path: Path) -> None:
        self.fd, self.path, self.count = fd, path, 1


_HELD: dict[str, _Held] = {}
_HELD_LOCK = threading.Lock()


def _lock_path(target: Path) -> Path:
    return target.parent / f".{target.name}.lock"


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        return int(text) if text.isdigit() else None
    except OSError:
        return None


def _acquire(target: Path, shown: Path) -> _Held:
    lock = _lock_path(target)
    import fcntl

    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666 & ~_process_umask())
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise OutputBusy(shown, pid) from None
        except BaseException:
            os.close(fd)
            raise
        # the holder before us removes the lock file as it lets go: make sure we locked the file that is there now
        try:
            now = os.stat(lock)
            mine = os.fstat(fd)
            if (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return _Held(fd, lock)


def _release(held: _Held) -> None:
    try:
        os.unlink(held.path)  # while still locked: whoever opened it before retries on the new file
    except OSError:
        pass
    os.close(held.fd)


def _target(out: Path) -> Path:
    """The folder ``out`` names, absolute, through a symbolic link (the link stays, its folder is replaced)."""
    p = Path(os.path.abspath(out))
    return p.resolve() if p.is_symlink() else p


@contextmanager
def output_lock(out: str | Path) -> Iterator[Path]:
    """Hold the lock of the output folder ``out`` (``.NAME.lock`` beside it, created with its parent
    folders) for the ``with`` block. A second densim process fails at once with
    :class:`~densim.errors.OutputBusy` naming the holder's pid; in the same process the lock is
    re-entrant. The lock file is removed as the last holder lets go; a killed process's lock goes
    with the process (``flock``)."""
    out = Path(out)
    target = _target(out)
    key = str(target)
    with _HELD_LOCK:
        held = _HELD.get(key)
        if held is not None:
            held.count += 1
        else:
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                held = _acquire(target, out)
            except OSError as exc:
                problem = os_problem(exc)
                raise OutputError(out, problem[1] if problem else str(exc), problem[0] if problem else None) from None
            _HELD[key] = held
    try:
        yield target
    finally:
        with _HELD_LOCK:
            held.count -= 1
            if held.count == 0:
                del _HELD[key]
                _release(held)


def check_replaceable(out: str | Path) -> Path:
    """``out`` may be replaced whole by :func:`output_folder`: new, empty, or a densim result (it has
    ``summary.json``); not the current folder or one holding it, not a file, not a folder of other files
    (:class:`~densim.errors.InputError` naming ``--out``). Commands call it before their work, so a
    refusal comes before minutes of computing, not after."""
    out = Path(out)
    target = _target(out)
    cwd = Path(os.getcwd())
    if target == cwd or target in cwd.parents:
        raise InputError(f"--out {out}", "", "is the current folder or holds it: the results replace the whole "
                                             "folder, so give a folder of their own")
    try:
        if target.exists():
            if not target.is_dir():
                raise InputError(f"--out {out}", "", "exists and is not a folder; results go to a folder")
            if not _is_result_folder(target):
                raise InputError(f"--out {out}", "", "holds files but no summary.json, so it is not a densim result "
                                                     "that a new one may replace: give a new or empty folder")
    except OSError as exc:
        problem = os_problem(exc)
        raise OutputError(out, problem[1] if problem else str(exc), problem[0] if problem else None, verb="read") from None
    return target


def _is_result_folder(folder: Path) -> bool:
    """A folder :func:`output_folder` may replace: empty, or a densim result (it has ``summary.json``)."""
    try:
        return not any(folder.iterdir()) or (folder / "summary.json").is_file()
    except NotADirectoryError:
        return False


def _tidy(target: Path) -> None:
    """Under the lock: remove what a killed writer of ``target`` left beside it. A previous result
    renamed away just before a kill (``.NAME.old-*``) is put back when ``target`` is missing."""
    parent, name = target.parent, target.name
    for p in sorted(parent.glob(f".{glob_escape(name)}.old-*")):
        if not target.exists() and (p / "summary.json").is_file():
            os.rename(p, target)
        else:
            shutil.rmtree(p, ignore_errors=True)
    for p in parent.glob(f".{glob_escape(name)}.new-*"):
        shutil.rmtree(p, ignore_errors=True)


def glob_escape(name: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", name)


@contextmanager
def output_folder(out: str | Path) -> Iterator[Path]:
    """Write an output folder all at once: yields a new temporary folder beside ``out``; when the
    ``with`` block ends without an error it replaces ``out`` whole, and on an error (or a kill) it is
    removed and ``out`` is left as it was.

    Held for the whole block: the lock of ``out`` (:func:`output_lock`), so enter it before the work
    starts and a second writer fails at once. ``out`` must be new, empty, or a densim result folder
    (one with ``summary.json``): a folder of other files is refused, never replaced. A folder with
    ``summary.json`` is complete: every file in it was written by the same run.

    An ``OSError`` on a file in the temporary folder becomes :class:`~densim.errors.OutputError`
    naming the file under ``out``.
    """
    out = Path(out)
    check_replaceable(out)  # before the lock: nothing is created beside a folder that is refused
    with output_lock(out) as target:
        try:
            _tidy(target)
            check_replaceable(out)  # again, under the lock (_tidy may have put a previous result back)
            if target.exists():
                mode = target.stat().st_mode & 0o7777
            else:
                mode = 0o777 & ~_process_umask()
            tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=target.parent))
            _STAGING[str(tmp)] = out
        except OSError as exc:
            problem = os_problem(exc)
            raise OutputError(out, problem[1] if problem else str(exc), problem[0] if problem else None) from None
        except BaseException:  # interrupted (SIGTERM, Ctrl-C) while the staging folder was being made: under the
            for p in target.parent.glob(f".{glob_escape(target.name)}.new-*"):  # lock every one of them is ours
                shutil.rmtree(p, ignore_errors=True)
            raise
        try:
            try:
                os.chmod(tmp, mode)
                yield tmp
            except OSError as exc:
                problem = os_problem(exc)
                name = getattr(exc, "filename", None)
                if problem is None or name is None or shown_path(name) == Path(name):
                    raise  # not a file of this folder (an input, say): the caller's to report
                raise OutputError(shown_path(name), problem[1], problem[0]) from None
            _swap(tmp, target, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        finally:
            _STAGING.pop(str(tmp), None)


def _swap(tmp: Path, target: Path, shown: Path) -> None:
    """Rename ``target`` away, ``tmp`` onto it, remove the old folder (a kill in between is undone by
    :func:`_tidy` the next time)."""
    old = None
    try:
        if target.exists():
            old = target.parent / f".{target.name}.old-{os.getpid()}-{os.urandom(4).hex()}"
            os.rename(target, old)
        try:
            os.rename(tmp, target)
        except BaseException:
            if old is not None:
                os.rename(old, target)
            raise
    except OSError as exc:
        problem = os_problem(exc)
        raise OutputError(shown, problem[1] if problem else str(exc), problem[0] if problem else None) from None
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
