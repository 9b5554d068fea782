"""One run spread over a Dask cluster, split by host partitions (:mod:`densim.engine.partition`).

The client builds and places the whole run once, cuts the hosts into contiguous ranges with about
the same number of VMs, and submits one task per range; each task (:func:`densim.engine.partition.run_part`)
rebuilds the run from the plant on its worker, simulates its hosts and their VMs, and sends back
their sums, maxima and time series, which the client merges into the same Result as a single
process gives. Each task carries the plan itself (the plant and the placement, not data scattered
to one worker), so when a worker dies the scheduler runs its task again on another worker (Dask
retries a task whose worker was lost, up to ``distributed.scheduler.allowed-failures`` times). With
VMs that arrive and leave or host failures the plan also carries the client's schedule and failure
run (online and failover placement run once, on the client) and the demand source's wrappers, not
its traces; the failures and scheduling figures are computed once, on the client, after the merge.
What cannot be split (a shared datastore, the batch-job fabric, migration) is refused before the
cluster starts (:func:`densim.engine.partition.split_refusal`).

Workers need densim installed and the scenario's trace files at the same path (a shared file
system on a real cluster). ``workers=N`` starts a local cluster of N single-threaded worker
processes (``dask.distributed.LocalCluster``); ``scheduler="tcp://host:8786"`` uses a running one.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict

CONNECT_TIMEOUT_S = 5.0  # seconds to reach a Dask scheduler (--scheduler) before giving up
#: where a local cluster's scheduler serves HTTP: a free port on the loopback. With dashboard_address=None Dask still
#: binds its HTTP server to 8787 and warns "Port 8787 is already in use" when another process holds it
LOCAL_DASHBOARD = "127.0.0.1:0"


@dataclass
class PartInfo:
    """What one part did: its hosts, rows (VMs, or instances of them) and their steps, its worker, its
    time and the bytes it moved: ``bytes_in`` the pickled task (the plan and the part's host range: what
    the scheduler ships to the worker for it), ``bytes_out`` the pickled part result (what comes back)."""

    hosts: tuple[int, int]
    vms: int
    vm_steps: int
    host_steps: int
    worker: str
    part_s: float
    engine_s: float
    cpu_s: float
    bytes_in: int
    bytes_out: int


class WorkerWork(TypedDict):
    """One worker's share of a split run: parts, engine rows x steps, hosts x steps, seconds and bytes."""

    parts: int
    vm_steps: int
    host_steps: int
    compute_s: float  # the worker's parts, from the plan unpickled to the result ready (run_part)
    engine_s: float  # of which the engine's steps
    cpu_s: float  # CPU seconds of the task's thread (below compute_s when the worker waits for a core)
    bytes_in: int
    bytes_out: int


class PartitionSummary(TypedDict):
    """summary.json's ``partition`` section, written by a run split over Dask (:func:`simulate_distributed`).

    The run's figures are those of one process; this section says how the work was split: per worker
    its parts, VM-steps (engine rows x steps), host-steps, compute seconds and the bytes shipped to it
    (pickled tasks) and back (pickled part results), and the driver's phases in seconds."""

    workers: int
    parts: int
    vm_steps: int
    host_steps: int
    bytes_in: int
    bytes_out: int
    plan_s: float  # driver: build and place the whole run, pickle the plan
    cluster_s: float  # start the local cluster or connect to the scheduler
    compute_s: float  # from submitting the parts to the last part back
    merge_s: float  # driver: the whole run's result from the parts
    by_worker: dict[str, WorkerWork]
    by_part: list[dict[str, Any]]


class _PartitionRecord:
    """The writer of the ``partition`` section (not a stage of the engine: it runs no step)."""

    name = "partition"
    summary_sections = {"partition": PartitionSummary}


@dataclass
class DistributedInfo:
    workers: int
    parts: list[PartInfo] = field(default_factory=list)
    plan_s: float = 0.0
    cluster_s: float = 0.0
    compute_s: float = 0.0
    merge_s: float = 0.0

    def by_worker(self) -> dict[str, WorkerWork]:
        """Per worker address (sorted): its parts' work, seconds and bytes summed."""
        out: dict[str, WorkerWork] = {}
        for p in sorted(self.parts, key=lambda p: p.worker):
            w = out.setdefault(p.worker, WorkerWork(parts=0, vm_steps=0, host_steps=0, compute_s=0.0, engine_s=0.0,
                                                    cpu_s=0.0, bytes_in=0, bytes_out=0))
            w["parts"] += 1
            for k in ("vm_steps", "host_steps", "compute_s", "engine_s", "cpu_s", "bytes_in", "bytes_out"):
                w[k] += getattr(p, "part_s" if k == "compute_s" else k)
        return out

    def as_dict(self) -> PartitionSummary:
        return PartitionSummary(
            workers=self.workers, parts=len(self.parts), vm_steps=sum(p.vm_steps for p in self.parts),
            host_steps=sum(p.host_steps for p in self.parts), bytes_in=sum(p.bytes_in for p in self.parts),
            bytes_out=sum(p.bytes_out for p in self.parts), plan_s=self.plan_s, cluster_s=self.cluster_s,
            compute_s=self.compute_s, merge_s=self.merge_s, by_worker=self.by_worker(),
            by_part=[{**p.__dict__, "hosts": list(p.hosts)} for p in self.parts])


