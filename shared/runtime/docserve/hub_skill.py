"""The agent skill (``SKILL.md``) of a hub: when to use which tool, and how to name a library.

Printed by ``--skill`` (``docbuild hub NAME... --skill``, or an installed server's ``--hub ...
--skill``), to save as ``~/.claude/skills/<hub>/SKILL.md`` or wherever the client reads skills.
"""

from __future__ import annotations

from .hub import LibraryInfo

TEMPLATE = """---
name: {name}
description: Search and read the documentation of {names} through the {name} MCP server. Use it whenever a question is about one of these libraries, before answering from memory, and cite the URL each passage comes with.
---

# Searching several libraries' documentation

The `{name}` MCP server holds the documentation of {count} libraries. Its tools read those
indexes only; calling them changes nothing.

{libraries}

## Which tool

- `list_libraries()` says what each library covers, its versions and whether it can answer now.
- `search(query, library=NAME)` first, for any question. Pass `library` whenever the question is
  about one library: without it every library is searched and the results merged, and passages
  from the others compete with the right ones. A list (`library=["a", "b"]`) searches those.
  Every result names its library, its `Title › Heading` and the URL to cite.
- `get_document(path, library=NAME, section=HEADING)` reads on: a page, or one section with its
  subsections, in reading order. Take `path` and `library` from a search result and `section`
  from its breadcrumb. A long page comes in parts; each part names the `offset` to go on from.
- `outline(library=NAME)` lists a library's pages; `outline(path, library=NAME)` one page's
  headings.
- `get_chunk(chunk_id, library=NAME)` re-reads one passage; `stats(library=NAME)` describes one
  index.

## Narrowing a search

- `path` (a folder or glob) and `section` (heading words) narrow within the libraries searched;
  a library where they match nothing is left out, and the answer says so.
- `version`: a documentation version's label, or `all`; without it each library's default.
- `mode`: `hybrid` (default), `keyword` for an exact name, `vector` for a question with none of
  the docs' words. `top_k`, `neighbors` and `max_tokens` work as on one library.

## Reading the answers

- Lines starting with `>` say how the answer was produced when something was degraded: a library
  that cannot answer now, no vector search, a filter that matched nothing.
- When no passage stands out, the answer ends with the other sections nearest the question,
  each with its library: read the likeliest with `get_document`, or search again in the words
  those headings use.
"""


def render_hub_skill(name: str, libraries: list[LibraryInfo]) -> str:
    """The hub's ``SKILL.md`` for the libraries it serves."""
    lines = []
    for info in libraries:
        versions = f" (versions {', '.join(info.versions)})" if len(info.versions) > 1 else ""
        size = f"{info.documents} pages; " if info.available else ""
        lines.append(f"- `{info.name}`{versions}: {size}{info.covers or 'not built yet'}")
    return TEMPLATE.format(
        name=name,
        names=", ".join(info.name for info in libraries),
        count=len(libraries),
        libraries="\n".join(lines),
    )
