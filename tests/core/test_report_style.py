"""One visual style for every report (issue 17): each figure of the run, plan, study, sweep and forecast
reports carries the densim plotly template (font, colours, gridlines, y axes from 0), and study and sweep
reports open in a real browser (Debian's Chromium through Playwright) without errors, at most 1,400 px wide,
with every figure drawn at its full height."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from densim.reports.style import COLORWAY, FONT_FAMILY, TEMPLATE, style_figure, styled

from ..browser import open_report

ROOT = Path(__file__).resolve().parents[2]
WIDTH = 1400


def _layouts(html: str) -> list[dict]:
    """The layout argument of every ``Plotly.newPlot(id, data, layout, config)`` call of a report."""
    dec = json.JSONDecoder()
    out = []
    for m in re.finditer(r"Plotly\.newPlot\(", html):
        i = m.end()
        for _ in range(2):  # skip the element id and the data
            _, i = dec.raw_decode(html, i)
            i = html.index(",", i) + 1
            while html[i] == " ":
                i += 1
        layout, _ = dec.raw_decode(html, i)
        out.append(layout)
    return out


def test_styled_replaces_plotly_default_template_and_keeps_the_figures_own_settings():
    import plotly.graph_objects as go

    fig = go.Figure(go.Scatter(x=[1, 2], y=[0, 0]))
    fig.update_layout(title="t", yaxis_range=[0, 7])
    lay = styled(json.loads(fig.to_json())["layout"])
    assert lay["template"] == TEMPLATE  # plotly's own "plotly" template (blue-grey plot area) is gone
    assert lay["yaxis"]["range"] == [0, 7]  # a figure's explicit range wins over the template
    assert TEMPLATE["layout"]["yaxis"]["rangemode"] == "tozero"  # an all-zero series: 0..1, not -1..1
    assert style_figure({"data": [], "layout": {}})["layout"]["template"]["layout"]["colorway"] == COLORWAY


def test_run_plan_and_forecast_figures_carry_the_one_template(tmp_path):
    from typer.testing import CliRunner

    from densim.builtin import builtin_path
    from densim.cli.main import app
    from densim.engine import simulate
    from densim.plant import resolve
    from densim.spec import load_scenario
    from densim.tools.run import write_run

    from ..planning.fixtures import small_workload, write_generic_csv

    write_run(simulate(resolve(load_scenario(builtin_path("demo.yaml")))), tmp_path / "run")
    inv = write_generic_csv(tmp_path / "w.csv", small_workload(6, 50))
    cli = CliRunner()
    r = cli.invoke(app, ["plan", str(inv), "-c", str(ROOT / "examples" / "planning" / "candidates.yaml"), "-o", str(tmp_path / "plan"),
                         "--quiet"])
    assert r.exit_code == 0, r.output
    f = cli.invoke(app, ["forecast", str(ROOT / "examples" / "forecast" / "cluster-history.csv"), "--spec",
                         str(ROOT / "examples" / "forecast" / "forecast.yaml"), "--out", str(tmp_path / "forecast"), "--quiet"])
    assert f.exit_code == 0, f.output
    for kind, n in (("run", 3), ("plan", 4), ("forecast", 2)):
        html = (tmp_path / kind / "report.html").read_text()
        layouts = _layouts(html)
        assert len(layouts) == n, kind
        assert all(lay["template"] == TEMPLATE for lay in layouts), kind
        assert f"font-family: {FONT_FAMILY};" in html  # the page's CSS font and the figures' font are one stack


def _study_report(out: Path) -> Path:
    from densim.tools.studies.base import all_studies
    from densim.tools.studies.runner import run_study

    run_study(all_studies()["val-optane-p4800x"], out)  # an M/M/1-style queue curve against AnandTech's two points
    return out / "report.html"


def _sweep_report(tmp: Path) -> Path:
    from densim.tools.sweep import load_sweep, run_sweep
    from densim.tools.sweep.report import render as render_sweep

    study = tmp / "style.yaml"
    study.write_text(f"name: style\nscenario: {ROOT / 'examples' / 'sweeps' / 'base-web.yaml'}\nseed: 7\nreplications: 2\n"
                     "axes:\n  placement.cpu_overcommit: [1.0, 2.0]\n  cluster.hosts[0].count: [12, 20]\n")
    res = run_sweep(load_sweep(study), out=tmp / "results", backend="inprocess")
    assert res.ok and res.done == 8
    return render_sweep(tmp / "results" / "style")


def test_study_and_sweep_figures_carry_the_one_template(tmp_path):
    for html in (_study_report(tmp_path / "study"), _sweep_report(tmp_path)):
        layouts = _layouts(html.read_text())
        assert layouts and all(lay["template"] == TEMPLATE for lay in layouts)


@pytest.mark.browser
@pytest.mark.parametrize("kind", ["study", "sweep"])
def test_study_and_sweep_reports_in_a_browser_fit_1400_px(tmp_path, kind):
    html = _study_report(tmp_path / "study") if kind == "study" else _sweep_report(tmp_path)
    page = open_report(html, ".js-plotly-plot .main-svg", width=WIDTH)
    assert page.errors == []
    assert page.page_width <= WIDTH
    assert page.plots >= 1
    # a figure without its own height fills its div; a padded div once collapsed them to a few px
    assert min(page.plot_heights) >= 300, page.plot_heights
