"""The sweep driver: submit unfinished tasks, store results as they arrive, retry lost workers."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from densim.tools.sweep.backends import Backend, make_backend

BACKENDS = ("inprocess", "process", "dask")
from densim.tools.sweep.runners import execute
from densim.tools.sweep.store import Store
from densim.tools.sweep.expand import Sweep, Task


@dataclass
class SweepOutcome:
    store: Path
    total: int
    skipped: int = 0
    done: int = 0
    rerun: list[tuple[str, str]] = field(default_factory=list)  # finished tasks found damaged and run again
    retries: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed


# progress(event, info): event in {"start", "task", "retry", "fail", "rerun"}
Progress = Callable[[str, dict[str, Any]], None]


def default_store_root(study: Sweep, out: str | Path | None = None) -> Path:
    return Path(out if out is not None else "results") / study.name


def run_sweep(
    study: Sweep,
    *,
    out: str | Path | None = None,
    backend: Backend | str = "process",
    workers: int | None = None,
    scheduler: str | None = None,
    dask_local: int | None = None,
    retries: int = 3,
    fresh: bool = False,
    progress: Progress | None = None,
) -> SweepOutcome:
    """Run every task of ``study`` that is not already in the store under ``out``/<study>.

    A finished task whose files are not as written (deleted, truncated) runs again.
    """
    from densim.errors import InputError

    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise InputError(None, "--workers", f"must be a whole number >= 1, got {workers!r}")
    if not isinstance(retries, int) or retries < 0:
        raise InputError(None, "--retries", f"must be a whole number >= 0, got {retries!r}")
    if dask_local is not None and (not isinstance(dask_local, int) or dask_local < 1):
        raise InputError(None, "--dask-local", f"must be a whole number >= 1, got {dask_local!r}")
    if isinstance(backend, str) and backend not in BACKENDS:
        raise InputError(None, "--backend", f"unknown backend {backend!r}; use {', '.join(BACKENDS)}")
    t0 = time.perf_counter()
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    root = default_store_root(study, out)
    store = Store(root, study)
    store.prepare(fresh=fresh)
    tasks = study.tasks()
    emit = progress or (lambda e, i: None)
    damaged: list[tuple[str, str]] = []
    for t in tasks:
        if store.is_done(t):
            problem = store.check_task(t)
            if problem is not None:
                store.discard(t)
                damaged.append((t.key, problem))
                emit("rerun", {"task": t.key, "error": problem})
    todo = deque(t for t in tasks if not store.is_done(t))
    outcome = SweepOutcome(store=root, total=len(tasks), skipped=len(tasks) - len(todo), rerun=damaged)
    emit("start", {"total": len(tasks), "skipped": outcome.skipped})

    own = not isinstance(backend, Backend)
    if own:
        try:
            be = make_backend(backend, workers=workers, scheduler=scheduler, dask_local=dask_local)
        except (ValueError, RuntimeError, OSError) as exc:
            store.write_manifest()
            raise InputError(None, "--backend" if not scheduler else "--scheduler", str(exc).splitlines()[0]) from None
    else:
        be = backend
    base_dir = study.extra.get("base_dir", ".")
    attempts: dict[Task, int] = {}
    inflight: dict[Future, Task] = {}
    cap = max(2, 2 * be.workers)
    try:
        while todo or inflight:
            ex = be.executor()
            while todo and len(inflight) < cap:
                task = todo.popleft()
                mapping = {**study.point(task.scenario_id).mapping, "base_dir": base_dir}
                inflight[ex.submit(execute, study.spec.runner, mapping, task.seed)] = task
            finished, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
            lost = False
            for fut in finished:
                task = inflight.pop(fut)
                try:
                    files = fut.result()
                except BaseException as exc:  # noqa: BLE001
                    if be.is_worker_loss(exc):
                        lost = True
                        attempts[task] = attempts.get(task, 0) + 1
                        if attempts[task] <= retries:
                            outcome.retries += 1
                            todo.appendleft(task)
                            emit("retry", {"task": task.key, "attempt": attempts[task], "error": type(exc).__name__})
                            continue
                    msg = f"{type(exc).__name__}: {exc}".splitlines()[0]
                    outcome.failed.append((task.key, msg))
                    emit("fail", {"task": task.key, "error": msg})
                    continue
                store.commit(task, files)
                outcome.done += 1
                emit("task", {"task": task.key, "done": outcome.done + outcome.skipped, "total": len(tasks)})
            if lost:
                # every task still in flight on a broken pool is lost too: collect and resubmit them
                if be.name == "process":
                    for fut, task in list(inflight.items()):
                        try:
                            files = fut.result()
                        except BaseException:  # noqa: BLE001
                            attempts[task] = attempts.get(task, 0) + 1
                            outcome.retries += 1
                            todo.appendleft(task)
                            emit("retry", {"task": task.key, "attempt": attempts[task], "error": "BrokenProcessPool"})
                        else:
                            store.commit(task, files)
                            outcome.done += 1
                            emit("task", {"task": task.key, "done": outcome.done + outcome.skipped, "total": len(tasks)})
                    inflight.clear()
                    be.restart()
    finally:
        if own:
            be.close()
        store.write_manifest()
        outcome.wall_s = time.perf_counter() - t0
        store.log_run(
            {
                "started": started,
                "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "wall_s": round(outcome.wall_s, 3),
                **be.describe(),
                "tasks": outcome.total,
                "skipped": outcome.skipped,
                "ran": outcome.done,
                "retries": outcome.retries,
                "failed": [k for k, _ in outcome.failed],
            }
        )
    return outcome
