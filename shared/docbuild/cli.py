"""Command line: ``docbuild scaffold | add-version | sync | build | watch | versions | diff | ask |
client-config | package | eval | check-questions | ui | hub``.

Exit codes: 0 success, 1 a stage failed (or another build of the server is running), 2 bad
arguments or configuration.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
from pathlib import Path

from docserve.build_info import BuildInfo
from docserve.folder import ServerFolder

from docbuild.build_report import BuildError, format_summary
from docbuild.config import (
    DEFAULT_PRECISION,
    PRECISIONS,
    ConfigError,
    CrawlConfig,
    ProcessingConfig,
    load_processing_config,
    project_root,
    server_root,
)
from docbuild.distribution import describe, package
from docbuild.distribution.bundle import PLATFORMS, BundleError
from docbuild.formats import FORMATS
from docbuild.pipeline import Build
from docbuild.services import ask
from docbuild.services.client_config import CLIENTS, INSTALLS, client_config
from docbuild.services.doc_versions import add_version
from docbuild.services.scaffold import ScaffoldError, scaffold
from docbuild.services.sync import NothingToSync, SyncError, SyncIncomplete, sync_source
from docbuild.stages.snapshot import diff_snapshots, lake_location, list_snapshots
from docbuild.util.build_lock import BuildLocked


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="docbuild", description="Build self-contained MCP search servers from documentation."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser("scaffold", help="create servers/NAME from the templates")
    p.add_argument("name", help="server name: lower-case letters, digits and hyphens")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--source",
        metavar="PATH",
        help="a local folder (or a single JSONL file), read in place at every build",
    )
    where.add_argument("--git", metavar="URL", help="a git repository to sync sources from")
    where.add_argument(
        "--url",
        metavar="URL",
        help="a documentation site to sync pages from, starting at this page",
    )
    p.add_argument("--ref", help="branch or tag of --git")
    p.add_argument("--subfolder", help="folder inside the --git repository")
    p.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="GLOB",
        help="--url: only pages whose path below the start folder matches (repeatable)",
    )
    p.add_argument(
        "--exclude", action="append", default=[], metavar="GLOB", help="--url: pages to leave out"
    )
    p.add_argument(
        "--max-pages",
        type=int,
        default=CrawlConfig().max_pages,
        metavar="N",
        help=f"--url: fetch at most N pages (default {CrawlConfig().max_pages})",
    )
    p.add_argument(
        "--format", default="auto", choices=FORMATS, help="source format (default: auto)"
    )
    p.add_argument("--url-base", metavar="URL", help="published URL of the documentation root")
    p.add_argument(
        "--url-suffix",
        default="",
        metavar="SUFFIX",
        help="appended to page URLs made from sources, e.g. .html for a Sphinx site",
    )
    p.add_argument(
        "--version",
        metavar="LABEL",
        help="make a versioned server whose first documentation version is LABEL (e.g. 25.1); "
        "add more with add-version",
    )
    p.add_argument(
        "--precision",
        default=DEFAULT_PRECISION,
        choices=PRECISIONS,
        help="the local encoder's precision: fp32, or int8 (quantized from the same weights, "
        f"faster; see docs/embedding-runtime.md) (default: {DEFAULT_PRECISION})",
    )

    p = commands.add_parser(
        "add-version",
        help="add a documentation version (LABEL, with its own source) to servers/NAME",
        description="Append a documentation version to the `versions:` list of "
        "servers/NAME/config/processing_config.yaml (comments kept). Versions are listed oldest "
        "first; the last one is searched by default unless default_version says otherwise.",
    )
    p.add_argument("name")
    p.add_argument("label", help="the version's label: letters, digits, '.', '-', '_' (not 'all')")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--source", metavar="PATH", help="a local folder, read in place")
    where.add_argument(
        "--git",
        metavar="URL",
        help="a git repository, synced into source-documentation/NAME/LABEL",
    )
    where.add_argument(
        "--url", metavar="URL", help="a documentation site, synced into its folder likewise"
    )
    p.add_argument("--ref", help="branch or tag of --git")
    p.add_argument("--subfolder", help="folder inside the --git repository")
    p.add_argument(
        "--url-base", metavar="URL", help="published URL of this version (default: url_base)"
    )
    p.add_argument(
        "--url-suffix", metavar="SUFFIX", help="this version's url_suffix (default: url_suffix)"
    )
    p.add_argument(
        "--label-existing",
        metavar="OLD_LABEL",
        help="for an unversioned server: turn its `source:` into the first version, OLD_LABEL",
    )

    p = commands.add_parser(
        "sync",
        help="fill source-documentation/NAME (or NAME/LABEL per version) from git or a site",
    )
    p.add_argument("name")
    p.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="list every URL (or link) not kept, with the reason, not only the first failures",
    )
    p.add_argument(
        "--retry-refused",
        action="store_true",
        help="ask again about pages an earlier sync refused for good (too large, a redirect "
        "loop), without waiting for their week to pass",
    )

    p = commands.add_parser("build", help="build servers/NAME/runtime/NAME.db")
    p.add_argument("name")
    p.add_argument(
        "--from-snapshot",
        type=int,
        metavar="ID",
        help="materialize an earlier build (rollback; embeds nothing)",
    )
    p.add_argument(
        "--wait",
        action="store_true",
        help="when another build of NAME is running, wait for it to finish instead of stopping",
    )

    p = commands.add_parser(
        "watch", help="build now, then rebuild incrementally whenever the sources change"
    )
    p.add_argument("name")
    p.add_argument(
        "--interval",
        type=duration,
        default=None,
        metavar="DURATION",
        help="time between looks: seconds, or 30s, 10m, 1h; a site source is synced again at "
        "each look (default: 1 s for folders, 1h for sites)",
    )
    p.add_argument(
        "--debounce",
        type=float,
        default=2.0,
        help="seconds the sources must stay unchanged before a build (default 2)",
    )

    p = commands.add_parser(
        "builds",
        help="list the builds (snapshots) recorded in the server's DuckLake, with the "
        "documentation versions each changed",
    )
    p.add_argument("name")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = commands.add_parser("diff", help="documents added, removed and changed between two builds")
    p.add_argument("name")
    p.add_argument("old", type=int)
    p.add_argument("new", type=int)

    p = commands.add_parser(
        "client-config", help="what to paste into an MCP client to add server NAME"
    )
    p.add_argument("name")
    p.add_argument("--client", required=True, choices=CLIENTS)
    p.add_argument(
        "--installed",
        default="folder",
        choices=INSTALLS,
        help="folder: the server folder with its .venv (default); uvx: the published package",
    )
    p.add_argument(
        "--hub",
        nargs="+",
        metavar="OTHER",
        help="one entry, docs-hub, that serves NAME and these other built servers from one process",
    )

    p = commands.add_parser(
        "package",
        help="write servers/NAME/dist/: the wheels, an MCP Bundle per platform, server.json",
    )
    p.add_argument("name")
    p.add_argument(
        "--platform",
        action="append",
        dest="platforms",
        choices=("host", *PLATFORMS),
        help="a bundle to make (repeatable; default: package.platforms in the config, else host)",
    )
    p.add_argument(
        "--python", help="the Python (e.g. 3.12) the bundles are for (default: this one)"
    )
    p.add_argument("--no-bundle", action="store_true", help="only the wheels and server.json")

    p = commands.add_parser(
        "ui", help="serve the maintainers' web page for every server (127.0.0.1:8780)"
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8780, help="port (default 8780)")

    p = commands.add_parser(
        "hub",
        help="serve several built servers from one MCP server (stdio, or --http)",
        add_help=False,
    )
    p.add_argument("hub_args", nargs=argparse.REMAINDER)

    p = commands.add_parser("ask", help="query a built server through a real MCP client")
    p.add_argument("name")
    p.add_argument("query")
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--mode", default="hybrid", choices=("hybrid", "vector", "keyword"))
    p.add_argument("--path", help="only pages under this folder or matching this glob")
    p.add_argument("--section", help="only passages whose headings contain these words")
    p.add_argument("--version", help="a documentation version, or 'all' (default: the server's)")
    p.add_argument(
        "--url",
        help="ask a running HTTP server (http://127.0.0.1:8765/mcp) instead of launching the script",
    )

    p = commands.add_parser(
        "eval", help="measure retrieval quality of a built server on a query set"
    )
    p.add_argument("name")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--queries",
        type=Path,
        metavar="FILE",
        help="JSONL of {id, query, relevant: [{path, heading, page}]}",
    )
    source.add_argument(
        "--beir", type=Path, metavar="DIR", help="a BEIR folder: queries.jsonl and qrels/SPLIT.tsv"
    )
    p.add_argument("--split", default="test", help="BEIR qrels split (default: test)")
    p.add_argument(
        "--modes",
        default="keyword,vector,hybrid",
        help="comma-separated: keyword, vector, hybrid, hybrid+rerank",
    )
    p.add_argument(
        "--candidates",
        type=int,
        help="candidates per retriever (default: the server's search.candidates)",
    )
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the scores as JSON")

    p = commands.add_parser(
        "check-questions",
        help="check a question set against the server's sources: targets exist, paraphrases "
        "share no heading word or rare term with their answer",
    )
    p.add_argument("name")
    p.add_argument("queries", type=Path, nargs="+", metavar="FILE", help="JSONL question sets")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["hub"]:  # its own command line (docserve.hub_launch), options and all
        from docserve.hub_launch import main as hub

        return hub(["--servers", str(project_root() / "servers"), *argv[1:]])
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
                url_suffix=args.url_suffix,
                version=args.version,
                precision=args.precision,
                site_url=args.url,
                crawl=CrawlConfig(
                    include=args.include, exclude=args.exclude, max_pages=args.max_pages
                ),
            )
            if args.url:
                print(
                    f"created {target}\nnext: tools/sync_documentation.sh {args.name}, then "
                    f"tools/build_mcp.sh {args.name}"
                )
                return 0
            versioned = f" (documentation version {args.version})" if args.version else ""
            print(f"created {target}{versioned}\nnext: tools/build_mcp.sh {args.name}")
            return 0
        if args.command == "add-version":
            added = add_version(
                args.name,
                args.label,
                args.source,
                args.git,
                args.ref,
                args.subfolder,
                args.url_base,
                args.url_suffix,
                args.label_existing,
                site_url=args.url,
            )
            print(added.describe())
            return 0
        if args.command == "client-config":
            config = load_processing_config(args.name)  # the server must exist
            others = {o: load_processing_config(o).server_root for o in args.hub or []}
            print(client_config(args.name, config.server_root, args.client, args.installed, others))
            return 0
        if args.command == "package":
            packaged = package(
                args.name, platforms=args.platforms, python=args.python, bundles=not args.no_bundle
            )
            print(describe(packaged))
            return 0
        if args.command == "eval":
            return run_eval(args)
        if args.command == "check-questions":
            return run_check_questions(args)
        if args.command == "ask":
            filters = {"path": args.path, "section": args.section, "version": args.version}
            return ask.run(args.name, args.query, args.top_k, args.mode, args.url, **filters)
        if args.command == "watch":
            return run_watch(args)
        if args.command == "ui":
            from docbuild.ui.serve import UIError, serve

            try:
                serve(project_root(), args.host, args.port)
            except UIError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 2
            return 0
        config = load_processing_config(args.name)
        if args.command == "sync":
            return sync_command(config, args.verbose, args.retry_refused)
        lake = lake_location(config)
        if args.command == "builds":
            print_builds(list_snapshots(lake), args.json)
            return 0
        if args.command == "diff":
            changes = diff_snapshots(lake, args.old, args.new)
            for kind in ("added", "removed", "changed"):
                print(f"{kind} ({len(changes[kind])}):")
                print("".join(f"  {doc}\n" for doc in changes[kind]), end="")
            print(f"chunks: +{changes['chunks_added']} / -{changes['chunks_removed']}")
            return 0
        build = Build(config, wait=args.wait)
        report = (
            build.rollback(args.from_snapshot) if args.from_snapshot is not None else build.run()
        )
        print(format_summary(report))
        return 0
    except (ScaffoldError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (BuildError, BuildLocked, SyncError, BundleError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def sync_command(config: ProcessingConfig, verbose: bool, retry_refused: bool) -> int:
    """``docbuild sync``, stopped by Ctrl-C or SIGTERM alike: what was fetched is saved, and
    the exit code is 128 + the signal's number."""
    signals: list[int] = []

    def stop(signum: int, frame: object) -> None:
        signals.append(signum)
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, stop)
    try:
        return run_sync(config, verbose, retry_refused)
    except KeyboardInterrupt:
        print(
            "sync stopped; what it fetched is kept: run it again to resume where it stopped",
            file=sys.stderr,
        )
        return 128 + (signals[0] if signals else signal.SIGINT)
    finally:
        signal.signal(signal.SIGTERM, before)


