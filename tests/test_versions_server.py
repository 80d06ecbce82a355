"""Two versions of the Mojo manual in one server, asked through the real server over stdio.

The March 2025 manual (``25.1``) generates a struct's constructor with ``@value``; the November
2025 manual (``25.7``, the default) with ``@fieldwise_init``. Each version must give its own
answer, name its version, and never answer silently from the other one.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp.client.transports import PythonStdioTransport
from test_server import LiveClient, text_of

QUESTION = "How do I get a constructor generated from a struct's fields?"


@pytest.fixture(scope="module")
def client(mojo_two_versions: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    script = mojo_two_versions / "runtime" / "mojo_versions_server.py"
    log = tmp_path_factory.mktemp("logs") / "server.log"
    transport = PythonStdioTransport(script, python_cmd=sys.executable, log_file=log)
    with LiveClient(transport) as live:
        yield live


def versions_in_headers(text: str) -> list[str]:
    """The version each result header names; a result in the same section as a better one
    refers to it instead (``[3] continues [2]``) and counts as that one's version."""
    named: dict[str, str] = {}
    versions = []
    for rank, rest in re.findall(r"^\[(\d+)\] (.*)$", text, re.MULTILINE):
        same = re.fullmatch(r"(?:same section as|continues|leads into) \[(\d+)\].*", rest)
        version = named[same.group(1)] if same else re.search(r"\(version ([^)]+)\)", rest)[1]
        named[rank] = version
        versions.append(version)
    return versions


def test_default_version_is_the_newest_and_answers_with_its_own_text(client: LiveClient):
    result = client.call("search", query=QUESTION)
    text, answer = text_of(result), result.structured_content
    assert answer["version"] == "25.7"
    assert {r["version"] for r in answer["results"]} == {"25.7"}
    assert versions_in_headers(text) == ["25.7"] * len(answer["results"])
    assert "fieldwise_init" in answer["results"][0]["content"] + answer["results"][1]["content"]
    assert "@value" not in text


def test_an_older_version_answers_with_its_own_text(client: LiveClient):
    result = client.call("search", query=QUESTION, version="25.1")
    text, answer = text_of(result), result.structured_content
    assert {r["version"] for r in answer["results"]} == {"25.1"}
    assert versions_in_headers(text) == ["25.1"] * len(answer["results"])
    assert "@value" in answer["results"][0]["content"] + answer["results"][1]["content"]
    assert "fieldwise_init" not in text


def test_all_versions_name_each_result_version(client: LiveClient):
    answer = client.search(QUESTION, version="all", top_k=10)
    assert answer["version"] == "all"
    assert {r["version"] for r in answer["results"]} == {"25.1", "25.7"}


def test_an_unknown_version_is_refused_with_the_list(client: LiveClient):
    message = client.error("search", query=QUESTION, version="24.0")
    assert "unknown version '24.0'" in message and "'25.1', '25.7' (default)" in message
    assert "'25.7' (default)" in client.error("outline", version="26.1")
    assert "unknown version" in client.error("get_document", path="structs.mdx", version="1")


def test_outline_and_get_document_read_one_version(client: LiveClient):
    newer = {d["path"] for d in client.tool("outline")["documents"]}
    older = {d["path"] for d in client.tool("outline", version="25.1")["documents"]}
    assert "decorators/fieldwise-init.mdx" in newer - older
    assert "decorators/value.md" in older - newer
    both = client.tool("outline", version="all")
    assert both["total"] == len(newer) + len(older) and both["version"] == "all"
    old_page = client.tool("get_document", path="structs.mdx", version="25.1")
    new_page = client.tool("get_document", path="structs.mdx")
    assert old_page["version"] == "25.1" and new_page["version"] == "25.7"
    assert "@value" in old_page["content"] and "@fieldwise_init" in new_page["content"]
    message = client.error("get_document", path="decorators/value.md")
    assert "in version '25.7'" in message
    message = client.error("get_document", path="structs.mdx", version="all")
    assert "several versions" in message


def test_stats_and_instructions_list_the_versions(client: LiveClient):
    stats = client.tool("stats")
    assert stats["versions"] == ["25.1", "25.7"] and stats["default_version"] == "25.7"
    assert "versions: 25.1, 25.7 (default 25.7)" in text_of(client.call("stats"))
    instructions = client.run(lambda c: asyncio.sleep(0, c.instructions))
    assert "'25.1', '25.7' (default)" in (instructions or "")
