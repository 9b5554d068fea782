"""One meaning of CPU over-commit (issue 28): a plan's ``qos.vcpus_per_core`` and a scenario's
``placement.cpu_overcommit`` both count vCPUs per PHYSICAL core (threads not counted), so a plan's
answer replayed with ``densim run`` has the same vCPU room; the old ``qos.cpu_overcommit`` (vCPUs per
LOGICAL CPU) is refused with the translation rather than silently read in the new unit."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from densim.cli.main import app
from densim.errors import InputError, ScenarioInvalid
from densim.spec import scenario_from_dict
from densim.spec.plan import PlanSpec
from densim.tools.plan.capacity import host_type_of, load_plan_spec, plan, vcpu_capacity
from densim.workloads.inventory import build_inventory

from .fixtures import small_workload, write_generic_csv

# 1 socket x 4 physical cores x 2 SMT threads = 8 logical CPUs, 2 GHz, 64 GiB
CPU = {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 2, "base_clock": "2000 MHz"}
POWER = {"model": "linear", "idle": "100 W", "peak": "200 W"}
RATIO = 1.5
N_VMS = 12


def _scenario_vms_per_host() -> tuple[np.ndarray, float]:
    from densim.engine.run import place_vms
    from densim.engine.state import build_context
    from densim.plant.core import resolve

    sc = scenario_from_dict({
        "name": "oc", "cluster": {"hosts": [{"name": "h", "count": 3, "cpu": CPU, "memory": "64 GiB", "power": POWER}]},
        "vms": [{"name": "v", "count": N_VMS, "vcpus": 1, "vcpu_speed": "2000 MHz", "memory": "1 GiB",
                 "profile": {"kind": "constant", "mean": 0.05}}],
        "placement": {"policy": "first-fit", "cpu_overcommit": RATIO, "memory_overcommit": 1.0},
        "simulation": {"step": "5 min", "horizon": "10 min", "seed": 1},
    })
    ctx = build_context(resolve(sc))
    place_vms(ctx)
    return np.bincount(ctx.vms.host, minlength=3), float(ctx.hosts.cores[0] * sc.placement.cpu_overcommit)


def test_a_plan_and_a_scenario_give_the_same_host_the_same_vcpu_room():
    # Same host, same ratio 1.5. Per physical core: 4 cores x 1.5 = 6 vCPUs per host, in the scenario
    # (engine: hosts.cores x placement.cpu_overcommit) and in the plan (qos.vcpus_per_core x cores).
    # The old plan rule, 1.5 per logical CPU, would have allowed 8 x 1.5 = 12.
    # Twelve 1-vCPU VMs of 1 GiB at 100 MHz (memory and CPU demand far from binding):
    # first-fit in the scenario -> 6 + 6 + 0 on 3 hosts; the plan -> 2 hosts of 6 VMs.
    per_host, scenario_cap = _scenario_vms_per_host()
    assert scenario_cap == 6.0
    assert per_host.tolist() == [6, 6, 0]

    spec = PlanSpec.model_validate({"policy": "first-fit-decreasing", "qos": {"vcpus_per_core": RATIO},
                                    "candidates": [{"name": "c", "cpu": CPU, "memory": "64 GiB", "power": POWER,
                                                    "price_usd": 1000}]})
    assert vcpu_capacity(host_type_of(spec.candidates[0]), spec.qos) == scenario_cap
    inv = build_inventory([f"v{i}" for i in range(N_VMS)], [1] * N_VMS, [2000.0] * N_VMS, [2**30] * N_VMS,
                          cpu_mhz=np.full((4, N_VMS), 100.0))
    r = plan(inv, spec).results[0]
    assert r.feasible, r.reason
    assert r.n_hosts_packed == 2
    assert np.bincount(r.host_of_vm).tolist() == [6, 6]


def test_the_default_keeps_the_old_capacity_on_smt2_hosts():
    # old default: 8 vCPUs per logical CPU; an SMT-2 host of 4 cores has 8 logical CPUs -> 64 vCPUs.
    # new default: 16 vCPUs per physical core x 4 cores -> 64 vCPUs, the same.
    spec = PlanSpec.model_validate({"candidates": [{"name": "c", "cpu": CPU, "memory": "64 GiB", "power": POWER,
                                                    "price_usd": 1000}]})
    assert spec.qos.vcpus_per_core == 16.0
    assert vcpu_capacity(host_type_of(spec.candidates[0]), spec.qos) == 64.0


OLD_8 = ("qos.cpu_overcommit: no longer read: it counted vCPUs per logical CPU; write qos.vcpus_per_core instead "
         "(vCPUs per physical core, as a scenario's placement.cpu_overcommit counts them) = the old value x threads "
         "per core (here 8 per logical CPU on SMT-2 hosts = qos.vcpus_per_core: 16; without SMT 8)")


def _write(path, doc):
    doc = {**doc, "candidates": [{"name": "c", "cpu": CPU, "memory": "64 GiB", "power": POWER, "price_usd": 1000}]}
    path.write_text(yaml.safe_dump(doc))
    return path


def _old_file(tmp_path, value=8):
    return _write(tmp_path / f"old-{value}.yaml", {"qos": {"cpu_ready_pct": 5.0, "cpu_overcommit": value}})


def test_the_old_per_logical_cpu_field_is_refused_with_the_translation(tmp_path):
    f = _old_file(tmp_path)
    with pytest.raises(ScenarioInvalid) as exc:
        load_plan_spec(f)
    assert isinstance(exc.value, InputError)
    assert str(exc.value) == f"{f}:{OLD_8}"
    # with the new field beside it, the old one is still refused (never one of them ignored)
    with pytest.raises(ScenarioInvalid, match=r"qos\.cpu_overcommit: no longer read"):
        load_plan_spec(_write(tmp_path / "both.yaml", {"qos": {"cpu_overcommit": 8, "vcpus_per_core": 16}}))
    # a value that is not a number still gets the general translation
    with pytest.raises(ScenarioInvalid) as exc:
        load_plan_spec(_old_file(tmp_path, "lots"))
    assert "(e.g. 8 per logical CPU on SMT-2 hosts = qos.vcpus_per_core: 16)" in str(exc.value)


def test_densim_plan_refuses_an_old_candidates_file_in_one_line(tmp_path):
    inv = write_generic_csv(tmp_path / "w.csv", small_workload())
    f = _old_file(tmp_path, 4)
    r = CliRunner().invoke(app, ["plan", str(inv), "-c", str(f), "-o", str(tmp_path / "out")])
    assert r.exit_code == 1, r.output
    text = r.stderr if r.stderr else r.output
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert "Traceback" not in text and len(lines) == 1, lines
    assert lines[0] == (f"densim: error: {f}:qos.cpu_overcommit: no longer read: it counted vCPUs per logical CPU; write "
                        "qos.vcpus_per_core instead (vCPUs per physical core, as a scenario's placement.cpu_overcommit "
                        "counts them) = the old value x threads per core (here 4 per logical CPU on SMT-2 hosts = "
                        "qos.vcpus_per_core: 8; without SMT 4)")
    assert not (tmp_path / "out" / "summary.json").exists()
