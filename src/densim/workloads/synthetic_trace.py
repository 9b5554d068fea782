"""Synthetic CPU traces of any size, generated block by block from a seed.

For out-of-core runs (e.g. 1,000,000 VMs x 2,016 five-minute steps = 2 billion VM-steps, 8 GB as
float32) nothing is stored: any block ``[t0, t1) x [v0, v1)`` is computed on demand from
counter-based hashes of (seed, VM) and (seed, VM, step). The values therefore do not depend on
how the run is chunked, in time or in VMs, and two runs with the same seed see the same trace.

Shape of the demand, per VM ``v`` at step ``t`` (a fraction of the VM's vCPU capacity)::

    u(v, t) = clip( m_v * (1 + a_v * cos(2 pi (t * step - phi_v) / day)) + s_v * e(v, t), 0, 1 )

* ``m_v`` (mean utilisation) = ``m_lo + (m_hi - m_lo) * U^k`` with ``U`` uniform per VM: most
  VMs are lightly loaded with a long tail of busy ones (``k = 3``: median 0.02 + 0.48 x 0.125 =
  0.08, mean 0.02 + 0.48 / 4 = 0.14), the shape of PlanetLab's per-VM means (median about 0.1;
  Beloglazov & Buyya, CCPE 2012, workload table);
* ``a_v`` (relative diurnal amplitude) uniform in [0, ``amp``]; ``phi_v`` the time of the daily
  peak, uniform over [``peak_lo``, ``peak_hi``] hours;
* ``e(v, t)`` triangular noise on [-1, 1] (the mean of two uniforms from one 64-bit hash) with
  scale ``s_v = noise * m_v`` (busier VMs fluctuate more in absolute terms).

Expected mean utilisation before clipping: E[m] = m_lo + (m_hi - m_lo) / (k + 1) (the diurnal
term and the noise have zero mean over a whole day); tests check it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from densim._jit import njit, prange
from densim.workloads.sources import DemandSource, VmSizes
from densim.workloads.timegrid import TimeGrid

_GOLD = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
DAY_S = 86400.0


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, in place on a uint64 array (Steele, Lea & Flood, OOPSLA 2014)."""
    with np.errstate(over="ignore"):
        x ^= x >> np.uint64(30)
        x *= _M1
        x ^= x >> np.uint64(27)
        x *= _M2
        x ^= x >> np.uint64(31)
    return x


# fdlibm's kernel polynomials for sin and cos on [-pi/4, pi/4] (Sun Microsystems, k_sin.c / k_cos.c),
# and its two-part pi/2 for the argument reduction (e_rem_pio2.c)
_S1, _S2, _S3 = -1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04
_S4, _S5, _S6 = 2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10
_C1, _C2, _C3 = 4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05
_C4, _C5, _C6 = -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11
_PIO2_1, _PIO2_1T, _INVPIO2 = 1.57079632673412561417e+00, 6.07710050650619224932e-11, 6.36619772367581382433e-01
COS_MARGIN = 2e-15  # > |fast cos - libm cos|: measured 2.2e-16 at most over 7e7 arguments


@njit
def cos_f32(x, out):
    """``out[i] = float32(cos(x[i]))``, equal to rounding the C library's ``cos`` (as numpy's is here).

    A branch-free polynomial evaluation (vectorised by the compiler, about 2 ns a value against
    13.5 ns for ``cos``) gives ``c`` within 3e-16 of ``cos(x)`` for ``|x| < 1e6``; when rounding
    ``c - COS_MARGIN``, ``c`` and ``c + COS_MARGIN`` to float32 gives the same value, no float32
    rounding boundary lies near ``c`` and that value is the rounding of the library's ``cos`` too.
    The few others (about 1 in 3 million) take the library's ``cos``.
    """
    bad = 0
    for i in range(x.size):
        xi = x[i]
        k = math.floor(xi * _INVPIO2 + 0.5)
        r = (xi - k * _PIO2_1) - k * _PIO2_1T
        z = r * r
        q = int(k) & 3
        cc = 1.0 - 0.5 * z + z * z * (_C1 + z * (_C2 + z * (_C3 + z * (_C4 + z * (_C5 + z * _C6)))))
        ss = r + r * z * (_S1 + z * (_S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * _S6)))))
        c = cc if (q & 1) == 0 else ss
        c = -c if (q == 1 or q == 2) else c
        w = np.float32(c)
        ok = (np.float32(c + COS_MARGIN) == w) & (np.float32(c - COS_MARGIN) == w) & (abs(xi) < 1e6)
        out[i] = w if ok else np.float32(np.nan)
        bad += 0 if ok else 1
    if bad:
        for i in range(x.size):
            if out[i] != out[i]:
                out[i] = np.float32(math.cos(x[i]))


