"""The maintainers' web page: a Starlette app over every server folder of the project.

Routes (bookmarkable): ``/``, ``/servers/NAME`` (build report), ``/servers/NAME/history``,
``/servers/NAME/search``, ``/servers/NAME/documents/PATH``, ``/servers/NAME/quality`` and
``/servers/NAME/build`` (POST starts a build; ``/servers/NAME/build/events`` streams it).
Pages are server-rendered HTML (Jinja2, autoescaped) with SVG charts; only the live build view
uses JavaScript. Requests pass :class:`Guard` first: loopback ``Host`` and ``Origin`` only
(403 otherwise), and the bearer token when one is set.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import secrets
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from docserve.catalog import FilterError
from docserve.http_guard import HostOriginGuard
from docserve.render import CharCounter
from jinja2 import Environment, FileSystemLoader, select_autoescape
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from docbuild.config import ConfigError
from docbuild.stages.snapshot import diff_snapshots, lake_location, list_snapshots
from docbuild.ui import charts
from docbuild.ui.builds import Builds
from docbuild.ui.servers import Project, Server, UnknownServer, headline
from docbuild.ui.views import BadRequest, document_view, run_playground
from docbuild.util.build_lock import BuildLocked

HERE = Path(__file__).parent
MAX_QUERY_STRING = 4096  # bytes of query string a page accepts
TOKEN_COOKIE = "docmcp_ui_token"


class Guard:
    """ASGI middleware: the HTTP server's Host/Origin rules, then the bearer token (header,
    cookie, or ``?token=`` once, which sets the cookie), then a bound on the query string."""

    def __init__(self, app: Any, token: str | None, allowed_hosts: list[str]) -> None:
        self.app = app
        self.token = token
        self.hosts = HostOriginGuard(app, allowed_hosts=allowed_hosts)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.hosts.refusal(scope)
        if refusal:
            await PlainTextResponse(f"403 Forbidden: {refusal}\n", 403)(scope, receive, send)
            return
        if len(scope.get("query_string", b"")) > MAX_QUERY_STRING:
            response = PlainTextResponse(
                f"400 Bad Request: the query string is over {MAX_QUERY_STRING} bytes\n", 400
            )
            await response(scope, receive, send)
            return
        if self.token:
            request = Request(scope)
            given = request.query_params.get("token")
            if given is not None and hmac.compare_digest(given, self.token):
                query = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
                target = request.url.path + ("?" + urlencode(query) if query else "")
                response = RedirectResponse(target, 303)
                response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict")
                await response(scope, receive, send)
                return
            bearer = request.headers.get("authorization", "")
            offered = bearer.removeprefix("Bearer ").strip() if bearer.startswith("Bearer ") else ""
            offered = offered or request.cookies.get(TOKEN_COOKIE, "")
            if not hmac.compare_digest(offered, self.token):
                await PlainTextResponse(
                    "401 Unauthorized: open this page once with ?token=YOUR_TOKEN "
                    "(the value of DOCMCP_UI_TOKEN), or send Authorization: Bearer YOUR_TOKEN\n",
                    401,
                )(scope, receive, send)
                return
        await self.app(scope, receive, send)


def when(stamp: object) -> str:
    """An ISO time or epoch seconds as ``YYYY-MM-DD HH:MM UTC``."""
    if isinstance(stamp, int | float):
        return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    text = str(stamp or "")
    return text.replace("T", " ")[:19] + (" UTC" if text else "")


def megabytes(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"


def make_templates(project_root: Path) -> Environment:
    """The page templates, HTML-escaped by default; ``here`` shows a path inside the project
    relative to it, and any other by its file name."""
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(["html", "svg"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )

    def here(path: object) -> str:
        target = Path(str(path))
        if target.is_relative_to(project_root):
            return target.relative_to(project_root).as_posix()
        return target.name

    env.filters.update(when=when, megabytes=megabytes, here=here)
    return env


class UI:
    """The pages, over one project's server folders."""

    def __init__(self, project_root: Path) -> None:
        self.project = Project(project_root)
        self.builds = Builds(project_root)
        self.templates = make_templates(project_root)
        self.form_token = secrets.token_urlsafe(24)  # a build is started by a POST carrying it

    def page(self, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = self.templates.get_template(name).render(**context)
        return HTMLResponse(html, status)

    def error(self, status: int, title: str, message: str) -> HTMLResponse:
        return self.page("error.html", status, title=title, message=message)

    def server_of(self, request: Request) -> Server:
        return self.project.server(request.path_params["name"])

    # -- pages ---------------------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        rows = []
        for name in self.project.names():
            server = self.project.server(name)
            try:
                info = server.info()
            except Exception as exc:  # one unreadable database must not hide the others
                info, problem = None, f"database unreadable: {exc}"
            else:
                problem = None if info else "not built yet"
            rows.append(
                {
                    "name": name,
                    "info": info or {},
                    "problem": problem,
                    "eval": server.last_headline(),
                }
            )
        return self.page("index.html", servers=rows, root=self.project.root)

    async def report(self, request: Request) -> Response:
        server = self.server_of(request)
        info = server.info()
        if info is None:
            return self.not_built(server)
        report = server.report() or {}
        seconds = {k: float(v) for k, v in (report.get("seconds") or {}).items()}
        context = {
            "server": server,
            "info": info,
            "report": report,
            "stages": charts.stage_bars(seconds) if seconds else None,
            "lengths": charts.histogram(server.chunk_lengths()),
            "formats": server.formats(),
            "sizes": server.sizes(),
            "total_seconds": sum(seconds.values()),
        }
        return self.page("server.html", **context)

    def not_built(self, server: Server) -> HTMLResponse:
        return self.page("not_built.html", 404, server=server, form_token=self.form_token)

    async def history(self, request: Request) -> Response:
        server = self.server_of(request)
        try:
            lake = lake_location(server.config)
            snapshots = list_snapshots(lake)
        except Exception as exc:  # a build holding the lake, or no lake yet
            return self.page("history.html", server=server, snapshots=[], problem=str(exc))
        ids = [s["snapshot_id"] for s in snapshots]
        old, new = request.query_params.get("old"), request.query_params.get("new")
        diff = None
        if old or new:
            try:
                pair = int(old or ""), int(new or "")
            except ValueError:
                return self.error(400, "Bad request", "old and new must be snapshot numbers")
            if not set(pair) <= set(ids):
                return self.error(404, "No such build", f"pick two of the builds listed: {ids}")
            diff = diff_snapshots(lake, *pair) | {"old": pair[0], "new": pair[1]}
        return self.page(
            "history.html", server=server, snapshots=snapshots, diff=diff, problem=None
        )

    async def search(self, request: Request) -> Response:
        server = self.server_of(request)
        if server.info() is None:
            return self.not_built(server)
        params = request.query_params
        query = (params.get("q") or "").strip()
        form = {k: params.get(k) or "" for k in ("q", "mode", "path", "section", "version")}
        if not query:
            return self.page("search.html", server=server, form=form, result=None, problem=None)
        runtime, engine = server.runtime(), server.engine()
        if engine is None:
            return self.error(503, "Not available", runtime.error or "the index is not available")
        started = time.perf_counter()
        try:
            result = await asyncio.to_thread(
                run_playground,
                engine,
                runtime.settings.max_response_tokens,
                runtime.token_counter or CharCounter(),
                query,
                form["mode"] or None,
                form["path"] or None,
                form["section"] or None,
                form["version"] or None,
            )
        except BadRequest as exc:
            return self.page(
                "search.html", 400, server=server, form=form, result=None, problem=str(exc)
            )
        took = (time.perf_counter() - started) * 1000
        return self.page(
            "search.html", server=server, form=form, result=result, problem=None, took=took
        )

    async def document(self, request: Request) -> Response:
        server = self.server_of(request)
        if server.info() is None:
            return self.not_built(server)
        path = request.path_params["path"]
        version = request.query_params.get("version") or None
        engine = server.engine()
        if engine is None:
            error = server.runtime().error or "the index is not available"
            return self.error(503, "Not available", error)
        try:
            catalog = engine.store.catalog
            entry = catalog.document(path, catalog.resolve_version(version))
            source = server.source_file(entry.path, entry.version)
            view = await asyncio.to_thread(document_view, engine, entry.path, entry.version, source)
        except FilterError as exc:
            return self.error(404, "No such document", str(exc))
        focus = request.query_params.get("chunk")
        return self.page("document.html", server=server, doc=view, focus=focus)

    async def quality(self, request: Request) -> Response:
        server = self.server_of(request)
        runs = server.eval_runs()
        points = []
        for run in runs:
            found = headline(run)
            if found is not None:
                label = (
                    f"build {found.snapshot_id}" if found.snapshot_id is not None else found.time
                )
                points.append((label, found.value, found.label))
        labels = sorted({p[2] for p in points})
        lines = [
            charts.trend([(p[0], p[1]) for p in points if p[2] == label], label) for label in labels
        ]
        return self.page("quality.html", server=server, runs=list(reversed(runs)), lines=lines)

    async def build_page(self, request: Request) -> Response:
        server = self.server_of(request)
        run = self.builds.last(server.name)
        return self.page(
            "build.html", server=server, run=run, form_token=self.form_token, problem=None
        )

    async def start_build(self, request: Request) -> Response:
        server = self.server_of(request)
        form = await request.form()
        token = str(form.get("token") or "")
        if not hmac.compare_digest(token, self.form_token):
            return self.error(
                403, "Forbidden", "this form is out of date: reload the build page and try again"
            )
        try:
            server.check_config()  # a broken configuration is said before starting
            await asyncio.to_thread(self.builds.start, server.name)
        except (BuildLocked, ConfigError) as exc:
            run = self.builds.last(server.name)
            return self.page(
                "build.html",
                409,
                server=server,
                run=run,
                form_token=self.form_token,
                problem=str(exc),
            )
        return RedirectResponse(f"/servers/{server.name}/build", 303)

    async def build_events(self, request: Request) -> Response:
        server = self.server_of(request)
        run = self.builds.last(server.name)
        if run is None:
            return PlainTextResponse("no build has been started here\n", 404)

        try:
            after = max(0, int(request.query_params.get("after") or 0))
        except ValueError:
            return PlainTextResponse("400 Bad Request: after must be a number of lines\n", 400)

        async def stream() -> AsyncIterator[dict[str, str]]:
            sent = min(after, len(run.lines))
            while True:
                lines, code = list(run.lines[sent:]), run.returncode
                for line in lines:
                    yield {"event": "line", "data": line}
                sent += len(lines)
                if lines:
                    stages = [{"name": s.name, "seconds": s.seconds} for s in run.stages()]
                    yield {"event": "stages", "data": json.dumps(stages)}
                if code is not None and sent >= len(run.lines):
                    yield {"event": "end", "data": str(code)}
                    return
                await asyncio.to_thread(_wait_for_change, run, sent)

        return EventSourceResponse(stream(), ping=15)


def _wait_for_change(run: Any, seen: int) -> None:
    """Block until ``run`` has more than ``seen`` lines or has ended (at most a second)."""
    with run.changed:
        run.changed.wait_for(lambda: len(run.lines) > seen or run.returncode is not None, 1.0)


def create_app(
    project_root: Path, token: str | None = None, allowed_hosts: list[str] | None = None
) -> Starlette:
    """The UI app for the project at ``project_root``."""
    ui = UI(project_root)

    async def unknown(request: Request, exc: Exception) -> Response:
        return ui.error(
            404,
            "Not found",
            f"no server named {request.path_params.get('name')!r}; "
            f"servers here: {', '.join(ui.project.names()) or 'none'}",
        )

    async def not_found(request: Request, exc: Exception) -> Response:
        return ui.error(404, "Not found", f"nothing at {request.url.path}")

    routes = [
        Route("/", ui.index),
        Route("/servers/{name}", ui.report),
        Route("/servers/{name}/history", ui.history),
        Route("/servers/{name}/search", ui.search),
        Route("/servers/{name}/documents/{path:path}", ui.document),
        Route("/servers/{name}/quality", ui.quality),
        Route("/servers/{name}/build", ui.build_page, methods=["GET"]),
        Route("/servers/{name}/build", ui.start_build, methods=["POST"]),
        Route("/servers/{name}/build/events", ui.build_events),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    middleware = [Middleware(Guard, token=token, allowed_hosts=allowed_hosts or [])]
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={UnknownServer: unknown, 404: not_found},
    )
    app.state.ui = ui
    return app
