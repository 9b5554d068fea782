"""Drive and controller failures inside the storage stage: degraded arrays, rebuilds, lost datastores.

The failure events (:mod:`densim.workloads.failures`, targets ``datastore:<name>/drive:<i>`` and
``datastore:<name>/controller:<i>``) are fixed before the run; what they do to a datastore depends on
its foreground I/O, so the storage stage walks them chunk by chunk with :class:`StorageFaults`:

* a drive is *down* from its failure until it is replaced (the event's duration), then *rebuilding*
  until the array has written its whole capacity to it (the model does not know how full the array
  is, so a rebuild writes the drive's capacity). A step in which some drive is down or rebuilding for
  any part of it is a *degraded* step (:func:`densim.models.storage.vmio.degraded_latency_s`).
* the rebuild runs at ``r(t) = r0 (1 - u(t))`` bytes/s: ``r0`` is ``failures.rebuild.rate`` or
  ``share x`` the drive's sequential write rate, ``u(t)`` the survivors' utilisation by foreground I/O
  in the step (degraded array). So with no foreground I/O it takes ``capacity / r0``, and longer under
  load. While it runs it takes ``r(t) / seq_read`` of every survivor's time, which the foreground
  loses (its drives' service rate x ``1 - r(t)/seq_read``): latency rises until the rebuild ends.
* an array that loses more drives than its redundancy (RAID 0/JBOD: one; RAID 5: two at once; RAID 6:
  three; RAID 1/10: both drives of a mirror pair; a drive rebuilding counts as down) has *lost its
  data*: the datastore is down from then to the end of the run (restoring from a backup is not
  modelled). A datastore whose controllers are all down is down until one is repaired. VMs' I/O on a
  down datastore is not served: it is reported (``io_down``), not queued.
* a controller down: the survivors carry every I/O (a redundant pair: half the I/O processor and PCIe
  capacity), for the steps it is down at least half of.

The drive walk is a numba kernel over the steps of one array (a loop over the arrays that have
failures, never over VMs or hosts).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from densim.errors import InputError

LOST_NEVER = np.inf


@njit(cache=True)
def _walk(lo, hi, u, ev_start, ev_end, ev_drive, ptr, state, repl_at, left, cur_ev, lost_at, rb_start, rb_end,
          mirror, parity, cap_bytes, rate0):  # pragma: no cover - compiled
    """One array over steps ``[lo, hi)``; mutates the per-drive state (0 up, 1 down, 2 rebuilding).

    Returns (drives down or rebuilding in each step, share of each step a rebuild ran, its mean rate
    factor 1 - u, next event, lost-at time)."""
    T = lo.size
    nd = state.size
    nbad = np.zeros(T, np.int64)
    rb = np.zeros(T)
    for t in range(T):
        if lost_at < hi[t]:
            nbad[t] = -1
            continue
        while ptr < ev_start.size and ev_start[ptr] < hi[t]:
            d = ev_drive[ptr]
            state[d] = 1
            repl_at[d] = ev_end[ptr]
            cur_ev[d] = ptr
            left[d] = cap_bytes
            # data lost?
            lost = False
            if mirror:
                for k in range(nd):
                    if k != d and state[k] != 0 and k // 2 == d // 2:
                        lost = True
            else:
                cnt = 0
                for k in range(nd):
                    if state[k] != 0:
                        cnt += 1
                lost = cnt > parity
            ptr += 1
            if lost:
                lost_at = max(ev_start[ptr - 1], lo[t])
                break
        if lost_at < hi[t]:
            nbad[t] = -1
            continue
        bad = 0
        for k in range(nd):
            if state[k] != 0:
                bad += 1
        nbad[t] = bad
        dt = hi[t] - lo[t]
        rate = rate0 * max(1.0 - u[t], 0.0)
        for k in range(nd):
            if state[k] == 1 and repl_at[k] < hi[t]:
                state[k] = 2
                rb_start[cur_ev[k]] = repl_at[k]
            if state[k] == 2:
                t_from = max(lo[t], repl_at[k])
                avail = hi[t] - t_from
                prog = rate * avail
                if prog >= left[k]:
                    t_end = t_from + left[k] / rate
                    rb[t] += (t_end - t_from) / dt
                    rb_end[cur_ev[k]] = t_end
                    left[k] = 0.0
                    state[k] = 0
                else:
                    left[k] -= prog
                    rb[t] += avail / dt
    return nbad, rb, ptr, lost_at


class ArrayFaults:
    """The failure state of one array (a storage-stage slot) carried across chunks."""

    def __init__(self, slot: int, name: str, model, device, drive_ev, ctl_ev, rebuild, where: str) -> None:
        from densim.errors import PartError
        from densim.models.storage.vmio import RAID_PARITY

        self.slot, self.name, self.model = slot, name, model
        n = model.drives
        self.ev_start, self.ev_end, self.ev_drive = drive_ev
        self.ctl_start, self.ctl_end = ctl_ev
        if self.ev_start.size:
            try:
                self.cap = device.capacity("rebuild model")
                self.seq_read = device.seq_bps(False, "rebuild model")
                self.rate0 = float(rebuild.rate_Bps) if rebuild.rate_Bps is not None else \
                    rebuild.share * device.seq_bps(True, "rebuild model")
            except PartError as e:
                raise InputError(where, f"storage.datastores[{name}].device", str(e)) from None
        else:
            self.cap = self.seq_read = self.rate0 = 1.0
        self.mirror = model.raid in ("raid1", "raid10")
        self.parity = RAID_PARITY[model.raid]
        self.ptr = 0
        self.state = np.zeros(n, np.int64)
        self.repl_at = np.zeros(n)
        self.left = np.zeros(n)
        self.cur_ev = np.zeros(n, np.int64)
        self.lost_at = LOST_NEVER
        self.rb_start = np.full(self.ev_start.size, np.nan)
        self.rb_end = np.full(self.ev_start.size, np.nan)

    def step_states(self, edges: np.ndarray, u: np.ndarray):
        """(drives down or rebuilding, or -1 when the data is lost; rebuild share of the step; controllers
        down) per step of the chunk with edges ``edges``; ``u``: the survivors' foreground utilisation."""
        lo, hi = edges[:-1], edges[1:]
        if self.ev_start.size:
            nbad, rb, self.ptr, self.lost_at = _walk(lo, hi, np.asarray(u, np.float64), self.ev_start, self.ev_end,
                                                     self.ev_drive, self.ptr, self.state, self.repl_at, self.left,
                                                     self.cur_ev, self.lost_at, self.rb_start, self.rb_end, self.mirror,
                                                     self.parity, self.cap, self.rate0)
        else:
            nbad, rb = np.zeros(lo.size, np.int64), np.zeros(lo.size)
        nctl = np.zeros(lo.size, np.int64)
        if self.ctl_start.size:
            from densim.workloads.tasks import alive_fraction

            nctl = (alive_fraction(self.ctl_start, self.ctl_end, edges) >= 0.5).sum(axis=1).astype(np.int64)
        return nbad, rb, nctl

    def rebuilds(self, until: float) -> tuple[np.ndarray, int]:
        """(durations of the rebuilds that finished (s), rebuilds started but unfinished by ``until``)."""
        done = ~np.isnan(self.rb_end)
        started = ~np.isnan(self.rb_start) & (self.rb_start < until)
        return (self.rb_end - self.rb_start)[done], int(np.count_nonzero(started & ~done))