def connect(address: str, timeout: float | None = None):
    """A Dask ``Client`` of the scheduler at ``address``, or ``OSError`` naming the address after
    ``timeout`` seconds (:data:`CONNECT_TIMEOUT_S`) when nothing answers there: a closed port, a host
    that drops packets, or a server that accepts the connection and never speaks (there Dask's own
    ``Client(timeout=...)`` waits for ever, so the client is built in a thread we stop waiting for;
    the abandoned attempt ends with the process)."""
    import threading

    from distributed import Client

    timeout = CONNECT_TIMEOUT_S if timeout is None else timeout
    box: dict = {}

    def attempt() -> None:
        try:
            box["client"] = Client(address, timeout=f"{timeout}s")
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            box["error"] = exc
        if box.get("late"):  # the caller gave up on us: do not leave a connected client behind
            client = box.pop("client", None)
            if client is not None:
                client.close()

    t = threading.Thread(target=attempt, name=f"densim-connect-{address}", daemon=True)
    t.start()
    t.join(timeout + 1.0)  # Dask's own timeout first, where it keeps it; one second of grace
    if "client" in box:
        return box["client"]
    box["late"] = True
    err = box.get("error")
    if err is not None and not isinstance(err, (OSError, TimeoutError)):
        raise err
    raise OSError(f"cannot reach the Dask scheduler at {address}: no answer within {timeout:g} s")


def _run_part_task(plan, h0: int, h1: int, threads: int | None, delay_s: float):
    """The task a worker runs (module-level, so it pickles by reference)."""
    from densim.engine.partition import run_part

    if delay_s:  # tests: keep the task running long enough to kill its worker
        time.sleep(delay_s)
    from distributed import get_worker

    c0 = time.thread_time()  # the part's CPU seconds (single-threaded kernels run in this thread)
    res = run_part(plan, h0, h1, threads=threads)
    res.timings["cpu_s"] = time.thread_time() - c0
    try:
        res.timings["worker"] = get_worker().address
    except ValueError:  # pragma: no cover - not on a worker
        pass
    return res


def simulate_distributed(plant, *, workers: int = 2, scheduler: str | None = None, parts: int | None = None,
                         seed: int | None = None, threads_per_part: int | None = 1,
                         progress: Callable[[int, int], None] | None = None, on_submitted: Callable | None = None,
                         _delay_s: float = 0.0):
    """Run ``plant`` split into host partitions over a Dask cluster; returns ``(Result, DistributedInfo)``.

    ``scheduler`` is the address of a running scheduler; without it a ``LocalCluster`` of ``workers``
    processes is started (and stopped). ``parts`` defaults to the number of workers. ``progress(done,
    total)`` is called as parts finish; ``on_submitted(client, futures)`` right after submitting (tests).
    """
    try:
        from distributed import Client, LocalCluster, as_completed  # noqa: F401 - Client: the local cluster's
    except ImportError as exc:  # pragma: no cover - depends on the environment
        from densim.errors import InputError

        raise InputError("--workers", "", "the distributed run needs dask.distributed: pip install 'densim[cluster]'") from exc
    from densim.engine.partition import host_ranges, merge_parts, plan_run

    t0 = time.perf_counter()
    plan, ctx, timings = plan_run(plant, seed)
    info = DistributedInfo(workers=0, plan_s=time.perf_counter() - t0)
    t1 = time.perf_counter()
    cluster = None
    if scheduler:
        try:
            client = connect(scheduler)
        except (OSError, ValueError) as exc:
            from densim.errors import InputError

            raise InputError(None, "--scheduler", " ".join(str(exc).split())) from None
    else:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=LOCAL_DASHBOARD)
        client = Client(cluster)
    try:
        info.workers = len(client.scheduler_info()["workers"])
        info.cluster_s = time.perf_counter() - t1
        ranges = host_ranges(plan.host_of_vm, plan.n_hosts, parts or max(info.workers, 1))
        plan_bytes = len(pickle.dumps(plan, protocol=5))  # each task carries the plan (no data scattered to one worker)
        t2 = time.perf_counter()
        futures = [client.submit(_run_part_task, plan, h0, h1, threads_per_part, _delay_s, pure=False, key=f"densim-part-{h0}-{h1}")
                   for h0, h1 in ranges]
        if on_submitted is not None:
            on_submitted(client, futures)
        results = []
        for done, fut in enumerate(as_completed(futures), start=1):
            results.append(fut.result())
            if progress is not None:
                progress(done, len(futures))
        info.compute_s = time.perf_counter() - t2
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    t3 = time.perf_counter()
    res = merge_parts(ctx, results, {**timings, "distributed_s": 0.0})
    info.merge_s = time.perf_counter() - t3
    T = ctx.grid.n_steps
    for r in sorted(results, key=lambda r: r.h0):
        task = len(pickle.dumps((r.h0, r.h1, threads_per_part, _delay_s), protocol=5)) + plan_bytes
        info.parts.append(PartInfo(hosts=(r.h0, r.h1), vms=int(r.vm_idx.size), vm_steps=r.vm_steps,
                                   host_steps=(r.h1 - r.h0) * T, worker=str(r.timings.get("worker", "")),
                                   part_s=r.timings.get("part_s", 0.0), engine_s=r.timings.get("engine_s", 0.0),
                                   cpu_s=r.timings.get("cpu_s", 0.0), bytes_in=task, bytes_out=len(pickle.dumps(r, protocol=5))))
    res.timings["distributed_s"] = time.perf_counter() - t0
    res.summary.for_stage(_PartitionRecord()).add("partition", info.as_dict())
    return res, info
