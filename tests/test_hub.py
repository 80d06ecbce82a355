"""The hub: three built servers served from one process, driven by a real MCP client.

Three small servers on distinct topics are built with the real model in a throw-away project;
the hub is launched the way the README says (``docbuild hub`` over stdio, ``--http``, a hub
file, and an installed server's ``--hub``), and compared with each library's own server.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docbuild.config import load_processing_config
from docbuild.pipeline import Build
from docbuild.services.client_config import client_config
from docbuild.services.scaffold import scaffold
from docserve.hub import Hub, open_library
from docserve.query_embedder import EmbedderPool
from endpoints import free_port
from fastmcp import Client
from fastmcp.client.transports import PythonStdioTransport, StdioTransport
from test_server import LiveClient, child_env, text_of

REPO = Path(__file__).resolve().parents[1]
DOCBUILD = Path(sys.executable).parent / "docbuild"
LIBRARIES = {
    "bakery": {
        "starter.md": "# Sourdough starter\n\n## Feeding\n\nFeed the starter equal weights of rye "
        "flour and water every morning until it doubles within six hours.\n\n## Storing\n\nKeep "
        "a dormant starter in the fridge and feed it once a week.\n",
        "proofing.md": "# Proofing dough\n\n## Cold retard\n\nShape the loaf, then let it proof "
        "overnight in a cold fridge so the crumb stays open and the crust blisters.\n",
    },
    "garden": {
        "tomatoes.md": "# Tomatoes\n\n## Suckers\n\nPinch off the suckers between stem and branch "
        "to get bigger fruit.\n\n## Watering\n\nWater deeply twice a week at the roots, never on "
        "the leaves, to keep blight away.\n",
        "compost.md": "# Compost\n\n## Turning the heap\n\nTurn the compost heap every two weeks "
        "so air reaches the middle and it does not smell.\n",
    },
    "telescope": {
        "mirror.md": "# Mirror care\n\n## Cleaning\n\nRinse the primary mirror with distilled "
        "water and let it drip dry; never wipe the coating.\n",
        "collimation.md": "# Collimation\n\n## Secondary mirror\n\nCentre the secondary with the "
        "collimation cap, then tilt it with its three screws until the primary's reflection is "
        "round.\n",
    },
}
QUESTIONS = {  # a question about each library, and the page that answers it
    "bakery": ("how often should I feed my rye starter", "starter.md"),
    "garden": ("why should I remove the shoots growing between stem and branch", "tomatoes.md"),
    "telescope": ("how do I align the small diagonal mirror", "collimation.md"),
}


class Project:
    """A project root with the three servers built."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def server(self, name: str) -> Path:
        return self.root / "servers" / name

    def env(self) -> dict[str, str]:
        return child_env(DOCMCP_PROJECT_ROOT=str(self.root))

    def hub(self, *args: str, log: Path) -> LiveClient:
        """A client of ``docbuild hub ARGS`` over stdio."""
        transport = StdioTransport(
            str(DOCBUILD), ["hub", *args], env=self.env(), cwd=str(self.root), log_file=log
        )
        return LiveClient(transport)

    def own_server(self, name: str, log: Path) -> LiveClient:
        script = self.server(name) / "runtime" / f"{name}_server.py"
        return LiveClient(PythonStdioTransport(script, python_cmd=sys.executable, log_file=log))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Project:
    """The three servers, scaffolded over their own folders and built as a user would."""
    root = tmp_path_factory.mktemp("hub-project")
    (root / "servers").mkdir()
    for name, pages in LIBRARIES.items():
        source = root / f"{name}-src"
        source.mkdir()
        for file, text in pages.items():
            (source / file).write_text(text)
        scaffold(name, str(source), "md", root=root)
        Build(load_processing_config(name, root), embedder).run()
    return Project(root)


@pytest.fixture(scope="module")
def hub(project: Project, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveClient]:
    log = tmp_path_factory.mktemp("hub-logs") / "hub.log"
    with project.hub("bakery", "garden", "telescope", log=log) as live:
        yield live


