"""Pre-copy live migration of a VM's memory (Clark et al., NSDI 2005; Hirofuchi et al., SimGrid VM).

A migration copies the VM's memory ``M`` to the destination while the VM runs, then pauses it and
copies what is left (*stop-and-copy*). Round ``i`` sends ``V_i`` bytes at bandwidth ``B``, taking
``t_i = V_i / B``; meanwhile the VM dirties ``D_i t_i`` bytes (at most its writable working set
``W``, and at most ``M``), which round ``i + 1`` must send again::

    V_0 = M,     V_{i+1} = min(D_i V_i / B, W, M)

With a constant dirty rate ``D < B`` and no working-set bound this is a geometric series,
``V_i = M (D/B)^i``. Pre-copy stops after the first round ``n`` whose dirtied remainder fits the
downtime target (``V_{n+1} / B <= target``), when a round makes no progress (``V_{n+1} >= V_n``:
the VM dirties as fast as the link sends, Clark et al. section 4's "diminishing returns" rule),
or after ``max_rounds`` live rounds. Then the VM stops and the remainder is sent::

    downtime   = V_{n+1} / B_stop + resume
    total time = sum_{i=0}^{n} V_i / B + downtime
               = (M/B) (1 - r^{n+1}) / (1 - r) + downtime      (r = D/B, constant, unbounded W)
    bytes sent = sum_{i=0}^{n+1} V_i

``B`` and ``D`` may differ by round (arrays with a last axis of rounds; the last column holds for
later rounds), which covers Xen's rate-adaptive pre-copy (a low first-round rate, raised each
round) and a dirty rate read from a trace. Everything is vectorised over migrations: the only loop
is over rounds (at most ``max_rounds``).

**Zero pages** (issue 30). A share ``z`` of the memory that the guest never touched is zero; QEMU
checks every page of round 0 (``migration/ram.c``: ``ram_save_page`` -> ``save_zero_page`` ->
``is_zero_range(p, TARGET_PAGE_SIZE)``, i.e. ``buffer_is_zero`` of ``util/cutils.c``, QEMU 2.x) and sends a
zero page as its 8-byte header (offset | ``RAM_SAVE_FLAG_COMPRESS``/``ZERO``) plus one byte, not 4 KiB.
The check of a non-zero page stops at its first non-zero word (cheap); a zero page is read to its end,
at the read rate ``S`` of the one migration thread. That thread also writes the stream (``qemu_put_*``
into the ``QEMUFile`` buffer, flushed to the socket by the same thread), so reading zero pages and
sending the rest do not overlap (beyond the socket's buffer): round 0 takes the *sum*::

    t_0 = (1 - z) M / B  +  z M (9 / 4096) / B  +  z M / S
    V_0 = (1 - z) M + z M 9/4096   (bytes on the wire)

Later rounds send dirtied (so non-zero) pages as before. ``z = 0`` (the default) is the plain
recurrence above, bit for bit; ``S`` <= 0 or inf: no scan term.

Sources: C. Clark et al., "Live Migration of Virtual Machines", NSDI 2005 (pre-copy, writable
working set, stop conditions); T. Hirofuchi, A. Lebre, L. Pouilloux, "Adding a Live Migration
Model into SimGrid", CloudCom 2013 and "SimGrid VM", IEEE TCC 2015 (the same round recurrence
with the dirty rate as the workload's "memory update intensity"); QEMU's default downtime limit
is 300 ms (``downtime-limit``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from densim._jit import njit

DEFAULT_DOWNTIME_TARGET_S = 0.3  # QEMU's default downtime-limit (300 ms)
DEFAULT_MAX_ROUNDS = 30  # estimate: Xen's pre-copy gives up after about 30 iterations
PAGE_BYTES = 4096.0
ZERO_PAGE_WIRE_BYTES = 9.0  # QEMU save_page_header (8-byte be64 offset|flags) + qemu_put_byte(f, 0)


@njit(inline="always")
def first_round(mem, zero, b, scan):
    """Round 0 with a zero share ``zero`` of ``mem`` (module docstring): ``(non-zero bytes to send,
    time, bytes on the wire)``; ``scan`` <= 0 or inf: reading zero pages costs nothing."""
    nz = (1.0 - zero) * mem
    wire_zero = zero * mem * (ZERO_PAGE_WIRE_BYTES / PAGE_BYTES)
    t = (nz + wire_zero) / b
    if scan > 0.0 and zero > 0.0:
        t += zero * mem / scan
    return nz, t, nz + wire_zero


@dataclass(frozen=True)
class Precopy:
    """Per migration (arrays of the broadcast input shape)."""

    total_s: np.ndarray  # from the start of round 0 to the VM running on the destination
    downtime_s: np.ndarray  # stop-and-copy of the remainder + resume
    bytes_sent: np.ndarray  # every round's bytes, the stop-and-copy included
    rounds: np.ndarray  # live pre-copy rounds (round 0, the full copy, counts)
    converged: np.ndarray  # the remainder fitted the downtime target (not stopped by a limit)
    live_s: np.ndarray  # time the VM ran while being copied (total - downtime)


@njit(inline="always")
def precopy_one(mem, bw_r, dr_r, cap, target, resume, stop_bw, max_rounds, zero, scan):
    """One migration (scalars; ``bw_r``/``dr_r`` per round, the last entry holding for later rounds;
    ``stop_bw`` <= 0: the last round's bandwidth; ``zero``: zero share of ``mem``, ``scan``: its read
    rate, see :func:`first_round`). Returns ``(total_s, downtime_s, bytes_sent, rounds, converged,
    live_s)``: the module docstring's recurrence, one round at a time."""
    v = mem
    total = 0.0
    sent = 0.0
    rounds = 0
    converged = False
    nb = bw_r.size
    nd = dr_r.size
    last_bw = bw_r[0]
    for i in range(max_rounds):
        b = bw_r[min(i, nb - 1)]
        if i == 0:
            v, t, wire = first_round(mem, zero, b, scan)
        else:
            t = v / b
            wire = v
        total += t
        sent += wire
        rounds += 1
        last_bw = b
        nxt = min(dr_r[min(i, nd - 1)] * t, cap)
        fits = nxt / bw_r[min(i + 1, nb - 1)] <= target
        stuck = nxt >= v  # no progress: the VM dirties as fast as the link sends
        converged = converged or fits
        v = nxt
        if fits or stuck:
            break
    down = v / (last_bw if stop_bw <= 0.0 else stop_bw) + resume
    return total + down, down, sent + v, rounds, converged, total


