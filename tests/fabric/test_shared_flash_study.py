"""Validation: the shared-flash study against the published local-NVMe Terasort run."""

from __future__ import annotations

import pytest

from densim.tools.studies.shared_flash import PUBLISHED_STAGES_MIN, STUDY, fit_cpu_per_byte


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    return STUDY.run(tmp_path_factory.mktemp("shared-flash"), 7)


def _run(summary, variant, tenants):
    return next(r for r in summary["runs"] if r["variant"] == variant and r["tenants"] == tenants)


def test_local_stage_times_within_10_percent(summary):
    # This is the fit (cpu_per_byte per stage), so it must hold: 0.5, 3.5, 5.3 min and 9.3 min total.
    local = _run(summary, "local", 1)
    for sim_s, pub_min in zip(local["stage_runtimes_s"], PUBLISHED_STAGES_MIN):
        assert sim_s / 60 == pytest.approx(pub_min, rel=0.10)
    assert local["runtime_s"] / 60 == pytest.approx(9.3, rel=0.10)


def test_vm_cpu_shares_come_out_near_published(summary):
    # Calibration since issue 30: 14 task slots on 16 vCPUs (executor_cores, an estimate) and the guest costs were
    # changed until these came out near the published run; this pins that they still do.
    local = _run(summary, "local", 1)
    assert local["vm_cpu_busy"] == pytest.approx(0.85, abs=0.05)
    assert local["vm_iowait"] == pytest.approx(0.02, abs=0.02)


def test_summary_has_every_run_with_required_fields(summary):
    assert {(r["variant"], r["tenants"]) for r in summary["runs"]} == {
        (v, n) for v in ("local", "nvmeof-rdma", "nvmeof-hw-adapter", "iscsi-hdd") for n in (1, 2)
    }
    for r in summary["runs"]:
        assert {"variant", "tenants", "runtime_s", "stage_runtimes_s", "storage_mb_per_s"} <= set(r)
        assert sum(r["stage_runtimes_s"]) == pytest.approx(r["runtime_s"], rel=1e-9)
    assert summary["figures"] and summary["figures"][0]["data"]
    assert all({"name", "published", "simulated", "tolerance", "source", "passed"} <= set(h) for h in summary["headline"])


def test_variant_ordering_comes_out_of_the_model(summary):
    local = _run(summary, "local", 1)["runtime_s"]
    # NVMe-oF with one tenant is close to local (the fabric adds ~15 us to ~1 ms I/Os)
    for v in ("nvmeof-rdma", "nvmeof-hw-adapter"):
        assert _run(summary, v, 1)["runtime_s"] == pytest.approx(local, rel=0.05)
    # the iSCSI HDD SAN is clearly worse (HDD positioning per interleaved 1 MiB I/O)
    assert _run(summary, "iscsi-hdd", 1)["runtime_s"] > 1.5 * local
    # local clusters share nothing: a second tenant changes nothing
    assert _run(summary, "local", 2)["runtime_s"] == pytest.approx(local, rel=1e-9)
    # the JBOF holds 2 P4600 per attached server (the drives that left the servers): two 4-server
    # tenants get 16 drives, as many per server as local, so they stay CPU-bound and close to local
    two = _run(summary, "nvmeof-rdma", 2)
    assert two["runtime_s"] == pytest.approx(local, rel=0.05)
    assert two["stage_bottlenecks"] == ["cpu", "cpu", "cpu"]


def test_two_tenants_on_a_fixed_8_drive_target_saturate_the_drives():
    # what-if: both clusters on only 8 drives (the per-server target overridden by device_count 8):
    # the drives saturate in reduce-and-write, so both slow down, but by less than 2x because part
    # of the work is CPU-bound (guide §5.2: T'/T = 1 + f_io)
    from densim.plant.core import run_fabric
    from densim.spec.loader import scenario_from_dict
    from densim.tools.studies.shared_flash import run_variant, scenario_dict

    local = run_variant("local", 1)["runtime_s"]
    d = scenario_dict("nvmeof-rdma", 2)
    d["fabric"]["pools"][0]["device_count"] = 8
    res = run_fabric(scenario_from_dict(d))
    t = res.tenants[0]
    assert 1.1 * local < t["runtime_s"] < 2 * local
    assert t["stage_bottlenecks"][2] == "pool/drives"
    drives = next(c for c in res.components if c["component"] == "pool/drives")
    assert drives["capacity"] == 8


def test_fit_reproduces_the_catalog_costs():
    # Re-run the fit (coarse tolerance to stay quick) and compare with the stored profile.
    from densim.catalog.core import builtin_catalog

    stored = [float(str(s["cpu_per_byte"]).split()[0]) for s in builtin_catalog().raw("batch_profiles", "spark-terasort-1tb")["stages"]]
    fitted = fit_cpu_per_byte(rel_tol=1e-3)
    assert fitted == pytest.approx(stored, rel=3e-3)


def test_no_cpu_figure_counts_as_a_prediction(summary):
    # Issue 30: the published CPU figures are an internal reference run (not a readable publication), the VM figures
    # were reached by changing the mechanism, and the host figure is 96 x the calibrated VM busy / 112 threads.
    roles = {h["name"]: h["role"] for h in summary["headline"]}
    assert roles["local data-node VM CPU busy"] == roles["local data-node VM iowait"] == "calibration"
    assert roles["local host CPU busy"] == "arithmetic"
    assert "prediction" not in roles.values()
    host = next(h for h in summary["headline"] if h["name"] == "local host CPU busy")
    local = _run(summary, "local", 1)
    # the arithmetic the role names: the VMs' busy vCPUs over the host's logical CPUs, plus < 0.01 point of host stack
    assert host["simulated"] == pytest.approx(96 * local["vm_cpu_busy"] / 112, abs=1e-4)
    assert "why" in host and not host["passed"]  # the miss stays shown (73 % against 62 %)
