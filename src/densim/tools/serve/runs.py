"""Runs in the background: one worker thread, a cache keyed by the hash of the resolved scenario, and
cancellation of superseded runs.

A run is ``scenario mapping -> scenario_from_dict -> plant resolve -> engine simulate`` (what
``densim run`` does after reading the file). Its key is the SHA-256 of the canonical JSON of the
validated scenario (``Scenario.model_dump``: defaults filled in, units parsed, file paths absolute)
plus its folder, so two mappings that load to the same scenario share one run and going back to an
earlier configuration is a cache hit.

Each page pane ("slot") has a generation: submitting a new configuration for a slot cancels the
slot's previous run unless another slot still waits for it. The engine calls ``progress`` after
every chunk of time steps; the callback raises :class:`Cancelled` when the run was cancelled, so a
superseded run stops at its next chunk boundary (a run in a thread cannot be stopped in the middle
of a numba kernel). The page also ignores any answer for a key that is no longer its slot's current
one.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from densim.errors import InputError


class Cancelled(Exception):
    """Raised from the engine's progress callback to stop a superseded run."""


@dataclass
class Job:
    key: str
    plant: Any
    mapping: dict[str, Any]  # the edited mapping (for the scenario YAML download)
    origin: str
    state: str = "queued"  # queued | running | done | error | cancelled
    done_steps: int = 0
    total_steps: int = 0
    error: str | None = None
    view: dict[str, Any] | None = None
    result: Any = None
    wall_s: float | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    slots: set[str] = field(default_factory=set)

    def status(self) -> dict[str, Any]:
        out = {"key": self.key, "state": self.state, "progress": [self.done_steps, self.total_steps], "error": self.error,
               "wall_s": self.wall_s}
        if self.state == "done":
            out["view"] = self.view
        return out


def scenario_key(sc) -> str:
    """SHA-256 of the validated scenario's canonical JSON and its folder (relative paths resolve against it)."""
    from densim.tools.sweep.expand import sha256_of

    return sha256_of({"scenario": sc.model_dump(mode="json", by_alias=True), "base_dir": sc.base_dir})


class Runs:
    """The worker and the cache of one server.

    ``max_cached`` finished runs are kept (least recently asked for dropped first); a dropped run is
    simply run again when asked for. ``max_memory`` (bytes; None: the readers' default, 8 GiB) is the
    limit trace readers refuse arrays above during a run, as ``densim run --max-memory`` sets it."""

    def __init__(self, max_cached: int = 32, max_memory: int | None = None) -> None:
        self.max_memory = max_memory
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="densim-serve-run")
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._slot_key: dict[str, str] = {}
        self._slot_gen: dict[str, int] = {}
        self._lock = threading.Lock()
        self.max_cached = max_cached

    # ------------------------------------------------------------------ submit
    def prepare(self, mapping: dict[str, Any], origin: str, base_dir: str):
        """Validate and resolve ``mapping`` as ``densim run`` would; returns ``(key, plant)``.

        Raises :class:`~densim.errors.ScenarioInvalid` with every problem."""
        from densim.plant import resolve
        from densim.spec.loader import scenario_from_dict

        sc = scenario_from_dict(mapping, source=origin, base_dir=base_dir)
        plant = resolve(sc, source=origin)
        return scenario_key(sc), plant

    def submit(self, key: str, plant, mapping: dict[str, Any], origin: str, slot: str) -> tuple[Job, bool, int]:
        """Start (or find in the cache) the run ``key`` for ``slot``; returns ``(job, cached, generation)``."""
        with self._lock:
            gen = self._slot_gen.get(slot, 0) + 1
            self._slot_gen[slot] = gen
            prev = self._slot_key.get(slot)
            self._slot_key[slot] = key
            if prev is not None and prev != key and prev in self._jobs:
                old = self._jobs[prev]
                old.slots.discard(slot)
                if old.state in ("queued", "running") and not old.slots:
                    old.cancel.set()
            job = self._jobs.get(key)
            cached = job is not None and (job.state == "done" or (job.state in ("queued", "running") and not job.cancel.is_set()))
            if cached:
                self._jobs.move_to_end(key)
                job.slots.add(slot)
                return job, job.state == "done", gen
            job = Job(key, plant, mapping, origin, slots={slot})
            self._jobs[key] = job
            self._jobs.move_to_end(key)
            self._evict()
        self._pool.submit(self._run, job)
        return job, False, gen

    def _evict(self) -> None:
        done = [k for k, j in self._jobs.items() if j.state in ("done", "error", "cancelled")]
        while len(self._jobs) > self.max_cached and done:
            self._jobs.pop(done.pop(0), None)

    # ------------------------------------------------------------------ worker
    def _run(self, job: Job) -> None:
        from densim.engine import simulate
        from densim.tools.serve.view import view
        from densim.workloads.readers._checks import memory_budget

        if job.cancel.is_set():
            job.state = "cancelled"
            job.finished.set()
            return
        job.state = "running"
        t0 = time.perf_counter()

        def progress(done: int, total: int) -> None:
            job.done_steps, job.total_steps = done, total
            if job.cancel.is_set():
                raise Cancelled

        try:
            with memory_budget(self.max_memory):  # a context variable: set in the worker thread itself
                res = simulate(job.plant, progress=progress)
            job.view = view(res)
            job.result = res
            job.wall_s = time.perf_counter() - t0
            job.state = "done"
        except Cancelled:
            job.state = "cancelled"
        except InputError as exc:  # a trace that does not read, a run too big: what `densim run` would print
            job.error = exc.one_line()
            job.state = "error"
        except Exception as exc:  # noqa: BLE001 - the server must stay up; the page shows the failure
            job.error = f"internal error: {type(exc).__name__}: {exc}"
            job.state = "error"
            traceback.print_exc()
        finally:
            job.plant = None if job.state != "done" else job.plant
            job.finished.set()

    # ------------------------------------------------------------------ look-up
    def get(self, key: str) -> Job | None:
        with self._lock:
            job = self._jobs.get(key)
            if job is not None:
                self._jobs.move_to_end(key)
            return job

    def is_current(self, slot: str, key: str) -> bool:
        return self._slot_key.get(slot) == key

    def write(self, job: Job, root: Path) -> Path:
        """The run's result files (``summary.json``, Parquet tables, ``report.html``) in ``root/<key>``,
        written on first request (as ``densim run`` writes them)."""
        from densim.tools.run import write_run

        folder = root / job.key[:32]
        with self._lock:
            if not (folder / "summary.json").is_file():
                write_run(job.result, folder, report=True)
        return folder

    def shutdown(self) -> None:
        with self._lock:
            for j in self._jobs.values():
                j.cancel.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
