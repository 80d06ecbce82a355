"""The runtime server driven by a client nobody here wrote: the official MCP Inspector's CLI mode.

``tools/install_mcp_inspector.sh`` installs the pinned ``@modelcontextprotocol/inspector``
(``tools/mcp-inspector/package-lock.json``) into ``.tools/inspector``; these tests skip when it
is not there. Each call is one ``mcp-inspector --cli`` process: it launches the server script of
``test_server``'s module build over stdio (or connects to it over streamable HTTP), runs one
method, prints ``{"result": ...}`` on stdout (``--format json``) and exits (0 on success, 5 when
the tool answered ``isError``). The assertions say what must be *included*, so that tools added
later and a change of the text format (JSON to Markdown) do not break them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import test_server
from test_server import NAME, URL_BASE, Built, child_env, http_server

# test_server.py's fixture: the same small corpus, built once for this module too (a few seconds)
built = test_server.built

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "@modelcontextprotocol/inspector"
PINNED = json.loads((REPO / "tools" / "mcp-inspector" / "package.json").read_text())[
    "dependencies"
][PACKAGE]
PREFIX = REPO / ".tools" / "inspector"
CLI = PREFIX / "node_modules" / ".bin" / "mcp-inspector"
TIMEOUT = 120  # seconds per inspector run (one takes about 3 s over stdio)
CORE_TOOLS = {"search", "get_chunk", "stats"}
# pages of test_server's corpus: title and URL
BAKING = ("Sourdough baking", f"{URL_BASE}/baking")
OTHER_PAGES = [
    ("Vector similarity", f"{URL_BASE}/vectors"),
    ("Tomato gardening", f"{URL_BASE}/garden"),
    ("HTTP transport", f"{URL_BASE}/transport"),
]


def installed_version() -> str | None:
    package = PREFIX / "node_modules" / PACKAGE / "package.json"
    try:
        return json.loads(package.read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def why_not_installed() -> str | None:
    if shutil.which("node") is None:
        return "node is not on PATH (the MCP Inspector runs on Node.js)"
    version = installed_version()
    if version != PINNED or not CLI.exists():
        found = f"found {version}" if version else "not installed"
        return (
            f"MCP Inspector {PINNED} is not in .tools/inspector ({found}): "
            "run tools/install_mcp_inspector.sh"
        )
    return None


NOT_INSTALLED = why_not_installed()
pytestmark = pytest.mark.skipif(NOT_INSTALLED is not None, reason=str(NOT_INSTALLED))


@dataclass
class Run:
    """One finished ``mcp-inspector --cli`` process."""

    command: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def describe(self) -> str:
        return (
            f"$ {' '.join(self.command)}\nexit {self.returncode} after {self.seconds:.1f} s\n"
            f"--- stdout ---\n{self.stdout[-3000:]}\n--- stderr ---\n{self.stderr[-5000:]}"
        )

    def payload(self) -> dict[str, Any]:
        """What the inspector printed as the result, whatever its exit code."""
        try:
            return json.loads(self.stdout)["result"]
        except (ValueError, KeyError, TypeError):
            pytest.fail(f"no JSON result on the inspector's stdout:\n{self.describe()}")

    def result(self) -> dict[str, Any]:
        """The method's result; fails with the inspector's output unless it succeeded."""
        assert self.returncode == 0, f"the inspector failed:\n{self.describe()}"
        return self.payload()


def inspector(*args: str, cwd: Path) -> Run:
    """Run ``mcp-inspector --cli ARGS --format json`` in its own process group.

    Proxy variables are left out: on Node 20 the inspector cannot load the proxy support it
    would then need (undici 8 wants Node >= 22.19), and 127.0.0.1 needs no proxy anyway.
    """
    command = [str(CLI), "--cli", *args, "--format", "json"]
    env = child_env(MCP_AUTO_OPEN_ENABLED="false")  # never a browser for OAuth
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=cwd,
        start_new_session=True,  # so a timeout can stop the server it launched too
    )
    try:
        stdout, stderr = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        run = Run(command, -9, stdout, stderr, time.monotonic() - started)
        pytest.fail(f"the inspector did not finish in {TIMEOUT} s:\n{run.describe()}")
    return Run(command, process.returncode, stdout, stderr, time.monotonic() - started)


def stdio(built: Built, cwd: Path, *method: str) -> Run:
    """The README's launch, ``python runtime/NAME_server.py``, with the venv's python.

    The server command comes first and ``--`` ends it: after that, the inspector's own options.
    """
    return inspector(
        sys.executable, str(built.script), "--", *method, "--connect-timeout", "60000", cwd=cwd
    )


def text_of(result: dict[str, Any]) -> str:
    """The text a model reads: the text parts of a tool result's content."""
    parts = [part["text"] for part in result["content"] if part.get("type") == "text"]
    assert parts, f"no text content in {result}"
    return "\n".join(parts)