def run_sync(config: ProcessingConfig, verbose: bool = False, retry_refused: bool = False) -> int:
    """Sync every git or site source of the server (each such version of a versioned one); a
    local folder is read in place, so it says there is nothing to sync. Returns 1 when a sync
    stopped early or pages failed (its summary is printed all the same), else 0."""
    code = 0
    for version in config.doc_versions():
        which = f"version {version.label}: " if version.label else ""
        try:
            summary = sync_source(version.config, version.label, verbose, retry_refused)
        except NothingToSync as exc:
            print(exc)
            continue
        except SyncIncomplete as exc:
            print(which + exc.summary)
            print(f"error: {which}{exc.problem}", file=sys.stderr)
            code = 1
            continue
        except SyncError as exc:
            if version.label is None:
                raise
            raise SyncError(f"version {version.label}: {exc}") from None
        print(which + summary)
    return code


def duration(text: str) -> float:
    """An argparse type: seconds from ``90``, ``30s``, ``10m``, ``1h``."""
    from docbuild.services.watch import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run_watch(args: argparse.Namespace) -> int:
    """``docbuild watch``: until Ctrl-C (or SIGTERM)."""
    from docbuild.services.watch import Watcher

    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop as Ctrl-C does
    with contextlib.suppress(KeyboardInterrupt):
        Watcher(args.name, args.interval, args.debounce).run()
    print("stopped watching", file=sys.stderr)
    return 0


