"""Parse reStructuredText with enough of Sphinx's directives and roles that nothing is left raw.

Sphinx's names are installed only while :func:`parse` runs (under a lock, restored afterwards,
as Sphinx itself does), so other users of docutils in the process see docutils unchanged. Every
directive and role resolves to standard docutils nodes; unknown ones keep their text and are
reported through the document's reporter.
"""

from __future__ import annotations

import ast
import copy
import io
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from docutils import frontend, nodes, utils
from docutils.parsers.rst import Directive, Parser, directives, roles
from docutils.parsers.rst.directives.misc import Include, adapt_path
from docutils.parsers.rst.states import Inliner
from docutils.transforms.references import Footnotes, PropagateTargets

from docbuild.confine import inside

Message = tuple[int | None, str]
"""A parser note: (line, text)."""


def names(text: str) -> tuple[str, ...]:
    """The space-separated names in ``text``."""
    return tuple(text.split())


class highlightlang(nodes.Element, nodes.Invisible):
    """Marks the default language of the ``::`` blocks that follow it."""


@dataclass
class SphinxContext:
    """Per-document state the directives share: source root, current module and class; what
    the file pulled in (``dependencies``, absolute paths) and whether it holds a toctree."""

    root: Path
    module: str | None = None
    classes: list[str] = field(default_factory=list)
    has_toctree: bool = False
    dependencies: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # includes that lead out of the root
    synopsis: str | None = None  # the page's module's one-line description


class AnyOptions(dict[str, Callable[[str], str]]):
    """An option spec accepting every option (Sphinx extensions add many we do not need)."""

    def __missing__(self, key: str) -> Callable[[str | None], str]:
        return directives.unchanged


ANY_OPTIONS = AnyOptions(name=directives.unchanged)


class SphinxDirective(Directive):
    """Base: any arguments and options, content allowed."""

    has_content = True
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec = ANY_OPTIONS

    @property
    def context(self) -> SphinxContext:
        return self.state.document.settings.sphinx

    @property
    def kind(self) -> str:
        """The directive's name, lower case, without its domain (``py:function`` → ``function``)."""
        return self.name.lower().rpartition(":")[2]

    def parsed_content(self) -> list[nodes.Node]:
        holder = nodes.container()
        self.state.nested_parse(self.content, self.content_offset, holder)
        return holder.children

    def inline(self, text: str) -> list[nodes.Node]:
        """Inline markup of ``text``; a closing ``::`` shown as ``:``, as in a paragraph."""
        if text.endswith("::"):
            text = text[:-2].rstrip() if text[-3:-2].isspace() else text[:-1]
        parsed, _ = self.state.inline_text(text, self.lineno)
        return parsed

    def note(self, text: str) -> None:
        """Report a best-effort note (observed by the caller, never put into the text)."""
        self.state.document.reporter.warning(text, line=self.lineno)


class Drop(SphinxDirective):
    """Pure structure or metadata (index, sectionauthor, tabularcolumns, ...): nothing kept."""

    def run(self) -> list[nodes.Node]:
        return []


class Toctree(Drop):
    """A table of contents: dropped, remembered so an otherwise empty file can say why."""

    def run(self) -> list[nodes.Node]:
        self.context.has_toctree = True
        return []


class Content(SphinxDirective):
    """Keeps its body (hlist, glossary, ...)."""

    def run(self) -> list[nodes.Node]:
        return self.parsed_content()


class Unknown(Content):
    """A directive nobody registered: its body kept as text, and reported."""

    def run(self) -> list[nodes.Node]:
        self.note(f'unknown directive "{self.name}"; its content kept as text')
        return self.parsed_content()


class Centered(SphinxDirective):
    """``.. centered:: text``: a paragraph."""

    def run(self) -> list[nodes.Node]:
        return [nodes.paragraph("", "", *self.inline(self.arguments[0]))] if self.arguments else []