@njit(parallel=True)
def _fill(out, t0, n_steps, ids, key, mean, amp, phase_s, scale, start_s, step_s, cap, scaled):
    """Fill ``out`` (steps, VMs) with the utilisation of VMs ``ids`` at steps ``t0 + [0, steps)``
    (times ``cap`` when ``scaled``), element by element as :meth:`SyntheticTrace.utilisation_numpy`
    computes it with numpy arrays, in the same precision and order (tests compare them bit for bit)."""
    n, nv = out.shape
    two_pi = 2.0 * np.pi
    one = np.float32(1.0)
    inv24 = np.float32(1.0 / (1 << 24))
    mask = np.uint64(0xFFFFFF)
    gold = np.uint64(0x9E3779B97F4A7C15)
    m1 = np.uint64(0xBF58476D1CE4E5B9)
    m2 = np.uint64(0x94D049BB133111EB)
    ns = np.uint64(n_steps)
    for i in prange(n):
        t = t0 + i
        t_s = start_s + step_s * np.float64(t)
        tu = np.uint64(t)
        arg = np.empty(nv)
        wave = np.empty(nv, dtype=np.float32)
        for j in range(nv):
            arg[j] = two_pi * (t_s - phase_s[j]) / 86400.0
        cos_f32(arg, wave)
        for j in range(nv):
            u = mean[j] * (one + amp[j] * wave[j])
            x = (ids[j] * ns + tu) * gold
            x ^= key
            x ^= x >> np.uint64(30)
            x *= m1
            x ^= x >> np.uint64(27)
            x *= m2
            x ^= x >> np.uint64(31)
            e = np.float32(x & mask) * inv24
            e += np.float32((x >> np.uint64(32)) & mask) * inv24
            e -= one
            e *= scale[j]
            u += e
            u = min(max(u, np.float32(0.0)), one)
            out[i, j] = u * cap if scaled else u


def _unit(x: np.ndarray, shift: int) -> np.ndarray:
    """A float32 uniform in [0, 1) from 24 bits of ``x`` starting at bit ``shift``."""
    return ((x >> np.uint64(shift)) & np.uint64(0xFFFFFF)).astype(np.float32) * np.float32(1.0 / (1 << 24))


@dataclass(frozen=True)
class SyntheticTraceSpec:
    n_vms: int
    n_steps: int
    step_s: float = 300.0
    seed: int = 0
    vcpus: int = 2
    vcpu_mhz: float = 1000.0
    mem_bytes: float = 2 * 1024**3
    m_lo: float = 0.02
    m_hi: float = 0.5
    k: float = 3.0
    amp: float = 0.8
    peak_lo_h: float = 10.0
    peak_hi_h: float = 22.0
    noise: float = 0.5
    start_s: float = 0.0

    @property
    def expected_mean(self) -> float:
        return self.m_lo + (self.m_hi - self.m_lo) / (self.k + 1.0)