def check_tools(result: dict[str, Any]) -> None:
    tools = {tool["name"]: tool for tool in result["tools"]}
    assert set(tools) >= CORE_TOOLS, sorted(tools)
    for name in CORE_TOOLS:
        schema = tools[name]["inputSchema"]
        assert schema["type"] == "object", (name, schema)
        assert isinstance(schema.get("properties", {}), dict), (name, schema)
        assert tools[name].get("description"), name
    search = tools["search"]["inputSchema"]
    assert {"query", "top_k", "mode"} <= set(search["properties"])
    assert "query" in search["required"]
    assert search["properties"]["query"]["type"] == "string"
    assert "chunk_id" in tools["get_chunk"]["inputSchema"]["required"]


def first_mention(text: str, page: tuple[str, str]) -> int:
    """Where the text first names ``page`` (its title or URL); -1 if nowhere."""
    found = [i for i in (text.find(page[0]), text.find(page[1])) if i >= 0]
    return min(found, default=-1)


def check_finds_baking(text: str) -> None:
    """The top result is the sourdough page: the text names it, and before any other page."""
    first = first_mention(text, BAKING)
    assert first >= 0, f"neither {BAKING[0]!r} nor {BAKING[1]!r} in the text:\n{text[:2000]}"
    for page in OTHER_PAGES:
        assert not 0 <= first_mention(text, page) < first, f"{page} named first:\n{text[:2000]}"


# --- stdio -------------------------------------------------------------------------------------


def test_stdio_tools_list(built: Built, tmp_path: Path):
    check_tools(stdio(built, tmp_path, "--method", "tools/list").result())


def test_stdio_search_text_names_the_page(built: Built, tmp_path: Path):
    run = stdio(
        built,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "search",
        "--tool-arg",
        "query=how often do I feed a sourdough starter with rye flour",
        "--tool-arg",
        "top_k=1",  # the inspector sends it as a number
    )
    result = run.result()
    assert not result.get("isError"), run.describe()
    check_finds_baking(text_of(result))


def test_stdio_resource_templates_and_read(built: Built, tmp_path: Path):
    templates = stdio(built, tmp_path, "--method", "resources/templates/list").result()
    uris = {template["uriTemplate"] for template in templates["resourceTemplates"]}
    assert uris >= {f"{NAME}://search/{{query}}", f"{NAME}://chunk/{{chunk_id}}"}, uris

    uri = f"{NAME}://search/sourdough%20starter%20rye%20flour"
    contents = stdio(built, tmp_path, "--method", "resources/read", "--uri", uri).result()
    text = "\n".join(part.get("text", "") for part in contents["contents"])
    assert BAKING[1] in text or BAKING[0] in text, text[:2000]


def test_stdio_tool_error_reaches_the_client(built: Built, tmp_path: Path):
    method = ["--method", "tools/call", "--tool-name", "get_chunk", "--tool-arg", "chunk_id=nope"]
    run = stdio(built, tmp_path, *method)
    assert run.returncode == 5, run.describe()  # the inspector's exit code for isError
    result = run.payload()
    assert result["isError"] is True and "no chunk with id" in text_of(result), run.describe()


def test_stdio_filtered_search_and_reading_tools(built: Built, tmp_path: Path):
    call = ["--method", "tools/call", "--tool-name"]
    search = stdio(
        built,
        tmp_path,
        *call,
        "search",
        "--tool-arg",
        "query=what to check before observing",
        "--tool-arg",
        "path=guide/",
        "--tool-arg",
        "section=polar alignment",
    ).result()
    assert text_of(search).startswith("[1] Telescope care › Polar alignment\n"), search
    page = stdio(built, tmp_path, *call, "outline", "--tool-arg", "path=guide/telescope.md")
    assert "  - Star testing (chunk" in text_of(page.result()), page.describe()
    document = stdio(
        built,
        tmp_path,
        *call,
        "get_document",
        "--tool-arg",
        "path=vectors.md",
        "--tool-arg",
        "section=inner product",
    ).result()
    assert "array_inner_product" in text_of(document), document
    assert document["structuredContent"]["section"][-1] == "Inner product"


# --- streamable HTTP ---------------------------------------------------------------------------


def test_http_tools_list_and_search(built: Built, tmp_path: Path):
    with http_server(built, tmp_path / "http.log") as url:
        http = [url, "--transport", "http", "--stored-auth-only"]
        check_tools(inspector(*http, "--method", "tools/list", cwd=tmp_path).result())
        search = ["--method", "tools/call", "--tool-name", "search"]
        args = ["--tool-arg", "query=sourdough starter rye flour", "--tool-arg", "top_k=1"]
        run = inspector(*http, *search, *args, cwd=tmp_path)
        check_finds_baking(text_of(run.result()))
