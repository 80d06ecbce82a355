"""The maintainers' web page: a Starlette app over every server folder of the project.

Routes (bookmarkable): ``/``, ``/servers/NAME`` (build report), ``/servers/NAME/history``,
``/servers/NAME/search``, ``/servers/NAME/documents/PATH``, ``/servers/NAME/quality`` and
``/servers/NAME/build`` (POST starts a build; ``/servers/NAME/build/events`` streams it).
Pages are server-rendered HTML (Jinja2, autoescaped) with SVG charts; only the live build view
uses JavaScript (a file: the Content-Security-Policy allows no inline script or style).
Requests pass :class:`~docbuild.ui.guard.Shield` (security headers; an unexpected exception
becomes a page) and :class:`~docbuild.ui.guard.Guard` (Host, Origin, token) first. A server page
that fails because of the server's files explains what is wrong and the fix in ``--doctor``'s
words (:meth:`Server.diagnose`).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import secrets
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from docserve.catalog import FilterError
from docserve.doctor import Check, reason
from docserve.render import CharCounter
from docserve.runtime import IndexUnavailable
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from docbuild.stages.snapshot import diff_snapshots, lake_location, list_snapshots
from docbuild.ui import charts
from docbuild.ui.builds import BuildRefused, Builds
from docbuild.ui.guard import Guard, Shield
from docbuild.ui.servers import UNREADABLE, Fault, Project, Server, UnknownServer, headline
from docbuild.ui.views import BadRequest, document_view, run_playground
from docbuild.util.build_lock import BuildLocked

HERE = Path(__file__).parent
EVENT_POLL_SECONDS = 0.2  # how often a build view looks for new lines (no thread waits)
Handler = Callable[[Request], Awaitable[Response]]


def when(stamp: object) -> str:
    """An ISO time or epoch seconds as ``YYYY-MM-DD HH:MM UTC``."""
    if isinstance(stamp, int | float):
        return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    text = str(stamp or "")
    return text.replace("T", " ")[:19] + (" UTC" if text else "")


def megabytes(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"


def relative(path: object, root: Path) -> str:
    """A path inside the project relative to it; any other path in full."""
    target = Path(str(path))
    return target.relative_to(root).as_posix() if target.is_relative_to(root) else str(target)


def web_link(url: object) -> str | None:
    """``url`` when it is an http(s) address, else None: a URL stored from the documentation
    (``javascript:``, ``data:``, ``file:``...) is never made a link."""
    text = str(url or "").strip()
    parts = urlsplit(text)
    return text if parts.scheme.lower() in ("http", "https") and parts.netloc else None


def document_url(
    name: str,
    path: str,
    version: str | None = None,
    chunk: int | None = None,
    document: str | None = None,
) -> str:
    """The chunk browser's address of document ``path`` (of its record ``document`` when the
    file holds several): every character of the path that is not plain (``?``, ``#``, ``%``,
    spaces, non-ASCII) percent-encoded, so the route reads back the same path."""
    query = [("version", version)] if version else []
    query += [("document", document)] if document else []
    query += [("chunk", str(chunk))] if chunk is not None else []
    address = f"/servers/{quote(name, safe='')}/documents/{quote(path, safe='/')}"
    return (
        address
        + (f"?{urlencode(query)}" if query else "")
        + (f"#chunk-{chunk}" if chunk is not None else "")
    )


def code_spans(text: str) -> Markup:
    """``text`` escaped, with each part between backticks (a command) in ``<code>``."""
    parts = str(text).split("`")
    return Markup("").join(
        Markup("<code>%s</code>") % part if i % 2 else escape(part) for i, part in enumerate(parts)
    )


def make_templates(project_root: Path) -> Environment:
    """The page templates, HTML-escaped by default."""
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(["html", "svg"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        when=when,
        megabytes=megabytes,
        here=lambda path: relative(path, project_root),
        web_link=web_link,
        code_spans=code_spans,
    )
    env.globals["document_url"] = document_url
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

    def error(
        self, status: int, title: str, message: str, server: Server | None = None
    ) -> HTMLResponse:
        return self.page("error.html", status, title=title, message=message, server=server)

    def server_of(self, request: Request) -> Server:
        return self.project.server(request.path_params["name"])

    # -- faults --------------------------------------------------------------------------------

    def explained(self, handler: Handler) -> Handler:
        """``handler``, with a failure caused by the server's files answered by the fault page."""

        async def page(request: Request) -> Response:
            try:
                return await handler(request)
            except UnknownServer:
                raise
            except Exception as exc:
                return await self.explain(request, exc)

        return page

    async def explain(self, request: Request, exc: Exception) -> Response:
        """The fault page for the server whose page raised ``exc``: what is wrong and the fix
        (``--doctor``'s words), 404 before the first build, else 503. An exception the server's
        files do not explain goes on to :meth:`unexpected`."""
        server = self.server_of(request)
        fault = await asyncio.to_thread(server.diagnose)
        if fault is None and isinstance(exc, IndexUnavailable):
            fault = Fault(UNREADABLE, [Check("database", False, str(exc))])
        if fault is None:
            raise exc
        print(f"{server.name}: {fault.state}: {fault.checks[0].detail}", file=sys.stderr)
        return self.page("fault.html", fault.status, server=server, fault=fault)

    def unexpected(self, request: Request, exc: Exception) -> Response:
        """The page for an exception no page handled (a bug): a short message, no traceback."""
        parts = request.url.path.split("/")
        try:
            server = self.project.server(parts[2]) if parts[1:2] == ["servers"] else None
        except Exception:  # the page must be made whatever else is wrong
            server = None
        message = (
            f"this page failed with an unexpected error ({type(exc).__name__}: {reason(exc)}); "
            "the details are in the output of `docbuild ui`"
        )
        return self.error(500, "Unexpected error", message, server)

    # -- pages ---------------------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        rows = []
        for name in self.project.names():
            server = self.project.server(name)
            try:
                info = server.info()
            except Exception:  # one unreadable server must not hide the others
                info = None
            fault = await asyncio.to_thread(server.diagnose) if info is None else None
            rows.append(
                {"name": name, "info": info or {}, "fault": fault, "eval": server.last_headline()}
            )
        return self.page("index.html", servers=rows, root=self.project.root)

    async def report(self, request: Request) -> Response:
        server = self.server_of(request)
        info = server.require_info()
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

    async def history(self, request: Request) -> Response:
        server = self.server_of(request)
        lake = lake_location(server.config)
        try:
            snapshots = list_snapshots(lake)
        except Exception as exc:  # a build holding the lake, or no lake yet
            return self.page("history.html", server=server, snapshots=[], problem=reason(exc))
        ids = [s["snapshot_id"] for s in snapshots]
        old, new = request.query_params.get("old"), request.query_params.get("new")
        diff = None
        if old or new:
            try:
                pair = int(old or ""), int(new or "")
            except ValueError:
                return self.error(
                    400, "Bad request", "old and new must be snapshot numbers", server
                )
            if not set(pair) <= set(ids):
                return self.error(
                    404, "No such build", f"pick two of the builds listed: {ids}", server
                )
            diff = diff_snapshots(lake, *pair) | {"old": pair[0], "new": pair[1]}
        return self.page(
            "history.html", server=server, snapshots=snapshots, diff=diff, problem=None
        )

    async def search(self, request: Request) -> Response:
        server = self.server_of(request)
        server.require_info()
        params = request.query_params
        query = (params.get("q") or "").strip()
        form = {k: params.get(k) or "" for k in ("q", "mode", "path", "section", "version")}
        if not query:
            return self.page("search.html", server=server, form=form, result=None, problem=None)
        runtime, engine = server.runtime(), server.engine()
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
        # without query vectors the page still answers (by keyword); the doctor says why
        fault = await asyncio.to_thread(server.diagnose) if result.no_vector else None
        return self.page(
            "search.html",
            server=server,
            form=form,
            result=result,
            problem=None,
            took=took,
            fault=fault,
        )

    async def document(self, request: Request) -> Response:
        server = self.server_of(request)
        server.require_info()
        path = request.path_params["path"]
        version = request.query_params.get("version") or None
        record = request.query_params.get("document") or None
        engine = server.engine()
        try:
            catalog = engine.store.catalog
            entry = catalog.document(path, catalog.resolve_version(version), record)
            source = server.source_file(entry.path, entry.version)
            view = await asyncio.to_thread(
                document_view, engine, entry.path, entry.version, source, record
            )
        except FilterError as exc:
            return self.error(404, "No such document", str(exc), server)
        focus = request.query_params.get("chunk")
        return self.page("document.html", server=server, doc=view, focus=focus)

    async def quality(self, request: Request) -> Response:
        server = self.server_of(request)
        runs = server.eval_runs()
        series: dict[tuple[str, str], list[tuple[str, str, float]]] = {}
        for run in runs:
            found = headline(run)
            if found is None:
                continue
            queries = relative(run.get("queries") or "?", self.project.root)
            build = f"build {found.snapshot_id if found.snapshot_id is not None else '?'}"
            point = (build, when(found.time)[:10], found.value)
            series.setdefault((queries, found.label), []).append(point)
        lines = [charts.trend(points, f"{q} · {label}") for (q, label), points in series.items()]
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
                403,
                "Forbidden",
                "this form is out of date: reload the build page and try again",
                server,
            )
        server.check_config()  # a broken configuration is explained before starting
        try:
            await asyncio.to_thread(self.builds.start, server.name)
        except (BuildLocked, BuildRefused) as exc:
            run = self.builds.last(server.name)
            return self.page(
                "build.html",
                409,
                server=server,
                run=run,
                form_token=self.form_token,
                problem=str(exc),
            )
        return RedirectResponse(f"/servers/{quote(server.name, safe='')}/build", 303)

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
                lines, code = run.lines[sent:], run.returncode
                for line in lines:
                    yield {"event": "line", "data": line}
                sent += len(lines)
                if lines:
                    stages = [{"name": s.name, "seconds": s.seconds} for s in run.stages()]
                    yield {"event": "stages", "data": json.dumps(stages)}
                if code is not None and sent >= len(run.lines):
                    yield {"event": "end", "data": str(code)}
                    return
                await asyncio.sleep(EVENT_POLL_SECONDS)

        return EventSourceResponse(stream(), ping=15)


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

    explained = ui.explained
    routes = [
        Route("/", ui.index),
        Route("/servers/{name}", explained(ui.report)),
        Route("/servers/{name}/history", explained(ui.history)),
        Route("/servers/{name}/search", explained(ui.search)),
        Route("/servers/{name}/documents/{path:path}", explained(ui.document)),
        Route("/servers/{name}/quality", explained(ui.quality)),
        Route("/servers/{name}/build", explained(ui.build_page), methods=["GET"]),
        Route("/servers/{name}/build", explained(ui.start_build), methods=["POST"]),
        Route("/servers/{name}/build/events", ui.build_events),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    middleware = [
        Middleware(Shield, fallback=ui.unexpected),
        Middleware(Guard, token=token, allowed_hosts=allowed_hosts or []),
    ]
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={UnknownServer: unknown, 404: not_found},
    )
    app.state.ui = ui
    return app
