"""Ready-to-paste configurations that make an MCP client launch a built server.

Each client wants the same thing, a command and its arguments, in its own shape: Claude Desktop
and Cursor a ``mcpServers`` entry, VS Code a ``servers`` entry with ``"type": "stdio"``, Claude
Code a ``claude mcp add`` command line. The folder form launches the runtime script with the
Python of the virtual environment inside the server folder (absolute paths, as clients need);
the ``uvx`` form runs the server's published package by its name.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from docserve.folder import ServerFolder, underscored

CLIENTS = ("claude-desktop", "claude-code", "vscode", "cursor")
INSTALLS = ("folder", "uvx")
WHERE = {
    "claude-desktop": "claude_desktop_config.json (Settings → Developer → Edit Config)",
    "claude-code": "a terminal (add `--scope user` for every project, `--scope project` to share "
    "it in .mcp.json)",
    "vscode": ".vscode/mcp.json in your workspace (or MCP: Open User Configuration)",
    "cursor": "~/.cursor/mcp.json (or .cursor/mcp.json in a project)",
}


def launch_command(name: str, server_root: Path, installed: str = "folder") -> list[str]:
    """The command line that starts the server over stdio."""
    if installed == "uvx":
        return ["uvx", name]
    if installed != "folder":
        raise ValueError(f"unknown install form {installed!r}: use one of {', '.join(INSTALLS)}")
    root = server_root.resolve()
    script = ServerFolder(root, name).script
    return [str(root / ".venv" / "bin" / "python"), str(script)]


def hub_command(
    name: str, server_root: Path, others: dict[str, Path], installed: str = "folder"
) -> list[str]:
    """The command line that starts server ``name`` as a hub that also serves ``others`` (name:
    server folder): their folders for the folder form, their packages for ``uvx``."""
    if installed == "uvx":
        extras = [arg for other in others for arg in ("--with", other)]
        return ["uvx", *extras, name, "--hub", *(underscored(o) for o in others)]
    folders = [str(root.resolve()) for root in others.values()]
    return [*launch_command(name, server_root, installed), "--hub", *folders]


def client_config(
    name: str,
    server_root: Path,
    client: str,
    installed: str = "folder",
    hub: dict[str, Path] | None = None,
) -> str:
    """What to paste into ``client`` (see :data:`WHERE`) to add server ``name``, or with ``hub``
    (name: server folder of the other libraries) one hub entry, ``docs-hub``, serving them all."""
    if hub:
        command, *args = hub_command(name, server_root, hub, installed)
        name = "docs-hub"
    else:
        command, *args = launch_command(name, server_root, installed)
    entry = {"command": command, "args": args}
    if client in ("claude-desktop", "cursor"):
        return json.dumps({"mcpServers": {name: entry}}, indent=2)
    if client == "vscode":
        return json.dumps({"servers": {name: {"type": "stdio", **entry}}}, indent=2)
    if client == "claude-code":
        return shlex.join(["claude", "mcp", "add", name, "--", command, *args])
    raise ValueError(f"unknown client {client!r}: use one of {', '.join(CLIENTS)}")
