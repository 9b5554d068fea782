"""A host's capacity under over-commit, and the one test of whether a VM fits.

Every placement path (the engine's kernels, the planner's filters, live migration, the lifetime
scheduler, CP-SAT's warm start) asks the same question: do the VM's vCPUs fit under the host's free
vCPU capacity and its configured memory under the free memory capacity? This module answers it once:

* :func:`capacity` / :func:`host_capacity`: the capacity columns, ``[vCPUs, memory bytes]`` =
  ``[cores x cpu_overcommit, memory x memory_overcommit]``; GPUs are the one more column, kept apart
  because a GPU's room is a state, not a number (MIG layouts, one vGPU size per GPU):
  :func:`densim.placement.gpu.gpu_fit` is its fit test, asked next to :func:`fits` when VMs ask for GPUs;
* ``fits(cpu_free, mem_free, c, m)`` (numba ``@njit`` scalar, one host and one VM, for kernels) and
  :func:`fits_mask` (numpy, vectorised, for Python code) apply the same tolerance rule,
  :func:`within`, to each dimension; :func:`fits_rows` to any number of columns.

The tolerance rule
------------------
A request ``x`` (vCPUs, bytes, MiB ...) fits a free amount ``free`` when

    free + tol(x) >= x,    tol(x) = min(EPS * max(1, x), MAX_TOL),  EPS = 1e-9, MAX_TOL = 0.5

* ``EPS * max(1, x)`` absorbs float noise. Free amounts are capacities minus sums of requests; with
  whole numbers (vCPUs, bytes) they are exact, but a fractional over-commit (``1.1 x 48 cores``) or
  fractional sizes (``0.1 GiB`` = 107374182.4 bytes) leave rounding errors of about an ulp of the
  host's capacity per VM on it: 640 VMs of 0.1 GiB added one by one come to 64 GiB + 0.0007 bytes,
  6e-12 of a request, well inside ``EPS`` = 1e-9 of it (a plain ``<=``, or the planner's old
  ``+ 1e-6`` bytes, opened a second host for the last VM). ``max(1, x)`` keeps a floor for requests
  below one unit (a tolerance relative to 0 is 0). EPS = 1e-9 is the tolerance the engine's
  heuristics already used for memory, so whole-unit inputs place as before. Its limit: thousands
  of fractional sizes on a TiB host (10240 x 0.1 GiB on 1 TiB: 0.18 bytes short, 1.6e-9 of a
  request) exceed it, as they exceeded the old rule.
* ``MAX_TOL`` = half a unit: quantities are counted in whole vCPUs and bytes (or MiB), so a shortfall
  of one unit is a real overflow, never noise. Without the cap the relative rule would let a
  1-TB request (1e12 bytes) through 1000 bytes short; with it, a request is refused one byte short at
  any size up to 2**53 bytes (where float64 stops counting bytes exactly). The cap only acts above
  5e8 units (a request of 0.5 GB); smaller requests keep the relative tolerance.

The same rule for the kernel and for numpy: :func:`fits` and :func:`fits_mask` agree on every finite
input (tests/placement/test_capacity.py checks it with hypothesis).
"""

from __future__ import annotations

import numpy as np

#: relative tolerance of a fit test (see the module docstring)
EPS = 1e-9
#: the tolerance never exceeds half a unit (vCPU, byte): one unit short is an overflow
MAX_TOL = 0.5


def capacity(cpus, mem_bytes, cpu_overcommit: float, memory_overcommit: float) -> np.ndarray:
    """``(..., 2)`` float64 capacity columns: ``[cpus x cpu_overcommit, mem_bytes x memory_overcommit]``.

    ``cpus`` are the CPUs the over-commit ratio counts (the engine: physical cores; the planner:
    logical CPUs) and ``mem_bytes`` the memory it multiplies (the planner: usable memory)."""
    cpu = np.asarray(cpus, dtype=np.float64) * float(cpu_overcommit)
    mem = np.asarray(mem_bytes, dtype=np.float64) * float(memory_overcommit)
    return np.stack([cpu, mem], axis=-1)


def host_capacity(hosts, placement) -> np.ndarray:
    """``(hosts, 2)``: column 0 the vCPU capacity (cores x ``placement.cpu_overcommit``), column 1 the
    configured-memory capacity in bytes (memory x ``placement.memory_overcommit``).

    ``hosts``: a :class:`densim.engine.state.HostTable` (anything with ``cores`` and ``mem_bytes``
    arrays); ``placement``: the scenario's placement section (``cpu_overcommit``, ``memory_overcommit``)."""
    return capacity(hosts.cores, hosts.mem_bytes, placement.cpu_overcommit, placement.memory_overcommit)


def tolerance(x):
    """The slack a request ``x`` is allowed: ``min(EPS * max(1, x), MAX_TOL)`` (numpy, elementwise)."""
    return np.minimum(EPS * np.maximum(1.0, x), MAX_TOL)


def within(free, need):
    """Elementwise: ``need`` fits under ``free`` by the one tolerance rule (numpy; any shapes that broadcast)."""
    free = np.asarray(free, dtype=np.float64)
    need = np.asarray(need, dtype=np.float64)
    return free + tolerance(need) >= need


def fits_mask(cpu_free, mem_free, c, m):
    """Vectorised :func:`fits`: ``c`` vCPUs fit ``cpu_free`` and ``m`` bytes fit ``mem_free`` (arrays broadcast)."""
    return within(cpu_free, c) & within(mem_free, m)


def fits_rows(free, need):
    """``need`` fits ``free`` in every column (the last axis): ``(..., D)`` against ``(..., D)`` -> ``(...)``.
    For capacity tables of :func:`capacity` (D = 2) or more dimensions (CP-SAT's windows)."""
    return within(free, need).all(axis=-1)


def _fits(cpu_free, mem_free, c, m):
    """``c`` vCPUs fit ``cpu_free`` and ``m`` bytes fit ``mem_free``: the scalar rule of :func:`within`.

    Compiled by numba as :data:`fits` (for kernels) on first use; this module itself does not import
    numba, so the planner and the CLI that only need the numpy functions do not pay numba's import."""
    return (cpu_free + min(EPS * max(1.0, c), MAX_TOL) >= c
            and mem_free + min(EPS * max(1.0, m), MAX_TOL) >= m)


def __getattr__(name: str):
    # ``fits``: ``densim._jit.njit(_fits)``, made on first access (``from densim.placement.capacity
    # import fits`` in a numba kernel's module). numba's on-disk cache of a kernel in another file
    # that calls ``fits`` keeps the compiled copy it was built with: after changing EPS or MAX_TOL,
    # delete the __pycache__ folders (or the kernels' *.nbi/*.nbc files) of densim/placement.
    if name == "fits":
        from densim._jit import njit

        globals()["fits"] = fn = njit(_fits, inline="always")  # a kernel calls it per host it looks at
        return fn
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ``fits`` is made on first access (module __getattr__ above)
__all__ = ["EPS", "MAX_TOL", "capacity", "fits", "fits_mask", "fits_rows", "host_capacity", "tolerance", "within"]  # noqa: F822
