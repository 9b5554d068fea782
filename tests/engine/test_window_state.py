"""The window state (densim.engine.window): the one place stages read who is alive and which hosts are up.

Hand-checked on a grid of 300 s steps, window = steps 0..3 (edges 0, 300, 600, 900, 1200 s).
"""

from types import SimpleNamespace

import numpy as np
import pytest

from densim.engine.failures import FailureRun
from densim.engine.lifetimes import Liveness
from densim.engine.run import Chunk
from densim.engine.window import WindowState
from densim.workloads.timegrid import TimeGrid


def _ctx(dynamic: bool, failures: bool):
    # rows: 0 on host 0 alive [450, 900); 1 on host 0 alive the whole run; 2 on host 1 alive [0, 300); 3 placed nowhere
    vms = SimpleNamespace(n=4, host=np.array([0, 0, 1, -1]), vcpus=np.array([2, 4, 8, 16]),
                          mem_bytes=np.array([1.0, 2.0, 4.0, 8.0]))
    live = None
    if dynamic:
        live = object.__new__(Liveness)
        live.sch = SimpleNamespace(start_s=np.array([450.0, 0.0, 0.0, np.nan]),
                                   end_s=np.array([900.0, np.inf, 300.0, np.nan]))
    fr = None
    if failures:  # host 1 down on [0, 150): up 0.5 in step 0
        fr = object.__new__(FailureRun)
        fr.down_host, fr.down_start_s, fr.down_end_s = np.array([1]), np.array([0.0]), np.array([150.0])
    return SimpleNamespace(grid=TimeGrid(0.0, 300.0, 4), vms=vms, hosts=SimpleNamespace(n=2), liveness=live, failures=fr)


def test_alive_shares_and_hosts_up_by_hand():
    ws = WindowState(_ctx(True, True), 0, 4)
    # row 0 alive [450, 900): step 1 holds 150 of 300 s -> 0.5, step 2 all of it, steps 0 and 3 none
    np.testing.assert_array_equal(ws.alive()[:, 0], [0.0, 0.5, 1.0, 0.0])
    np.testing.assert_array_equal(ws.alive()[:, 2], [1.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(ws.alive()[:, 3], [0.0, 0.0, 0.0, 0.0])  # never started
    np.testing.assert_array_equal(ws.alive_mask(np.array([0]))[:, 0], [False, True, True, False])
    np.testing.assert_array_equal(ws.host_up[:, 1], [0.5, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(ws.host_up[:, 0], [1.0, 1.0, 1.0, 1.0])
    # vCPUs alive on host 0: row 1 (4 vCPUs) always + row 0 (2 vCPUs) x [0, 0.5, 1, 0] = [4, 5, 6, 4];
    # host 1: row 2's 8 vCPUs in step 0 only; row 3 counts nowhere
    np.testing.assert_array_equal(ws.vcpus_alive, [[4, 8], [5, 0], [6, 0], [4, 0]])
    np.testing.assert_array_equal(ws.rows_alive[:, 0], [1.0, 1.5, 2.0, 1.0])
    np.testing.assert_array_equal(ws.mem_alive_bytes[:, 1], [4.0, 0.0, 0.0, 0.0])


def test_a_later_window_reads_its_own_steps():
    ws = WindowState(_ctx(True, False), 1, 3)  # steps 1..2: edges 300, 600, 900
    np.testing.assert_array_equal(ws.alive()[:, 0], [0.5, 1.0])
    np.testing.assert_array_equal(ws.host_up, np.ones((2, 2)))


@pytest.mark.parametrize("failures", [False, True])
def test_static_run_every_placed_row_alive(failures):
    ws = WindowState(_ctx(False, failures), 0, 4)
    assert not ws.dynamic
    np.testing.assert_array_equal(ws.alive(), np.ones((4, 4), np.float32))
    np.testing.assert_array_equal(ws.vcpus_alive, [[6, 8]] * 4)  # rows 0+1 on host 0, row 2 on host 1


def test_a_hand_built_chunk_gets_its_window_on_first_use():
    ctx = _ctx(True, False)
    chunk = Chunk(t0=0, t1=4, step_s=300.0)
    ws = chunk.window(ctx)
    assert chunk.window(ctx) is ws and (ws.t0, ws.t1) == (0, 4)