@njit
def _precopy_all(mem, bw, dr, cap, target, resume, stop_bw, max_rounds, zero, scan, total, down, sent, rounds,
                 converged, live):
    for k in range(mem.size):
        total[k], down[k], sent[k], rounds[k], converged[k], live[k] = precopy_one(
            mem[k], bw[k], dr[k], cap[k], target[k], resume[k], stop_bw[k], max_rounds, zero[k], scan[k])


def precopy(memory_bytes, bandwidth_bps, dirty_rate_bps=0.0, *, wws_bytes=None,
            max_rounds: int = DEFAULT_MAX_ROUNDS, downtime_target_s=DEFAULT_DOWNTIME_TARGET_S,
            resume_s=0.0, stop_bandwidth_bps=None, per_round: bool = False, zero_fraction=0.0,
            zero_scan_bps=0.0) -> Precopy:
    """Pre-copy migrations, vectorised: see the module docstring for the recurrence.

    ``memory_bytes``, ``wws_bytes``, ``downtime_target_s``, ``resume_s`` and ``stop_bandwidth_bps``
    broadcast over migrations; so do ``bandwidth_bps`` and ``dirty_rate_bps``, which with
    ``per_round=True`` carry one more (last) axis of rounds (size 1: the same every round; the last
    column holds for later rounds). ``wws_bytes`` None: no working-set bound (only ``M``). The stop-and-copy
    runs at ``stop_bandwidth_bps`` (default: the last round's bandwidth). ``zero_fraction`` (share of
    ``M`` never touched, so zero) and ``zero_scan_bps`` (one thread's read rate of them; 0: free)
    broadcast too: round 0 of the module docstring. One migration is
    :func:`precopy_one` (the engine's event loop calls it for the migrations it schedules).
    """
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be >= 1, got {max_rounds}")
    mem = np.asarray(memory_bytes, dtype=np.float64)
    bw = np.asarray(bandwidth_bps, dtype=np.float64)
    dirty = np.asarray(dirty_rate_bps, dtype=np.float64)
    bw_r = np.atleast_1d(bw) if per_round else bw[..., None]  # a scalar is one column: every round
    dr_r = np.atleast_1d(dirty) if per_round else dirty[..., None]
    shape = np.broadcast_shapes(mem.shape, bw_r.shape[:-1], dr_r.shape[:-1])
    if np.any(bw_r <= 0):
        raise ValueError("migration bandwidth must be > 0")
    if np.any(dr_r < 0) or np.any(mem < 0):
        raise ValueError("memory and dirty rate must be >= 0")
    if stop_bandwidth_bps is not None and np.any(np.asarray(stop_bandwidth_bps) <= 0):
        raise ValueError("stop-and-copy bandwidth must be > 0")
    _check_zero(zero_fraction, zero_scan_bps)
    flat = lambda a: np.ascontiguousarray(np.broadcast_to(np.asarray(a, dtype=np.float64), shape)).ravel()  # noqa: E731
    rows = lambda a: np.ascontiguousarray(np.broadcast_to(a, (*shape, a.shape[-1]))).reshape(-1, a.shape[-1])  # noqa: E731
    m = flat(mem)
    cap = m.copy() if wws_bytes is None else np.minimum(m, flat(wws_bytes))
    n = m.size
    out = [np.empty(n) for _ in range(3)]
    rounds = np.empty(n, dtype=np.int64)
    converged = np.empty(n, dtype=np.bool_)
    live = np.empty(n)
    _precopy_all(m, rows(bw_r), rows(dr_r), cap, flat(downtime_target_s), flat(resume_s),
                 flat(0.0 if stop_bandwidth_bps is None else stop_bandwidth_bps), int(max_rounds),
                 flat(zero_fraction), flat(zero_scan_bps), out[0], out[1], out[2], rounds, converged, live)
    r = lambda a: a.reshape(shape)  # noqa: E731
    return Precopy(total_s=r(out[0]), downtime_s=r(out[1]), bytes_sent=r(out[2]), rounds=r(rounds),
                   converged=r(converged), live_s=r(live))