class Only(Content):
    """``.. only:: html``: the body when the expression holds for an HTML build."""

    def run(self) -> list[nodes.Node]:
        try:
            keep = holds(ast.parse(self.arguments[0] if self.arguments else "", mode="eval").body)
        except (SyntaxError, ValueError):
            keep = True
        return self.parsed_content() if keep else []


HTML_TAGS = {"html", "format_html", "builder_html", "dirhtml", "singlehtml"}


def holds(expr: ast.expr) -> bool:
    """Evaluate an ``only`` expression with the tags of an HTML build."""
    if isinstance(expr, ast.Name):
        return expr.id in HTML_TAGS
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        return not holds(expr.operand)
    if isinstance(expr, ast.BoolOp):
        values = map(holds, expr.values)
        return all(values) if isinstance(expr.op, ast.And) else any(values)
    raise ValueError("unsupported expression")


class Highlight(SphinxDirective):
    """``.. highlight:: lang`` sets the language of later ``::`` blocks."""

    def run(self) -> list[nodes.Node]:
        return [highlightlang(lang=self.arguments[0].strip())] if self.arguments else []


def code_nodes(code: str, language: str | None, caption: str | None) -> list[nodes.Node]:
    """A literal block (with its language) preceded by its caption."""
    block = nodes.literal_block(code, code)
    if language:
        block["language"] = language
    return [nodes.paragraph(caption, caption), block] if caption else [block]


class CodeBlock(SphinxDirective):
    """``code-block``/``sourcecode``/``code`` and the doctest family, with their language."""

    languages: ClassVar[dict[str, str]] = {
        "doctest": "pycon",
        "testcode": "python",
        "testoutput": "none",
    }

    def run(self) -> list[nodes.Node]:
        if "hide" in self.options or not self.content:
            return []
        language = self.languages.get(self.kind) or (self.arguments or [""])[0].strip()
        return code_nodes("\n".join(self.content), language, self.options.get("caption"))


class ProductionList(SphinxDirective):
    """Grammar productions, kept as a code block (token backticks removed)."""

    def run(self) -> list[nodes.Node]:
        lines = (self.arguments or [""])[0].split("\n")
        if lines and ":" not in lines[0]:
            lines = lines[1:]  # the grammar's name
        return code_nodes("\n".join(lines).replace("`", ""), "none", None)


def resolve(directive: Directive, argument: str) -> tuple[Path | None, str | None]:
    """The file an include names, or why it cannot be read (absent; one outside the source
    folder is recorded as refused, with no note of its own)."""
    document = directive.state.document
    target = Path(adapt_path(argument, document.current_source, document.settings.root_prefix))
    if not inside(document.settings.sphinx.root, target):
        document.settings.sphinx.refused.append(argument)
        return None, None
    target = target.resolve()
    if not target.is_file():
        return None, f'"{argument}" not found'
    document.settings.sphinx.dependencies.append(str(target))
    return target, None


class SafeInclude(Include):
    """docutils' include, for files inside the source folder only; a missing file is a note."""

    option_spec = ANY_OPTIONS

    def run(self) -> list[nodes.Node]:
        argument = directives.path(self.arguments[0])
        if not argument.startswith("<"):
            target, problem = resolve(self, argument)
            if target is None:
                if problem:
                    self.state.document.reporter.warning(f"include {problem}", line=self.lineno)
                return []
        settings = self.state.document.settings
        settings.file_insertion_enabled = True
        try:
            return super().run()
        finally:
            settings.file_insertion_enabled = False


EXTENSION_LANGUAGES = {".py": "python", ".c": "c", ".h": "c", ".txt": "none", ".asdl": "none"}