def array_faults(ctx, slot_ds, slot_host, slot_names, models, devices) -> list[ArrayFaults]:
    """One :class:`ArrayFaults` per storage-stage slot with a drive or controller failure (none without ``failures``)."""
    fr = getattr(ctx, "failures", None)
    if fr is None or fr.events.storage is None:
        return []
    ev, parts = fr.events, fr.events.storage
    sel = np.flatnonzero(ev.target >= ev.first_storage)
    if sel.size == 0:
        return []
    p = ev.target[sel] - ev.first_storage
    start = ev.time_s[sel] + fr.t0
    end = start + ev.duration_s[sel]
    key_ds, key_host = parts.ds[p], parts.host[p]
    out = []
    for k in range(len(slot_names)):
        on = (key_ds == slot_ds[k]) & (key_host == slot_host[k])
        if not on.any():
            continue
        drv = on & (parts.kind[p] == 0)
        ctl = on & (parts.kind[p] == 1)
        o = np.argsort(start[drv], kind="stable")
        out.append(ArrayFaults(k, slot_names[k], models[slot_ds[k]], devices[slot_ds[k]],
                               (start[drv][o], end[drv][o], parts.index[p][drv][o].astype(np.int64)),
                               (start[ctl], end[ctl]), ctx.scenario.failures.rebuild, ctx.scenario.name))
    return out
