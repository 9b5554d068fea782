"""The window state: what the placement timeline says about one window of steps, read by every stage.

The engine takes a run in windows ``[t0, t1)`` (:class:`densim.engine.run.Chunk`). Within a window each
row (a VM, or one run of a VM on one host: an *instance*, see :mod:`densim.engine.failures`) has one
host, and what changes from step to step is who is alive and which hosts are up. A stage reads those
here, for the window it is given, instead of re-deriving them from ``ctx.schedule`` or asking the
failures record itself: one definition of "alive" and "up" for every stage, the CPU kernel and the
summaries (the same :class:`densim.engine.lifetimes.Liveness` and
:class:`densim.engine.failures.FailureRun` underneath).

Shapes: per-row arrays are (steps, rows), per-host ones (steps, hosts); ``steps`` = ``t1 - t0``.
Everything is computed on first use and kept for the window (a window's state is read by several
stages).

Hand-checkable: with a step of 300 s, a row alive on ``[450, 900)`` has alive shares
``[0, 0.5, 1, 0]`` over steps ``[0,300), [300,600), [600,900), [900,1200)``; a host down on
``[0, 150)`` is up ``[0.5, 1, 1, 1]``.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np


def host_loads(ctx) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per host: vCPUs, VMs and configured memory placed on it, and whether it draws power."""
    vms, H = ctx.vms, ctx.hosts.n
    placed = vms.host >= 0
    vcpus_per_host = np.bincount(vms.host[placed], weights=vms.vcpus[placed], minlength=H).astype(np.float64)
    vms_per_host = np.bincount(vms.host[placed], minlength=H)
    mem_per_host = np.bincount(vms.host[placed], weights=vms.mem_bytes[placed], minlength=H)
    host_on = (vms_per_host > 0) | (ctx.scenario.cluster.unused_hosts == "idle")
    return vcpus_per_host, vms_per_host, mem_per_host, host_on


class WindowState:
    """The placement timeline over the window ``[t0, t1)`` of ``ctx``'s grid (see the module docstring).

    * :attr:`host` -- (rows,) host of each row (-1: placed nowhere), constant within the window;
    * :meth:`alive` -- (steps, rows) float32: the share of each step each row is alive (ones when every
      row lives the whole run); :meth:`alive_mask` -- alive at some time in the step;
    * :attr:`dynamic` -- whether rows arrive and leave (``ctx.liveness`` is set);
    * :attr:`host_up` -- (steps, hosts) float64: the share of each step each host is up (ones without
      failures); :attr:`host_down` -- its complement;
    * :meth:`per_host` -- (steps, hosts) sum over the rows alive on each host of a per-row weight times
      the row's alive share (vCPUs alive, configured memory alive, rows alive: :attr:`vcpus_alive`,
      :attr:`mem_alive_bytes`, :attr:`rows_alive`).
    """

    def __init__(self, ctx, t0: int, t1: int) -> None:
        self.ctx, self.t0, self.t1 = ctx, int(t0), int(t1)
        self.n_steps = self.t1 - self.t0
        self._power_on: np.ndarray | None = None

    @property
    def power_on(self) -> np.ndarray:
        """(steps, hosts) bool: the hosts drawing power in each step, as the CPU step powers them. Set by the
        engine from :meth:`densim.engine.lifetimes.Liveness.chunk` when rows arrive and leave (a host with no row
        alive is off after ``off_after`` under ``unused_hosts: off``; a host down for half a step or more is
        off); else every host that holds a row, or every host under ``unused_hosts: idle``."""
        if self._power_on is None:
            H = self.ctx.hosts.n
            self._power_on = np.broadcast_to(host_loads(self.ctx)[3].astype(bool), (self.n_steps, H))
        return self._power_on

    def set_power_on(self, on: np.ndarray) -> None:
        """The engine's power mask for this window ((steps, hosts) or a broadcast of one row)."""
        self._power_on = np.broadcast_to(np.asarray(on, dtype=bool), (self.n_steps, self.ctx.hosts.n))

    @cached_property
    def edges(self) -> np.ndarray:
        """(steps + 1,) the window's step edges, seconds on the trace clock."""
        return self.ctx.grid.edges_s(self.t0, self.t1)

    @property
    def host(self) -> np.ndarray:
        """(rows,) the host of each row in this window (-1: placed nowhere)."""
        return self.ctx.vms.host

    @property
    def dynamic(self) -> bool:
        """True when rows arrive and leave (lifetimes, failures' instances, maintenance landings)."""
        return getattr(self.ctx, "liveness", None) is not None

    @cached_property
    def _alive_all(self) -> np.ndarray:
        return self.ctx.liveness.alive(self.edges)

    def alive(self, ids: np.ndarray | None = None) -> np.ndarray:
        """(steps, rows) float32 share of each step each row (or each of ``ids``) is alive."""
        if not self.dynamic:
            n = self.ctx.vms.n if ids is None else len(ids)
            return np.ones((self.n_steps, n), dtype=np.float32)
        if ids is None:
            return self._alive_all
        if "_alive_all" in self.__dict__:  # already computed for every row: a column gather
            return self._alive_all[:, ids]
        return self.ctx.liveness.alive(self.edges, ids)

    def alive_mask(self, ids: np.ndarray | None = None) -> np.ndarray:
        """(steps, rows) bool: the row is alive at some time in the step (it holds its memory, its host)."""
        return self.alive(ids) > 0

    @cached_property
    def host_down(self) -> np.ndarray:
        """(steps, hosts) float64: the share of each step each host is down (failures)."""
        fr = getattr(self.ctx, "failures", None)
        H = self.ctx.hosts.n
        if fr is None:
            return np.zeros((self.n_steps, H))
        return fr.host_down_share(self.edges, H)

    @cached_property
    def host_up(self) -> np.ndarray:
        """(steps, hosts) float64: the share of each step each host is up."""
        return 1.0 - self.host_down

    def per_host(self, weights: np.ndarray) -> np.ndarray:
        """(steps, hosts) float64: sum over the rows on each host of ``weights`` (rows,) x alive share."""
        H = self.ctx.hosts.n
        host = np.asarray(self.host)
        on = np.flatnonzero(host >= 0)
        w = np.asarray(weights, dtype=np.float64)[on]
        if not self.dynamic:
            row = np.bincount(host[on], weights=w, minlength=H)
            return np.broadcast_to(row, (self.n_steps, H)).copy()
        a = self.alive(on).astype(np.float64) * w[None, :]
        out = np.zeros((self.n_steps, H))
        np.add.at(out.T, host[on], a.T)
        return out

    @cached_property
    def rows_alive(self) -> np.ndarray:
        """(steps, hosts) rows alive on each host (alive shares summed)."""
        return self.per_host(np.ones(self.ctx.vms.n))

    @cached_property
    def vcpus_alive(self) -> np.ndarray:
        """(steps, hosts) vCPUs alive on each host."""
        return self.per_host(self.ctx.vms.vcpus)

    @cached_property
    def mem_alive_bytes(self) -> np.ndarray:
        """(steps, hosts) configured memory (bytes) of the rows alive on each host."""
        return self.per_host(self.ctx.vms.mem_bytes)
