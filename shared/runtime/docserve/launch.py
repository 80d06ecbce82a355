"""The command line of every installed form: the folder's script, the wheel's command, the bundle.

``--doctor`` checks the install with the standard library and whatever of the dependencies is
there, so it works when the server itself could not start.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .doctor import Install, check_python, report
from .memory import limit_arenas


def parse(name: str, argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=name, description=f"MCP search server for {name}.")
    parser.add_argument(
        "--http", action="store_true", help="serve streamable HTTP instead of stdio"
    )
    parser.add_argument("--host", help="HTTP bind address (default from config: 127.0.0.1)")
    parser.add_argument("--port", type=int, help="HTTP port (default from config: 8765)")
    parser.add_argument(
        "--config", type=Path, help="server_config.yaml (default: the installed config)"
    )
    parser.add_argument("--database", type=Path, help="the .db file (default from config)")
    parser.add_argument(
        "--hub",
        nargs="+",
        metavar="LIBRARY",
        help="serve this server and these others from one process (each an installed server's "
        "package name or a server folder); its tools then take a library argument",
    )
    parser.add_argument(
        "--skill", action="store_true", help="with --hub: print the hub's SKILL.md and exit"
    )
    parser.add_argument(
        "--doctor",
        action="store_true",
        help="check this install (Python, dependencies, extensions, model, database, config), "
        "print the fix for each failure, exit 1 if any",
    )
    return parser.parse_args(argv)


def main(name: str, server_root: Path, argv: list[str] | None = None) -> int:
    """Run the server named ``name`` installed at ``server_root`` (or check it, with --doctor)."""
    args = parse(name, argv)
    limit_arenas()  # before any thread starts: a server's worker threads fragment many arenas
    install = Install.read(name, server_root)
    if args.doctor:
        return report(install, args.config)
    python = check_python(install)
    if not python.ok:  # a bundle's libraries cannot load in this Python: say so plainly
        print(f"{name} cannot start: Python {python.detail}; {python.fix}", file=sys.stderr)
        return 1
    os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")  # read when fastmcp is imported
    os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")
    if args.hub:
        from .hub_launch import main as hub

        transport = ["--http"] if args.http else []
        transport += [*(["--host", args.host] if args.host else [])]
        transport += [*(["--port", str(args.port)] if args.port else [])]
        return hub([*args.hub, *transport, *(["--skill"] if args.skill else [])], first=server_root)
    try:
        from .config import SettingsError, load_settings
        from .runtime import Runtime

        settings = load_settings(name, server_root, args.config)
        if args.database:
            settings.database = args.database.resolve()
        hint = f"tools/build_mcp.sh {name}" if install.form == "folder" else install.restore_data
        # the database and the model load on other threads while the MCP framework is imported
        runtime = Runtime(settings, hint, install.model_dir)
        from .server import serve
    except ImportError as exc:
        print(
            f"{name} cannot start: {exc}. Run `{_doctor_command(install)}` "
            "to see what is missing and how to fix it.",
            file=sys.stderr,
        )
        return 1
    except SettingsError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    serve(runtime, install, args.http, args.host, args.port)
    return 0


def _doctor_command(install: Install) -> str:
    if install.form == "wheel":
        return f"{install.distribution or install.name} --doctor"
    return f"{sys.executable} {Path(sys.argv[0]).resolve()} --doctor"
