"""Shared fixtures: repository paths and helpers for writing tiny scenarios."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import settings

# No per-example wall-clock limit for property tests (hypothesis' default deadline is 200 ms): on a
# loaded shared machine an example can take longer without anything being wrong. Tests that set
# their own settings inherit this.
settings.register_profile("densim", deadline=None)
settings.load_profile("densim")

# Parsed traces are cached (densim.workloads.trace_cache) in a folder of the test session's own, not in
# the user's ~/.cache: every session starts cold, and tests that want their own cache set it themselves.
if "DENSIM_CACHE_DIR" not in os.environ:
    _CACHE = tempfile.mkdtemp(prefix="densim-test-cache-")
    os.environ["DENSIM_CACHE_DIR"] = _CACHE
    atexit.register(shutil.rmtree, _CACHE, True)

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
TRACES = SHARED / "traces"


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def traces() -> Path:
    if not TRACES.exists():
        pytest.skip("../shared/traces is not beside the repository")
    return TRACES


@pytest.fixture
def write_yaml(tmp_path):
    def _write(data: dict, name: str = "scenario.yaml") -> Path:
        p = tmp_path / name
        p.write_text(yaml.safe_dump(data, sort_keys=False))
        return p

    return _write


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def pytest_configure(config):
    """Compile the engine's numba kernels into their on-disk cache once, before xdist starts its
    workers: a fresh clone otherwise compiles the parallel CPU kernel (about 20 s, more under load) in
    every worker at once, inside whichever test runs the engine first, and the fuzz harness's time
    bound would count the compilation as the command's own time."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller has warmed the cache
        return
    from densim.plant import resolve
    from densim.engine import simulate
    from densim.spec.loader import scenario_from_dict

    host = {"count": 2, "cpu": {"sockets": 1, "cores_per_socket": 2, "base_clock": "2 GHz"}, "memory": "8 GiB",
            "power": {"model": "linear", "idle": "100 W", "peak": "200 W"}}
    for vms in ({"name": "v", "count": 3, "vcpus": 1, "memory": "1 GiB", "profile": {"mean": 0.5}},):
        simulate(resolve(scenario_from_dict({"name": "warm-up", "cluster": {"hosts": [host]}, "vms": [vms],
                                             "simulation": {"horizon": "1 h", "step": "5 min"}})))
    planetlab = TRACES / "planetlab-20110303"
    if planetlab.exists():  # a trace replayed by many VMs: the factored form of the kernel
        simulate(resolve(scenario_from_dict({"name": "warm-up", "cluster": {"hosts": [host]},
                                             "vms": [{"name": "p", "count": 3, "vcpus": 1, "memory": "1 GiB",
                                                      "trace": {"format": "planetlab", "path": str(planetlab), "limit": 3}}],
                                             "simulation": {"horizon": "1 h", "step": "5 min"}})))
