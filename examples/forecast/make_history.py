"""Writes cluster-history.csv: a SYNTHETIC cluster history (not a measurement) with a known linear growth.

26 weeks of daily rows ending 2026-11-22. VMs grow by one a day from 300 (4 vCPUs each); the daily peak CPU
demand is 14 % of the vCPUs' MHz (2,400 MHz each) on weekdays and 10 % at weekends; memory in use is 6 GiB per VM.
Noise: normal, sd 1 % of CPU demand and 4 GiB of memory, from numpy's Generator seeded 17.

    python examples/forecast/make_history.py   # rewrites the CSV beside this file
"""

from pathlib import Path

import numpy as np

START = np.datetime64("2026-05-25")  # a Monday
DAYS = 26 * 7


def history(seed: int = 17) -> list[dict]:
    rng = np.random.default_rng(seed)
    t = np.arange(DAYS)
    dates = START + t.astype("timedelta64[D]")
    vms = 300 + t
    vcpus = 4 * vms
    weekend = ((dates - np.datetime64("1970-01-05")).astype(int) % 7) >= 5
    busy = np.where(weekend, 0.10, 0.14)
    cpu = vcpus * 2400.0 * busy * (1 + rng.normal(0, 0.01, DAYS))
    mem = vms * 6.0 + rng.normal(0, 4.0, DAYS)
    return [{"date": str(d), "vms": int(v), "vcpus": int(c), "cpu_used_mhz": f"{x:.0f}", "mem_used_gib": f"{m:.1f}"}
            for d, v, c, x, m in zip(dates, vms, vcpus, cpu, mem)]


if __name__ == "__main__":
    rows = history()
    lines = [",".join(rows[0])] + [",".join(str(v) for v in r.values()) for r in rows]
    (Path(__file__).resolve().parent / "cluster-history.csv").write_text("\n".join(lines) + "\n")
