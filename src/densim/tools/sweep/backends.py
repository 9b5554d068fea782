"""Where sweep tasks run, behind one ``concurrent.futures.Executor`` interface.

* ``inprocess``: in this process, one task at a time (debugging, tiny sweeps).
* ``process`` (default): a local :class:`~concurrent.futures.ProcessPoolExecutor`.
* ``dask``: Dask distributed, either an existing cluster (``scheduler="tcp://host:8786"``) or a
  local one started here (``dask_local=N`` worker processes). Needs the ``cluster`` extra.

Losing a worker: a process pool whose worker dies raises ``BrokenProcessPool`` for every task in
flight; the backend then builds a new pool and the driver resubmits those tasks. Dask
reschedules the tasks of a dead worker by itself and raises ``KilledWorker`` only when a task has
taken down several workers; the driver then resubmits it too, up to ``retries`` times.

Workers die with the driver: each process-pool worker asks Linux for SIGKILL when its parent dies
(``prctl(PR_SET_PDEATHSIG)``), so a driver killed outright (SIGKILL, out of memory) leaves no worker
behind; a driver stopped by Ctrl-C or SIGTERM terminates its workers as it unwinds instead of waiting
for the tasks they are running.

A scheduler address (``--scheduler``) that does not answer fails after a few seconds
(:data:`densim.tools.distributed.CONNECT_TIMEOUT_S`, :func:`densim.tools.distributed.connect`), naming the address, instead of Dask's default 30 s.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from densim.tools.distributed import connect

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(parent: int) -> None:
    """Worker initializer: on Linux, have the kernel send SIGKILL to this process when its parent dies;
    exit at once if the parent is already gone (it died before the request was made)."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
            pass
    if os.getppid() != parent:
        os._exit(1)
    # Ctrl-C reaches the whole process group: the driver stops the workers, a worker need not print a traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _unwinding_interrupt() -> bool:
    """Called from a ``finally`` block: is a Ctrl-C or SIGTERM (raised as KeyboardInterrupt) unwinding?"""
    exc = sys.exc_info()[1]
    return isinstance(exc, (KeyboardInterrupt, SystemExit))


class InProcessExecutor(Executor):
    """Runs each submitted call at once, in the caller's process."""

    def submit(self, fn, /, *args, **kwargs) -> Future:  # type: ignore[override]
        fut: Future = Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            fut.set_exception(exc)
        return fut


class Backend:
    """A named executor that can be rebuilt after it lost a worker."""

    name = "base"
    workers = 1

    def executor(self) -> Executor:
        raise NotImplementedError

    def is_worker_loss(self, exc: BaseException) -> bool:
        return False

    def restart(self) -> None:
        pass

    def close(self) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "workers": self.workers}

    def __enter__(self) -> "Backend":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class InProcessBackend(Backend):
    name = "inprocess"

    def __init__(self) -> None:
        self._ex = InProcessExecutor()

    def executor(self) -> Executor:
        return self._ex


class ProcessPoolBackend(Backend):
    name = "process"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        # spawn: fresh interpreters that inherit neither the driver's threads (progress bar) nor
        # a stale environment (a forkserver keeps the environment of the moment it started)
        self._ctx = multiprocessing.get_context("spawn")
        self._pool: ProcessPoolExecutor | None = None

    def executor(self) -> Executor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=self._ctx, initializer=die_with_parent,
                                             initargs=(os.getpid(),))
        return self._pool

    def terminate(self) -> None:
        """Stop the pool now: kill its workers (their tasks are lost; the store never sees half a task)."""
        if self._pool is None:
            return
        procs = list((getattr(self._pool, "_processes", None) or {}).values())
        for p in procs:
            if p.is_alive():
                p.terminate()
        self._pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
        self._pool = None

    def is_worker_loss(self, exc: BaseException) -> bool:
        return isinstance(exc, BrokenProcessPool)

    def restart(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def close(self) -> None:
        if self._pool is not None:
            if _unwinding_interrupt():  # Ctrl-C or SIGTERM: do not wait for the running tasks
                self.terminate()
                return
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class DaskBackend(Backend):
    name = "dask"

    def __init__(self, scheduler: str | None = None, local_workers: int | None = None) -> None:
        try:
            from distributed import Client, LocalCluster

            from densim.tools.distributed import LOCAL_DASHBOARD
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise RuntimeError("the dask backend needs the 'cluster' extra: pip install 'densim[cluster]'") from exc
        self._cluster = None
        if scheduler:
            self._client = connect(scheduler)
            self.address = scheduler
        else:
            n = max(1, local_workers or 1)
            self._cluster = LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, dashboard_address=LOCAL_DASHBOARD, silence_logs=40
            )
            self._client = Client(self._cluster)
            self.address = self._cluster.scheduler_address
        self.workers = max(1, len(self._client.scheduler_info().get("workers", {})) or (local_workers or 1))
        self._ex = self._client.get_executor(pure=False)

    @property
    def client(self):
        return self._client

    def executor(self) -> Executor:
        return self._ex

    def is_worker_loss(self, exc: BaseException) -> bool:
        from distributed.scheduler import KilledWorker

        return isinstance(exc, KilledWorker)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "workers": self.workers, "scheduler": self.address, "local": self._cluster is not None}

    def close(self) -> None:
        try:
            self._client.close()
        finally:
            if self._cluster is not None:
                self._cluster.close()


def check_scheduler_address(address: str) -> None:
    """Refuse a ``--scheduler`` that is not a Dask scheduler address (``tcp://HOST:PORT``), before the
    study is loaded or the store touched; whether a scheduler listens there is found when connecting."""
    try:
        from distributed.comm.addressing import parse_address, parse_host_port
        from distributed.comm.registry import backends
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ValueError("the dask backend needs the 'cluster' extra: pip install 'densim[cluster]'") from exc
    problem = None
    try:
        scheme, loc = parse_address(address)
        if scheme not in backends:
            problem = f"unknown scheme {scheme!r} (known: {', '.join(sorted(backends))})"
        elif scheme in ("tcp", "tls", "ws", "wss"):
            _, port = parse_host_port(loc)
            if not 0 < int(port) < 65536:
                problem = f"port {port} is not in 1..65535"
    except (ValueError, TypeError) as exc:
        problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if problem:
        raise ValueError(f"{address!r} is not a Dask scheduler address such as tcp://HOST:8786: {problem}")


def make_backend(
    kind: str = "process", *, workers: int | None = None, scheduler: str | None = None, dask_local: int | None = None
) -> Backend:
    """Build a backend; ``scheduler`` or ``dask_local`` imply ``dask``."""
    if scheduler or dask_local:
        kind = "dask"
    if kind == "inprocess":
        return InProcessBackend()
    if kind == "process":
        return ProcessPoolBackend(workers)
    if kind == "dask":
        return DaskBackend(scheduler=scheduler, local_workers=dask_local or workers)
    raise ValueError(f"unknown backend {kind!r}; use inprocess, process or dask")
