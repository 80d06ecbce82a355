"""Ask a built server a question through a real MCP client (stdio or HTTP) and print the answer
exactly as the model reads it (the tool's text)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from docserve.folder import ServerFolder

from docbuild.config import server_root


def server_script(name: str, root: Path | None = None) -> Path:
    """The runtime script of server ``name``."""
    return ServerFolder(server_root(name, root), name).script


async def call(target: str | Path, tool: str, arguments: dict[str, Any]) -> tuple[str, dict]:
    """Call ``tool`` of the server at ``target`` (a script path or an HTTP URL): its text (what the
    model reads) and its structured content."""
    from fastmcp import Client

    async with Client(
        target if isinstance(target, str) and target.startswith("http") else Path(target)
    ) as client:
        result = await client.call_tool(tool, arguments)
    text = "\n".join(getattr(part, "text", "") for part in result.content)
    return text, result.structured_content or {}


def search_arguments(query: str, top_k: int, mode: str, filters: dict[str, str | None]) -> dict:
    """The ``search`` tool's arguments; ``filters`` (path, section, version) only when given."""
    given = {key: value for key, value in filters.items() if value}
    return {"query": query, "top_k": top_k, "mode": mode, **given}


async def ask(
    target: str | Path, query: str, top_k: int = 5, mode: str = "hybrid", **filters: str | None
) -> dict[str, Any]:
    """The structured answer of the ``search`` tool (``filters``: path, section, version)."""
    return (await call(target, "search", search_arguments(query, top_k, mode, filters)))[1]


def run(
    name: str, query: str, top_k: int, mode: str, url: str | None, **filters: str | None
) -> int:
    """CLI entry: print the answer's text; exit 1 when the server could not answer."""
    from fastmcp.exceptions import ToolError

    target = url or server_script(name)
    if not url and not Path(target).is_file():
        print(
            f"error: {target} not found; build the server with `tools/build_mcp.sh {name}`",
            file=sys.stderr,
        )
        return 1
    arguments = search_arguments(query, top_k, mode, filters)
    try:
        text, _ = asyncio.run(call(target, "search", arguments))
    except ToolError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(text)
    return 0
