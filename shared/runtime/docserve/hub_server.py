"""The hub's MCP server: one process, several libraries, the single server's tools with a
``library`` argument, and ``list_libraries``."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Annotated, Any, Literal

from fastmcp.tools.base import ToolResult

from . import __version__
from .answers import Answer, AnswerError, Answers
from .hub import Hub, LibraryUnavailable
from .reading import DocumentAnswer, OutlineAnswer
from .render import Counter, Renderer
from .search import SearchInputError, SearchResponse
from .server import describe_stats, read_only, schema_of, stats_data

INSTRUCTIONS = """Search and read the documentation of several libraries: {names}.
`list_libraries` says what each covers. `search` looks in all of them unless you pass `library`
(one name or a list): pass it whenever the question is about one library, since results from
the others only compete with the right ones. Every result names its library and a URL to cite.
`outline`, `get_document` and `get_chunk` read one library: pass its name."""

Library = Annotated[
    str | list[str] | None,
    "Which library to search: a name from list_libraries, a list of names, or none for all.",
]
OneLibrary = Annotated[
    str | None, "The library (a name from list_libraries; optional when the hub serves one)."
]


def create_hub_server(hub: Hub, name: str, counter: Counter, cap: int, auth: Any = None) -> Any:
    """The FastMCP app serving ``hub`` under ``name`` (answers within ``cap`` tokens)."""
    from fastmcp import FastMCP
    from fastmcp.exceptions import ResourceError, ToolError

    mcp = FastMCP(
        name=name,
        instructions=INSTRUCTIONS.format(names=", ".join(hub.names)),
        version=__version__,
        auth=auth,
    )

    def answers(library: str | None) -> Answers:
        chosen = hub.one(library)
        try:
            return Answers(chosen.engine(), counter, cap)
        except LibraryUnavailable as exc:
            raise AnswerError(str(exc)) from None

    def reply(answer: Answer) -> ToolResult:
        return ToolResult(content=answer.text, structured_content=answer.data)

    def guarded(make: Any) -> Answer:
        try:
            return make()
        except (AnswerError, SearchInputError, LibraryUnavailable) as exc:
            raise ToolError(str(exc)) from None

    def search_answer(query: str, library: str | list[str] | None, **options: Any) -> Answer:
        response = hub.search(query, library, **options)
        return Answers.render_search(Renderer(counter, cap, hub.several_versions), response, None)

    @mcp.tool(title="List the libraries", annotations=read_only("List the libraries"))
    def list_libraries() -> ToolResult:
        """The libraries this hub serves: name, what each covers, versions, size and build date,
        and whether each can answer now. Pass a name as `library` to the other tools."""
        infos = [library.info() for library in hub.libraries.values()]
        lines = [f"{len(infos)} libraries:"]
        for info in infos:
            if not info.available:
                lines.append(f"- {info.name}: not available ({info.problem})")
                continue
            versions = f"; versions {', '.join(info.versions)}" if len(info.versions) > 1 else ""
            lines.append(
                f"- {info.name}: {info.documents} pages, {info.chunks} passages, built "
                f"{(info.built_at or '?')[:10]}{versions}. Covers {info.covers}"
                + (f"\n  > {info.problem}" if info.problem else "")
            )
        return reply(Answer("\n".join(lines), {"libraries": [asdict(i) for i in infos]}))

    @mcp.tool(
        title="Search the documentation",
        annotations=read_only("Search the documentation"),
        output_schema=schema_of(SearchResponse),
    )
    def search(
        query: Annotated[str, "What to look for: a question, keywords, or exact identifiers."],
        library: Library = None,
        top_k: Annotated[int, "How many results to return (1 to 50)."] = hub.settings.top_k,
        path: Annotated[
            str | None, "Only documents under this folder or matching this glob, e.g. 'guide/'."
        ] = None,
        section: Annotated[
            str | None, "Only passages whose title or headings contain all these words."
        ] = None,
        version: Annotated[
            str | None, "Documentation version (default: each library's default); 'all' for all."
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
        library, title › headings and a URL to cite. Pass `library` when the question is about
        one library; without it every library is searched and the results merged."""
        options = {"top_k": top_k, "mode": mode, "neighbors": neighbors, "max_tokens": max_tokens}
        filters = {"path": path, "section": section, "version": version}
        return reply(guarded(lambda: search_answer(query, library, **options, **filters)))

    @mcp.tool(
        title="List a library's pages, or a page's headings",
        annotations=read_only("List a library's pages, or a page's headings"),
        output_schema=schema_of(OutlineAnswer),
    )
    def outline(
        library: OneLibrary = None,
        path: Annotated[
            str | None, "A page's path for its headings; a folder or glob to list its pages."
        ] = None,
        version: Annotated[str | None, "Documentation version (default: the library's)."] = None,
        offset: Annotated[int, "Skip this many documents of the listing (to page on)."] = 0,
    ) -> ToolResult:
        """List one library's pages (path, title, sections), or with the path of one page its
        heading tree."""
        return reply(guarded(lambda: answers(library).outline(path, version, offset)))

    @mcp.tool(
        title="Read a page or one section",
        annotations=read_only("Read a page or one section"),
        output_schema=schema_of(DocumentAnswer),
    )
    def get_document(
        path: Annotated[str, "The page's path, as search results and outline give it."],
        library: OneLibrary = None,
        section: Annotated[
            str | None, "A heading of the page: read only that section and its subsections."
        ] = None,
        version: Annotated[str | None, "Documentation version (default: the library's)."] = None,
        offset: Annotated[int, "Continue from this chunk (the answer says where to go on)."] = 0,
    ) -> ToolResult:
        """Read a page of one library, or one section of it, in order as Markdown. Long pages
        come in parts: each part says the offset to continue from."""
        return reply(guarded(lambda: answers(library).document(path, section, version, offset)))

    @mcp.tool(title="Re-read one passage", annotations=read_only("Re-read one passage"))
    def get_chunk(
        chunk_id: Annotated[str, "The chunk_id of a search result."], library: OneLibrary = None
    ) -> ToolResult:
        """Re-read one passage by the `chunk_id` and `library` of a search result."""
        return reply(guarded(lambda: answers(library).chunk(chunk_id)))

    @mcp.tool(
        title="Describe a library's index", annotations=read_only("Describe a library's index")
    )
    def stats(library: OneLibrary = None) -> ToolResult:
        """Describe one library's index: versions, counts, embedding model, build, and whether
        vector and keyword search work right now."""

        def describe() -> Answer:
            chosen = hub.one(library)
            data = stats_data(chosen.runtime, chosen.engine())
            return Answer(describe_stats(data), data)

        return reply(guarded(describe))

    def resource(make: Any) -> str:
        try:
            return make()
        except (ToolError, AnswerError, SearchInputError, LibraryUnavailable) as exc:
            raise ResourceError(str(exc)) from None

    @mcp.resource("hub://libraries", mime_type="application/json")
    def libraries_resource() -> str:
        """Every library with what it covers, as JSON."""
        return json.dumps([asdict(library.info()) for library in hub.libraries.values()])

    @mcp.resource("hub://{library}/search/{query}", mime_type="application/json")
    def search_resource(library: str, query: str) -> str:
        """Hybrid search of one library (``all`` for every one) for `query` (top 5), as JSON."""
        return resource(lambda: json.dumps(search_answer(query, library).data))

    @mcp.resource("hub://{library}/outline", mime_type="text/markdown")
    def outline_resource(library: str) -> str:
        """A library's documents (first page of the listing)."""
        return resource(lambda: answers(library).outline().text)

    @mcp.resource("hub://{library}/document/{path*}", mime_type="text/markdown")
    def document_resource(library: str, path: str) -> str:
        """A page of a library in reading order (its first part)."""
        return resource(lambda: answers(library).document(path).text)

    for library in hub.libraries.values():
        library.runtime.warm_up()  # the model loads once, for the first library that gets to it
    return mcp
