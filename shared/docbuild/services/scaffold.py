"""Create ``servers/NAME/`` from the templates in ``shared/templates``."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from docserve.folder import ServerFolder, underscored

from docbuild.config import (
    DEFAULT_PRECISION,
    NAME_PATTERN,
    PRECISIONS,
    ConfigError,
    CrawlConfig,
    check_label,
    check_site_url,
    project_root,
    server_root,
)
from docbuild.formats import FORMATS

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


class ScaffoldError(ValueError):
    """The name or source given to the scaffold is not usable."""


def render(template: str, values: dict[str, str]) -> str:
    """Replace ``{{key}}`` placeholders (``${VAR}`` is left for load time)."""
    for key, value in values.items():
        template = template.replace("{{" + key + "}}", value)
    return template


def portable_path(path: Path, root: Path) -> str:
    """``${PROJECT_ROOT}/...`` for paths near the project, else the absolute path."""
    relative = Path(os.path.relpath(path, root))
    if relative.parts[:3].count("..") <= 1:
        return "${PROJECT_ROOT}/" + relative.as_posix()
    return str(path)


def indent(lines: list[str], width: int) -> list[str]:
    """``lines`` indented by ``width`` spaces (blank lines stay blank)."""
    return [" " * width + line if line.strip() else "" for line in lines]


def source_lines(
    root: Path,
    source: str | None,
    git_url: str | None,
    git_ref: str | None,
    git_subfolder: str | None,
    git_path: str,
    site_url: str | None = None,
    crawl: CrawlConfig | None = None,
) -> list[str]:
    """The body of a ``source:`` mapping (unindented, with its comments): a local folder read in
    place, or a git repository or a documentation site synced into ``git_path``."""
    if sum(map(bool, (source, git_url, site_url))) != 1:
        raise ScaffoldError("give exactly one source: --source PATH, --git URL or --url URL")
    if source:
        path = Path(source).expanduser().resolve()
        if not path.exists():
            raise ScaffoldError(f"source path does not exist: {source}")
        return [
            "# Your folder (or a single JSONL file), read in place at every build: edits,",
            "# new files and deletions there reach the next build and `watch`.",
            f"path: {json.dumps(portable_path(path, root))}",
        ]
    if site_url:
        return site_lines(site_url, crawl or CrawlConfig(), git_path)
    return [
        "# Filled from the repository below by tools/sync_documentation.sh (the first",
        "# build syncs it too); sync again to pick up upstream changes.",
        f"path: {git_path}",
        "git:",
        f"  url: {git_url}",
        f"  ref: {git_ref or 'null'}",
        f"  subfolder: {git_subfolder or 'null'}",
    ]


def site_lines(url: str, crawl: CrawlConfig, path: str) -> list[str]:
    """The body of a site's ``source:`` mapping; raises :class:`ScaffoldError` on a bad URL or
    crawl setting."""
    try:
        url = check_site_url(url, "--url")
        crawl.check("crawl")
    except ConfigError as exc:
        raise ScaffoldError(str(exc)) from None
    defaults = CrawlConfig()
    return [
        "# Fetched from the site below by tools/sync_documentation.sh (the first build syncs",
        "# it too): one file per page and a .sync.json manifest. Sync again (or run",
        "# tools/watch_mcp.sh NAME --interval 1h) to pick up changes; chunks cite the live pages.",
        f"path: {path}",
        f"url: {json.dumps(url)}",
        "crawl:",
        f"  include: {json.dumps(crawl.include)}   # globs over page paths below stay_under "
        "(api/**); empty: all",
        f"  exclude: {json.dumps(crawl.exclude)}",
        f"  max_pages: {crawl.max_pages}",
        f"  max_link_depth: {defaults.max_link_depth}    # links followed from the start page",
        f"  max_query_variants: {defaults.max_query_variants}   # URLs of one path that differ "
        "only by their query (a link trap's guard)",
        "  stay_under: null   # a URL prefix to stay under; null: the start URL's folder",
        f"  requests_per_second: {defaults.requests_per_second:g}   # per host; robots.txt's "
        "Crawl-delay can slow it",
        f"  max_in_flight: {defaults.max_in_flight}",
        f"  timeout: {defaults.timeout:g}         # seconds without progress",
        f"  deadline: {defaults.deadline:g}       # seconds a request may take in all",
        f"  retries: {defaults.retries}           # after a 429, a 5xx or a timeout",
    ]


def versions_header(name: str) -> list[str]:
    """The comment and key that open a ``versions:`` list."""
    return [
        "# Documentation versions, oldest first. Each is indexed with the settings below; searches",
        "# answer from the default version unless asked for another one (or all). Add a version:",
        f"# tools/add_version.sh {name} LABEL --source PATH (or --git URL [--ref R] [--subfolder D])",
        "versions:",
    ]


DEFAULT_VERSION_LINE = (
    "default_version: null  # the version searched when none is asked for; null: the last one"
)


def version_entry(
    label: str,
    body: list[str],
    url_base: str | None = None,
    url_suffix: str | None = None,
    explain_url: bool = False,
) -> list[str]:
    """One item of ``versions:`` (unindented): its label, its ``source:`` body, URL overrides."""
    lines = [f"- label: {json.dumps(label)}", "  source:", *indent(body, 4)]
    if url_base:
        lines.append(f"  url_base: {json.dumps(url_base)}")
    elif explain_url:
        lines.append("  url_base: null     # null: the url_base below; set it when this version")
        lines.append("                     # is published elsewhere (url_suffix likewise)")
    if url_suffix is not None:
        lines.append(f"  url_suffix: {json.dumps(url_suffix)}")
    return lines


def scaffold(
    name: str,
    source: str | None = None,
    fmt: str = "auto",
    url_base: str | None = None,
    git_url: str | None = None,
    git_ref: str | None = None,
    git_subfolder: str | None = None,
    root: Path | None = None,
    url_suffix: str = "",
    version: str | None = None,
    precision: str = DEFAULT_PRECISION,
    site_url: str | None = None,
    crawl: CrawlConfig | None = None,
) -> Path:
    """Create the server folder; raises :class:`ScaffoldError` on a bad name or source.

    With ``version``, the source is the first entry of ``versions:`` labelled ``version``
    (``tools/add_version.sh`` adds more); without it, the server is unversioned.
    """
    root = root or project_root()
    if not NAME_PATTERN.match(name):
        raise ScaffoldError(
            f"invalid name {name!r}: use lower-case letters, digits and single hyphens, "
            "starting with a letter (for example mojo-manual-mcp)"
        )
    if precision not in PRECISIONS:
        raise ScaffoldError(
            f"invalid precision {precision!r}: choose one of {', '.join(PRECISIONS)}"
        )
    if fmt not in FORMATS:
        raise ScaffoldError(f"invalid format {fmt!r}: choose one of {', '.join(FORMATS)}")
    target = server_root(name, root)
    if target.exists():
        raise ScaffoldError(f"servers/{name} already exists; pick another name or remove it first")
    git_path = "${PROJECT_ROOT}/source-documentation/${MCP_NAME}"
    if version is not None:
        version = check_label(version, "--version")
        git_path += f"/{version}"
    body = source_lines(root, source, git_url, git_ref, git_subfolder, git_path, site_url, crawl)
    if version is None:
        block = ["source:", *indent(body, 2)]
    else:
        entry = version_entry(version, body, explain_url=True)
        block = [*versions_header(name), *indent(entry, 2), DEFAULT_VERSION_LINE]
    values = {
        "name": name,
        "name_underscored": underscored(name),
        "format": fmt,
        "url_base": url_base or "null",
        "url_suffix": url_suffix,
        "precision": precision,
        "source_block": "\n".join(block) + "\n",
    }
    staging = target.with_name(f".{name}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    folder = ServerFolder(staging, name)
    folder.config.mkdir(parents=True)
    folder.runtime.mkdir()
    for template, destination in [
        ("processing_config.yaml", folder.processing_config),
        ("server_config.yaml", folder.server_config),
        ("requirements.txt", folder.requirements),
        ("README.md", folder.readme),
    ]:
        text = render((TEMPLATES / template).read_text(encoding="utf-8"), values)
        destination.write_text(text, encoding="utf-8")
    staging.rename(target)
    return target
