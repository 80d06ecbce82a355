"""The build: discover → preprocess → chunk → embed → consolidate → snapshot → materialise."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

import duckdb
import numpy as np
from docserve.config import SearchSettings, configured_search
from docserve.doctor import file_sha256
from docserve.duck import connect

from docbuild import __version__
from docbuild.build_lock import build_lock
from docbuild.build_record import save_report
from docbuild.build_report import (
    BuildError,
    BuildReport,
    VersionReport,
    labelled,
    log,
    progress,
)
from docbuild.chunker import Chunk, text_hash
from docbuild.config import DocVersion, ProcessingConfig
from docbuild.documents import Document, FileProblem
from docbuild.embedding import (
    Embedder,
    EmbeddingError,
    embed_parts,
    embedder_notes,
    make_embedder,
)
from docbuild.embedding.cache import EmbeddingCache
from docbuild.embedding.local import model_folder
from docbuild.hygiene import Hygiene
from docbuild.site.manifest import page_urls as site_page_urls
from docbuild.stages.chunk import chunk_all
from docbuild.stages.consolidate import chunks_table, write_parquet
from docbuild.stages.discover import SourceFile, discover_sources
from docbuild.stages.materialize import materialize
from docbuild.stages.package import (
    RUNTIME_SOURCE,
    WEIGHTS_FILE,
    bundle_model,
    encoder_file_name,
    install_runtime,
    needs_weights,
    remove_other_encoders,
    render_readme,
    render_skill,
    runtime_files,
)
from docbuild.stages.parse import Parsed, parse_all
from docbuild.stages.snapshot import lake_location, list_snapshots, snapshot_chunks
from docbuild.step_cache import StepCache, content_key, settings_key
from docbuild.sync import source_revision, sync_source
from docbuild.tokens import tokenizer_file

EMBED_GROUP = 256  # chunks embedded between two writes to the cache (what a killed build loses);
# an embedder with requests in flight (openai) writes each request's vectors as they arrive
PROBE_TEXT = "How do I search this documentation?"
"""Embedded with every build; the runtime embeds it too to prove it uses the same model."""


P = ParamSpec("P")
R = TypeVar("R")


def locked(method: Callable[Concatenate[Build, P], R]) -> Callable[Concatenate[Build, P], R]:
    """Run a :class:`Build` method holding the server's build lock (``build/.lock``): another
    build of the same server raises :class:`~docbuild.build_lock.BuildLocked` at once, or is
    waited for when the build was made with ``wait=True``."""

    @functools.wraps(method)
    def holding_lock(build: Build, *args: P.args, **kwargs: P.kwargs) -> R:
        config = build.config
        with build_lock(config.work_dir, config.name, build.wait, log):
            return method(build, *args, **kwargs)

    return holding_lock


class Build:
    """One build of one server; ``wait`` waits for a running build of it instead of stopping."""

    def __init__(
        self, config: ProcessingConfig, embedder: Embedder | None = None, wait: bool = False
    ) -> None:
        self.config = config
        self._embedder = embedder
        self.wait = wait
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

    @locked
    def run(self) -> BuildReport:
        """Run every stage; raises :class:`BuildError` on the first failure."""
        info, dimension = self._stages_to_snapshot()
        # the sources' documents, chunks and vectors are gone by now: materialising a million
        # chunks needs the memory they held (several GB) for DuckDB's sort
        with self.stage("materialise"):
            self.ship_model(info)  # before the database that needs it
            runtime_code = content_key(
                *((RUNTIME_SOURCE / f).read_bytes() for f in runtime_files())
            )
            key = settings_key(
                [info, asdict(self.search_settings()), vars(self.config.index), runtime_code]
            )
            if self.served_is_current(key):
                log(f"[materialise] nothing changed: {self.config.database_path} is current")
                self.report.materialised = False
            else:
                materialize(
                    lake_location(self.config),
                    self.report.snapshot.snapshot_id,
                    self.config.database_path,
                    dimension,
                    {
                        **info,
                        "versions_changed": self.report.snapshot.versions_changed,
                        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
                        "materialise_key": key,
                    },
                    self.evaluate if self.config.eval.queries or self.config.eval.beir else None,
                    self.search_settings(),
                    self.config.index,
                    log,
                )
        with self.stage("package"):
            self.package(info)
        save_report(asdict(self.report), self.config.work_dir)
        return self.report

    def _stages_to_snapshot(self) -> tuple[dict[str, object], int]:
        """Run the stages up to the DuckLake snapshot; return the build's info and the vectors'
        dimension."""
        config = self.config
        versions = config.doc_versions()
        self.report.default_version = config.default_label
        with self.stage("discover"):
            groups = [(version, self.discover(version)) for version in versions]
            self.report.files = sum(len(files) for _, files in groups)
        with self.stage("preprocess"):
            documents = self.preprocess(groups)
        for version, files in groups:
            counted = self.report.version(version.label)
            if not (counted.documents if counted else documents):
                of = f" of version {version.label}" if version.label else ""
                raise BuildError(
                    f"no documents to index{of}: {len(files)} file(s) found under "
                    f"{version.config.source.path} ({len(self.report.skipped)} skipped). Check "
                    f"{version.key}, include and format in "
                    f"{config.server_root / 'config' / 'processing_config.yaml'}"
                )
        with self.stage("chunk"):
            tokenizer = tokenizer_file(config.embedding.model_path)
            cache: StepCache[tuple[list[Chunk], Hygiene]] = StepCache(
                config.work_dir / "cache" / "chunks.pickle",
                [vars(config.chunking), tokenizer.read_bytes()],
            )
            chunks: list[Chunk] = []
            hygiene = Hygiene(0, 0, 0, 0, 0, config.chunking.max_tokens)
            keyed = [(content_key(doc), doc) for doc in documents]
            results = cache.get_all(
                keyed, lambda docs: chunk_all(docs, tokenizer.parent, config.chunking)
            )
            counted = 0  # documents reused from the cache so far
            for doc, (found, measured) in zip(
                documents,
                progress(results, desc="chunk", unit="doc", total=len(documents)),
                strict=True,
            ):
                chunks += found
                hygiene += measured
                version = self.report.version(doc.version)
                if version is not None:
                    version.documents_unchanged += cache.reused - counted
                    version.chunks += len(found)
                counted = cache.reused
            cache.save()
            self.report.documents_unchanged = cache.reused
            self.report.chunks = len(chunks)
            self.report.hygiene = hygiene
        with self.stage("embed"):
            embedder = self.embedder()
            try:
                embeddings = self.embed(chunks, embedder)
                self.report.embedding_notes = embedder_notes(embedder)
            finally:
                embedder.stop()
        with self.stage("consolidate"):
            parquet = write_parquet(
                chunks_table(chunks, embeddings), config.work_dir / "chunks.parquet"
            )
        info = self.build_info(embedder)
        info["chunk_count"], info["document_count"] = len(chunks), len(documents)
        info["probe_text"], info["probe_vector"] = (
            PROBE_TEXT,
            [round(float(x), 6) for x in self.probe],
        )
        with self.stage("snapshot"):
            message = f"build of {config.name}: {len(documents)} documents, {len(chunks)} chunks"
            if self.report.versions:
                message += f" in {len(self.report.versions)} versions"
            self.report.snapshot = snapshot_chunks(
                lake_location(config),
                parquet,
                message,
                info,
                [v.label for v in self.report.versions],
            )
            for version in self.report.versions:
                version.added, version.removed = self.report.snapshot.by_version.get(
                    version.label, (0, 0)
                )
        return info, embeddings.shape[1]

    @locked
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
            self.ship_model(info)
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
                search=self.search_settings(),
                index=config.index,
                log=log,
            )
        with self.stage("package"):
            self.package(info)
        self.report.chunks, self.report.documents = counts["chunks"], counts["documents"]
        self.report.default_version = info.get("default_version")
        self.report.versions = [
            VersionReport(
                str(v["label"]),
                str(v.get("source_path")),
                v.get("source_revision"),
                documents=int(v.get("documents", 0)),
                chunks=int(v.get("chunks", 0)),
            )
            for v in info.get("versions") or []
        ]
        save_report(asdict(self.report), self.config.work_dir)
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
        snapshot = self.report.snapshot.snapshot_id if self.report.snapshot else None
        evaluate.record_run(folder, str(source), len(judged), scores, snapshot)
        return {
            "eval": {
                "queries": str(source),
                "count": len(judged),
                "scores": evaluate.as_json(scores),
                "table": table,
            }
        }

    def package(self, info: dict[str, object]) -> None:
        """Make the server folder self-contained for the build ``info`` describes: runtime
        code, script, the model files its queries need (and no others), README."""
        config = self.config
        install_runtime(config.server_root, config.name)
        model = self.local_model(info)
        if model is not None:
            bundle_model(model, config.server_root / "runtime" / "model", needs_weights(info))
        remove_other_encoders(config.server_root, info.get("encoder_file"))
        self.render(config)

    def served_is_current(self, key: str) -> bool:
        """Whether the served database already holds this build: the snapshot added and removed
        nothing, and the database was materialised from it with the same build info, settings
        and code (``key``). Materialising it again would write the same file."""
        snapshot, database = self.report.snapshot, self.config.database_path
        if snapshot is None or snapshot.added or snapshot.removed or not database.is_file():
            return False
        try:
            with connect(database, read_only=True, extensions=()) as con:
                served = dict(
                    con.execute(
                        "SELECT key, value FROM build_info "
                        "WHERE key IN ('snapshot_id', 'materialise_key')"
                    ).fetchall()
                )
        except duckdb.Error:  # unreadable: materialise it afresh
            return False
        return served == {
            "snapshot_id": json.dumps(snapshot.snapshot_id),
            "materialise_key": json.dumps(key),
        }

    def local_model(self, info: dict[str, object]) -> Path | None:
        """The model folder a build embedded with in process (None: an embedding server)."""
        if info.get("embedding_provider", "local") != "local":
            return None
        return model_folder(self.config.embedding.model_path)

    def ship_model(self, info: dict[str, object]) -> None:
        """Put what a build's server embeds queries with into ``runtime/`` before its database:
        the model's tokenizer and settings, and the fp32 weights or the quantized encoder its
        vectors came from. Weights the served database may still need stay until
        :meth:`package` (an int8 server does not ship them). A rollback to an int8 build
        quantizes again if need be, and must get the same file."""
        model = self.local_model(info)
        if model is None:
            return
        folder = self.config.server_root / "runtime" / "model"
        if needs_weights(info):
            weights = file_sha256(model / WEIGHTS_FILE)
            if info.get("model_sha256") not in (None, weights):
                raise BuildError(
                    f"the model in {model} (weights {weights[:12]}) is not the one that build "
                    f"embedded with ({str(info['model_sha256'])[:12]}): rebuild instead"
                )
        bundle_model(model, folder, needs_weights(info) or (folder / WEIGHTS_FILE).is_file())
        name = info.get("encoder_file")
        if not name:
            return
        target = self.config.server_root / "runtime" / str(name)
        expected = str(info["encoder_sha256"])
        if target.is_file() and file_sha256(target) == expected:
            return
        from docbuild.embedding.quantize import int8_encoder

        source = int8_encoder(model)
        if file_sha256(source) != expected:
            raise BuildError(
                f"the int8 encoder made here ({source}) is not the one that build embedded with "
                f"(SHA-256 {expected[:12]}): the model or ONNX Runtime differs from that build's; "
                "rebuild instead of rolling back"
            )
        staged = target.with_name(f"{target.name}.tmp-{os.getpid()}")
        shutil.copyfile(source, staged)
        os.replace(staged, target)

    @staticmethod
    def render(config: ProcessingConfig) -> None:
        """Render the server's README and SKILL.md from the database's ``build_info``."""
        with connect(config.database_path, read_only=True, extensions=()) as con:
            rows = con.execute("SELECT key, value FROM build_info").fetchall()
        info = {k: json.loads(v) for k, v in rows}
        render_readme(config.server_root, config.name, info)
        render_skill(config.server_root, config.name, info)

    def embedder(self) -> Embedder:
        """The configured embedder, health-checked."""
        if self._embedder is None:
            self._embedder = make_embedder(self.config.embedding, log_dir=self.config.work_dir)
        self._embedder.check()
        return self._embedder

    def discover(self, version: DocVersion) -> list[SourceFile]:
        """The files of one documentation version (syncing a git or site source not there yet);
        a version whose folder is missing fails the build, naming the config key to fix."""
        config, source = self.config, version.config.source
        of = f" of version {version.label}" if version.label else ""
        if not source.path.exists() and source.synced:
            log(f"source {source.path}{of} not synced yet: syncing it first")
            log(sync_source(version.config, version.label))
        if not source.path.exists():
            raise BuildError(
                f"source folder {source.path}{of} does not exist: fix {version.key} in "
                f"{config.server_root / 'config' / 'processing_config.yaml'}"
            )
        files, problems = discover_sources(version.config)
        self.report.problems.extend(labelled(problems, version.label))
        if version.label is not None:
            self.report.versions.append(
                VersionReport(
                    version.label,
                    str(source.path),
                    source_revision(source.path),
                    files=len(files),
                )
            )
        return files

    def preprocess(self, groups: list[tuple[DocVersion, list[SourceFile]]]) -> list[Document]:
        """Parse every file of every version; a file that fails is reported and skipped, the
        build goes on. Parsed files are cached by version, URL settings, path and bytes."""
        documents: list[Document] = []
        seen: set[str] = set()
        config = self.config
        cache: StepCache[Parsed] = StepCache(
            config.work_dir / "cache" / "documents.pickle",
            [config.format, vars(config.html), vars(config.jsonl)],
        )
        keyed: list[tuple[str, tuple[SourceFile, DocVersion]]] = []
        page_urls: dict[str | None, dict[str, str]] = {}  # a site's files -> their live URLs
        for version, files in groups:
            view = version.config
            if view.source.site_url:
                page_urls[version.label] = site_page_urls(view.source.path)
            for file in files:
                try:
                    data = file.path.read_bytes()
                except OSError as exc:
                    problem = FileProblem(file.relative, f"cannot read file: {exc}")
                    self.report.problems.extend(labelled([problem], version.label))
                    continue
                key = content_key(
                    version.label, view.url_base, view.url_suffix, file.relative, data
                )
                keyed.append((key, (file, version)))
        results = cache.get_all(keyed, parse_all, Parsed.unchanged)
        counted = 0  # files reused from the cache so far
        for (_, (file, version)), parsed in zip(
            keyed, progress(results, desc="preprocess", unit="file", total=len(keyed)), strict=True
        ):
            report = self.report.version(version.label)
            if report is not None:
                report.files_unchanged += cache.reused - counted
            counted = cache.reused
            self.report.problems.extend(labelled(parsed.problems, version.label))
            for doc in parsed.documents:
                if doc.document_id in seen:
                    problem = FileProblem(
                        file.relative, f"duplicate document id {doc.document_id!r}; skipped"
                    )
                    self.report.problems.extend(labelled([problem], version.label))
                    continue
                seen.add(doc.document_id)
                url = page_urls.get(version.label, {}).get(file.relative)
                documents.append(replace(doc, url=url) if url else doc)
                if report is not None:
                    report.documents += 1
        cache.save()
        self.report.files_unchanged = cache.reused
        self.report.documents = len(documents)
        return documents

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
            if self.report.versions:
                lacking = set(missing)
                for version in self.report.versions:
                    own = {c.content_hash for c in chunks if c.version == version.label}
                    version.embedded = len(own & lacking)
            if probe not in vectors:  # alone, as the server embeds a query: an int8 encoder
                # scales activations per batch, so its vector for a text depends on the batch
                vectors[probe] = embedder.embed_batch([PROBE_TEXT])[0]
                cache.put_many(embedder.cache_key, [probe], vectors[probe][None, :])
            with progress(total=len(missing), desc="embed", unit="chunk") as bar:
                wanted = [texts[h] for h in missing]
                for start, matrix in embed_parts(embedder, wanted, EMBED_GROUP):
                    done = missing[start : start + len(matrix)]
                    cache.put_many(embedder.cache_key, done, matrix)
                    vectors.update(zip(done, matrix, strict=True))
                    bar.update(len(done))
            self.probe = vectors[probe]
        finally:
            cache.close()
        return np.stack([vectors[c.content_hash] for c in chunks]).astype(np.float32)

    def search_settings(self) -> SearchSettings:
        """The server's search settings (BM25 parameters and probes are stored with the index)."""
        return configured_search(self.config.server_root / "config" / "server_config.yaml")

    def build_info(self, embedder: Embedder) -> dict[str, object]:
        """What the runtime needs to know about this build (stored in ``build_info``)."""
        config = self.config
        default = self.report.version(self.report.default_version)
        return {
            "name": config.name,
            "tool_version": __version__,
            "duckdb_version": duckdb.__version__,
            "embedding_provider": config.embedding.provider,
            "model_id": embedder.model_id,
            "model_cache_key": embedder.cache_key,
            "model_sha256": getattr(embedder, "weights_sha256", None),
            "precision": getattr(embedder, "precision", None),  # None: the server's own
            "encoder_file": encoder_file_name(embedder),
            "encoder_sha256": getattr(embedder, "encoder_sha256", None),
            "dimension": embedder.dimension,
            "normalized": True,
            "metric": "cosine",
            "max_seq_length": config.chunking.max_tokens,
            "chunking": vars(config.chunking),
            # a versioned server's source is its default version's; each version's is in versions
            "source_path": str(config.source.path),
            "source_revision": (
                default.source_revision if default else source_revision(config.source.path)
            ),
            "versions": [v.info() for v in self.report.versions],  # oldest first
            "default_version": self.report.default_version,
            "file_count": self.report.files,
            "skipped_count": len(self.report.skipped),
            "config_hash": hashlib.sha256(
                json.dumps(config.raw, sort_keys=True, default=str).encode()
            ).hexdigest(),
        }