class LiteralInclude(SphinxDirective):
    """Sphinx's ``literalinclude``: the file as a code block, or a short note when unavailable."""

    required_arguments = 1
    optional_arguments = 0

    def run(self) -> list[nodes.Node]:
        argument = self.arguments[0]
        target, problem = resolve(self, argument)
        if target is None:
            if problem:
                self.note(f"literalinclude {problem}")
            note = f"(example file {argument} is not included here)"
            return [nodes.paragraph(note, note)]
        text = target.read_text(encoding=self.options.get("encoding", "utf-8"), errors="replace")
        language = self.options.get("language") or EXTENSION_LANGUAGES.get(target.suffix)
        return code_nodes(self.clip(text), language, self.options.get("caption"))

    def clip(self, text: str) -> str:
        """Apply ``lines``, ``start-after``/``end-before`` and ``prepend``/``append``."""
        lines = text.split("\n")
        if "lines" in self.options:
            wanted = line_numbers(self.options["lines"], len(lines))
            lines = [lines[n] for n in wanted]
        text = "\n".join(lines)
        for option, keep_marker in (("start-after", False), ("start-at", True)):
            if marker := self.options.get(option):
                at = text.find(marker)
                text = text[at + (0 if keep_marker else len(marker)) :] if at >= 0 else text
                text = text.split("\n", 1)[1] if not keep_marker and "\n" in text else text
        for option, keep_marker in (("end-before", False), ("end-at", True)):
            if marker := self.options.get(option):
                at = text.find(marker)
                text = text[: at + (len(marker) if keep_marker else 0)] if at >= 0 else text
        parts = [self.options.get("prepend"), text.strip("\n"), self.options.get("append")]
        return "\n".join(part for part in parts if part)


def line_numbers(spec: str, count: int) -> list[int]:
    """Zero-based line indexes from a Sphinx ``lines`` spec such as ``1,3-5,8-``."""
    wanted: list[int] = []
    for part in spec.split(","):
        start, dash, end = part.strip().partition("-")
        first = int(start or 1)
        last = (int(end) if end else count) if dash else first
        wanted.extend(n - 1 for n in range(first, min(last, count) + 1))
    return wanted


class Module(SphinxDirective):
    """``module``/``currentmodule``: sets the module objects are qualified with. A ``module``
    opening a section gives the section Sphinx's id for it (``module-csv``)."""

    def run(self) -> list[nodes.Node]:
        name = (self.arguments or ["None"])[0].strip()
        self.context.module = None if name == "None" else name
        self.context.classes = []
        section = self.state.parent
        opening = all(isinstance(c, nodes.title | nodes.Invisible) for c in section.children)
        indexed = self.kind == "module" and not {"noindex", "no-index"} & set(self.options)
        if self.kind == "module" and self.context.synopsis is None:
            self.context.synopsis = self.options.get("synopsis")
        if indexed and isinstance(section, nodes.section) and opening:
            ids = section["ids"]
            ids.insert(sum(i.startswith("module-") for i in ids), f"module-{name}")
        return []


PY_KIND_PREFIX = {
    "class": "class",
    "exception": "exception",
    "classmethod": "classmethod",
    "staticmethod": "static",
    "coroutinefunction": "coroutine",
    "coroutinemethod": "coroutine",
    "awaitablefunction": "awaitable",
    "awaitablemethod": "awaitable",
    "abstractmethod": "abstractmethod",
    "property": "property",
}
PY_OBJECTS = {
    *PY_KIND_PREFIX,
    *("function", "method", "data", "attribute", "decorator", "decoratormethod", "type"),
}
CLASS_LIKE = {"class", "exception"}
OPTION_PREFIXES = {
    "async": "async",
    "classmethod": "classmethod",
    "staticmethod": "static",
    "abstractmethod": "abstractmethod",
}


