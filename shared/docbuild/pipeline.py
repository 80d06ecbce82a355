"""The build: discover → preprocess → chunk → embed → consolidate → snapshot → materialise."""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
from docserve.duck import connect
from tqdm import tqdm

from docbuild import __version__
from docbuild.chunker import Chunk, Chunker, fence_balanced, text_hash
from docbuild.config import ProcessingConfig
from docbuild.consolidate import chunks_table, write_parquet
from docbuild.discover import SourceFile, discover_sources
from docbuild.documents import Document, FileProblem, SkipFile
from docbuild.embedding import Embedder, EmbeddingError, make_embedder
from docbuild.embedding.cache import EmbeddingCache
from docbuild.hygiene import furniture
from docbuild.lake import Snapshot, lake_location, list_snapshots, snapshot_chunks
from docbuild.materialize import materialize
from docbuild.package import bundle_model, install_runtime, render_readme
from docbuild.processors import processor_for
from docbuild.step_cache import StepCache, content_key
from docbuild.sync import source_revision, sync_source
from docbuild.tokens import TokenCounter

EMBED_GROUP = 256  # chunks embedded between two writes to the cache (what a killed build loses)
PROBE_TEXT = "How do I search this documentation?"
"""Embedded with every build; the runtime embeds it too to prove it uses the same model."""


class BuildError(RuntimeError):
    """A stage failed; the message says which and why. The previous database is untouched."""


@dataclass
class Hygiene:
    """Chunk quality figures the build reports and the tests assert."""

    chunks: int
    unbalanced_fences: int
    with_hierarchy: int
    max_tokens: int
    over_limit: int
    token_limit: int
    with_furniture: int = 0  # chunks holding page furniture or raw markup (docbuild.hygiene)

    @property
    def furniture_share(self) -> float:
        """Share of chunks with page furniture or raw markup in their content."""
        return self.with_furniture / self.chunks if self.chunks else 0.0

    @property
    def hierarchy_share(self) -> float:
        """Share of chunks with a non-empty ``section_hierarchy``."""
        return self.with_hierarchy / self.chunks if self.chunks else 0.0


@dataclass
class BuildReport:
    """What a build did, for the summary and for tests."""

    name: str
    database: Path
    files: int = 0
    files_unchanged: int = 0  # parsed by an earlier build: their documents came from the cache
    documents: int = 0
    documents_unchanged: int = 0  # chunked by an earlier build
    chunks: int = 0
    embedded: int = 0
    cached: int = 0
    problems: list[FileProblem] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    hygiene: Hygiene | None = None
    snapshot: Snapshot | None = None

    @property
    def skipped(self) -> list[FileProblem]:
        """Files left out of the build."""
        return [p for p in self.problems if p.skipped]


def log(message: str) -> None:
    """Progress lines go to stderr."""
    print(message, file=sys.stderr, flush=True)


def progress(iterable: object = None, **kwargs: object) -> tqdm:
    """A progress bar on stderr (shown on a terminal, quiet in logs)."""
    return tqdm(
        iterable,
        file=sys.stderr,
        mininterval=1.0,
        dynamic_ncols=True,
        leave=False,
        disable=None,
        **kwargs,
    )


Stamp = tuple[int, int] | None  # (mtime in ns, size); None for a file that does not exist


def stamp(path: str) -> Stamp:
    """What tells whether a file changed since it was read."""
    try:
        info = Path(path).stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


@dataclass
class Parsed:
    """One file's documents and problems, with the other files they were read from."""

    documents: list[Document]
    problems: list[FileProblem]
    dependencies: dict[str, Stamp] = field(default_factory=dict)

    @classmethod
    def of(cls, documents: list[Document], problems: list[FileProblem], paths: list[str]) -> Parsed:
        """Record the state of ``paths`` as they are now."""
        return cls(documents, problems, {p: stamp(p) for p in sorted(set(paths))})

    def unchanged(self) -> bool:
        """True while none of the files it was read from has changed (or appeared)."""
        return all(stamp(path) == seen for path, seen in self.dependencies.items())