def _check_zero(zero_fraction, zero_scan_bps) -> None:
    z = np.asarray(zero_fraction, dtype=np.float64)
    if np.any(~np.isfinite(z)) or np.any(z < 0) or np.any(z > 1):
        raise ValueError("zero_fraction must be within [0, 1]")
    if np.any(np.isnan(np.asarray(zero_scan_bps, dtype=np.float64))) or np.any(np.asarray(zero_scan_bps) < 0):
        raise ValueError("zero_scan_bps must be >= 0 (0: reading zero pages is free)")


def geometric_total_s(memory_bytes: float, bandwidth_bps: float, dirty_rate_bps: float, rounds: int) -> float:
    """Closed form of the live rounds' time for a constant dirty rate and no working-set bound:
    ``sum_{i=0}^{rounds-1} (M/B) r^i = (M/B)(1 - r^rounds)/(1 - r)``, ``r = D/B`` (``rounds x M/B`` at r = 1)."""
    r = dirty_rate_bps / bandwidth_bps
    base = memory_bytes / bandwidth_bps
    return base * rounds if r == 1.0 else base * (1.0 - r**rounds) / (1.0 - r)


# ---------------------------------------------------------------------------------------------
# The hypervisor's stop rule (issue 30 item 6). ``precopy`` above is QEMU's rule (downtime target,
# round limit, no-progress); ``precopy_rule`` lets each source be modelled with its own hypervisor's.


@dataclass(frozen=True)
class StopRule:
    """When pre-copy stops iterating and stops the VM (every test is checked after each live round).

    * ``downtime_target_s``: stop when the remainder fits ``V/B <= target`` (QEMU ``downtime-limit``;
      0: no such test);
    * ``min_remaining_bytes``: stop when fewer bytes than this were dirtied (Xen: 50 pages);
    * ``max_factor``: stop when more than ``max_factor x M`` has been sent (Xen: 3; inf: none);
    * ``max_rounds``: live rounds at most (round 0, the full copy, counts);
    * ``stop_when_stuck``: stop when a round sends no less than the one before (Xen: "sent this
      iteration > sent last iteration" at the maximum rate; QEMU and the module docstring likewise);
    * ``throttle_to``: vMotion's Stun During Page Send: when a round makes no progress the VM is
      slowed so it dirties at most ``throttle_to x B`` (0: no throttling);
    * ``test_on_sent``: Xen's tests look at the round just *sent* (``V_n < 50`` pages; ``V_n > V_{n-1}``),
      then one last stop-and-copy sends ``V_{n+1}``; QEMU's (False) look at the remainder ``V_{n+1}``
      (fits the target; ``V_{n+1} >= V_n``).
    """

    name: str
    downtime_target_s: float = 0.0
    min_remaining_bytes: float = 0.0
    max_factor: float = float("inf")
    max_rounds: int = DEFAULT_MAX_ROUNDS
    stop_when_stuck: bool = True
    throttle_to: float = 0.0
    test_on_sent: bool = False
    source: str = ""


