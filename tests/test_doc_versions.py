"""Several documentation versions in one server: config, scaffold and add_version, builds that
are incremental per version, the ``version`` column and ``build_info``, and two real versions of
the Mojo manual (the test corpora)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import MOJO_VERSIONS
from docbuild.build_report import BuildError
from docbuild.cli import main
from docbuild.config import ConfigError, load_processing_config
from docbuild.pipeline import Build
from docbuild.services.doc_versions import add_version
from docbuild.services.scaffold import scaffold
from docbuild.stages.snapshot import lake_location, list_snapshots
from docserve.duck import connect
from test_tools import tool


def write_pages(folder: Path, pages: dict[str, str]) -> Path:
    for name, text in pages.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def rows(database: Path, sql: str) -> list[tuple]:
    with connect(database, read_only=True, extensions=()) as con:
        return con.execute(sql).fetchall()


def build_info(database: Path) -> dict[str, object]:
    return {k: json.loads(v) for k, v in rows(database, "SELECT key, value FROM build_info")}


# --- configuration ------------------------------------------------------------------------


def write_config(project: Path, body: str) -> None:
    folder = project / "servers" / "cfg" / "config"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "processing_config.yaml").write_text("format: md\n" + body)


def versions_yaml(*entries: tuple[object, str], extra: str = "") -> str:
    lines = ["versions:"]
    for label, folder in entries:
        lines += [f"  - label: {label}", "    source:", f"      path: {folder}"]
    return "\n".join(lines) + "\n" + extra


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            versions_yaml(('"1.0"', "/d/a"), ('"1.0"', "/d/b")),
            r"already the label of versions\[0\]",
        ),
        (versions_yaml(('"v1"', "/d/a"), ('"V1"', "/d/b")), r"already the label of versions\[0\]"),
        (versions_yaml(('"all"', "/d/a")), r"'all' is reserved"),
        (versions_yaml(('"ALL"', "/d/a")), r"'ALL' is reserved"),
        (versions_yaml(('"../up"', "/d/a")), r"invalid version label '\.\./up'"),
        (versions_yaml(('"a b"', "/d/a")), r"invalid version label 'a b'"),
        (versions_yaml(('"x/y"', "/d/a")), r"invalid version label 'x/y'"),
        (versions_yaml(('""', "/d/a")), r"must not be empty"),
        (versions_yaml(("25.10", "/d/a")), r"read as a number: quote the label"),
        (
            versions_yaml(('"1"', "/d/a"), ('"2"', "/d/b"), extra='default_version: "3"\n'),
            r"default_version '3' is not a version label: use one of 1, 2",
        ),
        (
            versions_yaml(('"1"', "/d/a"), extra="source:\n  path: /d/a\n"),
            r"give 'source' .* or 'versions' .*, not both",
        ),
        (versions_yaml(('"1"', "/d/a"), ('"2"', "/d/a/v2")), r"lies inside versions\[0\]"),
        (versions_yaml(('"1"', "/d/a"), ('"2"', "/d/a")), r"is the same as versions\[0\]"),
        ("versions:\n  - source: {path: /d/a}\n", r"'versions\[0\]\.label' is required"),
        ("versions:\n  - label: x\n", r"'versions\[0\]\.source' must be a mapping"),
        ("versions:\n  - {label: x, source: {path: /d}, url: y}\n", r"unknown key\(s\).*: url"),
        ("versions: []\n", r"non-empty list"),
        ("source:\n  path: /d\ndefault_version: x\n", r"default_version needs a 'versions' list"),
    ],
)
def test_config_validation_errors(project: Path, body: str, message: str):
    write_config(project, body)
    with pytest.raises(ConfigError, match=message):
        load_processing_config("cfg", project)


def test_config_versions_defaults_overrides_and_legacy_local(project: Path):
    write_config(
        project,
        "url_base: https://x.org/docs\nurl_suffix: .html\n"
        "versions:\n"
        "  - label: 1\n    source:\n      path: ${PROJECT_ROOT}/copy\n"
        "      local: /docs/one\n"  # the legacy key: read in place instead of path
        '  - label: "2.0"\n    source:\n      git: {url: "file:///repo", subfolder: docs}\n'
        '    url_base: https://x.org/2.0\n    url_suffix: ""\n'
        '  - label: "3.0-beta_1"\n    source: {path: /docs/three}\n'
        'default_version: "2.0"\n',
    )
    config = load_processing_config("cfg", project)
    assert [v.label for v in config.versions] == ["1", "2.0", "3.0-beta_1"]
    assert config.default_version == config.default_label == "2.0"
    views = config.doc_versions()
    assert [v.key for v in views] == [f"versions[{i}].source.path" for i in range(3)]
    one, two, three = (v.config for v in views)
    assert one.source.path == Path("/docs/one")
    # a git version without a path syncs into source-documentation/NAME/LABEL
    assert two.source.path == project / "source-documentation" / "cfg" / "2.0"
    assert two.source.git_subfolder == "docs" and config.source == two.source  # the default's
    assert (one.url_base, one.url_suffix) == ("https://x.org/docs", ".html")
    assert (two.url_base, two.url_suffix) == ("https://x.org/2.0", "")
    assert (three.url_base, three.url_suffix) == ("https://x.org/docs", ".html")

    write_config(project, "source:\n  path: /docs\n")  # unversioned: one entry, no label
    plain = load_processing_config("cfg", project)
    assert plain.versions == [] and plain.default_label is None
    assert [(v.label, v.key, v.config) for v in plain.doc_versions()] == [
        (None, "source.path", plain)
    ]


def test_add_version_keeps_the_layout_and_comments_of_a_hand_written_list(
    project: Path, tmp_path: Path
):
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
    write_config(
        project,
        "versions:   # the releases\n"
        f"- label: a\n  source: {{path: {tmp_path / 'a'}}}\n"
        "# b was the long-term release\n"
        f"- label: b\n  source: {{path: {tmp_path / 'b'}}}\n"
        "\n# chunking for every version\nchunking:\n  max_tokens: 128\n",
    )
    added = add_version("cfg", "c", str(tmp_path / "c"), url_suffix=".html", root=project)
    text = (project / "servers" / "cfg" / "config" / "processing_config.yaml").read_text()
    assert "versions:   # the releases\n" in text and "# b was the long-term release\n" in text
    assert text.index('- label: "c"') < text.index("# chunking for every version")
    config = added.config
    assert [v.label for v in config.versions] == ["a", "b", "c"] and config.default_label == "c"
    assert config.doc_versions()[2].config.url_suffix == ".html"
    assert config.chunking.max_tokens == 128

    inline = project / "servers" / "cfg" / "config" / "processing_config.yaml"
    inline.write_text(f"versions: [{{label: a, source: {{path: {tmp_path / 'a'}}}}}]\n")
    with pytest.raises(ConfigError, match="written inline"):
        add_version("cfg", "b", str(tmp_path / "b"), root=project)
    with pytest.raises(ConfigError, match=r"left unchanged: .* lies inside versions\[0\]"):
        inline.write_text(f"versions:\n  - label: a\n    source: {{path: {tmp_path}}}\n")
        add_version("cfg", "b", str(tmp_path / "b"), root=project)
    assert inline.read_text() == f"versions:\n  - label: a\n    source: {{path: {tmp_path}}}\n"


# --- scaffold, add_version, builds --------------------------------------------------------

V1 = {
    "guide.md": "# Guide\n\nInstall the widget with the old installer.\n",
    "shared.md": "# Shared\n\nThis page is the same in every version of the manual.\n",
    "api/calls.md": "# Calls\n\nCall `frobnicate()` to turn the crank.\n",
}
V2 = {
    "guide.md": "# Guide\n\nInstall the widget with the new installer, which is faster.\n",
    "shared.md": V1["shared.md"],
    "api/calls.md": V1["api/calls.md"],
    "api/new.md": "# New calls\n\nCall `defrobnicate()` to turn it back.\n",
}


def test_scaffold_add_version_build_and_rebuild_one_version(
    project: Path, tmp_path: Path, embedder, monkeypatch, capsys
):
    one = write_pages(tmp_path / "docs-1", V1)
    two = write_pages(tmp_path / "docs-2", V2)
    made = tool(
        "scaffold_new_mcp.sh",
        "vdocs",
        "--source",
        str(one),
        "--format",
        "md",
        "--url-base",
        "https://x.org/1.0",
        "--version",
        "1.0",
        root=project,
    )
    assert made.returncode == 0, made.stderr
    config_file = project / "servers" / "vdocs" / "config" / "processing_config.yaml"
    config_file.write_text(config_file.read_text().replace("versions:", "versions:  # mine"))
    added = tool(
        "add_version.sh",
        "vdocs",
        "2.0",
        "--source",
        str(two),
        "--url-base",
        "https://x.org/2.0",
        root=project,
    )
    assert added.returncode == 0, added.stderr
    assert "added version 2.0 to vdocs" in added.stdout
    assert "versions, oldest first: 1.0, 2.0 (default: 2.0)" in added.stdout
    assert added.stdout.rstrip().endswith("next: tools/build_mcp.sh vdocs")
    assert "versions:  # mine" in config_file.read_text()  # the user's comment stays
    again = tool("add_version.sh", "vdocs", "2.0", "--source", str(two), root=project)
    assert again.returncode == 2 and "already has a version '2.0'" in again.stderr
    reserved = tool("add_version.sh", "vdocs", "all", "--source", str(two), root=project)
    assert reserved.returncode == 2 and "reserved" in reserved.stderr
    nowhere = tool("add_version.sh", "vdocs", "3.0", "--source", str(tmp_path / "no"), root=project)
    assert nowhere.returncode == 2 and "does not exist" in nowhere.stderr

    config = load_processing_config("vdocs", project)
    first = Build(config, embedder).run()
    assert [(v.label, v.files, v.documents) for v in first.versions] == [
        ("1.0", 3, 3),
        ("2.0", 4, 4),
    ]
    assert first.default_version == "2.0"
    assert first.snapshot.versions_changed == ["1.0", "2.0"]
    # identical texts (shared.md, api/calls.md) are embedded once for both versions
    assert first.chunks == 7 and first.embedded == 5

    database = config.database_path
    table = rows(database, "SELECT version, path, document_id, url FROM chunks ORDER BY 1, 2")
    assert table == [
        ("1.0", "api/calls.md", "1.0/api/calls.md", "https://x.org/1.0/api/calls"),
        ("1.0", "guide.md", "1.0/guide.md", "https://x.org/1.0/guide"),
        ("1.0", "shared.md", "1.0/shared.md", "https://x.org/1.0/shared"),
        ("2.0", "api/calls.md", "2.0/api/calls.md", "https://x.org/2.0/api/calls"),
        ("2.0", "api/new.md", "2.0/api/new.md", "https://x.org/2.0/api/new"),
        ("2.0", "guide.md", "2.0/guide.md", "https://x.org/2.0/guide"),
        ("2.0", "shared.md", "2.0/shared.md", "https://x.org/2.0/shared"),
    ]
    shared = rows(database, "SELECT chunk_id, content_hash FROM chunks WHERE path = 'shared.md'")
    assert len({r[0] for r in shared}) == 2 and len({r[1] for r in shared}) == 1
    columns = [r[0] for r in rows(database, "DESCRIBE chunks")]
    assert columns[columns.index("path") + 1] == "version"
    info = build_info(database)
    assert info["default_version"] == "2.0"
    assert info["versions"] == [
        {
            "label": "1.0",
            "documents": 3,
            "chunks": 3,
            "source_path": str(config.doc_versions()[0].config.source.path),
            "source_revision": None,
        },
        {
            "label": "2.0",
            "documents": 4,
            "chunks": 4,
            "source_path": str(config.doc_versions()[1].config.source.path),
            "source_revision": None,
        },
    ]

    # edit one file of version 1.0 only: 2.0 is neither parsed, chunked nor embedded again
    (one / "guide.md").write_text(V1["guide.md"] + "\nIt also needs a spanner.\n")
    edited = Build(load_processing_config("vdocs", project), embedder).run()
    old, new = edited.versions
    assert (old.files_unchanged, old.documents_unchanged, old.embedded) == (2, 2, 1)
    assert (old.added, old.removed) == (1, 1)
    assert (new.files_unchanged, new.documents_unchanged, new.embedded) == (4, 4, 0)
    assert (new.added, new.removed) == (0, 0)
    assert edited.embedded == 1 and edited.snapshot.versions_changed == ["1.0"]
    builds = list_snapshots(lake_location(config))
    assert [b["info"]["versions_changed"] for b in builds] == [["1.0", "2.0"], ["1.0"]]
    assert (
        "spanner"
        in rows(database, "SELECT content FROM chunks WHERE document_id = '1.0/guide.md'")[0][0]
    )

    monkeypatch.setenv("DOCMCP_PROJECT_ROOT", str(project))
    assert main(["builds", "vdocs"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].endswith("doc versions changed")
    assert [re.split(r"\s{2,}", line.strip())[-1] for line in listed[1:]] == ["1.0, 2.0", "1.0"]

    # rollback to the first build keeps its versions
    rolled = Build(load_processing_config("vdocs", project)).rollback(builds[0]["snapshot_id"])
    assert [(v.label, v.chunks) for v in rolled.versions] == [("1.0", 3), ("2.0", 4)]
    assert "spanner" not in " ".join(r[0] for r in rows(database, "SELECT content FROM chunks"))
    assert [v["label"] for v in build_info(database)["versions"]] == ["1.0", "2.0"]

    # a missing folder fails the build, naming the version and the key to fix
    (two / "api" / "new.md").unlink()
    moved = tmp_path / "moved"
    two.rename(moved)
    with pytest.raises(
        BuildError,
        match=r"source folder .*docs-2 of version 2\.0 does not exist: fix versions\[1\]"
        r"\.source\.path in .*processing_config\.yaml",
    ):
        Build(load_processing_config("vdocs", project), embedder).run()


def test_unversioned_server_is_refused_then_labelled(project: Path, tmp_path: Path, embedder):
    one = write_pages(tmp_path / "docs-1", V1)
    two = write_pages(tmp_path / "docs-2", V2)
    scaffold("plain", str(one), "md", root=project)
    config_file = project / "servers" / "plain" / "config" / "processing_config.yaml"
    config_file.write_text(
        config_file.read_text().replace("source:", "source:  # where it all began")
    )
    config = load_processing_config("plain", project)
    first = Build(config, embedder).run()
    assert rows(config.database_path, "SELECT DISTINCT version FROM chunks") == [(None,)]
    info = build_info(config.database_path)
    assert info["versions"] == [] and info["default_version"] is None
    assert first.snapshot.versions_changed == [] and first.versions == []

    refused = tool("add_version.sh", "plain", "2.0", "--source", str(two), root=project)
    assert refused.returncode == 2
    assert "plain is not versioned" in refused.stderr
    assert f"--source {two} --label-existing OLD_LABEL" in refused.stderr

    done = tool(
        "add_version.sh",
        "plain",
        "2.0",
        "--source",
        str(two),
        "--label-existing",
        "1.0",
        root=project,
    )
    assert done.returncode == 0, done.stderr
    assert "labelled the existing source of plain as version 1.0" in done.stdout
    text = config_file.read_text()
    assert "source:  # where it all began" in text and "\nsource:" not in text
    config = load_processing_config("plain", project)
    assert [v.label for v in config.versions] == ["1.0", "2.0"]
    assert config.doc_versions()[0].config.source.path == one

    labelled = Build(config, embedder).run()
    # every chunk of 1.0 has a new id (the label is part of it), but no text is embedded again
    assert labelled.versions[0].embedded == 0 and labelled.versions[0].added == 3
    assert labelled.snapshot.by_version[None] == (0, 3)  # the unversioned chunks left
    assert labelled.embedded == 2  # 2.0's guide.md and api/new.md
    assert labelled.snapshot.versions_changed == ["1.0", "2.0"]
    assert rows(config.database_path, "SELECT count(*) FROM chunks WHERE version IS NULL") == [(0,)]


# --- two real versions of the Mojo manual -------------------------------------------------


def test_mojo_manual_two_versions(mojo_two_versions_build):
    server, report = mojo_two_versions_build
    database = server / "runtime" / "mojo_versions.db"
    older, newer = report.versions
    assert [older.label, newer.label] == list(MOJO_VERSIONS)
    assert report.default_version == "25.7" and report.snapshot.versions_changed == ["25.1", "25.7"]
    assert report.chunks <= 600 and report.hygiene.unbalanced_fences == 0
    assert older.files == older.documents == 10 and newer.files == newer.documents == 13
    # identical pages (copy-capture, implicit) are embedded once for both versions
    assert report.embedded < report.chunks
    counts = dict(rows(database, "SELECT version, count(*) FROM chunks GROUP BY version"))
    assert counts == {"25.1": older.chunks, "25.7": newer.chunks}
    with_fieldwise = rows(
        database, "SELECT DISTINCT version FROM chunks WHERE content ILIKE '%fieldwise_init%'"
    )
    assert with_fieldwise == [("25.7",)]
    assert rows(
        database,
        "SELECT DISTINCT version FROM chunks WHERE path = 'decorators/fieldwise-init.mdx'",
    ) == [("25.7",)]
    paths = {
        r[0]: r[1]
        for r in rows(database, "SELECT version, list(DISTINCT path) FROM chunks GROUP BY 1")
    }
    assert "structs.mdx" in paths["25.1"] and "structs.mdx" in paths["25.7"]
    info = build_info(database)
    assert [(v["label"], v["chunks"]) for v in info["versions"]] == [
        ("25.1", older.chunks),
        ("25.7", newer.chunks),
    ]
    assert info["default_version"] == "25.7"
    assert all(v["source_path"].endswith("docs") for v in info["versions"])
