"""Stage order comes from declared dependencies (after=/before=), not from stage names."""

from __future__ import annotations

import pytest

from densim.engine import simulate
from densim.plant import resolve
from densim.registry import Registry
from densim.engine.stages import STAGES, BaseStage, StageOrderError, StageRegistry, load_plugins, stage_order
from tests.core.helpers import const_vms, host, scenario


def _fresh() -> StageRegistry:
    """A private registry, taken out of the global list (``densim models`` / docgen list every registry)."""
    reg = StageRegistry("test-stage")
    Registry._all.pop("test-stage", None)
    return reg


def test_order_follows_dependencies_not_names():
    reg = _fresh()
    # alphabetically 'aa-consumer' < 'zz-producer', but the consumer declares it runs after the producer
    reg.register("aa-consumer", description="reads what zz-producer wrote", after=("zz-producer",))(lambda ctx: None)
    reg.register("zz-producer", description="writes first")(lambda ctx: None)
    assert reg.order() == ["zz-producer", "aa-consumer"]


def test_before_and_factory_attributes_declare_order_too():
    reg = _fresh()

    def late(ctx):
        return None

    late.after = ("mid",)
    reg.register("a-late", description="")(late)
    reg.register("mid", description="")(lambda ctx: None)
    reg.register("z-first", description="", before=("mid",))(lambda ctx: None)
    assert reg.order() == ["z-first", "mid", "a-late"]


def test_unconstrained_stages_keep_a_stable_name_order():
    assert stage_order(["c", "a", "b"], {}, {}) == ["a", "b", "c"]
    # independent of the order the names are given in
    assert stage_order(["b", "c", "a"], {"a": ["c"]}, {}) == stage_order(["a", "b", "c"], {"a": ["c"]}, {}) == ["b", "c", "a"]


def test_a_cycle_is_an_error():
    with pytest.raises(StageOrderError, match="cycle"):
        stage_order(["a", "b", "c"], {"a": ["b"], "b": ["c"], "c": ["a"]}, {})
    with pytest.raises(StageOrderError, match="cycle"):
        stage_order(["a", "b"], {"a": ["b"]}, {"a": ["b"]})  # a after b and a before b
    with pytest.raises(StageOrderError, match="itself"):
        stage_order(["a"], {"a": ["a"]}, {})


def test_an_unknown_name_is_an_error():
    with pytest.raises(StageOrderError, match="no registered stage"):
        stage_order(["a"], {"a": ["nope"]}, {})
    with pytest.raises(StageOrderError, match="no registered stage"):
        stage_order(["a"], {}, {"a": ["nope"]})


def test_builtin_stages_declare_their_order():
    load_plugins()
    order = STAGES.order()
    assert order.index("memory") < order.index("storage")  # swap I/O before the datastore queues
    assert order.index("storage") < order.index("virtualization")
    assert order.index("fabric") < order.index("virtualization")


class _Recorder(BaseStage):
    def __init__(self, name, log):
        self.name = name
        self.log = log

    def after_cpu(self, ctx, chunk):
        self.log.append(self.name)
        chunk.vm_out.setdefault("order_probe", chunk.vm["cpu_demand_mhz"] * 0)

    def prepare(self, ctx):
        ctx.declare("order_probe", level="vm")


def test_engine_runs_stages_in_dependency_order_and_records_it():
    load_plugins()
    log: list[str] = []
    try:
        STAGES.register("aa-dummy-second", description="test", after=("zz-dummy-first",))(
            lambda ctx: _Recorder("aa-dummy-second", log))
        STAGES.register("zz-dummy-first", description="test")(lambda ctx: _Recorder("zz-dummy-first", log))
        sc = scenario([host()], [const_vms("v", 1, 1, 1000, 0.5)])
        res = simulate(resolve(sc))
    finally:
        STAGES.unregister("aa-dummy-second")
        STAGES.unregister("zz-dummy-first")
    assert log[:2] == ["zz-dummy-first", "aa-dummy-second"]
    assert res.summary["models"]["stages"] == ["zz-dummy-first", "aa-dummy-second"]


def test_engine_refuses_a_cycle():
    load_plugins()
    try:
        STAGES.register("dummy-x", description="test", after=("dummy-y",))(lambda ctx: None)
        STAGES.register("dummy-y", description="test", after=("dummy-x",))(lambda ctx: None)
        sc = scenario([host()], [const_vms("v", 1, 1, 1000, 0.5)])
        with pytest.raises(StageOrderError, match="cycle"):
            simulate(resolve(sc))
    finally:
        STAGES.unregister("dummy-x")
        STAGES.unregister("dummy-y")
