"""The FastAPI application of ``densim serve``.

Routes (all JSON unless said otherwise):

* ``GET /``: the page (jinja2 template); ``GET /static/...``: its script and style sheet, and
  plotly.js from the installed plotly package (the page works offline);
* ``GET /api/sources``, ``GET /api/sources/{id}``: what the page can start from and its controls;
* ``POST /api/run`` ``{source, edits: {field path: text}, slot}``: validate and start (or find in the
  cache) a run; a bad value answers 422 with the CLI's message per field;
* ``GET /api/runs/{key}``: state, progress and, when done, headline, plots and tables;
* ``GET /api/runs/{key}/scenario.yaml``: the scenario on screen; ``GET /api/runs/{key}/files/{name}``:
  its ``summary.json``, Parquet tables and ``report.html`` (written to the output folder on first request);
* ``GET /api/diff?a=KEY&b=KEY``: the fields and headline figures in which two runs differ, and a warning
  when either run leaves VMs unplaced (:func:`densim.tools.serve.view.compare`).

Every request passes :class:`~densim.tools.serve.guard.LocalOnly` first (a foreign ``Host`` answers
421, a cross-site POST 403). A request the API cannot read, a control value out of bounds and a run
estimated above the memory limit (the ``check`` the CLI passes: ``densim run``'s ``--max-memory``
estimate) answer 422 with one line per problem, values quoted cut to 80 characters.

The server reads only the files its sources name and writes only under ``out``; a file name in a
download must be one of the run folder's own files (no paths).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field

from densim.errors import InputError, ScenarioInvalid
from densim.tools.serve.edits import ECHO_PATH, add_failures, apply_edits, controls, failure_request, field_errors
from densim.tools.serve.guard import LocalOnly, echo
from densim.tools.serve.runs import Runs
from densim.tools.serve.sources import Sources

HERE = Path(__file__).resolve().parent
KEY_RE = re.compile(r"^[0-9a-f]{64}$")


class RunRequest(BaseModel):
    source: str = Field(max_length=1000)
    # any JSON value per control: apply_edits refuses, naming the control, what is not a number or a short text
    edits: dict[str, Any] = Field(default_factory=dict, max_length=200)
    slot: str = Field(default="a", pattern=r"^[a-z0-9]{1,8}$")


def plotly_js_path() -> Path:
    import plotly

    return Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"


def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(node, dict):
        for k, v in node.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(node, list) and node and all(isinstance(v, dict) for v in node):
        for i, v in enumerate(node):
            out.update(_flatten(v, f"{prefix}[{i}]"))
    else:
        out[prefix] = node
    return out


def scenario_yaml(mapping: dict[str, Any], origin: str) -> str:
    """The mapping as a scenario file (imports are merged already, so the list is dropped)."""
    import yaml

    doc = {k: v for k, v in mapping.items() if k != "imports"}
    head = f"# densim serve: {origin} with the page's edits (imports merged, file paths absolute)\n"
    return head + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


def request_errors(exc: RequestValidationError) -> list[str]:
    """One line per problem of a request the API cannot read, the offending value cut to 80 characters."""
    lines = []
    for e in exc.errors()[:10]:
        where = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "request"
        line = f"{where}: {e.get('msg', 'invalid')}"
        if "input" in e and e.get("type") not in ("missing", "json_invalid"):
            line += f" (got {echo(e['input'])})"
        lines.append(line)
    return lines


def create_app(sources: Sources, out: str | Path, *, runs: Runs | None = None, check=None,
               allow_hosts: tuple[str, ...] = ()) -> FastAPI:
    """The application serving ``sources``; result files go under ``out`` only.

    ``check(plant, origin)`` runs after a scenario is resolved and before its run starts; it raises
    :class:`~densim.errors.InputError` to refuse the run (the CLI passes ``densim run``'s
    ``--max-memory`` estimate; None: no estimate). ``allow_hosts``: names besides the address the
    server is reached at that a request's ``Host`` may carry (:mod:`densim.tools.serve.guard`)."""
    import jinja2

    out = Path(out).resolve()
    runs = runs or Runs()
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(HERE / "templates")), autoescape=True)
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(_app):
        yield
        runs.shutdown()

    app = FastAPI(title="densim serve", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.runs = runs
    app.state.out = out
    app.add_middleware(LocalOnly, extra_hosts=allow_hosts)

    @app.exception_handler(RequestValidationError)
    async def unreadable(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"errors": {}, "general": request_errors(exc)}, status_code=422)
    app.mount("/static/app", StaticFiles(directory=str(HERE / "static")), name="static")

    def job_or_404(key: str, *, done: bool = False):
        job = runs.get(key) if KEY_RE.match(key) else None
        if job is None:
            raise HTTPException(404, "no such run (it may have left the cache: change a control to run it again)")
        if done and job.state != "done":
            raise HTTPException(409, f"the run is {job.state}")
        return job

    @app.get("/", response_class=HTMLResponse)
    def index() -> str:
        import densim

        return env.get_template("index.html.j2").render(version=densim.__version__, sources=sources.list(), first=sources.first.id)

    @app.get("/static/plotly.min.js")
    def plotly_js() -> FileResponse:
        return FileResponse(plotly_js_path(), media_type="text/javascript")

    @app.get("/api/sources")
    def list_sources() -> list[dict[str, str]]:
        return sources.list()

    @app.get("/api/sources/{sid:path}")
    def source(sid: str) -> dict[str, Any]:
        if sid not in sources:
            raise HTTPException(404, "no such source")
        s = sources[sid]
        return {**s.describe(), "origin": s.origin, "controls": controls(s.mapping)}

    @app.post("/api/run")
    def run(req: RunRequest) -> JSONResponse:
        if req.source not in sources:
            raise HTTPException(404, "no such source")
        src = sources[req.source]
        paths = [c["path"] for c in controls(src.mapping)]
        try:
            mapping = apply_edits(src.mapping, req.edits, src.origin)
            fail = failure_request(mapping, req.edits, src.origin)
            key, plant = runs.prepare(mapping, src.origin, src.base_dir)
            if check is not None:  # before anything sized by the scenario is built (add_failures builds the hosts)
                check(plant, src.origin)
            if fail is not None:  # the N largest hosts of the scenario as edited (resolved above: catalog only, cheap)
                mapping = add_failures(mapping, fail, plant, src.origin)
                key, plant = runs.prepare(mapping, src.origin, src.base_dir)
        except ScenarioInvalid as exc:
            fields, other = field_errors(exc, paths + [p for p in req.edits if len(p) <= ECHO_PATH])
            return JSONResponse({"errors": fields, "general": other}, status_code=422)
        except InputError as exc:  # the memory estimate, a trace that does not read: what `densim run` prints
            return JSONResponse({"errors": {}, "general": [exc.one_line()]}, status_code=422)
        job, cached, gen = runs.submit(key, plant, mapping, src.origin, req.slot)
        return JSONResponse({"key": key, "cached": cached, "generation": gen, **job.status()})

    @app.get("/api/runs/{key}")
    def status(key: str) -> dict[str, Any]:
        return job_or_404(key).status()

    @app.get("/api/runs/{key}/scenario.yaml")
    def download_yaml(key: str) -> Response:
        job = job_or_404(key)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(job.mapping.get("name") or "scenario"))[:80]
        return Response(scenario_yaml(job.mapping, job.origin), media_type="application/yaml",
                        headers={"Content-Disposition": f'attachment; filename="{name}.yaml"'})

    @app.get("/api/runs/{key}/files")
    def files(key: str) -> list[str]:
        folder = runs.write(job_or_404(key, done=True), out / "runs")
        return sorted(p.name for p in folder.iterdir() if p.is_file())

    @app.get("/api/runs/{key}/files/{name}")
    def file(key: str, name: str) -> FileResponse:
        folder = runs.write(job_or_404(key, done=True), out / "runs")
        own = {p.name: p for p in folder.iterdir() if p.is_file()}
        if name not in own:  # only the run folder's own files by their exact names: no paths, no '..'
            raise HTTPException(404, "no such result file")
        path = own[name].resolve()
        if path.parent != folder.resolve():  # a symbolic link out of the folder
            raise HTTPException(404, "no such result file")
        return FileResponse(path, filename=name)

    @app.get("/api/diff")
    def diff(a: str = Query(max_length=64), b: str = Query(max_length=64)) -> dict[str, Any]:
        ja, jb = job_or_404(a), job_or_404(b)
        fa, fb = _flatten({k: v for k, v in ja.mapping.items() if k != "imports"}), _flatten({k: v for k, v in jb.mapping.items() if k != "imports"})
        fields = [{"path": p, "a": fa.get(p), "b": fb.get(p)} for p in sorted(set(fa) | set(fb)) if fa.get(p) != fb.get(p)]
        cmp = {"headline": [], "warning": None}
        if ja.state == "done" and jb.state == "done":
            from densim.tools.serve.view import compare

            cmp = compare(ja.view, jb.view)  # a run that leaves VMs unplaced: a warning, not a bold improvement
        return {"fields": fields, **cmp}

    return app


def run_server(app: FastAPI, host: str, port: int, *, on_ready=None) -> None:
    """Serve ``app`` with uvicorn on ``host:port`` until interrupted; ``on_ready(url)`` once it listens."""
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    if on_ready is not None:
        import threading

        def wait() -> None:
            import time

            while not server.started and not server.should_exit:
                time.sleep(0.05)
            if server.started:
                bound = server.servers[0].sockets[0].getsockname()[1] if server.servers and server.servers[0].sockets else port
                on_ready(f"http://{host if ':' not in host else f'[{host}]'}:{bound}/")

        threading.Thread(target=wait, daemon=True).start()
    server.run()
