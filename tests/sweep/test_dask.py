"""Dask backend: a --dask-local 2 cluster gives the process pool's results; a dead worker is survived."""

import pytest
from conftest import write_study

from densim.tools.sweep import load_sweep, run_sweep, store_files

pytest.importorskip("distributed")


def test_dask_local_equals_process_pool_even_when_a_worker_dies(tmp_path, toy_env):
    path = write_study(tmp_path)
    ref = run_sweep(load_sweep(path), out=tmp_path / "pool", backend="process", workers=2)
    assert ref.ok
    die = tmp_path / "die"
    die.mkdir()
    toy_env.setenv("DENSIM_TOY_DIE_DIR", str(die))  # the first task SIGKILLs its Dask worker
    toy_env.setenv("DENSIM_TOY_SLEEP", "0.1")
    out = run_sweep(load_sweep(path), out=tmp_path / "dask", dask_local=2)
    assert (die / "died").exists()
    assert out.ok and out.done == 8
    assert store_files(tmp_path / "dask" / "toy") == store_files(tmp_path / "pool" / "toy")
