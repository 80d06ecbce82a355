"""Command line: ``docbuild scaffold | sync | build | ask``.

Exit codes: 0 success, 1 a stage failed, 2 bad arguments or configuration.
"""

from __future__ import annotations

import argparse
import sys

from docbuild import ask
from docbuild.config import ConfigError, load_processing_config
from docbuild.pipeline import Build, BuildError, format_summary
from docbuild.processors import FORMATS
from docbuild.scaffold import ScaffoldError, scaffold
from docbuild.sync import SyncError, sync_source


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="docbuild", description="Build self-contained MCP search servers from documentation."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser("scaffold", help="create servers/NAME from the templates")
    p.add_argument("name", help="server name: lower-case letters, digits and hyphens")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--source", metavar="PATH", help="a local folder, or a single JSONL file")
    where.add_argument("--git", metavar="URL", help="a git repository to sync sources from")
    p.add_argument("--ref", help="branch or tag of --git")
    p.add_argument("--subfolder", help="folder inside the --git repository")
    p.add_argument(
        "--format", default="auto", choices=FORMATS, help="source format (default: auto)"
    )
    p.add_argument("--url-base", metavar="URL", help="published URL of the documentation root")

    p = commands.add_parser(
        "sync", help="fill source-documentation/NAME from the configured source"
    )
    p.add_argument("name")

    p = commands.add_parser("build", help="build servers/NAME/runtime/NAME.db")
    p.add_argument("name")

    p = commands.add_parser("ask", help="query a built server through a real MCP client")
    p.add_argument("name")
    p.add_argument("query")
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--mode", default="hybrid", choices=("hybrid", "vector", "keyword"))
    p.add_argument(
        "--url",
        help="ask a running HTTP server (http://127.0.0.1:8765/mcp) instead of launching the script",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "scaffold":
            target = scaffold(
                args.name,
                args.source,
                args.format,
                args.url_base,
                args.git,
                args.ref,
                args.subfolder,
            )
            print(f"created {target}\nnext: tools/build_mcp.sh {args.name}")
            return 0
        if args.command == "ask":
            return ask.run(args.name, args.query, args.top_k, args.mode, args.url)
        config = load_processing_config(args.name)
        if args.command == "sync":
            record = sync_source(config)
            print(
                f"synced {record['origin']} → {config.source.path} (revision {record.get('revision') or 'n/a'})"
            )
            return 0
        report = Build(config).run()
        print(format_summary(report))
        return 0
    except (ScaffoldError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (BuildError, SyncError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