class Build:
    """One build of one server."""

    def __init__(self, config: ProcessingConfig, embedder: Embedder | None = None) -> None:
        self.config = config
        self._embedder = embedder
        self.report = BuildReport(config.name, config.database_path)
        self.probe: np.ndarray = np.zeros(0, np.float32)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time a stage and turn its failure into a :class:`BuildError` naming it."""
        log(f"[{name}] ...")
        start = time.perf_counter()
        try:
            yield
        except BuildError:
            raise
        except (EmbeddingError, OSError, ValueError, duckdb.Error) as exc:
            raise BuildError(f"stage '{name}' failed: {exc}") from exc
        finally:
            self.report.seconds[name] = time.perf_counter() - start
        log(f"[{name}] done in {self.report.seconds[name]:.1f} s")

    def run(self) -> BuildReport:
        """Run every stage; raises :class:`BuildError` on the first failure."""
        config = self.config
        with self.stage("discover"):
            if not config.source.path.exists() and config.source.git_url:
                log(f"source {config.source.path} not synced yet: syncing it first")
                sync_source(config)
            if not config.source.path.exists():
                raise BuildError(
                    f"source folder {config.source.path} does not exist: fix source.path in "
                    f"{config.server_root / 'config' / 'processing_config.yaml'}"
                )
            files, problems = discover_sources(config)
            self.report.problems.extend(problems)
            self.report.files = len(files)
        with self.stage("preprocess"):
            documents = self.preprocess(files)
        if not documents:
            raise BuildError(
                f"no documents to index: {len(files)} file(s) found under {config.source.path}"
                f" ({len(self.report.skipped)} skipped). Check source.path, include and format in "
                f"{config.server_root / 'config' / 'processing_config.yaml'}"
            )
        counter = TokenCounter(config.embedding.model_path)
        with self.stage("chunk"):
            chunker = Chunker(counter, config.chunking)
            cache: StepCache[list[Chunk]] = StepCache(
                config.work_dir / "cache" / "chunks.pickle",
                [vars(config.chunking), counter.path.read_bytes()],
            )
            chunks = [
                chunk
                for doc in progress(documents, desc="chunk", unit="doc")
                for chunk in cache.get(
                    content_key(doc), lambda doc=doc: chunker.chunk_document(doc)
                )
            ]
            cache.save()
            self.report.documents_unchanged = cache.reused
            self.report.chunks = len(chunks)
            self.report.hygiene = measure_hygiene(chunks, counter, config.chunking.max_tokens)
        with self.stage("embed"):
            embedder = self.embedder()
            try:
                embeddings = self.embed(chunks, embedder)
            finally:
                embedder.stop()
        with self.stage("consolidate"):
            parquet = write_parquet(
                chunks_table(chunks, embeddings), config.work_dir / "chunks.parquet"
            )
        info = self.build_info(embedder, files, documents)
        info["chunk_count"], info["document_count"] = len(chunks), len(documents)
        info["probe_text"], info["probe_vector"] = (
            PROBE_TEXT,
            [round(float(x), 6) for x in self.probe],
        )
        with self.stage("snapshot"):
            message = f"build of {config.name}: {len(documents)} documents, {len(chunks)} chunks"
            self.report.snapshot = snapshot_chunks(lake_location(config), parquet, message, info)
        with self.stage("materialise"):
            materialize(
                lake_location(config),
                self.report.snapshot.snapshot_id,
                config.database_path,
                embeddings.shape[1],
                {**info, "built_at": datetime.now(UTC).isoformat(timespec="seconds")},
                self.evaluate if config.eval.queries or config.eval.beir else None,
            )
        with self.stage("package"):
            self.package(embedder)
        return self.report

    def rollback(self, snapshot_id: int) -> BuildReport:
        """Materialise an earlier snapshot as the runtime database; nothing is embedded."""
        config = self.config
        lake = lake_location(config)
        builds = {s["snapshot_id"]: s for s in list_snapshots(lake)}
        if snapshot_id not in builds:
            known = ", ".join(map(str, builds)) or "none"
            raise BuildError(
                f"no build snapshot {snapshot_id} (builds: {known}); see `docbuild versions {config.name}`"
            )
        info = dict(builds[snapshot_id]["info"])
        with self.stage("materialise"):
            counts = materialize(
                lake,
                snapshot_id,
                config.database_path,
                int(info["dimension"]),
                {
                    **info,
                    "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
                    "rolled_back_to": snapshot_id,
                },
            )
        with self.stage("package"):
            install_runtime(config.server_root, config.name)
            self.render(config)
        self.report.chunks, self.report.documents = counts["chunks"], counts["documents"]
        return self.report

    def evaluate(self, database: Path) -> dict[str, object]:
        """Score the new database on the configured query set; the report goes into build_info
        and ``servers/NAME/eval/`` (Markdown and JSON)."""
        from docbuild import evaluate

        spec = self.config.eval
        judged = (
            evaluate.load_beir(Path(spec.beir), spec.split)
            if spec.beir
            else evaluate.load_jsonl(Path(spec.queries or ""))
        )
        engine = evaluate.open_engine(self.config.server_root, database=database)
        try:
            scores = evaluate.evaluate(engine, judged, spec.modes)
        finally:
            engine.store.close()
        table = evaluate.markdown_table(scores)
        folder = self.config.server_root / "eval"
        folder.mkdir(exist_ok=True)
        (folder / "report.md").write_text(table + "\n")
        (folder / "report.json").write_text(json.dumps(evaluate.as_json(scores), indent=2) + "\n")
        log(table)
        source = spec.beir or spec.queries
        return {
            "eval": {
                "queries": str(source),
                "count": len(judged),
                "scores": evaluate.as_json(scores),
                "table": table,
            }
        }

    def package(self, embedder: Embedder) -> None:
        """Make the server folder self-contained: runtime code, script, model, README."""
        config = self.config
        install_runtime(config.server_root, config.name)
        model_dir = getattr(embedder, "model_dir", None)
        if model_dir is not None:
            bundle_model(model_dir, config.server_root)
        self.render(config)

    @staticmethod
    def render(config: ProcessingConfig) -> None:
        """Render the server README from the database's ``build_info``."""
        with connect(config.database_path, read_only=True, extensions=()) as con:
            rows = con.execute("SELECT key, value FROM build_info").fetchall()
        render_readme(config.server_root, config.name, {k: json.loads(v) for k, v in rows})

    def embedder(self) -> Embedder:
        """The configured embedder, health-checked."""
        if self._embedder is None:
            self._embedder = make_embedder(self.config.embedding, log_dir=self.config.work_dir)
        self._embedder.check()
        return self._embedder

    def preprocess(self, files: list[SourceFile]) -> list[Document]:
        """Parse every file; a file that fails is reported and skipped, the build goes on."""
        documents: list[Document] = []
        seen: set[str] = set()
        config = self.config
        cache: StepCache[Parsed] = StepCache(
            config.work_dir / "cache" / "documents.pickle",
            [
                config.format,
                config.url_base,
                config.url_suffix,
                vars(config.html),
                vars(config.jsonl),
            ],
        )
        for file in progress(files, desc="preprocess", unit="file"):
            try:
                key = content_key(file.relative, file.path.read_bytes())
            except OSError as exc:
                self.report.problems.append(FileProblem(file.relative, f"cannot read file: {exc}"))
                continue
            parsed = cache.get(key, lambda file=file: self.parse(file), Parsed.unchanged)
            self.report.problems.extend(parsed.problems)
            for doc in parsed.documents:
                if doc.document_id in seen:
                    self.report.problems.append(
                        FileProblem(
                            file.relative, f"duplicate document id {doc.document_id!r}; skipped"
                        )
                    )
                    continue
                seen.add(doc.document_id)
                documents.append(doc)
        cache.save()
        self.report.files_unchanged = cache.reused
        self.report.documents = len(documents)
        return documents

    def parse(self, file: SourceFile) -> Parsed:
        """One file's documents and problems; a file that cannot be used gives no documents."""
        try:
            processor = processor_for(file.path, self.config)
            docs, problems = processor.process(file.path, file.relative)
        except SkipFile as exc:
            return Parsed.of([], [FileProblem(file.relative, str(exc))], exc.dependencies)
        except Exception as exc:  # a parser bug must not sink the whole build
            return Parsed([], [FileProblem(file.relative, f"could not be parsed: {exc!r}")])
        if not docs and not problems:
            problems = [FileProblem(file.relative, "no text content")]
        return Parsed.of(docs, problems, [d for doc in docs for d in doc.dependencies])

    def embed(self, chunks: list[Chunk], embedder: Embedder) -> np.ndarray:
        """Vectors for every chunk: from the cache, else embedded (and cached batch by batch)."""
        cache = EmbeddingCache(self.config.work_dir / "embeddings.duckdb")
        try:
            texts = {c.content_hash: c.embedding_text for c in chunks}
            probe = text_hash(PROBE_TEXT)
            vectors = cache.get_many(embedder.cache_key, [*texts, probe])
            missing = sorted((h for h in texts if h not in vectors), key=lambda h: len(texts[h]))
            self.report.cached = len(texts) - len(missing)
            self.report.embedded = len(missing)
            texts[probe] = PROBE_TEXT
            if probe not in vectors:
                missing.append(probe)
            with progress(total=len(missing), desc="embed", unit="chunk") as bar:
                for start in range(0, len(missing), EMBED_GROUP):
                    group = missing[start : start + EMBED_GROUP]
                    matrix = embedder.embed_batch([texts[h] for h in group])
                    cache.put_many(embedder.cache_key, group, matrix)
                    vectors.update(zip(group, matrix, strict=True))
                    bar.update(len(group))
            self.probe = vectors[probe]
        finally:
            cache.close()
        return np.stack([vectors[c.content_hash] for c in chunks]).astype(np.float32)

    def build_info(
        self, embedder: Embedder, files: list[SourceFile], documents: list[Document]
    ) -> dict[str, object]:
        """What the runtime needs to know about this build (stored in ``build_info``)."""
        config = self.config
        return {
            "name": config.name,
            "tool_version": __version__,
            "duckdb_version": duckdb.__version__,
            "embedding_provider": config.embedding.provider,
            "model_id": embedder.model_id,
            "model_cache_key": embedder.cache_key,
            "model_sha256": getattr(embedder, "weights_sha256", None),
            "dimension": embedder.dimension,
            "normalized": True,
            "metric": "cosine",
            "max_seq_length": config.chunking.max_tokens,
            "chunking": vars(config.chunking),
            "source_path": str(config.source.path),
            "source_revision": source_revision(config.source.path),
            "file_count": len(files),
            "skipped_count": len(self.report.skipped),
            "config_hash": hashlib.sha256(
                json.dumps(config.raw, sort_keys=True, default=str).encode()
            ).hexdigest(),
        }


