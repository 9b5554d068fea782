"""`densim warmup` (issue 31): compiles the demo's numba kernels into numba's on-disk cache ahead of use,
saying so on stderr, so that a fresh clone's first `densim demo` loads them instead of compiling them."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner


def test_warmup_compiles_the_demo_kernels_into_the_cache_and_says_so():
    from densim._jit import HAVE_NUMBA
    from densim.cli.main import app

    if not HAVE_NUMBA:
        pytest.skip("numba is not installed")
    from densim.engine.cpu_kernel import cpu_chunk
    from densim.placement.heuristics import first_fit_kernel

    r = CliRunner().invoke(app, ["warmup"])
    assert r.exit_code == 0, r.output
    assert "compiling kernels (one time" in r.output and "kernels compiled and cached in" in r.output
    for kernel in (cpu_chunk, first_fit_kernel):
        # compiled in this process (or loaded from the cache), and the cache holds an index for it on disk
        assert kernel.signatures, kernel
        assert os.path.isfile(kernel._cache._cache_file._index_path)


def test_warmup_json_names_the_kernels_and_writes_nothing(tmp_path, monkeypatch):
    import json

    from densim.cli.main import app

    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, ["warmup", "--json", "--quiet"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["scenario"] == "demo" and "densim.engine.cpu_kernel:cpu_chunk" in res["kernels"]
    assert list(tmp_path.iterdir()) == []  # in memory: no output folder
