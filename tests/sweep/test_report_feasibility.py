"""The sweep report never rewards leaving VMs out: a point that leaves VMs unplaced is infeasible,
listed after the feasible ones, marked, and never the answer. Also: readable labels and the Student t."""

import math
import re
from pathlib import Path

import pytest

from conftest import write_study
from densim.tools.sweep import load_sweep, run_sweep
from densim.tools.sweep.report import answer, field_label, figures, mean_ci, render, report_context, t95

# ---------------------------------------------------------------------------------------------
# Student t from scipy, not a hand-typed table that falls back to 1.96


def test_t95_is_the_student_t_quantile_at_every_df():
    assert math.isclose(t95(1), 12.706, abs_tol=5e-4)
    assert math.isclose(t95(40), 2.021, abs_tol=5e-4)  # the old table gave the normal 1.96: 3 % narrow
    assert t95(1000) > 1.96
    # 41 replications 0, 1, 0, 1, ...: mean 20/41, sd s; half-width t(0.975, 40) s / sqrt(41), not 1.96 s / sqrt(41)
    xs = [float(i % 2) for i in range(41)]
    m, ci, n = mean_ci(xs)
    s = math.sqrt(sum((x - m) ** 2 for x in xs) / 40)
    assert n == 41 and math.isclose(ci, 2.021075 * s / math.sqrt(41), rel_tol=1e-5)


# ---------------------------------------------------------------------------------------------
# field path -> readable label with unit


@pytest.mark.parametrize(("path", "label"), [
    ("totals.energy_kwh", "energy (kWh)"),
    ("cluster.hosts[0].count", "hosts (group 0)"),
    ("cluster.hosts[2].count", "hosts (group 2)"),
    ("vms[1].count", "VMs (group 1)"),
    ("placement.cpu_overcommit", "CPU over-commit"),
    ("qos.cpu_ready_pct_worst_vm_mean", "CPU Ready of the worst VM (%)"),
    ("vms_unplaced", "VMs unplaced"),
    # fallbacks: underscores to spaces, a unit suffix to '(unit)', the parent as context
    ("memory.worst_vm_slowdown", "worst vm slowdown (memory)"),
    ("scheduling.boot_energy_j", "boot energy (J) (scheduling)"),
    ("cluster.hosts[1].memory", "memory (host group 1)"),
    ("mean_host_load", "mean host load"),
])
def test_field_label(path, label):
    assert field_label(path) == label


# ---------------------------------------------------------------------------------------------
# a hand-built sweep: over-commit 1.0 uses the least energy only because it leaves 54 VMs out

AXES = ["placement.cpu_overcommit", "cluster.hosts[0].count"]


def _point(pid, oc, hosts, energy, unplaced):
    return {"id": pid, "values": {AXES[0]: oc, AXES[1]: hosts}, "replications": 2,
            "stats": {"totals.energy_kwh": (energy, 0.5, 2), "hosts_used": (float(hosts), 0.0, 2)},
            "unplaced": (unplaced, unplaced), "feasible": unplaced == 0}


DATA = {"axes": AXES, "metrics": ["totals.energy_kwh", "hosts_used"], "checked": True, "points": [
    _point("p1", 1.0, 12, 100.0, 54),  # least energy: 54 VMs left out
    _point("p2", 1.5, 12, 130.0, 0),
    _point("p3", 2.0, 12, 120.0, 0),   # the answer: least energy among the points that place every VM
]}
MAN = {"study": "oc", "root_seed": 7, "scenarios": DATA["points"], "replications": 2, "tasks": [{"done": True}] * 6,
       "seeds": [1, 2]}


def test_answer_is_the_best_feasible_point_never_one_that_leaves_vms_out():
    a = answer(DATA)
    assert a["best"] == "p3"
    assert a["text"].startswith("Lowest energy (kWh) among the settings that place every VM: 120 ± 0.5 at "
                                "CPU over-commit = 2.0, hosts (group 0) = 12 (scenario p3). There: hosts used 12. "
                                "The study sets no QoS bounds")
    assert a["excluded"] == [{"id": "p1", "setting": "CPU over-commit = 1.0, hosts (group 0) = 12",
                              "mark": "infeasible: 54 VMs unplaced"}]


def test_no_feasible_point_names_the_nearest_and_no_best():
    data = {**DATA, "points": [_point("p1", 1.0, 12, 100.0, 54), _point("p2", 0.5, 12, 90.0, 300)]}
    a = answer(data)
    assert a["best"] is None
    assert "No setting places every VM" in a["text"] and "p1" in a["text"] and "54 VMs unplaced" in a["text"]