def measure_hygiene(chunks: list[Chunk], counter: TokenCounter, limit: int) -> Hygiene:
    """Count unbalanced fences, breadcrumb coverage and token lengths (special tokens included)."""
    lengths = counter.with_special([c.embedding_text for c in chunks])
    return Hygiene(
        chunks=len(chunks),
        unbalanced_fences=sum(not fence_balanced(c.content) for c in chunks),
        with_hierarchy=sum(bool(c.section_hierarchy) for c in chunks),
        max_tokens=max(lengths, default=0),
        over_limit=sum(n > limit for n in lengths),
        token_limit=limit,
        with_furniture=sum(bool(furniture(c.content)) for c in chunks),
    )


def format_summary(report: BuildReport) -> str:
    """A human summary of a build: counts, hygiene, skipped files, seconds per stage."""
    lines = [
        f"Built {report.name}: {report.database}",
        f"  files {report.files} ({report.files_unchanged} unchanged), documents "
        f"{report.documents} ({report.documents_unchanged} unchanged), chunks {report.chunks} "
        f"(embedded {report.embedded}, from cache {report.cached})",
    ]
    if report.snapshot:
        s = report.snapshot
        lines.append(f"  DuckLake snapshot {s.snapshot_id}: +{s.added} / -{s.removed} chunks")
    if report.hygiene:
        h = report.hygiene
        lines.append(
            f"  chunk hygiene: unbalanced code fences {h.unbalanced_fences}; "
            f"with section hierarchy {h.hierarchy_share:.1%}; "
            f"with page furniture {h.with_furniture} ({h.furniture_share:.1%}); "
            f"max tokens {h.max_tokens} (limit {h.token_limit}, over limit {h.over_limit})"
        )
    skipped = report.skipped
    notes = [p for p in report.problems if not p.skipped]
    lines.append(f"  skipped files: {len(skipped)}")
    lines.extend(f"    - {p.path}: {p.reason}" for p in skipped)
    if notes:
        lines.append(f"  parsed best-effort: {len(notes)}")
        lines.extend(f"    - {p.path}: {p.reason}" for p in notes)
    total = sum(report.seconds.values())
    stages = ", ".join(f"{k} {v:.1f}" for k, v in report.seconds.items())
    lines.append(f"  seconds: {stages} (total {total:.1f})")
    if report.chunks and total:
        lines.append(f"  throughput: {report.chunks / total:.1f} chunks/s end to end")
    return "\n".join(lines)
