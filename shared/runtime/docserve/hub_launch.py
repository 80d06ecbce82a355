"""Start a hub: which libraries (server folders, names under a project's ``servers/``, installed
server packages, or a hub file listing them), then serve them over stdio or HTTP."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .config import DEFAULT_RESPONSE_TOKENS, TransportSettings, response_cap
from .doctor import INSTALL_FILE
from .folder import ServerFolder
from .memory import limit_arenas
from .settings import SettingsError, load_yaml

HUB_NAME = "docs-hub"


class HubError(ValueError):
    """The hub cannot start as asked; the message says what to fix."""


@dataclass
class HubSpec:
    """What a hub serves: its name, the libraries' server folders (by name), and its limits."""

    name: str = HUB_NAME
    libraries: dict[str, Path] = field(default_factory=dict)
    max_response_tokens: int = DEFAULT_RESPONSE_TOKENS
    transport: TransportSettings = field(default_factory=TransportSettings)

    def add(self, target: str, base: Path, servers: Path | None) -> None:
        """Add the library ``target``: a folder (relative to ``base``), a server name under
        ``servers``, or an installed server package."""
        root = locate(target, base, servers)
        name = library_name(root)
        if name in self.libraries and self.libraries[name] != root:
            raise HubError(f"two libraries are named {name!r}: {self.libraries[name]} and {root}")
        self.libraries[name] = root


def library_name(root: Path) -> str:
    """A server's name: the one its install record gives (an installed package or bundle),
    else its folder's."""
    try:
        recorded = json.loads((root / INSTALL_FILE).read_text(encoding="utf-8")).get("name")
    except (OSError, ValueError, AttributeError):
        recorded = None
    return str(recorded or root.name)


def is_server_folder(path: Path) -> bool:
    """Whether ``path`` holds a built server's config or runtime."""
    return ServerFolder(path, path.name).is_server()


def locate(target: str, base: Path, servers: Path | None) -> Path:
    """The server folder ``target`` names (see :meth:`HubSpec.add`)."""
    path = (base / target).expanduser()
    if is_server_folder(path):
        return path.resolve()
    if servers is not None and is_server_folder(servers / target):
        return (servers / target).resolve()
    module = target.replace("-", "_")
    try:
        spec = importlib.util.find_spec(module) if module.isidentifier() else None
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        folder = Path(spec.origin).parent
        if (folder / INSTALL_FILE).is_file():
            return folder
    where = f" or {servers}/{target}" if servers else ""
    raise HubError(
        f"no server {target!r}: not a server folder ({path}{where}) nor an installed server "
        "package; give a folder holding config/ and runtime/, a built server's name, or an "
        "installed server's package name"
    )


def read_hub_file(path: Path, servers: Path | None) -> HubSpec:
    """A hub file: ``name``, ``libraries`` (folders relative to the file, server names or
    package names), ``max_response_tokens`` and ``transport`` (as in a server's config)."""
    if not path.is_file():
        raise HubError(f"hub file not found: {path}")
    try:
        data = load_yaml(path, {"HUB_ROOT": str(path.parent.resolve())}) or {}
    except SettingsError as exc:
        raise HubError(str(exc)) from None
    unknown = sorted(set(data) - {"name", "libraries", "max_response_tokens", "transport"})
    if unknown:
        raise HubError(
            f"{path}: unknown key(s) {', '.join(unknown)}; a hub file has name, libraries, "
            "max_response_tokens and transport"
        )
    libraries = data.get("libraries") or []
    if not isinstance(libraries, list) or not all(isinstance(x, str) for x in libraries):
        raise HubError(f"{path}: libraries must be a list of server folders or names")
    transport = data.get("transport") or {}
    try:
        spec = HubSpec(
            name=str(data.get("name") or HUB_NAME),
            max_response_tokens=response_cap(
                data.get("max_response_tokens", DEFAULT_RESPONSE_TOKENS), path
            ),
            transport=TransportSettings(**transport),
        )
    except (SettingsError, TypeError) as exc:
        raise HubError(f"{path}: {exc}") from None
    for target in libraries:
        spec.add(target, path.parent, servers)
    return spec


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="docs-hub", description="Serve several built documentation servers from one process."
    )
    parser.add_argument(
        "libraries",
        nargs="*",
        metavar="LIBRARY",
        help="a server folder, a built server's name, or an installed server package",
    )
    parser.add_argument("--config", type=Path, help="a hub file (YAML) listing the libraries")
    parser.add_argument("--name", help=f"the hub's MCP name (default {HUB_NAME})")
    parser.add_argument("--servers", type=Path, help="where server names are looked up")
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP")
    parser.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="HTTP port (default 8765)")
    parser.add_argument(
        "--skill", action="store_true", help="print the hub's agent skill (SKILL.md) and exit"
    )
    return parser.parse_args(argv)


def hub_spec(args: argparse.Namespace, first: Path | None = None) -> HubSpec:
    """The hub the command line asks for (``first``: the installed server that was started)."""
    servers = args.servers
    spec = read_hub_file(args.config, servers) if args.config else HubSpec()
    if first is not None:
        spec.libraries = {library_name(first): first, **spec.libraries}
    for target in args.libraries:
        spec.add(target, Path.cwd(), servers)
    if args.name:
        spec.name = args.name
    if not spec.libraries:
        raise HubError("name at least one library (a server folder or name), or pass --config")
    return spec


def main(argv: list[str] | None = None, first: Path | None = None) -> int:
    """Run a hub from the command line; returns the exit code."""
    os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
    os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")
    args = parse(argv)
    limit_arenas()  # before any thread starts: a server's worker threads fragment many arenas
    try:
        spec = hub_spec(args, first)
    except HubError as exc:
        print(f"docs-hub: {exc}", file=sys.stderr)
        return 2
    if args.skill:
        print(hub_skill(spec), end="")
        return 0
    serve_hub(spec, args.http, args.host, args.port)
    return 0


def hub_skill(spec: HubSpec) -> str:
    """The hub's SKILL.md, from what its libraries hold now."""
    from .hub import open_library
    from .hub_skill import render_hub_skill
    from .query_embedder import EmbedderPool

    embedders = EmbedderPool()
    libraries = [open_library(name, root, embedders) for name, root in spec.libraries.items()]
    return render_hub_skill(spec.name, [library.info() for library in libraries])


def serve_hub(spec: HubSpec, http: bool, host: str | None, port: int | None) -> None:
    """Open every library and serve the hub until the client goes away."""
    from .hub import Hub, open_library
    from .query_embedder import EmbedderPool

    # the databases and the model load on other threads while the MCP framework is imported
    embedders = EmbedderPool()
    libraries = [open_library(name, root, embedders) for name, root in spec.libraries.items()]
    hub = Hub(libraries)
    from .hub_server import create_hub_server
    from .render import CharCounter
    from .server import run_app

    names = ", ".join(f"{lib.name} ({lib.root})" for lib in libraries)
    print(f"{spec.name}: serving {names}", file=sys.stderr)

    def make(auth: object) -> object:
        first = libraries[0].runtime  # libraries share the tokenizer when they share the model
        first.wait()
        counter = first.token_counter or CharCounter()
        return create_hub_server(hub, spec.name, counter, spec.max_response_tokens, auth)

    run_app(make, spec.name, spec.transport, http, host, port)


if __name__ == "__main__":
    sys.exit(main())
