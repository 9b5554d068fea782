"""Reports load plotly.js from ``plotly.min.js`` beside them instead of embedding it (issue 31): a run
report was 4.8-5.3 MB, nearly all of it the 4.6 MB library; now it is its data only (well under 1 MB)
and still opens offline from disk (``file://``, a relative ``<script src>``)."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

from densim.reports import PLOTLY_JS, _plotly_js_path, render, write_report

from ..browser import open_report
from .helpers import const_vms, host, scenario

SWEEP_CTX = dict(title="t", n_scenarios=0, replications=1, n_tasks=0, done=0, root_seed=0, seeds="[]", axes=[], metrics=[],
                 points=[], marginals=[], figure_ids=["fig-0"], answer={"text": "", "best": None, "excluded": []},
                 checked=True, n_infeasible=0, axis_labels=[], metric_labels=[])
FIG = {"data": [{"type": "bar", "x": ["a", "b"], "y": [1, 2]}], "layout": {}}


def _run_report(folder: Path) -> Path:
    from densim.engine import simulate
    from densim.plant import resolve
    from densim.tools.run import write_run

    sc = scenario([host(count=2)], [const_vms("web", 4, 2, 2000, 0.5)])
    write_run(simulate(resolve(sc)), folder)
    return folder / "report.html"


def test_run_report_is_under_1_mb_and_loads_plotly_from_the_file_beside_it(tmp_path):
    html = _run_report(tmp_path / "run")
    text = html.read_text()
    assert html.stat().st_size < 1_000_000  # was ~4.8 MB with plotly.js inlined
    head = text[:text.index("</head>")]
    assert head.count(f'<script src="{PLOTLY_JS}"></script>') == 1
    assert "plotly.js v" not in text  # the library's banner: not embedded
    js = html.parent / PLOTLY_JS
    assert filecmp.cmp(js, _plotly_js_path(), shallow=False)  # plotly's own file, byte for byte
    assert js.stat().st_size > 1_000_000  # the library itself (about 4.6 MB), not a stub


def test_a_stale_plotly_file_is_replaced_and_a_report_without_figures_writes_none(tmp_path):
    (tmp_path / PLOTLY_JS).write_text("/* plotly.js v0.0.1 from an older densim */")
    write_report(tmp_path / "report.html", "sweep.html.j2", figures={"fig-0": FIG}, **SWEEP_CTX)
    assert filecmp.cmp(tmp_path / PLOTLY_JS, _plotly_js_path(), shallow=False)
    bare = tmp_path / "bare"
    write_report(bare / "report.html", "sweep.html.j2", figures={}, **SWEEP_CTX)
    assert (bare / "report.html").is_file() and not (bare / PLOTLY_JS).exists()
    assert "<script src=" not in (bare / "report.html").read_text()


def test_render_without_a_folder_still_embeds_plotly():
    # render() returns a string with no folder to put the file in: a self-contained page
    html = render("sweep.html.j2", figures={"fig-0": FIG}, **SWEEP_CTX)
    assert "plotly.js v" in html[:html.index("</head>")] and "<script src=" not in html


@pytest.mark.browser
def test_run_report_opened_from_disk_draws_its_figures(tmp_path):
    html = _run_report(tmp_path / "run")
    page = open_report(html, ".js-plotly-plot .main-svg")  # a file:// URL; no server, no network
    assert page.errors == []
    assert page.plots == 3  # utilisation and CPU Ready heatmaps, cluster power
