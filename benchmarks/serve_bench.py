"""``densim serve`` latency: from a control change in the browser to the updated headline.

The PlanetLab day (examples/planetlab.yaml: 10,000 VMs of 2 vCPUs on 1,000 hosts, 288 steps of
5 min) served by a real uvicorn server in this process (as ``densim serve`` runs it) and driven by
Debian's Chromium through Playwright. Each change types a new memory over-commit (or ``--field``: a scenario not run
before: a cache miss, so the engine runs) and waits until the pane's headline shows that run. The
time includes the page's 120 ms debounce, validation and resolving, the engine, building the plots
and tables and drawing them. Then ``--back`` changes return to values already run (cache hits).

    python benchmarks/serve_bench.py [--changes 20] [--back 5] [--scenario examples/planetlab.yaml] [--field placement.cpu_overcommit]

Prints one JSON line: first page load, then median and 95th percentile of the change latencies.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def pct(xs: list[float], q: float) -> float:
    """The q-quantile, linear between order statistics (numpy's default)."""
    import numpy as np

    return float(np.quantile(np.asarray(xs), q))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", type=Path, default=REPO / "examples" / "planetlab.yaml")
    ap.add_argument("--changes", type=int, default=20)
    ap.add_argument("--back", type=int, default=5)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--field", default="placement.memory_overcommit", help="the control changed (values 1.05, 1.10, ...)")
    args = ap.parse_args()

    import uvicorn
    from playwright.sync_api import sync_playwright

    from densim.tools.serve.app import create_app
    from densim.tools.serve.sources import Sources, scenario_source

    import tempfile

    out = Path(tempfile.mkdtemp(prefix="densim-serve-bench-"))
    app = create_app(Sources([scenario_source(args.scenario, "given", args.scenario.name, "given")]), out)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=args.port, log_level="warning"))
    th = threading.Thread(target=server.run, daemon=True)
    th.start()
    while not server.started:
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    runs = app.state.runs

    sel = f'#pane-a [data-path="{args.field}"]'
    head = "#pane-a .headline"
    wait_js = "([sel, k]) => { const h = document.querySelector(sel); return h.dataset.key && h.dataset.key !== k; }"
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.set_default_timeout(300_000)
        t0 = time.perf_counter()
        page.goto(url)
        page.wait_for_selector(f"{head}[data-key]:not([data-key=''])")
        first = time.perf_counter() - t0

        def change(text: str) -> dict:
            before = page.get_attribute(head, "data-key")
            t = time.perf_counter()
            page.fill(sel, text)
            page.wait_for_function(wait_js, arg=[head, before])
            dt = time.perf_counter() - t
            key = page.get_attribute(head, "data-key")
            job = runs.get(key)
            return {"value": text, "latency_s": dt, "engine_s": job.wall_s, "hosts_used": page.inner_text('#pane-a .card[data-metric="hosts_used"] .v')}

        values = [f"{1.0 + 0.05 * (i + 1):.2f}" for i in range(args.changes)]
        for v in values:
            rows.append(change(v))
        back = [change(v) for v in values[: args.back]]
        browser.close()
    server.should_exit = True
    th.join(timeout=10)
    lat = [r["latency_s"] for r in rows]
    eng = [r["engine_s"] for r in rows]
    res = {
        "field": args.field,
        "scenario": str(args.scenario.relative_to(REPO) if args.scenario.is_relative_to(REPO) else args.scenario),
        "load_avg_1m": os.getloadavg()[0],
        "first_load_s": round(first, 3),
        "changes": len(lat),
        "median_s": round(statistics.median(lat), 3),
        "p95_s": round(pct(lat, 0.95), 3),
        "max_s": round(max(lat), 3),
        "engine_median_s": round(statistics.median(eng), 3),
        "cached_median_s": round(statistics.median([r["latency_s"] for r in back]), 3) if back else None,
        "page_errors": errors,
        "hosts_used": sorted({r["hosts_used"] for r in rows}),
    }
    print(json.dumps(res))


if __name__ == "__main__":
    main()