def print_builds(snapshots: list[dict[str, object]], as_json: bool) -> None:
    """The builds as a table (or JSON); for a server with documentation versions, a last column
    names the doc versions each build changed."""
    if as_json:
        print(json.dumps(snapshots, indent=2, default=str))
        return
    infos = [BuildInfo.of(s["info"] if isinstance(s["info"], dict) else {}) for s in snapshots]
    versioned = any(info.versions_changed for info in infos)
    width = 40 if versioned else 0  # a git commit
    print(
        f"{'snapshot':>8}  {'time (UTC)':<19}  {'documents':>9}  {'chunks':>6}  {'files':>5}  "
        f"{'config':<12}  {'source revision':<{width}}"
        + ("  doc versions changed" if versioned else "")
    )
    for snap, info in zip(snapshots, infos, strict=True):
        line = (
            f"{snap['snapshot_id']:>8}  {str(snap['time'])[:19]:<19}  {info.document_count:>9}  "
            f"{info.chunk_count:>6}  {info.file_count:>5}  "
            f"{str(info.config_hash or '')[:12]:<12}  {info.source_revision or '-':<{width}}"
        )
        if versioned:
            line += "  " + (", ".join(map(str, info.versions_changed or [])) or "-")
        print(line.rstrip())


def run_eval(args: argparse.Namespace) -> int:
    """``docbuild eval``: print the Markdown table (and write JSON when asked)."""
    from docbuild.services import evaluate

    judged = (
        evaluate.load_beir(args.beir, args.split)
        if args.beir
        else evaluate.load_jsonl(args.queries)
    )
    engine = evaluate.open_engine(server_root(args.name), args.candidates)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - {"keyword", "vector", "hybrid", "hybrid+rerank"})
    if unknown:
        raise ConfigError(f"unknown mode(s): {', '.join(unknown)}")
    scores = evaluate.evaluate(engine, judged, modes)
    depth, fusion = engine.settings.candidates, engine.settings.fusion
    print(
        f"{args.name}: {len(judged)} queries, {fusion} fusion of {depth} candidates per retriever\n"
    )
    print(evaluate.markdown_table(scores))
    if args.json:
        args.json.write_text(json.dumps(evaluate.as_json(scores), indent=2) + "\n")
    source = str(args.beir or args.queries)
    snapshot = engine.store.info.snapshot_id
    history = evaluate.record_run(
        ServerFolder(server_root(args.name), args.name).eval, source, len(judged), scores, snapshot
    )
    print(f"\nrecorded in {history}", file=sys.stderr)
    return 0


def run_check_questions(args: argparse.Namespace) -> int:
    """``docbuild check-questions``: one line per finding; exit 1 when there is any."""
    from docbuild.services.evaluate import load_jsonl
    from docbuild.services.question_check import check_questions, parsed_corpus

    corpus = parsed_corpus(load_processing_config(args.name))
    failed = 0
    for path in args.queries:
        questions = load_jsonl(path)
        findings = check_questions(corpus, questions)
        for finding in findings:
            print(f"{path.name}: {finding.query_id}: {finding.problem}")
        failed += len(findings)
        print(
            f"{path.name}: {len(questions)} questions, {len(findings)} finding(s)", file=sys.stderr
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
