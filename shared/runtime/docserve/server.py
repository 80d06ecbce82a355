"""The MCP server: thin tools and resources over :class:`SearchEngine`.

stdio by default (nothing but JSON-RPC on stdout; logs go to stderr); ``--http`` serves
streamable HTTP on 127.0.0.1 unless told otherwise, with an optional bearer token.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import asdict
from typing import Annotated, Any, Literal

from fastmcp.tools.base import ToolResult

from . import __version__
from .answers import Answer, AnswerError, Answers
from .config import TransportSettings
from .doctor import Check, Install, run_checks
from .memory import trim_periodically
from .reading import DocumentAnswer, OutlineAnswer
from .render import CharCounter
from .runtime import IndexUnavailable, Runtime
from .search import SearchEngine, SearchResponse

INSTRUCTIONS = """Search and read the {title} documentation.
`search` finds passages for a question or exact identifiers (function names, flags, error
messages); cite the URL under each result. Narrow it with `path` (a folder or glob) or `section`
(heading words). `outline` lists the pages, or one page's headings; `get_document` reads a page or
one section in order. `stats` says what the index holds and how it was built."""


def create_server(runtime: Runtime, auth: Any = None, install: Install | None = None) -> Any:
    """Build the FastMCP app serving ``runtime`` (``auth``: a FastMCP auth provider for HTTP;
    ``install``: how the server was installed, for the doctor's checks in ``stats``). Waits for
    the runtime's first open: the instructions name the versions the database holds."""
    from fastmcp import FastMCP
    from fastmcp.exceptions import ResourceError, ToolError

    settings = runtime.settings
    engine = runtime.wait()
    counter = runtime.token_counter or CharCounter()
    mcp = FastMCP(
        name=settings.name,
        instructions=instructions(settings.name, engine),
        version=server_version(engine),
        auth=auth,
    )

    health: list[Check] = []  # the doctor's checks, run at the first stats call

    def require() -> SearchEngine:
        try:
            return runtime.require()
        except IndexUnavailable as exc:
            raise ToolError(str(exc)) from None

    def answers() -> Answers:
        return Answers(require(), counter, settings.max_response_tokens)

    def reply(answer: Answer) -> ToolResult:
        return ToolResult(content=answer.text, structured_content=answer.data)

    def guarded(make: Any) -> Answer:
        try:
            return make()
        except AnswerError as exc:
            raise ToolError(str(exc)) from None

    def answer_search(query: str, **options: Any) -> Answer:
        answer = guarded(lambda: answers().search(query, **options))
        if runtime.rerank_error:  # configured but could not be loaded: say so in every answer
            answer.data["notes"].append(runtime.rerank_error)
            answer.data["degraded"] = True
            answer.text = f"> {runtime.rerank_error}\n\n{answer.text}"
        return answer

    @mcp.tool(
        title="Search the documentation",
        annotations=read_only("Search the documentation"),
        output_schema=schema_of(SearchResponse),
    )
    def search(
        query: Annotated[str, "What to look for: a question, keywords, or exact identifiers."],
        top_k: Annotated[int, "How many results to return (1 to 50)."] = settings.search.top_k,
        path: Annotated[
            str | None,
            "Only documents under this folder or matching this glob, e.g. 'guide/' or '**/install*'.",
        ] = None,
        section: Annotated[
            str | None, "Only passages whose title or headings contain all these words."
        ] = None,
        version: Annotated[
            str | None,
            "Documentation version to search (default: the server's default); 'all' for every one.",
        ] = None,
        mode: Annotated[
            Literal["hybrid", "vector", "keyword"],
            "hybrid (default) fuses meaning and keywords; keyword for exact names; vector for paraphrases.",
        ] = "hybrid",
        neighbors: Annotated[
            int, "Also merge this many chunks before and after each hit (0 to 5) for more context."
        ] = 0,
        max_tokens: Annotated[
            int | None, "Return the best results only until their content reaches this many tokens."
        ] = None,
    ) -> ToolResult:
        """Find passages that answer a question or mention a name, best first, each with its
        title › headings and a URL to cite. Narrow with path, section or version. To read a
        whole page or section in order, use get_document; to see what pages exist, use outline."""
        options = {"top_k": top_k, "mode": mode, "neighbors": neighbors, "max_tokens": max_tokens}
        return reply(answer_search(query, path=path, section=section, version=version, **options))

    @mcp.tool(
        title="List the pages, or a page's headings",
        annotations=read_only("List the pages, or a page's headings"),
        output_schema=schema_of(OutlineAnswer),
    )
    def outline(
        path: Annotated[
            str | None, "A page's path for its headings; a folder or glob to list its pages."
        ] = None,
        version: Annotated[
            str | None, "Documentation version (default: the server's default)."
        ] = None,
        offset: Annotated[int, "Skip this many documents of the listing (to page on)."] = 0,
    ) -> ToolResult:
        """List the documentation's pages (path, title, sections), or with the path of one page
        its heading tree. Use it to find where a topic lives before reading with get_document."""
        return reply(guarded(lambda: answers().outline(path, version, offset)))

    @mcp.tool(
        title="Read a page or one section",
        annotations=read_only("Read a page or one section"),
        output_schema=schema_of(DocumentAnswer),
    )
    def get_document(
        path: Annotated[str, "The page's path, as search results and outline give it."],
        section: Annotated[
            str | None, "A heading of the page: read only that section and its subsections."
        ] = None,
        version: Annotated[
            str | None, "Documentation version (default: the server's default)."
        ] = None,
        offset: Annotated[int, "Continue from this chunk (the answer says where to go on)."] = 0,
    ) -> ToolResult:
        """Read a page, or one section of it, in order as Markdown. Long pages come in parts:
        each part says the offset to continue from."""
        return reply(guarded(lambda: answers().document(path, section, version, offset)))

    @mcp.tool(title="Re-read one passage", annotations=read_only("Re-read one passage"))
    def get_chunk(chunk_id: Annotated[str, "The chunk_id of a search result."]) -> ToolResult:
        """Re-read one passage by the `chunk_id` of a search result (from its structured data)."""
        return reply(guarded(lambda: answers().chunk(chunk_id)))

    @mcp.tool(title="Describe the index", annotations=read_only("Describe the index"))
    def stats() -> ToolResult:
        """Describe the index: versions, counts, embedding model, build, search settings, and
        whether vector and keyword search work right now."""
        data = stats_data(runtime, require())
        if install is not None:
            if not health:
                health.extend(run_checks(install, settings.config_path))
            data["install"] = {
                "form": install.form,
                "version": install.version,
                "checks": [asdict(check) for check in health],
            }
        return reply(Answer(describe_stats(data), data))

    scheme = settings.name

    def resource(make: Any) -> str:
        try:
            return make()
        except (ToolError, AnswerError) as exc:
            raise ResourceError(str(exc)) from None

    @mcp.resource(f"{scheme}://search/{{query}}", mime_type="application/json")
    def search_resource(query: str) -> str:
        """Hybrid search results for `query` (top 5) as JSON."""
        return resource(lambda: json.dumps(answer_search(query).data))

    @mcp.resource(f"{scheme}://chunk/{{chunk_id}}", mime_type="application/json")
    def chunk_resource(chunk_id: str) -> str:
        """One passage by `chunk_id` as JSON."""
        return resource(lambda: json.dumps(answers().chunk(chunk_id).data))

    @mcp.resource(f"{scheme}://outline", mime_type="text/markdown")
    def outline_resource() -> str:
        """The documents of the default version (first page of the listing)."""
        return resource(lambda: answers().outline().text)

    @mcp.resource(f"{scheme}://outline/{{path*}}", mime_type="text/markdown")
    def page_outline_resource(path: str) -> str:
        """A page's heading tree (or a folder's pages), default version."""
        return resource(lambda: answers().outline(path).text)

    @mcp.resource(f"{scheme}://document/{{path*}}", mime_type="text/markdown")
    def document_resource(path: str) -> str:
        """A page in reading order (its first part), default version."""
        return resource(lambda: answers().document(path).text)

    runtime.warm_up()
    return mcp


def read_only(title: str) -> dict[str, Any]:
    """MCP annotations of a tool: it reads the index only, the same call gives the same answer
    (until a new build), and nothing outside is touched."""
    return {"title": title, "readOnlyHint": True, "idempotentHint": True, "openWorldHint": False}


def stats_data(runtime: Runtime, engine: SearchEngine) -> dict[str, Any]:
    """What ``stats`` reports about the index ``engine`` serves for ``runtime``."""
    settings, catalog = runtime.settings, engine.store.catalog
    return {
        "name": settings.name,
        "database": str(settings.database),
        **engine.store.counts(),
        "versions": catalog.versions,
        "default_version": catalog.default_version,
        "build_info": engine.store.info.as_dict(),
        "query_embedder": engine.embedder.description,
        "precision": engine.store.info.query_precision,
        "vector_search": engine.model_mismatch is None and engine.embedder.last_error is None,
        "keyword_search": engine.store.keywords is not None,
        "vector_index": engine.store.vectors.describe(),
        "reranker": settings.rerank.provider,
        "reranker_error": runtime.rerank_error,
        "reload_error": runtime.reload_error,
        "search_settings": asdict(settings.search),
        "max_response_tokens": settings.max_response_tokens,
    }


def schema_of(cls: type) -> dict[str, Any]:
    """The JSON schema of a result dataclass (the tool's output schema)."""
    from pydantic import TypeAdapter

    return TypeAdapter(cls).json_schema(mode="serialization")


def server_version(engine: SearchEngine | None) -> str:
    """This server's version: the runtime's, with the build it serves (``0.1.0+build.7``)."""
    snapshot = engine.store.info.snapshot_id if engine else None
    return f"{__version__}+build.{snapshot}" if snapshot is not None else __version__


def instructions(name: str, engine: SearchEngine | None) -> str:
    """The server's instructions, naming the versions it holds."""
    text = INSTRUCTIONS.format(title=name)
    catalog = engine.store.catalog if engine else None
    if catalog and catalog.several_versions:
        text += (
            f"\nIt holds several versions of the documentation: {catalog.describe_versions()}. "
            "Answers come from the default unless you pass version (or 'all')."
        )
    return text


def describe_stats(data: dict[str, Any]) -> str:
    """The stats a model needs, in a few lines."""
    info = data["build_info"]
    lines = [
        f"# {data['name']}: {data['documents']} documents, {data['chunks']} chunks",
        f"built {info.get('built_at')} (snapshot {info.get('snapshot_id')}) with "
        f"{info.get('model_id')}, {info.get('dimension')}-d"
        + (f", {data['precision']} encoder" if data["precision"] else ""),
        f"vector search: {'on' if data['vector_search'] else 'off'} ({data['vector_index']}); "
        "keyword search: "
        f"{'on' if data['keyword_search'] else 'off'}; reranker: {data['reranker']}",
    ]
    if data["versions"]:
        lines.append(f"versions: {', '.join(data['versions'])} (default {data['default_version']})")
    lines += [f"> {data[key]}" for key in ("reranker_error", "reload_error") if data[key]]
    if "install" in data:
        install, checks = data["install"], data["install"]["checks"]
        failed = [c for c in checks if not c["ok"]]
        version = f" {install['version']}" if install["version"] else ""
        verdict = f"{len(failed)} of {len(checks)} checks fail" if failed else "all pass"
        lines.append(f"install: {install['form']}{version}; doctor checks: {verdict}")
        lines += [f"> {c['name']}: {c['detail']} (fix: {c['fix']})" for c in failed]
    return "\n".join(lines)


def serve(
    runtime: Runtime,
    install: Install | None = None,
    http: bool = False,
    host: str | None = None,
    port: int | None = None,
) -> None:
    """Serve ``runtime`` over stdio (default) or streamable HTTP until the client goes away."""

    def make(auth: Any) -> Any:
        return create_server(runtime, auth, install)

    settings = runtime.settings
    run_app(make, settings.name, settings.transport, http, host, port)


def run_app(
    make: Callable[[Any], Any],
    name: str,
    transport: TransportSettings,
    http: bool = False,
    host: str | None = None,
    port: int | None = None,
) -> None:
    """Run the app ``make(auth)`` returns over stdio, or over streamable HTTP with the bearer
    token (when its variable is set) and the Host/Origin guard of ``transport``."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    trim_periodically()
    if not http:
        make(None).run(transport="stdio", show_banner=False)
        return
    token = os.environ.get(transport.bearer_token_env or "", "")
    auth = None
    if token:
        from fastmcp.server.auth.providers.jwt import StaticTokenVerifier

        auth = StaticTokenVerifier(tokens={token: {"client_id": name, "scopes": []}})
    mcp = make(auth)
    host = host or transport.host
    port = port or transport.port
    from starlette.middleware import Middleware

    from .http_guard import HostOriginGuard

    hosts = [*transport.allowed_hosts, *([] if host in ("0.0.0.0", "::") else [host])]
    origins = transport.allowed_origins
    guard = Middleware(HostOriginGuard, allowed_hosts=hosts, allowed_origins=origins)
    print(f"serving {name} on http://{host}:{port}/mcp", file=sys.stderr)
    mcp.run(transport="http", host=host, port=port, show_banner=False, middleware=[guard])
