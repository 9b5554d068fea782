"""The typed Summary: the engine's core fields, stage sections through a declared interface."""

from __future__ import annotations

import json
from typing import TypedDict

import pytest

from densim.engine.stages import BaseStage
from densim.engine.summary import Core, StageSummary, Summary, SummaryError


class _Probe(TypedDict):
    hits: int
    share: float


class _ProbeStage(BaseStage):
    name = "probe"
    summary_sections = {"probe": _Probe}


def _summary() -> Summary:
    from densim.engine.summary import GridInfo, ModelsInfo, PlacementInfo, Qos, Totals

    core = Core(
        densim_version="x", scenario="s", seed=1,
        grid=GridInfo(start_s=0.0, step_s=300.0, n_steps=2, horizon_s=600.0),
        models=ModelsInfo(cpu_contention="proportional", burstiness="none", placement="first-fit", stages=["probe"]),
        placement=PlacementInfo(policy="first-fit", cpu_overcommit=1.0, memory_overcommit=1.0),
        hosts_total=1, hosts_used=1, hosts_powered_on=1, vms_total=1, vms_placed=1, vms_unplaced=0,
        unplaced_vms=[], rack_units_powered_on=1.0,
        totals=Totals(cpu_demand_mhz_s=1.0, cpu_delivered_mhz_s=1.0, cpu_unserved_mhz_s=0.0, cpu_ready_s=0.0,
                      energy_j=3.6e6, energy_kwh=1.0),
        qos=Qos(cpu_ready_pct_mean=0.0, cpu_ready_pct_worst_vm_mean=0.0, cpu_ready_pct_worst_step=0.0,
                vms_ready_over_5pct=0, vms_ready_over_10pct=0),
    )
    return Summary(core)


def test_declared_section_lands_between_core_fields_and_saturation():
    s = _summary()
    s.for_stage(_ProbeStage()).add("probe", {"hits": 3, "share": 0.5})
    s.set_saturation([])
    keys = list(s)
    assert keys[:3] == ["densim_version", "scenario", "seed"]
    assert keys[-2:] == ["probe", "saturation"]
    assert s["probe"] == {"hits": 3, "share": 0.5}
    assert s["totals"]["energy_kwh"] == 1.0
    json.dumps(s.to_dict())  # plain JSON types only


@pytest.mark.parametrize(
    ("section", "value", "message"),
    [
        ("other", {"hits": 1, "share": 0.0}, "does not declare"),
        ("totals", {"hits": 1, "share": 0.0}, "core field"),
        ("probe", {"hits": 1}, "missing share"),
        ("probe", {"hits": 1, "share": 0.0, "stale": 2}, "undeclared stale"),
        ("probe", [1, 2], "must be a mapping"),
    ],
)
def test_stage_writing_outside_its_declaration_is_refused(section, value, message):
    s = _summary()
    with pytest.raises(SummaryError, match=message):
        s.for_stage(_ProbeStage()).add(section, value)


def test_a_section_is_written_once():
    s = _summary()
    s.for_stage(_ProbeStage()).add("probe", {"hits": 1, "share": 0.0})
    with pytest.raises(SummaryError, match="written twice"):
        s.for_stage(_ProbeStage()).add("probe", {"hits": 2, "share": 0.0})


def test_standalone_view_checks_the_same_declaration():
    v = StageSummary.standalone(_ProbeStage())
    v.add("probe", {"hits": 1, "share": 0.25})
    assert v["probe"]["share"] == 0.25
    with pytest.raises(SummaryError, match="missing hits"):
        StageSummary.standalone(_ProbeStage()).add("probe", {"share": 0.25})


def test_every_registered_stage_declares_what_its_finish_writes():
    # each built-in stage names a TypedDict per section; a run of the memory/storage/virt example
    # (golden tests) exercises their finish() against it
    from densim.engine.stages import STAGES, load_plugins

    load_plugins()
    from densim.engine.plugins.fabric import FabricStage
    from densim.engine.plugins.memory import MemoryStage
    from densim.engine.plugins.storage import StorageStage
    from densim.engine.plugins.virtualization import VirtualizationStage

    assert set(STAGES.names()) >= {"fabric", "memory", "storage", "virtualization"}
    for cls, name in [(FabricStage, "fabric"), (MemoryStage, "memory"), (StorageStage, "storage"),
                      (VirtualizationStage, "virtualization")]:
        # a stage's own section, plus (storage) the storage_failures section it writes when the run has failures
        # and the hci section of an HCI datastore (storage.hci):
        assert set(cls.summary_sections) == {name} | ({"storage_failures", "hci"} if name == "storage" else set())
        for sec in cls.summary_sections.values():
            assert sec.__required_keys__


def test_run_summary_json_is_the_typed_summary(tmp_path, traces):  # examples/bitbrains-small.yaml
    from densim.engine import simulate
    from densim.plant import load_plant

    res = simulate(load_plant("examples/bitbrains-small.yaml"), seed=0)
    s = res.summary
    assert isinstance(s, Summary)
    assert s.core.totals.energy_kwh == s["totals"]["energy_kwh"]
    res.write(tmp_path)
    assert json.loads((tmp_path / "summary.json").read_text()) == json.loads(json.dumps(s.to_dict()))
