"""Keep a question set honest: every target exists, and paraphrase questions do not give the
answer away.

A ``paraphrase`` question describes a situation or a goal in the asker's own words. It is flagged
when it shares, after stemming, a word with its first target's page title or heading path (words
found in at least a tenth of the corpus's sections, "use" or "python" in the Python docs, are
too common to give anything away), or a rare corpus term with the target section (one found in
at most ``RARE_SHARE`` of the sections or in at most ``RARE_SECTIONS``, and in the target section
or its subsections). Every
question's targets must exist in the parsed corpus: the page, the heading as a section of it,
the PDF page, and the evidence words inside that section.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from docserve.duck import connect

from docbuild.config import ProcessingConfig
from docbuild.documents import Document
from docbuild.services.evaluate import Judged, Target, heading_key, plain, strip_extension

COMMON_SHARE = 0.10  # a heading word in this share of sections or more gives nothing away
RARE_SHARE = 0.005  # a term in at most this share of sections is distinctive ...
RARE_SECTIONS = 3  # ... and so is one in this many sections, in a small corpus
STOPWORDS_TEXT = """a about above after again against all am an and any are as at be because been
before being below between both but by can could did do does doing down during each either else
few for from further had has have having he her here hers him his how i if in into is it its
itself just let me more most my no nor not now of off on once only or other our out over own
same she should so some such than that the their them then there these they this those through
to too under until up very was we were what when where which while who whom why will with would
you your yours also get got may might must need one ones thing things way want like make made
still even without yet per via"""
STOPWORDS = frozenset(STOPWORDS_TEXT.split())


@dataclass
class SectionText:
    """The words of one section (a heading's text without its subsections, or one PDF page)."""

    path: str
    hierarchy: tuple[str, ...]
    page: int | None
    words: set[str] = field(default_factory=set)
    text: str = ""


@dataclass
class Finding:
    """A question that fails the check, and why."""

    query_id: str
    problem: str


class Corpus:
    """A parsed corpus as sections, with each stemmed word's section frequency."""

    def __init__(self, documents: Iterable[Document]) -> None:
        self.sections: list[SectionText] = []
        self.titles: dict[str, str] = {}
        by_key: dict[tuple[str, tuple[str, ...], int | None], SectionText] = {}
        for doc in documents:
            self.titles[doc.path] = doc.title
            for section in doc.sections:
                key = (doc.path, tuple(section.hierarchy), section.page)
                if key not in by_key:
                    by_key[key] = SectionText(doc.path, key[1], section.page)
                    self.sections.append(by_key[key])
                by_key[key].text += "\n" + section.text
        self.stems = Stemmer()
        raw = [words(f"{s.hierarchy[-1] if s.hierarchy else ''} {s.text}") for s in self.sections]
        self.stems.learn(set().union(*raw) if raw else set())
        self.frequency: Counter[str] = Counter()
        for section, found in zip(self.sections, raw, strict=True):
            section.words = {self.stems[w] for w in found}
            self.frequency.update(section.words)

    def share(self, stem: str) -> float:
        """The share of sections a stemmed word occurs in."""
        return self.frequency[stem] / max(len(self.sections), 1)

    def rare(self, stem: str) -> bool:
        """Whether a stemmed word is distinctive in this corpus."""
        frequency = self.frequency[stem]
        small = frequency <= max(RARE_SECTIONS, RARE_SHARE * len(self.sections))
        return small and self.share(stem) < COMMON_SHARE

    def target_sections(self, target: Target) -> list[SectionText]:
        """The sections ``target`` names: its page's, under its heading (and subsections), or
        the page's untitled opening; a PDF target's page."""
        found = []
        for section in self.sections:
            path = (
                strip_extension(section.path)
                if target.path == strip_extension(target.path)
                else section.path
            )
            if path != target.path:
                continue
            if target.page is not None:
                if section.page == target.page:
                    found.append(section)
            elif target.heading is None:
                if len(section.hierarchy) <= 1:
                    found.append(section)
            elif heading_key(target.heading) in map(heading_key, section.hierarchy):
                found.append(section)
        return found

    def check(self, question: Judged) -> list[Finding]:
        """Every problem of one question: missing targets, and for a paraphrase, giveaway
        words."""
        findings = []
        for target in question.targets:
            sections = self.target_sections(target)
            where = f"{target.path} › {target.heading}" if target.heading else target.path
            if target.page is not None:
                where += f" page {target.page}"
            if not sections:
                findings.append(Finding(question.query_id, f"target not found: {where}"))
            elif target.evidence and not any(
                plain(target.evidence) in plain(s.text) for s in sections
            ):
                findings.append(
                    Finding(question.query_id, f"evidence {target.evidence!r} not in {where}")
                )
        if question.kind == "paraphrase" and question.targets and not findings:
            shared = self.giveaways(question.text, question.targets[0])
            if shared:
                findings.append(
                    Finding(
                        question.query_id,
                        "shares "
                        + ", ".join(f"{word!r} ({why})" for word, why in sorted(shared.items())),
                    )
                )
        return findings

    def giveaways(self, query: str, target: Target) -> dict[str, str]:
        """The question's words that name the target: heading words and rare section terms."""
        sections = self.target_sections(target)
        asked = {w: self.stems[w] for w in words(query) if w not in STOPWORDS}
        title = self.titles.get(sections[0].path, "") if sections else ""
        heading_path = [title, *self._breadcrumb(sections, target)]
        heading_words = {self.stems[w] for h in heading_path for w in words(h)} - {""}
        in_section = set().union(*(s.words for s in sections)) if sections else set()
        shared: dict[str, str] = {}
        for word, stem in asked.items():
            if stem in heading_words and self.share(stem) < COMMON_SHARE:
                shared[word] = "heading word"
            elif stem in in_section and self.rare(stem):
                shared[word] = f"rare term, in {self.frequency[stem]} sections"
        return shared

    @staticmethod
    def _breadcrumb(sections: list[SectionText], target: Target) -> list[str]:
        """The headings from the page down to the target heading (not its subsections)."""
        if not sections or target.heading is None:
            return []
        hierarchy = min((s.hierarchy for s in sections), key=len)
        wanted = heading_key(target.heading)
        keys = [heading_key(h) for h in hierarchy]
        return list(hierarchy[: keys.index(wanted) + 1]) if wanted in keys else list(hierarchy)


class Stemmer:
    """Porter stems, as the full-text index makes them (DuckDB's ``stem``), looked up by word."""

    def __init__(self) -> None:
        self.known: dict[str, str] = {}

    def learn(self, new: set[str]) -> None:
        new = {w for w in new if w not in self.known}
        if not new:
            return
        con = connect(extensions=("fts",))
        try:
            listed = sorted(new)
            stems = con.execute(
                "SELECT list(stem(w, 'porter') ORDER BY i) FROM "
                "(SELECT unnest(?) AS w, generate_subscripts(?, 1) AS i)",
                [listed, listed],
            ).fetchone()[0]
        finally:
            con.close()
        self.known.update(zip(listed, stems, strict=True))

    def __getitem__(self, word: str) -> str:
        if word not in self.known:
            self.learn({word})
        return self.known[word]


def words(text: str) -> set[str]:
    """Lower-case letter runs of ``text``, accents stripped (digits and symbols split words, as
    in the full-text index)."""
    folded = unicodedata.normalize("NFKD", text.lower())
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    return {w for w in re.findall(r"[a-z]+", folded) if len(w) > 1}


def parsed_corpus(config: ProcessingConfig) -> Corpus:
    """The server's sources, parsed as a build parses them (its parse cache reused)."""
    from docbuild.build_report import BuildReport
    from docbuild.stages.discover import discover_version
    from docbuild.stages.parse import parse_versions

    report = BuildReport(config.name, config.database_path)
    config_file = config.folder.processing_config
    groups = [(v, discover_version(v, report, config_file)) for v in config.doc_versions()]
    return Corpus(parse_versions(config, groups, report))


def check_questions(corpus: Corpus, questions: list[Judged]) -> list[Finding]:
    """Every finding of every question."""
    return [finding for q in questions for finding in corpus.check(q)]