STOP_RULES: dict[str, StopRule] = {
    # QEMU: stop when the remainder fits downtime-limit (default 300 ms); the engine's defaults
    "qemu": StopRule("qemu", downtime_target_s=DEFAULT_DOWNTIME_TARGET_S, max_rounds=DEFAULT_MAX_ROUNDS,
                     source="QEMU migration parameter downtime-limit, default 300 ms; max_rounds 30 (E)"),
    # Xen 3.x xc_linux_save.c: last iteration when (sent this round > sent last round at the maximum
    # rate) or iter >= DEF_MAX_ITERS (29: "limit us to 30 times round loop") or fewer than 50 pages
    # were sent + skipped or total sent > DEF_MAX_FACTOR (3) x the domain's pages
    "xen-2005": StopRule("xen-2005", min_remaining_bytes=50 * PAGE_BYTES, max_factor=3.0, max_rounds=30, test_on_sent=True,
                         source="Xen tools/libxc/xc_linux_save.c (Xen 3.x): DEF_MAX_ITERS 29, DEF_MAX_FACTOR 3, < 50 pages"),
    # vSphere 5 vMotion: switch-over when the remainder can be sent in well under a second; SDPS
    # slows the vCPUs of a VM that dirties faster than the link sends (R: vMotion Architecture,
    # Performance and Best Practices in VMware vSphere 5, 2011, "Stun During Page Send")
    "vmotion-5": StopRule("vmotion-5", downtime_target_s=1.0, max_rounds=DEFAULT_MAX_ROUNDS, stop_when_stuck=False,
                          throttle_to=0.5,
                          source="(R) VMware vSphere 5 vMotion white paper (2011): switch-over < 1 s, SDPS; "
                                 "throttle_to 0.5 (E)"),
}


@njit
def _precopy_rule_one(mem, b, d, cap, target, min_left, max_factor, max_rounds, stuck_stops, throttle, on_sent, zero,
                      scan):
    """One migration under a :class:`StopRule` (constant bandwidth ``b`` and dirty rate ``d``; round 0 with the
    zero share ``zero`` read at ``scan``, :func:`first_round`). Returns ``(live_s, remainder_bytes, bytes_sent,
    rounds, converged)``."""
    v = mem
    prev = np.inf
    total = 0.0
    sent = 0.0
    rounds = 0
    converged = False
    for i in range(max_rounds):
        if i == 0:
            v, t, wire = first_round(mem, zero, b, scan)
        else:
            t = v / b
            wire = v
        total += t
        sent += wire
        rounds += 1
        nxt = min(d * t, cap)
        stuck = nxt >= v
        if stuck and throttle > 0.0:
            d = min(d, throttle * b)  # SDPS: the VM is slowed to what the link can follow
            nxt = min(d * t, cap)
            stuck = nxt >= v
        if on_sent:  # Xen: the round just sent was small / larger than the one before
            small = v < min_left
            stuck = v > prev
        else:
            small = nxt < min_left
        fits = target > 0.0 and nxt / b <= target
        converged = converged or fits or small
        prev = v
        v = nxt
        if fits or small or (stuck and stuck_stops) or sent > max_factor * mem:
            break
    return total, v, sent + v, rounds, converged


def precopy_rule(memory_bytes: float, bandwidth_bps: float, dirty_rate_bps: float, rule: StopRule | str, *,
                 wws_bytes: float | None = None, resume_s: float = 0.0, zero_fraction: float = 0.0,
                 zero_scan_bps: float = 0.0) -> dict[str, float]:
    """One pre-copy migration under the hypervisor's own stop rule (:data:`STOP_RULES` or a
    :class:`StopRule`): the recurrence of the module docstring, stopped by ``rule``.

    ``downtime = remainder / B + resume``; ``total = live rounds + downtime``; ``zero_fraction`` and
    ``zero_scan_bps`` as in :func:`precopy` (round 0 skips zero pages). With the ``qemu``
    rule and constant rates this is :func:`precopy` (same rounds, same numbers).
    """
    if isinstance(rule, str) and rule not in STOP_RULES:
        raise ValueError(f"unknown pre-copy stop rule {rule!r}; known: {', '.join(STOP_RULES)}")
    r = STOP_RULES[rule] if isinstance(rule, str) else rule
    if bandwidth_bps <= 0:
        raise ValueError("migration bandwidth must be > 0")
    if dirty_rate_bps < 0 or memory_bytes < 0:
        raise ValueError("memory and dirty rate must be >= 0")
    if r.max_rounds < 1:
        raise ValueError(f"stop rule {r.name!r}: max_rounds must be >= 1")
    _check_zero(zero_fraction, zero_scan_bps)
    cap = float(memory_bytes) if wws_bytes is None else min(float(memory_bytes), float(wws_bytes))
    live, rem, sent, rounds, conv = _precopy_rule_one(
        float(memory_bytes), float(bandwidth_bps), float(dirty_rate_bps), cap, float(r.downtime_target_s),
        float(r.min_remaining_bytes), float(r.max_factor), int(r.max_rounds), bool(r.stop_when_stuck), float(r.throttle_to),
        bool(r.test_on_sent), float(zero_fraction), float(zero_scan_bps))
    down = rem / bandwidth_bps + resume_s
    return {"total_s": live + down, "downtime_s": down, "live_s": live, "bytes_sent": sent, "rounds": int(rounds),
            "converged": bool(conv)}
