"""One renderer for every HTML report: the same base template, escaping, the plan's answer first,
and ``densim.reports`` below the tools in the layering."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from densim.tools.run import write_run
from densim.reports import render

from .helpers import const_vms, host, scenario

ROOT = Path(__file__).resolve().parents[2]
CANDIDATES = ROOT / "examples" / "planning" / "candidates.yaml"
EVIL = "<script>alert(1)</script>"
EVIL_ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


def _run_report(tmp: Path) -> str:
    from densim.engine import simulate
    from densim.plant import resolve

    sc = scenario([host(count=1)], [const_vms(EVIL, 2, 1, 2000, 0.5), const_vms("big", 1, 64, 2000, 0.5)])
    sc = sc.model_copy(update={"name": f"run {EVIL}"})
    write_run(simulate(resolve(sc)), tmp / "run")
    return (tmp / "run" / "report.html").read_text()


def _plan(tmp: Path, *, feasible: bool = True) -> str:
    from densim.tools.plan.capacity import load_plan_spec, plan
    from densim.tools.plan.report import write_outputs
    from densim.workloads.formats import load_inventory

    from ..planning.fixtures import small_workload, write_generic_csv

    spec = load_plan_spec(CANDIDATES)
    cands = [c.model_copy(update={"name": f"{c.name} {EVIL}"} | ({} if feasible else {"memory_bytes": 2**30}))
             for c in spec.candidates]
    inv = load_inventory(write_generic_csv(tmp / "w.csv", small_workload(6, 12)))
    out = tmp / ("plan" if feasible else "plan-none")
    write_outputs(plan(inv, spec.model_copy(update={"candidates": cands})), out, seed=3)
    return (out / "report.html").read_text()


def _sweep(tmp: Path) -> str:
    from densim.tools.sweep import load_sweep, run_sweep
    from densim.tools.sweep.report import render as render_sweep

    (tmp / "base.yaml").write_text(
        "name: tiny\ncluster:\n  hosts:\n    - count: 2\n      cpu: {cores_per_socket: 8, base_clock: 2 GHz}\n"
        "      memory: 64 GiB\n      power: {model: linear, idle: 100 W, peak: 250 W}\n"
        "vms:\n  - name: web\n    count: 4\n    vcpus: 2\n    vcpu_speed: 2 GHz\n    memory: 4 GiB\n"
        "    profile: {kind: constant, mean: 0.3}\nsimulation: {step: 5 min, horizon: 30 min}\n")
    (tmp / "study.yaml").write_text(
        f"name: toy\ndescription: '{EVIL}'\nscenario: base.yaml\nseed: 7\nreplications: 1\nrunner: engine\n"
        "axes:\n  placement.cpu_overcommit: [0.5, 1.0]\n")
    run_sweep(load_sweep(tmp / "study.yaml"), out=tmp / "results", backend="inprocess")
    return render_sweep(tmp / "results" / "toy").read_text()


def _study(tmp: Path) -> str:
    from densim.tools.studies.base import all_studies
    from densim.tools.studies.runner import run_study

    run_study(all_studies()["boot-drive"], tmp / "study", 42)
    return (tmp / "study" / "report.html").read_text()


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("reports")
    return {"run": _run_report(tmp), "plan": _plan(tmp), "sweep": _sweep(tmp), "study": _study(tmp)}


def _style(html: str) -> str:
    return re.search(r'<style id="densim-style">(.*?)</style>', html, re.S).group(1)


def test_every_report_extends_the_one_base_template(reports):
    import densim

    styles = {kind: _style(html) for kind, html in reports.items()}
    assert len(set(styles.values())) == 1  # one CSS block, the same in every report
    for kind, html in reports.items():
        assert html.count("<style") == 1, kind  # no report brings a style of its own
        assert f'<meta name="generator" content="densim {densim.__version__}">' in html, kind
        assert f'<body class="densim-report report-{kind}">' in html, kind
        assert html.count("<footer") == 1 and f"{kind} report" in html, kind
        # plotly.js loaded once in <head> from plotly.min.js beside the report (not embedded: issue 31),
        # one Plotly.newPlot per figure placeholder
        head = html[:html.index("</head>")]
        assert head.count('<script src="plotly.min.js"></script>') == html.count("<script src=") == 1, kind
        assert "plotly.js v" not in html, kind
        n_figs = len(re.findall(r'<div id="fig[^"]*" class="fig"></div>', html))
        assert n_figs > 0 and html.count("Plotly.newPlot(") == n_figs, kind


def test_names_from_the_inputs_are_escaped(reports):
    for kind in ("run", "plan", "sweep"):
        html = reports[kind]
        assert EVIL_ESCAPED in html, kind
        assert "<script>alert" not in html, kind  # neither in the text nor in the figures' JSON


def test_plan_report_gives_its_answer_before_any_detail_table(reports):
    html = reports["plan"]
    answer = html.index('id="answer"')
    assert answer < html.index("<table") and answer < html.index("<h2")
    lead = html[answer:html.index("</section>", answer)]
    assert "Buy " in lead and "USD per VM-year" in lead and "capex per host" in lead and "Limiting resource" in lead
    assert EVIL_ESCAPED in lead  # which hosts: the candidate's name, escaped


def test_plan_answer_matches_the_summary(tmp_path):
    import json

    html = _plan(tmp_path)
    best = json.loads((tmp_path / "plan" / "summary.json").read_text())["ranking"][0]
    assert best["feasible"]
    lead = html[html.index('id="answer"'):html.index("</section>")]
    assert f"Buy {best['hosts']} x " in lead
    assert f"{best['tco_per_vm_year_usd']:,.0f} USD per VM-year" in lead
    assert f"{best['host_capex_usd']:,.0f} USD" in lead


def test_plan_with_no_feasible_candidate_says_so_first(tmp_path):
    html = _plan(tmp_path, feasible=False)
    answer = html.index('id="answer"')
    assert answer < html.index("<table")
    assert "No candidate meets every bound" in html[answer:html.index("</section>", answer)]
    assert html.index('class="infeasible"') < html.index("<table")
    assert "Plotly.newPlot" not in html and "plotly.js v" not in html  # no figures, no plotly.js


def test_figure_json_cannot_close_the_script_element():
    fig = {"data": [{"type": "bar", "x": ["</script><b>x</b>"], "y": [1]}], "layout": {"title": {"text": EVIL}}}
    html = render("sweep.html.j2", figures={"fig-0": fig}, title="t", n_scenarios=0, replications=1, n_tasks=0,
                  done=0, root_seed=0, seeds="[]", axes=[], metrics=[], points=[], marginals=[], figure_ids=["fig-0"],
                  answer={"text": "", "best": None, "excluded": []}, checked=True, n_infeasible=0, axis_labels=[],
                  metric_labels=[])
    body = html[html.index("</head>"):]
    assert "</script><b>" not in body and EVIL not in body
    assert body.count("<script>") == 1 and "Plotly.newPlot(\"fig-0\"" in body


def test_reports_package_imports_only_foundations():
    code = ("import sys, densim.reports\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('jinja2', 'plotly') "
            "or m.startswith(('densim.tools', 'densim.engine', 'densim.cli')))\n"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""
    for py in (ROOT / "src" / "densim" / "reports").rglob("*.py"):
        text = py.read_text()
        assert not re.search(r"^\s*(from|import) densim\.(tools|engine|cli)\b", text, re.M), py


def test_no_html_is_built_in_python_outside_the_templates():
    tag = re.compile(r"<(table|thead|tbody|tr|td|th|div|h[1-6]|p|ul|li|span|b|code|html|body|style)[\s>]")
    offenders = [f"{py.relative_to(ROOT)}:{i}" for py in (ROOT / "src").rglob("*.py")
                 for i, line in enumerate(py.read_text().splitlines(), 1) if tag.search(line)]
    assert offenders == []