def paths(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [(r["library"], r["path"]) for r in answer["results"]]


def test_list_libraries_names_each_with_what_it_covers(hub: LiveClient):
    result = hub.call("list_libraries")
    text = text_of(result)
    assert text.startswith("3 libraries:")
    for name in LIBRARIES:
        assert f"- {name}: 2 pages" in text
    assert "Sourdough starter" in text and "Mirror care" in text  # what each covers
    libraries = {lib["name"]: lib for lib in result.structured_content["libraries"]}
    assert set(libraries) == set(LIBRARIES)
    assert all(
        lib["available"] and lib["chunks"] > 0 and lib["built_at"] for lib in libraries.values()
    )


def test_tools_are_read_only_and_take_a_library(hub: LiveClient):
    tools = {tool.name: tool for tool in hub.run(lambda c: c.list_tools())}
    assert set(tools) == {
        "list_libraries",
        "search",
        "outline",
        "get_document",
        "get_chunk",
        "stats",
    }
    for name, tool in tools.items():
        assert tool.annotations.read_only_hint and tool.annotations.open_world_hint is False, name
        if name != "list_libraries":
            assert "library" in tool.input_schema["properties"], name


def test_one_library_answers_as_its_own_server(project: Project, hub: LiveClient, tmp_path: Path):
    for name, (question, _) in QUESTIONS.items():
        with project.own_server(name, tmp_path / f"{name}.log") as own:
            alone = own.call("search", query=question)
        through_hub = hub.call("search", query=question, library=name)
        ids = lambda r: [x["chunk_id"] for x in r.structured_content["results"]]  # noqa: E731
        assert ids(through_hub) == ids(alone), name
        assert [x["library"] for x in through_hub.structured_content["results"]] == [name] * len(
            ids(alone)
        )
        # the model reads the same passages, each named with its library
        assert text_of(through_hub).replace(f"] {name}: ", "] ") == text_of(alone)


def test_searching_all_finds_each_librarys_answer_first(hub: LiveClient):
    for name, (question, page) in QUESTIONS.items():
        answer = hub.search(question)
        assert paths(answer)[0][0] == name, (question, paths(answer))
        assert (name, page) in paths(answer)[:2], (question, paths(answer))
        assert text_of(hub.call("search", query=question)).startswith(f"[1] {name}: ")
    mixed = hub.search("fridge", top_k=10, mode="keyword")  # bakery only: both of its pages
    assert {lib for lib, _ in paths(mixed)} == {"bakery"}


def test_a_list_of_libraries_narrows_the_search(hub: LiveClient):
    answer = hub.search("mirror", library=["garden", "telescope"], top_k=10)
    assert {lib for lib, _ in paths(answer)} <= {"garden", "telescope"}
    assert paths(answer)[0][0] == "telescope"


def test_reading_tools_take_a_library(hub: LiveClient):
    outline = hub.call("outline", library="garden")
    assert "compost.md" in text_of(outline) and "starter.md" not in text_of(outline)
    page = hub.call("get_document", library="telescope", path="mirror.md")
    assert "distilled water" in text_of(page)
    hit = hub.search("distilled water mirror", library="telescope")["results"][0]
    chunk = hub.call("get_chunk", chunk_id=hit["chunk_id"], library="telescope")
    assert "distilled water" in text_of(chunk)
    stats = hub.tool("stats", library="bakery")
    assert stats["name"] == "bakery" and stats["documents"] == 2
    resource = hub.run(lambda c: c.read_resource("hub://garden/document/compost.md"))
    assert "compost heap" in resource[0].text


def test_unknown_or_missing_library_is_a_clear_error(hub: LiveClient):
    for tool, args in (
        ("search", {"query": "starter", "library": "kitchen"}),
        ("outline", {"library": "kitchen"}),
        ("get_document", {"library": "kitchen", "path": "x.md"}),
    ):
        message = hub.error(tool, **args)
        assert "no library named 'kitchen'" in message
        assert "bakery, garden, telescope" in message
    assert "say which library" in hub.error("outline")


def test_a_library_without_database_is_reported_and_the_others_answer(
    project: Project, tmp_path: Path
):
    copy = tmp_path / "copy" / "garden"
    shutil.copytree(project.server("garden"), copy)
    (copy / "runtime" / "garden.db").unlink()
    with project.hub("bakery", str(copy), log=tmp_path / "hub.log") as hub:
        text = text_of(hub.call("list_libraries"))
        assert "- garden: not available" in text and "garden.db" in text
        answer = hub.search("feed the starter")
        assert paths(answer)[0] == ("bakery", "starter.md")
        assert any(note.startswith("library garden:") for note in answer["notes"])
        assert answer["degraded"]
        assert "garden" in hub.error("search", query="starter", library="garden")


def test_a_library_rebuilt_while_the_hub_runs_is_picked_up(
    project: Project, tmp_path: Path, embedder: Any
):
    root = tmp_path / "project"
    shutil.copytree(project.root, root, ignore=shutil.ignore_patterns("build"))
    moved = Project(root)
    with moved.hub("bakery", "garden", log=tmp_path / "hub.log") as hub:
        assert not hub.search("espalier pear trees", library="garden", mode="keyword")["results"]
        source = root / "garden-src" / "pears.md"
        source.write_text("# Pears\n\n## Espalier\n\nTrain espalier pear trees flat on wires.\n")
        config = load_processing_config("garden", root)
        Build(config, embedder).run()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = hub.search("espalier pear trees", library="garden", mode="keyword")
            if found["results"]:
                break
            time.sleep(0.5)
        assert paths(found)[0] == ("garden", "pears.md")
        assert paths(hub.search("espalier pear trees"))[0] == ("garden", "pears.md")


def test_hub_file_and_http(project: Project, tmp_path: Path):
    hub_file = tmp_path / "hub.yaml"
    servers = project.root / "servers"
    hub_file.write_text(
        f"name: kitchen-and-sky\nlibraries:\n  - {servers / 'bakery'}\n  - telescope\n"
    )
    port = free_port()
    log = tmp_path / "hub.log"
    with log.open("w") as err:
        process = subprocess.Popen(
            [str(DOCBUILD), "hub", "--config", str(hub_file), "--http", "--port", str(port)],
            stdout=err,
            stderr=subprocess.STDOUT,
            env=project.env(),
            cwd=project.root,
        )

    async def ask() -> tuple[str, Any]:
        async with Client(f"http://127.0.0.1:{port}/mcp", timeout=60) as client:
            listed = await client.call_tool("list_libraries", {})
            found = await client.call_tool("search", {"query": "clean the mirror coating"})
            return client.server_info.name, (listed, found)

    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()
            try:
                name, (listed, found) = asyncio.run(ask())
                break
            except Exception:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.3)
    finally:
        process.terminate()
        process.wait(15)
    assert name == "kitchen-and-sky"
    assert "2 libraries:" in text_of(listed) and "garden" not in text_of(listed)
    assert found.structured_content["results"][0]["library"] == "telescope"


