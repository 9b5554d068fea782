"""A tiny stand-in runner for the sweep tests (the real one is the engine).

It sizes a cluster from the scenario mapping, draws per-VM CPU utilisation for a few steps from
``numpy.random.default_rng(seed)``, places VMs round-robin and reports per-host mean load. It is
deterministic in (mapping, seed), which is all the store/resume/backend tests need.

Test controls (environment, inherited by worker processes):
  DENSIM_TOY_SLEEP   seconds to sleep in every task (to kill a sweep part-way)
  DENSIM_TOY_DIE_DIR the first task to create ``died`` in this folder kills its own worker
                     process (SIGKILL) before returning: a worker lost mid-task, exactly once
"""

from __future__ import annotations

import io
import json
import os
import signal
import time

import numpy as np


def run(mapping: dict, seed: int) -> dict[str, bytes]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    die_dir = os.environ.get("DENSIM_TOY_DIE_DIR")
    if die_dir:
        try:
            fd = os.open(os.path.join(die_dir, "died"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            os.close(fd)
            os.kill(os.getpid(), signal.SIGKILL)
        except FileExistsError:
            pass
    time.sleep(float(os.environ.get("DENSIM_TOY_SLEEP", "0")))
    n_hosts = sum(int(g.get("count", 1)) for g in mapping["cluster"]["hosts"])
    n_vms = sum(int(g["count"]) for g in mapping["vms"])
    overcommit = float(mapping.get("placement", {}).get("cpu_overcommit", 1.0))
    rng = np.random.default_rng(seed)
    util = rng.beta(2.0, 5.0, size=(12, n_vms))  # 12 steps x VMs
    host = np.arange(n_vms) % n_hosts
    load = np.zeros((12, n_hosts))
    np.add.at(load.T, host, util.T)
    hosts = pa.table({"host": np.arange(n_hosts), "mean_load": load.mean(axis=0) / overcommit})
    buf = io.BytesIO()
    pq.write_table(hosts, buf)
    summary = {"n_hosts": n_hosts, "n_vms": n_vms, "mean_host_load": float(load.mean() / overcommit), "seed": seed}
    from densim.tools.sweep.runners import summary_parquet_bytes

    return {
        "hosts.parquet": buf.getvalue(),
        "summary.json": (json.dumps(summary, sort_keys=True, indent=2) + "\n").encode(),
        "summary.parquet": summary_parquet_bytes(summary, seed=seed),
    }