class SyntheticTrace(DemandSource):
    """A seeded synthetic trace that the engine streams like any other demand source."""

    channels = ("cpu_mhz",)

    def __init__(self, spec: SyntheticTraceSpec, *, vm_block: int = 131072, name: str = "syn") -> None:
        self.spec = spec
        self.vm_block = int(vm_block)
        self._key = np.uint64(spec.seed & 0xFFFFFFFFFFFFFFFF)
        self.index: np.ndarray | None = None  # the VMs' numbers in the trace when this is a subset of it
        n = spec.n_vms
        self.sizes = VmSizes(
            names=_LazyNames(name, n),
            vcpus=np.full(n, spec.vcpus, dtype=np.int32),
            vcpu_mhz=np.full(n, spec.vcpu_mhz, dtype=np.float64),
            mem_bytes=np.full(n, spec.mem_bytes, dtype=np.float64),
        )

    # ---- per-VM parameters (cheap: a few floats per VM, computed per block) -------------------
    def _ids(self, v0: int, v1: int) -> np.ndarray:
        """The trace's VM numbers of this source's VMs ``[v0, v1)``."""
        if self.index is None:
            return np.arange(v0, v1, dtype=np.uint64)
        return self.index[v0:v1].astype(np.uint64)

    def subset(self, idx):
        import copy

        out = copy.copy(self)
        ids = np.arange(self.spec.n_vms) if self.index is None else self.index
        out.index = ids[np.asarray(idx, dtype=np.int64)]
        out.sizes = VmSizes(names=self.sizes.names[idx], vcpus=self.sizes.vcpus[idx], vcpu_mhz=self.sizes.vcpu_mhz[idx],
                            mem_bytes=self.sizes.mem_bytes[idx])
        return out

    def vm_params(self, v0: int, v1: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        s = self.spec
        with np.errstate(over="ignore"):
            h = _mix64(self._ids(v0, v1) * _GOLD ^ self._key ^ np.uint64(0xA5A5A5A5A5A5A5A5))
        u1, u2, u3 = _unit(h, 0), _unit(h, 24), _unit(h, 40)
        mean = (s.m_lo + (s.m_hi - s.m_lo) * u1.astype(np.float64) ** s.k).astype(np.float32)
        amp = (s.amp * u2).astype(np.float32)
        phase_s = ((s.peak_lo_h + (s.peak_hi_h - s.peak_lo_h) * u3) * 3600.0).astype(np.float64)
        scale = (s.noise * mean).astype(np.float32)
        return mean, amp, phase_s, scale

    def _check_block(self, t0: int, t1: int, v0: int, v1: int | None) -> int:
        s = self.spec
        n_vms = self.n_vms
        v1 = n_vms if v1 is None else v1
        if not (0 <= t0 <= t1 <= s.n_steps and 0 <= v0 <= v1 <= n_vms):
            raise IndexError(f"block [{t0},{t1}) x [{v0},{v1}) outside {s.n_steps} steps x {n_vms} VMs")
        return v1

    def _fill(self, out: np.ndarray, t0: int, v0: int, v1: int, cap: np.float32 | None) -> None:
        s = self.spec
        mean, amp, phase_s, scale = self.vm_params(v0, v1)
        _fill(out, t0, s.n_steps, self._ids(v0, v1), self._key, mean, amp, phase_s, scale, float(s.start_s), float(s.step_s),
              np.float32(1.0 if cap is None else cap), cap is not None)

    def utilisation(self, t0: int, t1: int, v0: int = 0, v1: int | None = None) -> np.ndarray:
        """Utilisation (0..1) of VMs ``[v0, v1)`` at steps ``[t0, t1)``, float32 shaped (steps, VMs)
        (one numba pass; :meth:`utilisation_numpy` is the same computation with numpy arrays)."""
        v1 = self._check_block(t0, t1, v0, v1)
        out = np.empty((t1 - t0, v1 - v0), dtype=np.float32)
        self._fill(out, t0, v0, v1, None)
        return out

    def utilisation_numpy(self, t0: int, t1: int, v0: int = 0, v1: int | None = None) -> np.ndarray:
        """:meth:`utilisation` with numpy arrays (the reference the numba pass is checked against)."""
        s = self.spec
        n_vms = self.n_vms
        v1 = n_vms if v1 is None else v1
        if not (0 <= t0 <= t1 <= s.n_steps and 0 <= v0 <= v1 <= n_vms):
            raise IndexError(f"block [{t0},{t1}) x [{v0},{v1}) outside {s.n_steps} steps x {n_vms} VMs")
        mean, amp, phase_s, scale = self.vm_params(v0, v1)
        t_s = s.start_s + s.step_s * np.arange(t0, t1, dtype=np.float64)
        wave = np.cos(2.0 * np.pi * (t_s[:, None] - phase_s[None, :]) / DAY_S).astype(np.float32)
        u = mean[None, :] * (np.float32(1.0) + amp[None, :] * wave)
        del wave
        with np.errstate(over="ignore"):
            # one 64-bit hash per (step, VM): counter = vm * n_steps + step, keyed by the seed
            ctr = (self._ids(v0, v1)[None, :] * np.uint64(s.n_steps)
                   + np.arange(t0, t1, dtype=np.uint64)[:, None])
            ctr *= _GOLD
            ctr ^= self._key
            h = _mix64(ctr)
        e = _unit(h, 0)
        e += _unit(h, 32)
        del h, ctr
        e -= np.float32(1.0)  # triangular on [-1, 1)
        e *= scale[None, :]
        u += e
        del e
        np.clip(u, 0.0, 1.0, out=u)
        return u

    def blocks(self, t_chunk: int, v_chunk: int | None = None) -> Iterator[tuple[int, int, int, int, np.ndarray]]:
        """Every block of the trace, time-major: (t0, t1, v0, v1, utilisation)."""
        s = self.spec
        v_chunk = v_chunk or self.vm_block
        for t0 in range(0, s.n_steps, t_chunk):
            t1 = min(s.n_steps, t0 + t_chunk)
            for v0 in range(0, s.n_vms, v_chunk):
                v1 = min(s.n_vms, v0 + v_chunk)
                yield t0, t1, v0, v1, self.utilisation(t0, t1, v0, v1)

    # ---- DemandSource ------------------------------------------------------------------------
    group_name = "synthetic"

    def grid(self, horizon_s: float | None = None) -> TimeGrid:
        """The trace's own time grid, cut to ``horizon_s`` when given (the engine's grid for this source)."""
        s = self.spec
        n = s.n_steps if horizon_s is None else min(int(round(horizon_s / s.step_s)), s.n_steps)
        return TimeGrid(start_s=float(s.start_s), step_s=float(s.step_s), n_steps=n)

    def span_s(self):
        s = self.spec
        return s.start_s, s.start_s + s.n_steps * s.step_s

    def native_step_s(self):
        return self.spec.step_s

    def window(self, grid: TimeGrid, t0: int, t1: int, channels: tuple[str, ...]) -> dict[str, np.ndarray]:
        """Per-step CPU demand (MHz) of all VMs for engine steps ``[t0, t1)``, built VM block by VM block.

        The engine grid must be the trace's own grid (same start and step).
        """
        s = self.spec
        if abs(grid.step_s - s.step_s) > 1e-9 or abs(grid.start_s - s.start_s) > 1e-6:
            raise ValueError("SyntheticTrace streams on its own grid: set the scenario's step and start to the trace's")
        if "cpu_mhz" not in channels:
            return {}
        out = np.empty((t1 - t0, self.n_vms), dtype=np.float32)
        self._fill(out, t0, 0, self.n_vms, np.float32(s.vcpus * s.vcpu_mhz))  # utilisation x capacity, float32
        return {"cpu_mhz": out}


class _LazyNames:
    """VM names ``syn-<i>`` without a million Python strings, until someone asks for them."""

    def __init__(self, prefix: str, n: int) -> None:
        self.prefix, self.n = prefix, n
        self.size = n
        self.shape = (n,)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, idx):
        arr = np.arange(self.n)[idx]
        if np.ndim(arr) == 0:
            return f"{self.prefix}-{int(arr)}"
        return np.array([f"{self.prefix}-{i}" for i in arr.ravel()], dtype=object).reshape(arr.shape)

    def astype(self, dtype):
        return np.array([f"{self.prefix}-{i}" for i in range(self.n)], dtype=object).astype(dtype)
