"""A folder of hostile sources, as a careless or malicious documentation repository holds them:
links out of the folder (file, folder, inside a linked folder, dangling, a loop), includes that
climb out of it in every format that includes, names that break links, invalid UTF-8 names, a
binary file and an oversized one named ``.md``, markup and script in headings, titles and front
matter, and ``javascript:`` URLs where a URL is stored.

Everything outside the source folder holds :data:`SECRET`; nothing of it may reach a build.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

SECRET = "OUTSIDE-SECRET-7f3a"
"""Written only outside the source folder: a build that reads out of it stores this."""

SCRIPT = "<script>alert('xss')</script>"
IMAGE = "<img src=x onerror=alert('img')>"

ODD_NAMES = {  # file name -> the title its page is found by
    "what?.md": "Question mark page",
    "weird name #1.md": "Hash and space page",
    "100% sure.md": "Percent page",
    "café déjà.md": "Accented page",
}

REFUSED = {  # relative path in the report -> a word its reason holds
    "passwd.md": "outside",
    "passwd-include.md": "outside",
    "linked-include.adoc": "outside",
    "linked-out/": "outside",
    "alias/escape.md": "outside",
    "inner/escape.md": "outside",
    "dangling.md": "dangling",
    "binary.md": "binary",
    "huge.md": "max_file_bytes",
    "includes.md (includes ../outside/secret.md)": "outside",
    "includes.md (includes passwd-include.md)": "outside",
    "chapter.adoc (includes ../outside/secret.adoc)": "outside",
    "chapter.adoc (includes linked-include.adoc)": "outside",
    "page.rst (includes ../outside/secret.rst)": "outside",
    "page.rst (includes ../outside/secret.py)": "outside",
}
INVALID_NAME = b"bad-\xff-name.md"

UNSAFE_URLS = [
    "javascript:alert('jsonl')",
    "  JaVaScRiPt:alert(document.domain)",
    "java\tscript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "file:///etc/passwd",
]


def write_outside(outside: Path) -> None:
    """The files a hostile source points at: each holds :data:`SECRET`."""
    outside.mkdir(parents=True, exist_ok=True)
    for name in ("secret.md", "secret.adoc", "secret.rst", "secret.py", "secret.mdx"):
        (outside / name).write_text(f"# Secret\n\n{SECRET} in {name}\n")
    (outside / "folder").mkdir(exist_ok=True)
    (outside / "folder" / "leak.md").write_text(f"# Leak\n\n{SECRET} in a linked folder\n")


def write_hostile_sources(source: Path, outside: Path) -> None:
    """Fill ``source`` with hostile files; ``outside`` (beside it) holds what they point at."""
    write_outside(outside)
    source.mkdir(parents=True, exist_ok=True)
    guide = source / "guide"
    guide.mkdir(exist_ok=True)
    (guide / "intro.md").write_text(
        "---\n"
        f'title: "{SCRIPT} Intro {IMAGE}"\n'
        f'description: "An introduction {IMAGE} to the hostile folder"\n'
        "url: \"javascript:alert('front matter')\"\n"
        "---\n\n"
        f"## Installing {SCRIPT} the tool\n\n"
        "Run the installer with the `--prefix` option to choose a folder.\n"
        "A [bad link](javascript:alert('md-link')) and a [good one](https://example.org/).\n\n"
        "```html\n<script>alert('kept as code')</script>\n```\n"
    )
    for name, title in ODD_NAMES.items():
        (source / name).write_text(f"# {title}\n\nThis page has an awkward file name: {name}.\n")
    (source / os.fsdecode(INVALID_NAME)).write_bytes(b"# Bad name\n\nUnreachable by name.\n")

    os.symlink(outside / "secret.md", source / "passwd.md")  # a file link out
    os.symlink(outside / "folder", source / "linked-out")  # a folder link out
    inner = source / "inner"
    inner.mkdir(exist_ok=True)
    (inner / "kept.md").write_text("# Inner page\n\nReached through its own folder.\n")
    os.symlink(outside / "secret.md", inner / "escape.md")  # a link out inside a folder
    os.symlink("inner", source / "alias")  # a folder link that stays inside
    os.symlink("guide/intro.md", source / "intro-link.md")  # a file link that stays inside
    os.symlink(outside / "missing.md", source / "dangling.md")
    os.symlink(".", source / "loop")  # a folder link to itself

    (source / "includes.md").write_text(
        "# Includes\n\nBefore the includes.\n\n"
        '{{% include "../outside/secret.md" %}}\n\n'
        '{{% include "passwd-include.md" %}}\n\n'
        '{{% include "guide/fragment.txt" %}}\n'
    )
    os.symlink(outside / "secret.md", source / "passwd-include.md.link")
    os.rename(source / "passwd-include.md.link", source / "passwd-include.md")
    (guide / "fragment.txt").write_text("An included fragment that stays inside.\n")
    (source / "chapter.adoc").write_text(
        "= Chapter\n\nBefore.\n\ninclude::../outside/secret.adoc[]\n\n"
        "include::linked-include.adoc[]\n\ninclude::part.adoc[]\n"
    )
    os.symlink(outside / "secret.adoc", source / "linked-include.adoc")
    (source / "part.adoc").write_text("Part of the chapter, included from inside.\n")
    (source / "page.rst").write_text(
        "Page\n====\n\nBefore.\n\n.. include:: ../outside/secret.rst\n\n"
        ".. literalinclude:: ../outside/secret.py\n"
    )
    (source / "module.mdx").write_text(
        "import Secret from '../outside/secret.mdx'\n\n# Module\n\nAn MDX page.\n\n<Secret />\n"
    )

    (source / "entity.html").write_text(  # an HTML page asking for files beside it
        f'<!DOCTYPE html [<!ENTITY leak SYSTEM "file://{outside}/secret.md">]>\n'
        '<html xmlns:xi="http://www.w3.org/2001/XInclude"><head><title>Entity</title></head>'
        "<body><main><h1>Entity page</h1><p>An HTML page whose entity &leak; and whose "
        'include <xi:include href="../outside/secret.md" parse="text"/> must stay unread, '
        'with an <iframe src="../outside/secret.md"></iframe> and an '
        '<object data="../outside/secret.md"></object> beside enough words to be a page.</p>'
        "</main></body></html>\n"
    )
    (source / "binary.md").write_bytes(b"# Binary\x00\x01\x02" * 100)
    with (source / "huge.md").open("wb") as huge:  # sparse: 50 MB on paper, fast to write
        huge.truncate(50_000_000)
    records = [
        {"id": f"unsafe-{n}", "title": f"Unsafe record {n}", "text": f"Record {n}.", "url": url}
        for n, url in enumerate(UNSAFE_URLS)
    ]
    records.append(
        {"id": "safe", "title": "Safe record", "text": "A record.", "url": "https://ok.example/a"}
    )
    (source / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
