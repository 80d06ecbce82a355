"""Cold start and memory of a server folder and of a hub, against the MCP framework's own floor.

Run: .venv/bin/python bench/bench_startup.py --project ROOT --server mojo --hub mojo hugo pdfs docs git-asciidoc

ROOT is a project whose ``servers/`` holds the built servers named. For each of: an empty FastMCP
server with one tool (the floor: what importing and starting the framework costs), the server
folder's script, and a hub of the libraries named (as ``tools/hub_mcp.sh`` starts it), it
prints the median of --runs cold starts (process start to the initialize reply, and to the first
search result, over stdio) and the resident memory after --queries distinct searches.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_server import queries

FLOOR = """
from fastmcp import FastMCP
from fastmcp.tools.base import ToolResult

mcp = FastMCP("floor")


@mcp.tool
def search(query: str) -> ToolResult:
    return ToolResult(content=query)


mcp.run(transport="stdio", show_banner=False)
"""
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}


class Stdio:
    """A stdio MCP server process driven with raw JSON-RPC lines."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self.next_id = 10

    def send(self, message: dict) -> dict | None:
        """Send ``message``; its reply when it has an id."""
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        while "id" in message:
            reply = json.loads(self.process.stdout.readline())
            if reply.get("id") == message["id"]:
                return reply
        return None

    def search(self, query: str) -> dict:
        self.next_id += 1
        call = {"name": "search", "arguments": {"query": query}}
        reply = self.send(
            {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call", "params": call}
        )
        assert reply and "result" in reply and not reply["result"].get("isError"), reply
        return reply

    def rss_mb(self) -> float:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(next(x.split()[1] for x in status.splitlines() if x.startswith("VmRSS"))) / 1024

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=15)


def cold_starts(args: list[str], env: dict[str, str], runs: int, n: int) -> str:
    """Median seconds to the initialize reply and to the first search result; RSS after ``n``
    more searches (first run)."""
    ready, answered, rss = [], [], 0.0
    for run in range(runs):
        start = time.perf_counter()
        server = Stdio(args, env)
        try:
            server.send(INITIALIZE)
            ready.append(time.perf_counter() - start)
            server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            server.search("how do I get started")
            answered.append(time.perf_counter() - start)
            if run == 0:
                for query in queries(n, seed=11):
                    server.search(query)
                rss = server.rss_mb()
        finally:
            server.close()
    runs_text = ", ".join(f"{t:.2f}" for t in answered)
    return (
        f"initialize {statistics.median(ready):.2f} s, first answer "
        f"{statistics.median(answered):.2f} s (runs: {runs_text}); RSS after {n} queries "
        f"{rss:.0f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--server", default="mojo")
    parser.add_argument("--hub", nargs="*", default=[])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    env = {**os.environ, "DOCMCP_PROJECT_ROOT": str(args.project.resolve())}
    with tempfile.TemporaryDirectory() as tmp:
        floor = Path(tmp) / "floor.py"
        floor.write_text(FLOOR)
        print(
            f"framework floor (empty FastMCP server): {cold_starts([sys.executable, str(floor)], env, args.runs, 0)}"
        )
    script = (
        args.project
        / "servers"
        / args.server
        / "runtime"
        / f"{args.server.replace('-', '_')}_server.py"
    )
    print(
        f"server folder {args.server}: {cold_starts([sys.executable, str(script)], env, args.runs, args.queries)}"
    )
    if args.hub:
        servers = str(args.project / "servers")
        command = [sys.executable, "-m", "docserve.hub_launch", "--servers", servers, *args.hub]
        print(
            f"hub of {len(args.hub)} ({', '.join(args.hub)}): {cold_starts(command, env, args.runs, args.queries)}"
        )


if __name__ == "__main__":
    main()