def test_an_installed_server_serves_others_with_hub(project: Project, tmp_path: Path):
    script = project.server("bakery") / "runtime" / "bakery_server.py"
    transport = PythonStdioTransport(
        script,
        args=["--hub", str(project.server("telescope"))],
        python_cmd=sys.executable,
        log_file=tmp_path / "hub.log",
    )
    with LiveClient(transport) as hub:
        assert [lib["name"] for lib in hub.tool("list_libraries")["libraries"]] == [
            "bakery",
            "telescope",
        ]


def test_bad_hub_command_lines_say_what_to_fix(project: Project, tmp_path: Path):
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(DOCBUILD), "hub", *args], env=project.env(), capture_output=True, text=True
        )

    missing = run("bakery", "kitchen")
    assert missing.returncode == 2 and "no server 'kitchen'" in missing.stderr
    assert "Traceback" not in missing.stderr
    nothing = run()
    assert nothing.returncode == 2 and "name at least one library" in nothing.stderr
    bad_file = tmp_path / "hub.yaml"
    bad_file.write_text("libraries: [bakery]\ncolour: blue\n")
    unknown = run("--config", str(bad_file))
    assert unknown.returncode == 2 and "unknown key(s) colour" in unknown.stderr


def test_libraries_with_one_model_share_one_encoder(project: Project):
    embedders = EmbedderPool()
    libraries = [open_library(n, project.server(n), embedders) for n in LIBRARIES]
    hub = Hub(libraries)
    hub.search("rye flour")
    engines = [library.engine() for library in libraries]
    assert len(embedders.embedders) == 1
    assert len({id(engine.embedder) for engine in engines}) == 1
    assert engines[0].embedder.backend is not None  # loaded once, for all three


def test_a_client_config_for_a_hub_launches_it(project: Project, tmp_path: Path):
    others = {name: project.server(name) for name in ("garden", "telescope")}
    entry = json.loads(client_config("bakery", project.server("bakery"), "cursor", hub=others))
    hub_entry = entry["mcpServers"]["docs-hub"]
    assert hub_entry["command"] == str(project.server("bakery") / ".venv" / "bin" / "python")
    # the folder's own .venv is the user's to make; this test's Python has the same packages
    transport = StdioTransport(sys.executable, hub_entry["args"], log_file=tmp_path / "hub.log")
    with LiveClient(transport) as hub:
        listed = hub.tool("list_libraries")["libraries"]
    assert [lib["name"] for lib in listed] == ["bakery", "garden", "telescope"]
    uvx = client_config("bakery", project.server("bakery"), "claude-code", "uvx", others)
    assert shlex.split(uvx)[4:] == [
        "--",
        "uvx",
        "--with",
        "garden",
        "--with",
        "telescope",
        "bakery",
        "--hub",
        "garden",
        "telescope",
    ]


def test_the_hub_prints_its_agent_skill(project: Project):
    printed = subprocess.run(
        [str(DOCBUILD), "hub", "bakery", "garden", "telescope", "--name", "home-docs", "--skill"],
        env=project.env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    front, body = printed.split("---\n")[1:3]
    assert "name: home-docs" in front and "bakery, garden, telescope" in front
    for name in LIBRARIES:
        assert f"- `{name}`: 2 pages;" in body
    assert "Sourdough starter" in body  # what each covers
    assert "search(query, library=NAME)" in body