class ObjectDescription(SphinxDirective):
    """An object (function, class, option, C function, ...): its signatures as inline code
    lines, Python names qualified with the current module and class, then its body."""

    required_arguments = 1
    optional_arguments = 0

    def run(self) -> list[nodes.Node]:
        kind = self.kind
        python = kind in PY_OBJECTS and self.name.lower().rpartition(":")[0] in ("", "py")
        lines = self.arguments[0].replace("\\\n", "").split("\n")
        signatures = [line.strip() for line in lines if line.strip()]
        shown = [self.python_signature(kind, s) if python else s for s in signatures]
        result: list[nodes.Node] = [nodes.paragraph("", "", nodes.literal(s, s)) for s in shown]
        nested = python and kind in CLASS_LIKE and signatures
        if nested:
            self.context.classes.append(self.qualified(signatures[0].split("(")[0].strip()))
        try:
            return result + self.parsed_content()
        finally:
            if nested:
                self.context.classes.pop()

    def qualified(self, name: str) -> str:
        """``name`` with its class and module, as Sphinx ids it (``csv.Sniffer.sniff``)."""
        if self.context.classes:
            owner = self.context.classes[-1]
            return f"{owner}.{name.removeprefix(owner.rpartition('.')[2] + '.')}"
        module = self.options.get("module") or self.context.module
        if not module or name.partition(".")[0] == module.partition(".")[0]:
            return name
        return f"{module}.{name}"

    def python_signature(self, kind: str, signature: str) -> str:
        name, paren, rest = signature.partition("(")
        text = self.qualified(name.strip()) + paren + rest
        if kind in ("decorator", "decoratormethod"):
            text = "@" + text
        prefixes = [OPTION_PREFIXES[o] for o in OPTION_PREFIXES if o in self.options]
        prefixes += [PY_KIND_PREFIX[kind]] if kind in PY_KIND_PREFIX else []
        suffix = "".join(
            f"{sep}{self.options[o]}"
            for o, sep in (("type", ": "), ("value", " = "))
            if self.options.get(o)
        )
        return " ".join([*dict.fromkeys(prefixes), text + suffix])


def admonition(label: str, body: list[nodes.Node]) -> list[nodes.Node]:
    """An admonition-like block: ``label`` (e.g. "Note") heading its body."""
    return [nodes.admonition("", nodes.title(label, label), *body)]


class Label(SphinxDirective):
    """note/warning/seealso/impl-detail/...: the body headed by a label."""

    optional_arguments = 0
    final_argument_whitespace = False
    labels: ClassVar[dict[str, str]] = {
        "seealso": "See also",
        "impl-detail": "CPython implementation detail",
    }

    def run(self) -> list[nodes.Node]:
        label = self.labels.get(self.kind, self.kind.capitalize())
        return admonition(label, self.parsed_content())


class ImplDetail(Label):
    """``impl-detail`` takes its text as an optional argument too."""

    optional_arguments = 1
    final_argument_whitespace = True

    def run(self) -> list[nodes.Node]:
        lead = [nodes.paragraph("", "", *self.inline(self.arguments[0]))] if self.arguments else []
        return admonition(self.labels[self.kind], lead + self.parsed_content())


class VersionChange(SphinxDirective):
    """versionadded/versionchanged/deprecated/deprecated-removed, worded as Sphinx does."""

    required_arguments = 1
    optional_arguments = 2
    labels: ClassVar[dict[str, str]] = {
        "versionadded": "New in version {}",
        "versionchanged": "Changed in version {}",
        "deprecated": "Deprecated since version {}",
        "deprecated-removed": "Deprecated since version {}, will be removed in version {}",
    }

    def run(self) -> list[nodes.Node]:
        template = self.labels[self.kind]
        wanted = template.count("{}")
        words = " ".join(self.arguments).split(None, wanted)
        label = template.format(*(words + [""] * wanted)[:wanted])
        text = " ".join(words[wanted:])
        lead = [nodes.paragraph("", "", *self.inline(text))] if text.strip() else []
        return admonition(label, lead + self.parsed_content())


class Availability(SphinxDirective):
    """``.. availability:: Unix, not WASI.``"""

    def run(self) -> list[nodes.Node]:
        lead = nodes.paragraph("", "", *self.inline((self.arguments or [""])[0]))
        return admonition("Availability", [lead, *self.parsed_content()])


