"""Loading a run's numba kernels ahead, in a background thread (densim.engine.preload).

The preload changes when a kernel's machine code is loaded, never what it computes: a run with it
gives the floats of a run without it. What it loads must be real kernels, and ``load_cached`` must
load a cached kernel without compiling it (checked in fresh processes against numba's own counters).
"""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from densim.engine import preload as P
from densim.engine import simulate
from densim.plant import resolve
from tests.core.helpers import const_vms, host, scenario


def _plant(memory: bool):
    # 12 VMs of 16 GiB first-fit at 3x memory over-commit onto one 64 GiB host of 32 cores: with the memory
    # model on, every VM faults (the fault-cost kernel runs), over 2 h of 5-minute steps
    vms = const_vms("v", 12, 2, 2000, 0.4, mem="16 GiB")
    vms["profile"] = {"kind": "diurnal", "mean": 0.4, "amplitude": 0.3}
    extra = {"memory": {"model": "vsphere-like"}} if memory else {}
    return resolve(scenario([host(4, cores=32, mem="64 GiB")], [vms], horizon="2 h", mem_oc=3.0, **extra))


def test_a_run_names_the_cpu_kernel_and_its_stages_kernels():
    from numba.core.registry import CPUDispatcher

    plain = P.run_kernels(_plant(False).spec)
    mem = P.run_kernels(_plant(True).spec)
    assert plain == ["densim.engine.cpu_kernel:cpu_chunk"]
    assert mem[0] == plain[0] and {"densim.models.memory:_reclaim_segments", "densim.models.memory:_steps_kernel"} <= set(mem)
    import importlib

    for name in mem:  # every name is a cached numba kernel the run calls
        module, attr = name.split(":")
        assert isinstance(getattr(importlib.import_module(module), attr), CPUDispatcher), name


def test_a_profile_with_noise_names_the_noise_kernel():
    vms = const_vms("v", 4, 2, 2000, 0.4)
    vms["profile"] = {"kind": "diurnal", "mean": 0.4, "amplitude": 0.3, "noise": 0.1}
    names = P.run_kernels(resolve(scenario([host(2)], [vms], horizon="1 h")).spec)
    assert names == ["densim.engine.cpu_kernel:cpu_chunk", "densim.workloads.noise:hash_uniform_rows"]


def test_an_opendc_trace_run_names_the_fragment_kernel():
    from densim.spec.loader import load_scenario

    names = P.run_kernels(load_scenario("examples/opendc/surf-week.yaml"))
    assert names == ["densim.engine.cpu_kernel:cpu_chunk", "densim.workloads.tasks:_bin_task_fragments"]


def test_the_background_load_loads_every_kernel_of_a_run_without_error():
    # a failed preload would only cost the run its first-call loads, so nothing reports it at run
    # time. Here a run with the memory model on compiles (and caches) its kernels; a fresh process
    # then preloads them: no error, and every kernel the run names loaded from the cache
    import json

    from densim._jit import Prefaulted

    plant = _plant(True)
    simulate(plant)
    # this small run's output arrays are under 1 MiB, so it never prefaults one: map a 2 MiB array so
    # that _touch_pages is compiled and cached too (without it the test depended on another test
    # having compiled it first, and failed on a fresh clone whose order differed)
    Prefaulted((1 << 18,), np.float64).get()
    names = P.run_kernels(plant.spec)
    code = textwrap.dedent(f"""
        import json
        from densim.engine.preload import Preload
        warm = Preload({names!r})
        warm.join()
        print(json.dumps({{"error": repr(warm.error) if warm.error else None, "loaded": warm.loaded}}))
    """)
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert out == {"error": None, "loaded": names}


@pytest.mark.parametrize("memory", [False, True])
def test_a_run_with_the_preload_gives_the_floats_of_one_without(monkeypatch, memory):
    plant = _plant(memory)
    monkeypatch.setenv("DENSIM_PRELOAD", "0")
    off = simulate(plant)
    monkeypatch.setenv("DENSIM_PRELOAD", "1")
    on = simulate(plant)
    assert on.summary["totals"] == off.summary["totals"]
    if memory:
        assert on.summary["memory"]["vms_slowed"] == 12  # the fault-cost kernel ran for every VM
    for acc in ("vm_acc", "host_acc"):
        a, b = getattr(on, acc), getattr(off, acc)
        assert a.sum.keys() == b.sum.keys()
        for name in a.sum:
            np.testing.assert_array_equal(a.sum[name], b.sum[name], err_msg=name)


def test_preload_off_starts_no_thread(monkeypatch):
    monkeypatch.setenv("DENSIM_PRELOAD", "0")
    assert P.preload(_plant(True).spec) is None


def test_load_cached_loads_a_cached_kernel_and_compiles_nothing(tmp_path):
    # a kernel compiled (and cached) by one process; a second process loads it with load_cached:
    # one overload loaded from the cache (numba counts a cache hit, no cache miss), and calling it
    # afterwards loads nothing more. A plain function (no numba dispatcher) loads nothing.
    (tmp_path / "kmod.py").write_text(textwrap.dedent("""
        from densim._jit import njit

        @njit
        def twice(x):
            return 2.0 * x
    """))
    env_code = f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import kmod\n"
    first = subprocess.run([sys.executable, "-c", env_code + "print(kmod.twice(1.5))"], capture_output=True, text=True,
                           check=True)
    assert first.stdout.strip() == "3.0"
    second = subprocess.run([sys.executable, "-c", env_code + textwrap.dedent("""
        from densim._jit import load_cached
        n = load_cached(kmod.twice)
        hits, misses = sum(kmod.twice.stats.cache_hits.values()), sum(kmod.twice.stats.cache_misses.values())
        kmod.twice(2.0)
        print(n, hits, misses, len(kmod.twice.overloads), load_cached(kmod.twice), load_cached(len))
    """)], capture_output=True, text=True, check=True)
    assert second.stdout.split() == ["1", "1", "0", "1", "0", "0"]


def test_a_prefaulted_array_is_mapped_in_the_background_and_handed_over_once_mapped():
    # 2 MiB: above the 1 MiB under which no thread is started; get() waits for the thread, then the
    # array is an ordinary writeable C-ordered array of the shape and type asked for
    from densim._jit import Prefaulted

    p = Prefaulted((512, 1024), np.float32)
    assert p._thread is not None and len(p._parts) == Prefaulted.PARTS
    a = p.get()  # touches the parts the thread has not claimed yet, then joins it
    assert p._thread is None and p.get() is a and p._next[0] == p._next[1]
    assert a.shape == (512, 1024) and a.dtype == np.float32 and a.flags.c_contiguous and a.flags.writeable
    a[...] = 1.5
    assert float(a.sum(dtype=np.float64)) == 1.5 * 512 * 1024
    small = Prefaulted((10, 10), np.float64)
    assert small._thread is None and small.get().shape == (10, 10)
