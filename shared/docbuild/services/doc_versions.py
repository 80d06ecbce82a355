"""Add a documentation version to a server: ``docbuild add-version`` (``tools/add_version.sh``).

The server's ``processing_config.yaml`` is edited as text, so the user's comments and layout
stay: a new item is appended to the ``versions:`` list, or, with ``label_existing``, the single
``source:`` of an unversioned server becomes the first item of a new ``versions:`` list.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml
from docserve.settings import substitute

from docbuild.config import (
    ConfigError,
    ProcessingConfig,
    check_label,
    load_processing_config,
    project_root,
    variables_for,
)
from docbuild.services.scaffold import (
    DEFAULT_VERSION_LINE,
    ScaffoldError,
    indent,
    source_lines,
    version_entry,
    versions_header,
)

TOP_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:(.*)$")
"""A top-level key line of the YAML file: its name and what follows the colon."""


@dataclass
class Added:
    """What :func:`add_version` did, for the message the CLI prints."""

    config: ProcessingConfig
    label: str
    labelled_existing: str | None = None
    moved: tuple[Path, Path] | None = None  # a synced git checkout moved into its version folder

    def describe(self) -> str:
        """Lines saying what changed and what to run next."""
        config, lines = self.config, []
        if self.labelled_existing:
            lines.append(
                f"labelled the existing source of {config.name} as version "
                f"{self.labelled_existing} (its chunks get new ids; their vectors come from the "
                "embedding cache)"
            )
        if self.moved:
            lines.append(f"moved the synced checkout {self.moved[0]} to {self.moved[1]}")
        version = next(v for v in config.versions if v.label == self.label)
        folder = os.path.normpath(version.source.path)
        where = (
            f"synced from {version.source.git_url or version.source.site_url} into {folder} by "
            "the next build"
            if version.source.synced
            else f"read in place from {folder}"
        )
        lines.append(f"added version {self.label} to {config.name} ({where})")
        labels = ", ".join(v.label for v in config.versions)
        lines.append(f"versions, oldest first: {labels} (default: {config.default_label})")
        lines.append(f"next: tools/build_mcp.sh {config.name}")
        return "\n".join(lines)


def add_version(
    name: str,
    label: str,
    source: str | None = None,
    git_url: str | None = None,
    git_ref: str | None = None,
    git_subfolder: str | None = None,
    url_base: str | None = None,
    url_suffix: str | None = None,
    label_existing: str | None = None,
    root: Path | None = None,
    site_url: str | None = None,
) -> Added:
    """Append version ``label`` to server ``name``'s ``versions:`` list; see the module doc.

    Raises :class:`ScaffoldError` (a refused request) or :class:`ConfigError` (a config the
    edit would break); the file is left as it was in both cases.
    """
    root = root or project_root()
    config = load_processing_config(name, root)
    label = check_label(label, "LABEL")
    body = source_lines(
        root,
        source,
        git_url,
        git_ref,
        git_subfolder,
        f"${{PROJECT_ROOT}}/source-documentation/${{MCP_NAME}}/{label}",
        site_url,
    )
    entry = version_entry(
        label, [line for line in body if not line.startswith("#")], url_base, url_suffix
    )
    path = config.folder.processing_config
    lines = path.read_text(encoding="utf-8").splitlines()
    moved: tuple[Path, Path] | None = None
    existing: str | None = None
    if not config.versions:
        if label_existing is None:
            raise ScaffoldError(
                f"{name} is not versioned: it has one `source:` ({config.source.path}). To keep "
                f"that source as the first version and add {label} after it, give it a label: "
                f"{_command(name, label, source, git_url, git_ref, git_subfolder, url_base, url_suffix, site_url)}"
                " --label-existing OLD_LABEL (for example --label-existing 1.0)"
            )
        existing = check_label(label_existing, "--label-existing")
        if existing.lower() == label.lower():
            raise ScaffoldError(
                f"--label-existing {existing} and the new label {label} are the same"
            )
        lines, moved = _label_existing(lines, config, existing, entry)
    else:
        if label_existing is not None:
            raise ScaffoldError(
                f"{name} is already versioned ({', '.join(v.label for v in config.versions)}): "
                "--label-existing is for a server with a single `source:`"
            )
        taken = {v.label.lower(): v.label for v in config.versions}
        if label.lower() in taken:
            raise ScaffoldError(
                f"{name} already has a version {taken[label.lower()]!r} "
                f"(versions: {', '.join(taken.values())}); pick another label"
            )
        lines = _append_entry(lines, entry)
    original = path.read_bytes()
    _write(path, "\n".join(lines) + "\n")
    try:
        updated = load_processing_config(name, root)
    except ConfigError as exc:
        _write(path, original.decode("utf-8"))
        raise ConfigError(
            f"{path} left unchanged: adding version {label} would give: {exc}"
        ) from None
    if moved:
        moved = _move_checkout(*moved)
    return Added(updated, label, existing, moved)


def _command(name: str, label: str, *values: str | None) -> str:
    """The add_version.sh command line with these option values (those given)."""
    options = ("--source", "--git", "--ref", "--subfolder", "--url-base", "--url-suffix", "--url")
    words = ["tools/add_version.sh", name, label]
    for option, value in zip(options, values, strict=True):
        if value is not None:
            words += [option, value]
    return shlex.join(words)


def _write(path: Path, text: str) -> None:
    staged = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    staged.write_text(text, encoding="utf-8")
    os.replace(staged, path)


def _block(lines: list[str], key: str) -> tuple[int, int] | None:
    """The top-level block of ``key``: (index of its line, index after its last content line).

    The block runs until the next top-level key; comment lines at column 0 inside it do not end
    it, but those right before the next key stay outside (they describe that key).
    """
    start = next(
        (i for i, line in enumerate(lines) if (m := TOP_KEY.match(line)) and m.group(1) == key),
        None,
    )
    if start is None:
        return None
    end = start + 1
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if not line.strip() or line.startswith("#"):
            continue
        if not line[0].isspace() and not line.startswith("-"):
            break
        end = i + 1
    return start, end


def _inline_value(line: str) -> str:
    """What follows ``key:`` on a top-level line, comments dropped."""
    match = TOP_KEY.match(line)
    value = match.group(2) if match else ""
    return re.sub(r"(^|\s)#.*$", "", value).strip()


def _append_entry(lines: list[str], entry: list[str]) -> list[str]:
    """``entry`` appended to the ``versions:`` block, at the indentation of its items."""
    block = _block(lines, "versions")
    if block is None:
        raise ConfigError("processing_config.yaml has no top-level `versions:` list to add to")
    start, end = block
    if _inline_value(lines[start]):
        raise ConfigError(
            "`versions:` is written inline (on one line); write it as a block list to add "
            "versions with tools/add_version.sh, or add the entry by hand"
        )
    items = [line for line in lines[start + 1 : end] if line.lstrip().startswith("- ")]
    width = len(items[0]) - len(items[0].lstrip()) if items else 2
    return [*lines[:end], *indent(entry, width), *lines[end:]]


def _label_existing(
    lines: list[str], config: ProcessingConfig, existing: str, entry: list[str]
) -> tuple[list[str], tuple[Path, Path] | None]:
    """The ``source:`` block turned into ``versions:`` with ``existing`` and the new ``entry``.

    A git or site source synced into the default folder (``source-documentation/NAME``) moves to
    ``source-documentation/NAME/EXISTING``, where synced versions live, so that the new version's
    folder is not inside it.
    """
    block = _block(lines, "source")
    if block is None:
        raise ConfigError("processing_config.yaml has no top-level `source:` to label")
    start, end = block
    old = lines[start:end]
    first = ["- label: " + f'"{existing}"', "  " + old[0]]
    body = indent(old[1:], 2)  # under "  source:" in the item
    moved = None
    default_folder = config.server_root.parents[1] / "source-documentation" / config.name
    if config.source.synced and Path(os.path.abspath(config.source.path)) == default_folder:
        body = [_retarget(line, config, existing) for line in body]
        moved = (default_folder, default_folder / existing)
    converted = [
        *versions_header(config.name),
        *indent([*first, *body], 2),
        *indent(entry, 2),
        DEFAULT_VERSION_LINE,
    ]
    return [*lines[:start], *converted, *lines[end:]], moved


def _retarget(line: str, config: ProcessingConfig, existing: str) -> str:
    """A ``path:`` line naming the default git folder, pointed at the version's folder."""
    match = re.match(r"^(\s*path:\s*)(\S.*?)(\s+#.*)?$", line)
    if not match:
        return line
    try:
        value = substitute(
            yaml.safe_load(match.group(2)),
            variables_for(config.name, config.server_root.parents[1]),
        )
    except (yaml.YAMLError, ValueError):
        return line
    if Path(os.path.abspath(str(value))) != Path(os.path.abspath(config.source.path)):
        return line
    return f"{match.group(1)}${{PROJECT_ROOT}}/source-documentation/${{MCP_NAME}}/{existing}" + (
        match.group(3) or ""
    )


def _move_checkout(folder: Path, target: Path) -> tuple[Path, Path] | None:
    """Move a synced checkout into its version's subfolder (nothing to do if never synced)."""
    if not folder.is_dir():
        return None
    staging = folder.with_name(f".{folder.name}.moving")
    folder.rename(staging)
    folder.mkdir()
    staging.rename(target)
    return folder, target