class AuditEvent(SphinxDirective):
    """``.. audit-event:: name args``: "Raises an auditing event name with arguments args."."""

    required_arguments = 1
    optional_arguments = 2

    def run(self) -> list[nodes.Node]:
        if self.content:
            return self.parsed_content()
        name, args = [*self.arguments, ""][:2]
        found = [a.strip() for a in args.strip("'\"").split(",") if a.strip()]
        words = ["Raises an auditing event ", nodes.literal(name, name)]
        if not found:
            words.append(" with no arguments.")
        else:
            words.append(" with argument " if len(found) == 1 else " with arguments ")
            for n, arg in enumerate(found):
                words += [", " if n else "", nodes.literal(arg, arg)]
            words.append(".")
        return [
            nodes.paragraph("", "", *(nodes.Text(w) if isinstance(w, str) else w for w in words))
        ]


DROPPED = names(
    "index tabularcolumns sectionauthor moduleauthor codeauthor testsetup testcleanup contents"
    " audit-event-table sectnum raw role default-role default-domain meta header footer title"
    " program rst-class cssclass"
)
DIRECTIVES: dict[str, type[Directive]] = {
    **dict.fromkeys(DROPPED, Drop),
    "toctree": Toctree,
    "only": Only,
    "highlight": Highlight,
    "highlightlang": Highlight,
    **dict.fromkeys(("code-block", "sourcecode", "code"), CodeBlock),
    **dict.fromkeys(CodeBlock.languages, CodeBlock),
    "productionlist": ProductionList,
    "literalinclude": LiteralInclude,
    "include": SafeInclude,
    **dict.fromkeys(("module", "currentmodule"), Module),
    **dict.fromkeys(PY_OBJECTS, ObjectDescription),
    **dict.fromkeys(
        names("describe object option cmdoption envvar opcode pdbcommand confval 2to3fixer"),
        ObjectDescription,
    ),
    **dict.fromkeys(
        names("note warning attention caution danger error hint important tip seealso"),
        Label,
    ),
    "impl-detail": ImplDetail,
    **dict.fromkeys(VersionChange.labels, VersionChange),
    "availability": Availability,
    "audit-event": AuditEvent,
    **dict.fromkeys(("hlist", "glossary"), Content),
    "centered": Centered,
}
OBJECT_DOMAINS = {"c", "cpp", "js", "rst", "std", "py"}


def directive_for(name: str) -> type[Directive] | None:
    """Our directive for ``name`` (``py:function``, ``c:macro``, ``note``), if we have one."""
    name = name.lower()
    domain, _, kind = name.rpartition(":")
    if domain in ("py", "std"):
        return DIRECTIVES.get(kind)
    if domain in OBJECT_DOMAINS:
        return ObjectDescription
    return DIRECTIVES.get(name)


# Roles --------------------------------------------------------------------------------------

EXPLICIT_TITLE = re.compile(r"^(.+?)\s*(?<!\x00)<(.*?)>$", re.DOTALL)
FUNCTION_ROLES = {"func", "meth", "c:func", "py:func", "py:meth", "cpp:func"}
CODE_ROLES = {
    *FUNCTION_ROLES,
    *names("mod class attr exc data const obj option envvar keyword kbd opcode pdbcmd token"),
    *names("makevar manpage c:expr c:texpr c:macro c:type c:data c:member c:var c:struct"),
    *names("c:union c:enum c:enumerator cpp:any cpp:class cpp:expr py:mod py:class py:attr"),
    *names("py:exc py:data py:const py:obj file samp regexp code"),
}
PYTHON_ROLES = set(names("func meth class attr exc data const obj mod"))  # key without "py:"
NUMBERED = {"pep": "PEP {}", "rfc": "RFC {}", "issue": "bpo-{}", "gh": "gh-{}", "cve": "CVE-{}"}
TEXT_ROLES = {
    *NUMBERED,
    *names("ref doc term abbr dfn program command mailheader mimetype source menuselection"),
    *names("guilabel download any numref index newsgroup raw pep-reference rfc-reference"),
}


