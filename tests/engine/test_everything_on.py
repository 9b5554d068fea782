"""examples/combined/everything-on.yaml: every engine feature at once (issue 28), with the invariants
of the composability test and the energy balance checked on the whole run."""

from __future__ import annotations

import numpy as np
import pytest

from densim.engine import simulate
from densim.placement import timeline as TL
from densim.plant import resolve
from densim.spec.loader import load_scenario, scenario_from_dict
from tests.engine.test_composability import check_invariants

EXAMPLE = "examples/combined/everything-on.yaml"
FEATURES = ("memory", "storage", "virtualization", "carbon", "lifetimes", "failures", "migration")


def _scenario(**placement):
    sc = load_scenario(EXAMPLE)
    if not placement:
        return sc
    d = sc.model_dump(by_alias=True, exclude_unset=True, mode="json")
    d["placement"].update(placement)
    return scenario_from_dict(d, base_dir=".")


@pytest.fixture(scope="module")
def run():
    return simulate(resolve(_scenario()))


def test_every_feature_is_on(run):
    s = run.summary
    for section in ("memory", "storage", "virtualization", "carbon", "failures", "migration"):
        assert section in s, section
    assert run.ctx.liveness is not None and run.ctx.failures is not None and run.ctx.moves is not None
    assert s["failures"]["restarts"] > 0 and s["migration"]["migrations"] > 0
    # the balancer's checks every 15 min from the start over 8 h: 31 (the 32nd would be at the horizon); its moves and
    # the maintenance evacuation's are migrations of the one timeline
    m = s["migration"]
    assert m["balance_checks"] == 31 and m["by_reason"]["balance"] > 0 and m["by_reason"]["maintenance"] > 0
    assert m["imbalance_last"] < m["imbalance_first"]
    assert s["memory"]["vms_slowed"] > 0  # over-commit 1.5 makes the hosts swap to the RAID 5


def test_invariants(run):
    check_invariants(run, FEATURES)


def test_energy_is_cpu_plus_storage_power_integrated(run):
    # energy_j is the hosts' power (CPU model + the drives and controllers the storage stage adds)
    # integrated over the steps; the float32 host series gives it to 1e-6
    power = np.asarray(run.host_acc.series["power_w"], dtype=np.float64)
    assert run.summary["totals"]["energy_j"] == pytest.approx(power.sum() * run.ctx.grid.step_s, rel=1e-6)
    drives = run.ctx.stages["storage"]
    assert drives is not None
    # carbon reads the same energy: operational kg = kWh x 300 g / 1000
    c = run.summary["carbon"]
    assert c["operational_kg"] == pytest.approx(run.summary["totals"]["energy_kwh"] * 0.3, rel=1e-6)  # float32 power per step


def test_every_migration_lands_on_a_host_up_and_not_in_maintenance(run):
    mig = run.ctx.moves.mig
    landed = mig[mig[:, TL.M_STATUS] == TL.M_LANDED]
    evac = landed[landed[:, TL.M_EVENT] >= 0]  # the maintenance evacuation's (the balancer's have events < 0)
    assert evac.shape[0] == run.summary["migration"]["evacuations"][0]["vms"]
    f = run.ctx.failures
    a0 = list(run.ctx.hosts.names).index("a-0")
    maint_at = run.ctx.grid.start_s + 5 * 3600
    for dst, start, t in zip(landed[:, TL.M_DST].astype(int), landed[:, TL.M_START], landed[:, TL.M_END]):
        assert not np.any((f.down_host == dst) & (f.down_start_s <= t) & (t < f.down_end_s))
        assert not (dst == a0 and (start >= maint_at or t >= maint_at))  # nothing goes to a-0 once in maintenance


def test_no_host_over_capacity_at_overcommit_one():
    r = simulate(resolve(_scenario(cpu_overcommit=1.0, memory_overcommit=1.0)))
    check_invariants(r, FEATURES)  # includes: utilisation <= 1 in every step at CPU over-commit 1
    # and no host holds more configured memory than it has at any instant (liveness peaks)
    assert np.all(r.mem_per_host <= r.ctx.hosts.mem_bytes * (1 + 1e-12))