def test_table_lists_infeasible_points_last_and_marginals_leave_them_out():
    ctx = report_context(MAN, DATA, [])
    assert [p["id"] for p in ctx["points"]] == ["p2", "p3", "p1"]
    assert ctx["points"][-1]["mark"] == "infeasible: 54 VMs unplaced" and not ctx["points"][-1]["feasible"]
    assert ctx["axis_labels"] == ["CPU over-commit", "hosts (group 0)"]
    assert ctx["metric_labels"] == ["energy (kWh)", "hosts used"]
    by_oc = ctx["marginals"][0]
    assert [lv["label"] for lv in by_oc["levels"]] == ["1.5", "2.0", "1.0"]  # the infeasible level last
    assert by_oc["levels"][-1]["means"] == [None, None] and "infeasible" in by_oc["levels"][-1]["mark"]
    # by host count (one level, 12): mean energy over the feasible points only: (130 + 120) / 2 = 125, not 350 / 3
    assert ctx["marginals"][1]["levels"][0]["means"][0] == 125.0
    assert ctx["marginals"][1]["levels"][0]["excluded"] == 1


def test_plots_have_readable_axes_legends_and_mark_infeasible_points():
    fig = figures(DATA)[0]
    assert fig.layout.xaxis.title.text == "CPU over-commit"
    assert fig.layout.yaxis.title.text == "energy (kWh)"
    line, mark = fig.data
    assert line.name == "hosts (group 0) = 12"
    # the line leaves out over-commit 1.0 (54 VMs unplaced): it never dips to its 100 kWh
    assert list(line.x) == ["1.0", "1.5", "2.0"] and list(line.y) == [None, 130.0, 120.0]
    assert mark.name == "✕ infeasible: leaves VMs unplaced" and mark.marker.symbol == "x"
    assert list(mark.x) == ["1.0"] and list(mark.y) == [100.0] and list(mark.text) == ["infeasible"]
    assert list(mark.hovertext) == ["hosts (group 0) = 12: infeasible: 54 VMs unplaced"]


# ---------------------------------------------------------------------------------------------
# end to end with the engine: 2 hosts of 8 cores, 8 VMs of 4 vCPUs
#   over-commit 0.5: 4 vCPUs per host -> 1 VM each -> 2 placed, 6 unplaced (least energy: only 2 VMs run)
#   over-commit 1.0: 8 vCPUs per host -> 2 VMs each -> 4 placed, 4 unplaced
#   over-commit 2.0: 16 vCPUs per host -> 4 VMs each -> all 8 placed: the only feasible setting

BASE = """\
name: tiny
cluster:
  hosts:
    - count: 2
      cpu: {cores_per_socket: 8, base_clock: 2 GHz}
      memory: 64 GiB
      power: {model: linear, idle: 100 W, peak: 250 W}
vms:
  - name: web
    count: 8
    vcpus: 4
    vcpu_speed: 2 GHz
    memory: 4 GiB
    profile: {kind: constant, mean: 0.3}
simulation: {step: 5 min, horizon: 30 min}
"""


def _text(html: str) -> str:
    html = re.sub(r"<script.*?</script>", "", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_engine_sweep_report_answers_first_and_never_rewards_unplaced_vms(tmp_path: Path):
    (tmp_path / "base.yaml").write_text(BASE)
    (tmp_path / "study.yaml").write_text("name: oc\nscenario: base.yaml\nseed: 7\nreplications: 1\nrunner: engine\n"
                                         "axes:\n  placement.cpu_overcommit: [0.5, 1.0, 2.0]\n")
    run_sweep(load_sweep(tmp_path / "study.yaml"), out=tmp_path / "results", backend="inprocess")
    text = _text(render(tmp_path / "results" / "oc").read_text())
    assert text.index("Answer") < text.index("Every scenario")
    assert "Lowest energy (kWh) among the settings that place every VM" in text
    assert "at CPU over-commit = 2.0" in text
    assert "CPU over-commit = 0.5: infeasible: 6 VMs unplaced" in text
    assert "CPU over-commit = 1.0: infeasible: 4 VMs unplaced" in text
    table = text[text.index("Every scenario"):text.index("Mean over the other axes")]
    # feasible row first, then the infeasible ones in sweep order
    assert table.index(" 2.0 ") < table.index(" 0.5 ") < table.index(" 1.0 ")
    assert "placement.cpu_overcommit" not in table and "totals.energy_kwh" not in table


def test_a_runner_without_vms_unplaced_says_feasibility_is_not_checked(tmp_path, toy_env):
    study = write_study(tmp_path, reps=1)
    run_sweep(load_sweep(study), out=tmp_path / "results", backend="inprocess")
    text = _text(render(tmp_path / "results" / "toy").read_text())
    assert "not checked for unplaced VMs" in text
    assert "hosts (group 0)" in text
