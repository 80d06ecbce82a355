"""Every server folder carries an exact copy of the runtime, and the runtime stands on its own.

``shared/runtime/docserve`` is the one source; a build copies it into ``servers/NAME/runtime``.
Git holds no copy (a server folder in git is only its configuration); copies are checked
wherever a build made them.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from docbuild.services.scaffold import TEMPLATES, render
from docbuild.stages.package import RUNTIME_SOURCE, install_runtime
from docserve.folder import ServerFolder

REPO = Path(__file__).resolve().parents[1]
SOURCE = RUNTIME_SOURCE / "docserve"
SOURCE_FILES = sorted(p.name for p in SOURCE.glob("*.py"))


def tracked_build_output() -> list[str]:
    """Files git tracks under ``servers/*/`` that a build writes (it should track none)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "servers"],
            cwd=REPO,
            capture_output=True,
            check=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    built = ("runtime", "dist", "build", "requirements.txt", "README.md")
    return [
        n
        for n in filter(None, listed.split("\0"))
        if Path(n).parts[2:3] and Path(n).parts[2] in built
    ]


COPIES = sorted(p for p in REPO.glob("servers/*/runtime/docserve") if p.is_dir())
NO_COPY = pytest.mark.skip(reason="no built server folder (git holds none; a build makes one)")
COPY_PARAMS = COPIES or [pytest.param(None, marks=NO_COPY)]


def test_git_holds_no_build_output():
    """A server folder in git is its configuration; the build writes the rest from one source."""
    assert not tracked_build_output(), "remove these from git (the build writes them)"


def rebuild_hint(copy: Path) -> str:
    return f"rebuild with `tools/build_mcp.sh {copy.parents[1].name}`"


@pytest.mark.parametrize("copy", COPY_PARAMS)
def test_runtime_copy_is_exact(copy: Path):
    present = {p.name for p in copy.glob("*.py")}
    missing = sorted(set(SOURCE_FILES) - present)
    extra = sorted(present - set(SOURCE_FILES))
    assert not missing, f"{copy} lacks {missing}: {rebuild_hint(copy)}"
    assert not extra, f"{copy} has files the runtime no longer has, {extra}: {rebuild_hint(copy)}"
    differ = [n for n in SOURCE_FILES if (copy / n).read_bytes() != (SOURCE / n).read_bytes()]
    assert not differ, f"{copy}: {differ} differ from {SOURCE}: {rebuild_hint(copy)}"


@pytest.mark.parametrize("copy", COPY_PARAMS)
def test_server_script_is_the_rendered_template(copy: Path):
    name = copy.parents[1].name
    underscored = name.replace("-", "_")
    script = copy.parent / f"{underscored}_server.py"
    expected = render(
        (RUNTIME_SOURCE / "server_script.py").read_text(),
        {"name": name, "name_underscored": underscored},
    )
    assert script.read_text() == expected, rebuild_hint(copy)


def test_install_runtime_writes_an_exact_copy_and_drops_stale_files(tmp_path: Path):
    root = tmp_path / "servers" / "some-docs"
    stale = root / "runtime" / "docserve" / "retired_module.py"
    stale.parent.mkdir(parents=True)
    stale.write_text("OLD = True\n")
    (root / "runtime" / "docserve" / "search.py").write_text("# edited by hand\n")
    script = install_runtime(ServerFolder(root, "some-docs"))
    copy = root / "runtime" / "docserve"
    assert sorted(p.name for p in copy.glob("*.py")) == SOURCE_FILES
    for name in SOURCE_FILES:
        assert (copy / name).read_bytes() == (SOURCE / name).read_bytes(), name
    assert script == root / "runtime" / "some_docs_server.py"
    assert (root / "requirements.txt").read_text() == (TEMPLATES / "requirements.txt").read_text()
    assert '"some-docs"' in script.read_text() and "{{" not in script.read_text()


# --- the runtime imports only itself, the standard library and its requirements ---------------


def imported_modules(path: Path) -> set[str]:
    """Top-level names of every absolute import in ``path`` (including imports in functions)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("name", SOURCE_FILES)
def test_docserve_imports_nothing_from_docbuild(name: str):
    modules = imported_modules(SOURCE / name)
    assert "docbuild" not in modules, f"docserve/{name} imports docbuild"


_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _parse(line: str) -> tuple[str, frozenset[str], str]:
    match = _REQUIREMENT.match(line)
    assert match, line
    extras = frozenset(e.strip() for e in (match[2] or "").split(",") if e.strip())
    return match[1], extras, line.partition(";")[2]


def installed_by(requirements: Path) -> set[str]:
    """Distributions a ``pip install -r requirements`` brings in (as installed here)."""
    todo = [
        _parse(line)[:2]
        for line in requirements.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = todo.pop()
        if (_normal(name), extras) in seen:
            continue
        seen.add((_normal(name), extras))
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for line in requires:
            dep, dep_extras, marker = _parse(line)
            extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
            if extra is None or extra[1] in extras:
                todo.append((dep, dep_extras))
    return {name for name, _ in seen}


def third_party_imports() -> dict[str, set[str]]:
    """Third-party top-level modules the runtime imports, with the files importing them."""
    found: dict[str, set[str]] = {}
    for name in SOURCE_FILES:
        for module in imported_modules(SOURCE / name):
            if module not in sys.stdlib_module_names and module != "docserve":
                found.setdefault(module, set()).add(name)
    return found


@pytest.mark.parametrize(
    "requirements",
    [
        TEMPLATES / "requirements.txt",
        *sorted(p.parent / "requirements.txt" for p in REPO.glob("servers/*/runtime")),
    ],
    ids=lambda p: str(p.relative_to(REPO)),
)
def test_requirements_cover_every_runtime_import(requirements: Path):
    if not requirements.is_file():
        pytest.skip(f"{requirements} does not exist")
    installed = installed_by(requirements)
    providers = metadata.packages_distributions()
    uncovered = {
        module: sorted(files)
        for module, files in third_party_imports().items()
        if not {_normal(d) for d in providers.get(module, [module])} & installed
    }
    assert not uncovered, f"{requirements} does not install what docserve imports: {uncovered}"
