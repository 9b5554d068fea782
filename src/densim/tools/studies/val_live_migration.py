"""Study ``val-live-migration``: VM downtime during live migration (Clark et al., NSDI 2005).

Source (measured): C. Clark, K. Fraser, S. Hand, J. G. Hansen, E. Jul, C. Limpach, I. Pratt,
A. Warfield, *Live Migration of Virtual Machines*, NSDI 2005, abstract and section 1: pre-copy
migration in Xen between two hosts on a gigabit LAN; "an OS running the SPECweb benchmark [migrates]
across two physical hosts with only 210 ms unavailability, or an OS running a Quake 3 server ...
with just 60 ms downtime".

Model: :func:`densim.models.migration.precopy` with the engine's default migration settings
(:class:`densim.spec.migration.MigrationSettings`: dirty rate 100 MB/s at full CPU, writable
working set 10 % of memory, 300 ms downtime target, 30 rounds, 20 ms resume; all estimates or
QEMU's default, none fitted to these figures) and the set-up of the paper:

* VM memory: 800 MB (SPECweb99 VM) and 64 MB (Quake 3 VM), from the captions of the paper's
  section 6 figures (read from the paper, not re-checked in this session: treat as cited with
  that caveat);
* link: gigabit Ethernet, 1 Gbit/s = 125 MB/s for every round (Xen's rate-adaptive first rounds
  run slower; that lengthens the total time, not the last round, which runs at the maximum rate);
* CPU use, which scales the dirty rate: SPECweb at 90 % of its maximum load (the paper's set-up,
  taken as 90 % CPU: estimate); the Quake 3 server with 6 players at 25 % (estimate).

Role ``calibration`` since issue 30 (before: ``prediction``; numbers unchanged): the dirty rate,
writable working set and resume time were added with the 210/60 ms already in the table, and QEMU's
300 ms stop rule caps the downtime of any converging VM. Tolerance: +/-50 %. The same cases under
Xen 2005's own stop rule: ``val-migration-stop-rules``; prediction rows with a readable set-up:
``val-migration-qemu-nfv``.
The predicted total migration times are reported in the notes without a published figure to
compare with (the paper's totals were not available as text here).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from densim.models.migration import precopy
from densim.spec.migration import MigrationSettings
from densim.tools.studies.base import Study, headline

SOURCE = ("C. Clark et al., 'Live Migration of Virtual Machines', NSDI 2005, abstract and section 1 "
          "(downtime: SPECweb 210 ms, Quake 3 60 ms; Xen pre-copy over gigabit Ethernet)")
MEASURED_MS = {"SPECweb server": 210.0, "Quake 3 server": 60.0}
TOLERANCE = 0.5
MB = 2.0**20
LINK_BPS = 1e9 / 8  # gigabit Ethernet
# (VM memory in bytes: paper section 6; CPU use: estimate, see the module docstring)
CASES = {"SPECweb server": (800 * MB, 0.9), "Quake 3 server": (64 * MB, 0.25)}
ESTIMATED = ("dirty rate (engine default 100 MB/s at full CPU)", "writable working set (engine default 10 % of memory)",
             "resume time (engine default 20 ms)", "CPU use of each VM (SPECweb 0.9, Quake 3 0.25)")


def predict() -> dict[str, dict[str, float]]:
    """The model's migration of each case with the engine's default settings."""
    s = MigrationSettings()
    out = {}
    for name, (mem, util) in CASES.items():
        r = precopy(mem, LINK_BPS, s.dirty_rate_bps * util, wws_bytes=s.wws_fraction * mem, max_rounds=s.max_rounds,
                    downtime_target_s=s.downtime_target_s, resume_s=s.resume_s)
        out[name] = {"downtime_ms": float(r.downtime_s) * 1e3, "total_s": float(r.total_s), "rounds": int(r.rounds),
                     "bytes_sent_mb": float(r.bytes_sent) / MB, "converged": bool(r.converged)}
    return out


def run(out_dir: Path, seed: int) -> dict[str, Any]:
    del out_dir
    pred = predict()
    heads = [headline(f"live-migration downtime, {k} (ms)", v, pred[k]["downtime_ms"], tolerance=TOLERANCE,
                      relative=True, source=SOURCE, unit="ms", role="calibration", estimated_inputs=ESTIMATED,
                      fitted=("MigrationSettings dirty_rate_bps, wws_fraction and resume_s (set with the 210/60 ms "
                              "downtimes already in the table)"),
                      why=("the inputs were added minutes before the rows became predictions, with the published "
                           "downtimes known; and the downtime is capped by QEMU's 300 ms stop rule, not Xen 2005's "
                           "256 KB / rate rule, so almost any run lands in band"))
             for k, v in MEASURED_MS.items()]
    notes = [f"{k}: {p['rounds']} live rounds, {p['bytes_sent_mb']:.1f} MB sent, total {p['total_s']:.2f} s "
             f"(no published total to compare), downtime {p['downtime_ms']:.0f} ms" for k, p in pred.items()]
    return {"study": "val-live-migration", "seed": seed, "headline": heads, "model": "precopy",
            "cases": pred, "notes": notes}


STUDY = Study(
    name="val-live-migration",
    description="Validation: live-migration downtime (Clark et al. 2005) from the pre-copy model",
    run=run,
    source=SOURCE,
    tags=("validation", "cluster", "no-queueing"),
    area="cluster",
)