def role_title(name: str, text: str) -> str:
    """The text Sphinx shows for a cross-reference-like role."""
    match = EXPLICIT_TITLE.match(text)
    if match:
        return utils.unescape(match.group(1))
    title = utils.unescape(text).lstrip("!")
    if name in NUMBERED:
        return NUMBERED[name].format(title.partition("#")[0].strip())
    if name in PYTHON_ROLES:
        title = title.lstrip(".")  # a leading dot only changes how Sphinx looks the target up
    if title.startswith("~"):
        title = title[1:].rpartition(".")[2]
    if name in ("file", "samp"):
        title = title.replace("{", "").replace("}", "")
    elif name == "menuselection":
        title = title.replace("-->", "\N{TRIANGULAR BULLET}")
    elif name == "guilabel":
        title = title.replace("&&", "\0").replace("&", "").replace("\0", "&")
    if name in FUNCTION_ROLES and not title.endswith(")"):
        title += "()"
    return title


def sphinx_role(
    name: str, rawtext: str, text: str, lineno: int, inliner: Inliner, *args: object
) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    """Any Sphinx role as its text: code-like roles as inline literals."""
    key = name.lower().removeprefix("std:").removeprefix("py:")
    title = role_title(key, text)
    node = nodes.literal(rawtext, title) if key in CODE_ROLES else nodes.Text(title)
    return [node], []


class SphinxInliner(Inliner):
    """An inliner resolving docutils' own roles, and every other role as Sphinx text."""

    def interpreted(
        self, rawsource: str, text: str, role: str, lineno: int
    ) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        key = role.lower()
        role_fn = None
        if ":" not in key and key not in CODE_ROLES and key not in TEXT_ROLES:
            role_fn, _ = roles.role(role, self.language, lineno, self.reporter)
        return (role_fn or sphinx_role)(role, rawsource, text, lineno, self)


# docutils builds its inline patterns from ``vars(type(inliner))``: the subclass needs them too.
for _name, _pattern in vars(Inliner).items():
    if isinstance(_pattern, str) and not _name.startswith("__"):
        setattr(SphinxInliner, _name, _pattern)


# Parsing ------------------------------------------------------------------------------------

_LOCK = threading.Lock()
_BASE_SETTINGS = frontend.get_default_settings(Parser)


@contextmanager
def sphinx_directives() -> Iterator[None]:
    """Resolve Sphinx's directive names (and unknown ones) while the block runs."""
    original = directives.directive

    def lookup(name: str, language: object, document: nodes.document) -> tuple[type, list]:
        found = directive_for(name)
        if found is not None:
            return found, []
        known, messages = original(name, language, document)
        return (known, messages) if known is not None else (Unknown, [])

    with _LOCK:
        directives.directive = lookup
        try:
            yield
        finally:
            directives.directive = original


def settings_for(context: SphinxContext) -> frontend.Values:
    """Quiet, safe settings: nothing printed, no raw HTML, includes only inside the root."""
    settings = copy.copy(_BASE_SETTINGS)
    overrides = {
        "report_level": 5,
        "halt_level": 5,
        "warning_stream": io.StringIO(),
        "raw_enabled": False,
        "file_insertion_enabled": False,
        "syntax_highlight": "none",
        "auto_id_prefix": "id",
        "root_prefix": str(context.root),
        "sphinx": context,
    }
    for key, value in overrides.items():
        setattr(settings, key, value)
    return settings


def parse(
    text: str, source: Path, root: Path
) -> tuple[nodes.document, list[Message], SphinxContext]:
    """Parse ``text`` (read from ``source`` under ``root``) into a doctree.

    Returns the doctree, the warnings and errors met (line, message), and the directives'
    context (toctree seen, files included).
    """
    context = SphinxContext(root.resolve())
    document = utils.new_document(str(source), settings_for(context))
    messages: list[Message] = []

    def observe(message: nodes.system_message) -> None:
        if message["level"] >= 2:
            first = message.children[0].astext() if message.children else ""
            messages.append((message.get("line"), " ".join(first.split())[:160]))

    document.reporter.attach_observer(observe)
    with sphinx_directives():
        Parser(inliner=SphinxInliner()).parse(text, document)
    document.transformer.add_transforms([Footnotes, PropagateTargets])
    document.transformer.apply_transforms()
    return document, messages, context
