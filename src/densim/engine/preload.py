"""Load a run's numba kernels from the cache in a background thread while the run builds its inputs.

Every densim kernel is compiled once and cached (``densim._jit``); what a run still pays is
loading the machine code of each kernel it calls (5-15 ms a kernel here: the CPU kernel, and with
the memory model on its reclamation and fault-cost kernels), on its first call. Those loads need
nothing from the run but its scenario, and most of their time is spent outside the GIL (LLVM links
the object code), so :func:`preload` starts them in a thread when the run starts: they overlap
reading the traces and placing the VMs, on the second core. A kernel still loading when the run
reaches it waits for it (numba's compiler lock), as it would have waited for its own load.

The kernels come from :func:`run_kernels`: the CPU kernel, and those a stage factory names in its
``kernels`` attribute (``factory.kernels(scenario) -> ("module:function", ...)``, empty when the
scenario switches the stage off). ``DENSIM_PRELOAD=0`` in the environment turns this off.
"""

from __future__ import annotations

import importlib
import os
import threading

from densim.engine.stages import STAGES, load_plugins

CPU_KERNELS = ("densim.engine.cpu_kernel:cpu_chunk",)
# OpenDC tasks' fragments laid onto each chunk's steps (densim.workloads.tasks)
OPENDC_KERNELS = ("densim.workloads.tasks:_bin_task_fragments",)
# a synthetic profile's noise (densim.workloads.sources.hash_uniform)
NOISE_KERNELS = ("densim.workloads.noise:hash_uniform_rows",)


def run_kernels(scenario) -> list[str]:
    """``"module:function"`` of the numba kernels a run of ``scenario`` calls: the CPU kernel's, the OpenDC fragments'
    when a VM group replays an OpenDC trace, and its stages'."""
    load_plugins()
    names = list(CPU_KERNELS)
    if any(g.trace is not None and g.trace.format == "opendc" for g in scenario.vms):
        names.extend(OPENDC_KERNELS)
    if any(g.trace is None and getattr(getattr(g, "profile", None), "noise", 0) for g in scenario.vms):
        names.extend(NOISE_KERNELS)
    for name in STAGES.order():
        wanted = getattr(STAGES.entry(name).obj, "kernels", None)
        if wanted is not None:
            names.extend(n for n in wanted(scenario) if n not in names)
    return names


def _load(names: list[str], loaded: list[str]) -> None:
    from densim._jit import load_cached

    for name in names:
        module, attr = name.split(":")
        if load_cached(getattr(importlib.import_module(module), attr)):
            loaded.append(name)


class Preload:
    """The background load of a run's kernels (:func:`preload`); ``loaded`` lists those whose code was loaded."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.loaded: list[str] = []
        self.error: Exception | None = None
        self._thread = threading.Thread(target=self._run, name="densim-preload", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            _load(self.names, self.loaded)
        except Exception as exc:  # noqa: BLE001 - a failed preload only means the run loads on first call
            self.error = exc

    def join(self) -> None:
        """Wait for the background loading to end (a failure is kept in ``error``, not raised)."""
        self._thread.join()


def preload(scenario) -> Preload | None:
    """Start loading the kernels of a run of ``scenario`` in a background thread (None when turned off)."""
    if os.environ.get("DENSIM_PRELOAD", "1") == "0":
        return None
    return Preload(run_kernels(scenario))
