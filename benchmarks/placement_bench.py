"""Placement policies at the ladder's largest size: 100,000 VMs onto 10,000 hosts.

Three inventories: ``uniform`` (the PlanetLab ladder: 2 vCPUs / 2 GiB VMs on 32-core / 128 GiB
hosts), ``mixed`` (1-8 vCPUs, 1-32 GiB VMs on hosts of 32/48/64 cores and, drawn independently,
256/384/512 GiB: up to nine host types) and ``overfull`` (the mixed VMs with twice the memory: many fit nowhere). One JSON line per policy and inventory; JIT compilation is excluded (warm-up).

    python benchmarks/placement_bench.py
"""

from __future__ import annotations

import json
import time

import numpy as np

from densim.placement import place

V, H = 100_000, 10_000
GIB = 2.0**30


def inventories(seed: int = 0):
    rng = np.random.default_rng(seed)
    yield "uniform", np.full(V, 2.0), np.full(V, 2 * GIB), np.full(H, 32.0), np.full(H, 128 * GIB)
    sizes = (rng.integers(1, 9, V).astype(float), rng.integers(1, 33, V) * GIB)
    hosts = (rng.choice([32.0, 48.0, 64.0], H), rng.choice([256.0, 384.0, 512.0], H) * GIB)
    yield ("mixed", *sizes, *hosts)
    # twice the memory per VM: about a fifth of the VMs fit nowhere once the hosts fill up
    yield ("overfull", sizes[0], 2 * sizes[1], *hosts)


def main() -> None:
    for name, vc, vm, cc, mc in inventories():
        for policy in ("first-fit", "first-fit-decreasing", "best-fit", "worst-fit"):
            place(policy, vc[:10], vm[:10], cc[:3], mc[:3])  # JIT warm-up
            t0 = time.perf_counter()
            a = place(policy, vc, vm, cc, mc)
            wall = time.perf_counter() - t0
            print(json.dumps({"inventory": name, "policy": policy, "vms": V, "hosts": H, "wall_s": round(wall, 4),
                              "hosts_used": int(np.unique(a[a >= 0]).size), "unplaced": int((a < 0).sum())}), flush=True)


if __name__ == "__main__":
    main()
