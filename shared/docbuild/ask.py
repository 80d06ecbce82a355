"""Ask a built server a question through a real MCP client (stdio or HTTP) and print the answer."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from docbuild.config import server_root, underscored


def server_script(name: str, root: Path | None = None) -> Path:
    """The runtime script of server ``name``."""
    return server_root(name, root) / "runtime" / f"{underscored(name)}_server.py"


async def ask(
    target: str | Path, query: str, top_k: int = 5, mode: str = "hybrid"
) -> dict[str, Any]:
    """Call the ``search`` tool of the server at ``target`` (a script path or an HTTP URL)."""
    from fastmcp import Client

    async with Client(
        target if isinstance(target, str) and target.startswith("http") else Path(target)
    ) as client:
        result = await client.call_tool("search", {"query": query, "top_k": top_k, "mode": mode})
    return result.structured_content or {}


def format_answer(answer: dict[str, Any]) -> str:
    """A readable rendering of a search answer."""
    lines = [
        f"query: {answer.get('query')!r}  mode: {answer.get('mode')}  "
        f"retrievers: {', '.join(answer.get('retrievers', []))}  ({answer.get('took_ms')} ms)"
    ]
    lines += [f"note: {note}" for note in answer.get("notes", [])]
    for n, result in enumerate(answer.get("results", []), start=1):
        crumbs = " > ".join(result.get("section_hierarchy") or [])
        where = result.get("section_url") or result.get("path")
        page = f" (page {result['page']})" if result.get("page") else ""
        lines.append(
            f"\n{n}. {crumbs}{page}  [score {result.get('score')}, {result.get('retrievers')}]"
        )
        lines.append(f"   {where}")
        snippet = " ".join(str(result.get("content", "")).split())
        lines.append(f"   {snippet[:300]}{'…' if len(snippet) > 300 else ''}")
    return "\n".join(lines)


def run(name: str, query: str, top_k: int, mode: str, url: str | None) -> int:
    """CLI entry: print the answer; exit 1 when the server could not answer."""
    from fastmcp.exceptions import ToolError

    target = url or server_script(name)
    if not url and not Path(target).is_file():
        print(
            f"error: {target} not found; build the server with `tools/build_mcp.sh {name}`",
            file=sys.stderr,
        )
        return 1
    try:
        answer = asyncio.run(ask(target, query, top_k, mode))
    except ToolError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(format_answer(answer))
    return 0
