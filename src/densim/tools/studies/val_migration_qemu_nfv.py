"""Study ``val-migration-qemu-nfv``: QEMU live migration of an 8 GiB guest over 10 GbE (OPNFV KVM4NFV).

Source (measured, set-up readable as text): OPNFV kvmfornfv, *Fast Live Migration* user guide,
``docs/userguide/live_migration.userguide.rst`` (repository opnfv/kvmfornfv, commit
1ec14a31c3ee8df1b8602632e0e3295547e3ea12): QEMU 2.4.0 on two Xeon E5-2699 v3 hosts (RHEL 7.1,
kernel 4.2), Intel X540-AT2 10-Gigabit Ethernet, "the down time is set to 10ms"; baseline (before
their optimisations) for "an idle 8GiB guest": total 2070 ms, downtime 29 ms; for the same guest
running DPDK L2 forwarding with pktgen sending 64-byte packets at 2013 Mbps: total 2271 ms, downtime
26 ms. (The QEMU command line printed in the same guide says ``-m 1G``; the text's 8 GiB is used here,
the discrepancy is noted in the rows' notes.)

Model: :func:`densim.models.migration.precopy_rule` with QEMU's rule at the guide's 10 ms downtime
limit (``StopRule('qemu-10ms', downtime_target_s=0.010, max_rounds=30)``), the inputs fixed before
the run:

* VM memory 8 GiB; link 10 Gbit/s = 1.25e9 B/s for every round (the guide's NIC; no protocol
  overhead, no compression);
* idle guest: dirty rate 0;
* DPDK L2 forwarding: dirty rate = the packet stream written into guest memory, 2013 Mbit/s =
  2.516e8 B/s (the guide's line rate), writable working set = the mbuf pool the packets land in,
  16 MiB (E: DPDK's example mempool of 8192 mbufs x 2 KiB);
* resume 20 ms (the engine's default ``MigrationSettings.resume_s``, (E), fixed before this study).

Role ``prediction`` (nothing tuned to these figures). Tolerance, written and committed before the
first run: +/-50 % (as the other migration rows).

Expected weak spot, written before the run: the model sends every page of the 8 GiB; QEMU sends a
zero page as a flag and an idle guest is mostly zero pages, so the totals should miss high
(mechanism: zero-page detection during pre-copy). The downtimes rest on the (E) resume time.

Session 16 (issue 30): zero-page skipping is now modelled (:mod:`densim.models.migration`: round 0 sends the
non-zero share ``(1 - z) M`` at the link rate, each zero page as a 9-byte flag, and the one migration thread
reads the zero pages at ``S``, added to the round: QEMU's ``ram_save_page`` -> ``save_zero_page`` ->
``is_zero_range`` in the thread that also writes the stream). It was added AFTER these rows were seen missing
high (+233 % / +204 %, model 6.89 s for both). Its two inputs were fixed from sources other than the OPNFV
guide, written here and committed before the rows were run with them, none tuned:

* zero share of an idle 8 GiB guest, z = 0.926: QEMU's own counters for "a 8GB VM, wait until Linux is
  up, migrate it", the run without free page hinting (QEMU 2.4 had none): ``duplicate: 1942431 pages`` of
  ``total ram: 8389384 kbytes`` (2,097,346 pages), 1942431 / 2097346 = 0.926 ("all filled with zero, as the
  guest never touched them"). D. Hildenbrand, qemu-devel, 2 Jul 2021, "Re: [PATCH] migration: Move
  bitmap_mutex out of migration_bitmap_clear_dirty()", Message-ID
  <824a1d77-eab0-239f-5104-49c49d6ad285@redhat.com> (lists.gnu.org/archive/html/qemu-devel/2021-07). Chosen
  by the rule written before looking at candidates' effect: same guest size (8 GiB), idle Linux just booted,
  no free page hinting. Other figures found and not used: a 4 GiB Ubuntu 20.04 guest (course notes on GitHub,
  davidliyutong; guest state not stated), 876668 duplicate of 1,052,946 pages = 0.833; a 1.5 GiB DPDK guest in
  the kvmfornfv docs' own ``info migrate`` example, 303985 of 397,522 pages sent = 0.765 (smaller guest, and
  the same project).
* the DPDK row uses the same z (E): the guide says the same 8 GiB guest; testpmd's hugepages and mbuf pool
  (tens to hundreds of MiB) are not subtracted.
* scan rate S = 19.9 GB/s: single-thread STREAM Triad of a Xeon E5-2690 v3 (Haswell-EP, the generation of the
  guide's E5-2699 v3), J. McCalpin, Intel community forum, "single core bandwidth: haswell vs. broadwell vs.
  skylake" (community.intel.com/t5/Software-Tuning-Performance/single-core-bandwidth-haswell-vs-broadwell-vs-
  skylake/td-p/1126086). A proxy: QEMU 2.4's SSE2 ``buffer_find_nonzero_offset`` loop and its per-page
  bookkeeping (dirty-bitmap search) are not measured there.

Disclosure: while checking the mechanism, before the zero-share source was found, the model was run once for
8 GiB at z = 0.9 and S = 19.9 GB/s over 1.25e9 B/s (1.09 s), so the rough size of the answer at a high zero
share was known when the source was picked; the choice rule above does not depend on it and nothing was tuned.
Role stays ``prediction``: no input was chosen by its effect on these rows. Tolerance unchanged (+/-50 %).
Result (before -> after, error against the measured figure): idle total 6,892 ms (+232.9 %) -> 941 ms
(-54.5 %, still a miss, now low); DPDK total 6,908 ms (+204.2 %) -> 958 ms (-57.8 %, a miss, low); the
downtimes do not move (20.0 ms, -31.0 %; 22.7 ms, -12.7 %; in band). Round 0 is 0.61 GiB on the wire
(0.522 s) plus 0.400 s reading 7.4 GiB of zero pages. Believed missing now (not fitted): QEMU 2.4's per-page
cost in the migration thread beyond the memory read (the dirty-bitmap walk, one ``ram_save_page`` call per
4 KiB page: 2.1 M calls), and the OPNFV guest's own zero share (RHEL 7.1 with DPDK, not measured there).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from densim.models.migration import StopRule, precopy_rule
from densim.spec.migration import MigrationSettings
from densim.tools.studies.base import Study, headline

SOURCE = ("OPNFV kvmfornfv, 'Fast Live Migration' user guide (github.com/opnfv/kvmfornfv "
          "docs/userguide/live_migration.userguide.rst): QEMU 2.4, 10 GbE X540, downtime limit 10 ms, idle 8 GiB guest "
          "2070 ms total / 29 ms down; DPDK L2fwd at 2013 Mbps 2271 ms / 26 ms (baseline)")
TOLERANCE = 0.5
GIB = float(1 << 30)
MIB = float(1 << 20)
LINK_BPS = 10e9 / 8
RULE = StopRule("qemu-10ms", downtime_target_s=0.010, max_rounds=30,
                source="QEMU downtime-limit set to 10 ms in the OPNFV test")
# Session 16 inputs (module docstring): zero share of an idle 8 GiB Linux guest from QEMU's counters
# (Hildenbrand, qemu-devel 2021-07-02: 1942431 duplicate of 8389384 kB / 4 kB pages) and one core's read rate
ZERO_SHARE = 1942431 / (8389384 / 4)
SCAN_BPS = 19.9e9  # single-thread STREAM Triad, Xeon E5-2690 v3 (McCalpin, Intel community forum)
# name: (memory, dirty rate B/s, writable working set bytes or None)
CASES = {"idle 8 GiB guest": (8 * GIB, 0.0, None),
         "8 GiB guest, DPDK L2 forwarding at 2013 Mbps": (8 * GIB, 2013e6 / 8, 16 * MIB)}
MEASURED = {"idle 8 GiB guest": (2070.0, 29.0), "8 GiB guest, DPDK L2 forwarding at 2013 Mbps": (2271.0, 26.0)}
ESTIMATED = ("resume 20 ms (engine default, E)", "DPDK mbuf pool 16 MiB as the writable working set (E)",
             "VM size 8 GiB from the text (the printed command line says -m 1G)",
             "zero share 0.926 of an idle 8 GiB Linux guest from another QEMU run (Hildenbrand, qemu-devel 2021); "
             "the DPDK guest given the same share (E)",
             "zero-page read rate 19.9 GB/s: one Haswell-EP core's STREAM Triad (McCalpin), a proxy for QEMU's scan")


def predict() -> dict[str, dict[str, float]]:
    resume = MigrationSettings().resume_s
    return {k: precopy_rule(m, LINK_BPS, d, RULE, wws_bytes=w, resume_s=resume, zero_fraction=ZERO_SHARE,
                            zero_scan_bps=SCAN_BPS) for k, (m, d, w) in CASES.items()}


def run(out_dir: Path, seed: int) -> dict[str, Any]:
    del out_dir
    pred = predict()
    heads = []
    for k, (total_ms, down_ms) in MEASURED.items():
        heads.append(headline(f"QEMU migration total time, {k} (ms)", total_ms, pred[k]["total_s"] * 1e3,
                              tolerance=TOLERANCE, relative=True, source=SOURCE, unit="ms", role="prediction",
                              estimated_inputs=ESTIMATED))
        heads.append(headline(f"QEMU migration downtime, {k} (ms)", down_ms, pred[k]["downtime_s"] * 1e3,
                              tolerance=TOLERANCE, relative=True, source=SOURCE, unit="ms", role="prediction",
                              estimated_inputs=ESTIMATED))
    notes = [f"{k}: {p['rounds']} rounds, {p['bytes_sent'] / GIB:.2f} GiB sent, total {p['total_s']:.2f} s, "
             f"downtime {p['downtime_s'] * 1e3:.1f} ms" for k, p in pred.items()]
    return {"study": "val-migration-qemu-nfv", "seed": seed, "headline": heads, "cases": pred, "notes": notes}


STUDY = Study(
    name="val-migration-qemu-nfv",
    description="Validation: QEMU live migration of an 8 GiB guest over 10 GbE (OPNFV KVM4NFV), QEMU's 10 ms stop rule",
    run=run,
    source=SOURCE,
    tags=("validation", "cluster", "no-queueing"),
    area="cluster",
)
