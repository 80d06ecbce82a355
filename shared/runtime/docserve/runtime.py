"""The database a server answers from, opened in the background and swapped for each new build.

Nothing here imports the MCP framework: a launcher starts a :class:`Runtime` first, so the
database and the model load on other threads while the framework is imported and the client's
handshake runs.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from .build_info import BuildInfo
from .config import ServerSettings
from .memory import release_free_memory
from .query_embedder import EmbedderPool, Encoder, QueryEmbedder
from .rerank import make_reranker
from .search import SearchEngine
from .store import ChunkStore, DatabaseError
from .tokens import TokenCounter

Identity = tuple[int, int, int, int]


class IndexUnavailable(RuntimeError):
    """No database can answer now; the message says why and how to build it."""


def file_identity(path: Path) -> Identity | None:
    """What changes when a build replaces ``path`` (device, inode, mtime, size); None if absent."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)


class Runtime:
    """Serves the database, and the next build of it without a restart.

    The first database is opened on a background thread (then the model is loaded and checked
    against it); the first call waits for it. Every call compares the database file with the one
    being served. A build replaces the file atomically, so a new file means a finished build: it
    is loaded in the background while the old one keeps answering, then swapped in. A new file
    that cannot be read is reported and the old one goes on serving. With no database at all,
    each call says how to build it.
    """

    def __init__(
        self,
        settings: ServerSettings,
        build_hint: str,
        model_dir: Path | None,
        embedders: EmbedderPool | None = None,
    ) -> None:
        self.settings = settings
        self.build_hint = build_hint
        self.error: str | None = None
        self.reload_error: str | None = None
        self.rerank_error: str | None = None
        self.engine: SearchEngine | None = None
        self.served: Identity | None = None  # identity of the file being served
        self.pending: Identity | None = None  # being loaded, or failed to load
        self.lock = threading.Lock()
        self.opened = threading.Event()  # the first open has finished (with or without a db)
        self.model_dir = model_dir
        self.embedders = embedders or EmbedderPool()
        self.token_counter: TokenCounter | None = None
        self.reranker = None
        threading.Thread(target=self._start, name=f"open {settings.name}", daemon=True).start()

    def _start(self) -> None:
        """Open the database (on the background thread)."""
        try:
            self.token_counter = self._token_counter()
            try:
                self.reranker = make_reranker(self.settings.rerank)
            except Exception as exc:  # a bad rerank setting must not stop search
                print(f"reranker disabled: {exc}", file=sys.stderr)
                self.rerank_error = f"reranker disabled ({exc}); results are in fused order"
            with self.lock:
                self.open()
            release_free_memory()
        finally:
            self.opened.set()

    def warm_up(self) -> None:
        """Load the model and check it against the database on a background thread, so the
        first query does not wait for it (called once the server is ready for its client)."""
        if (engine := self.wait()) is not None:
            threading.Thread(target=self._warm_up, args=(engine,), daemon=True).start()

    def wait(self, timeout: float | None = None) -> SearchEngine | None:
        """The engine once the first open has finished (None: no database to serve)."""
        self.opened.wait(timeout)
        return self.engine

    def load(self) -> SearchEngine | None:
        """An engine over the database as it is now, or None (the reason in ``error``)."""
        settings = self.settings
        try:
            store = ChunkStore(settings.database, self.build_hint, settings.search)
        except DatabaseError as exc:
            self.error = str(exc)
            print(f"error: {exc}", file=sys.stderr)
            return None
        self.error = None
        return SearchEngine(
            store, self.embedder_for(store.info), settings.search, self.reranker, self.token_counter
        )

    def embedder_for(self, info: BuildInfo) -> QueryEmbedder:
        """The query embedder for a database: the encoder its vectors came from (a new build may
        switch between fp32 and int8), so queries and documents never mix encoders."""
        settings = self.settings.embedding
        encoder = Encoder.of_build(settings, info, self.settings.database.parent)
        return self.embedders.get(settings, info, self.model_dir, encoder)

    def open(self) -> SearchEngine | None:
        """Load the database now (at start, or when it first appears); hold ``lock``."""
        identity = file_identity(self.settings.database)
        engine = self.load()
        self.pending = None if engine else identity
        if engine is not None:
            self.engine, self.served = engine, identity
        return engine

    def _reload(self, identity: Identity) -> None:
        """Load a new build in the background and swap it in; on failure keep the old one."""
        engine = self.load()
        with self.lock:
            if engine is None:
                self.reload_error = (
                    f"a new database could not be loaded ({self.error}); "
                    "still serving the previous build"
                )
                self.error = None
                return
            old, self.engine, self.served, self.pending = self.engine, engine, identity, None
            self.reload_error = None
        before = old.store.info.snapshot_id if old else None
        print(
            f"serving a new build of {self.settings.name}: snapshot "
            f"{engine.store.info.snapshot_id} (was {before})",
            file=sys.stderr,
        )
        self._warm_up(engine)  # the old store closes when its last search lets go of it

    def _token_counter(self) -> TokenCounter | None:
        """The model's tokenizer for token budgets (None when no model folder is found)."""
        from .encoder import default_model_dir

        model_dir = self.model_dir
        folder = model_dir if model_dir and model_dir.is_dir() else None
        try:
            return self.embedders.token_counter(folder or default_model_dir())
        except Exception as exc:  # budgets are optional; search works without them
            print(f"token budgets unavailable: {exc}", file=sys.stderr)
            return None

    @staticmethod
    def _warm_up(engine: SearchEngine) -> None:
        """Load the model and check it against the database before the first query needs it;
        then return what loading freed (the model's weights pass through two copies)."""
        try:
            engine.query_vector("warm up", [])
        except Exception as exc:  # warming up is best effort; the query path reports problems
            print(f"warm-up failed: {exc}", file=sys.stderr)
        release_free_memory()

    def require(self) -> SearchEngine:
        """The engine serving now (a newer build starts loading), or :class:`IndexUnavailable`
        saying how to build the missing database."""
        self.opened.wait()
        with self.lock:
            identity = file_identity(self.settings.database)
            fresh = identity is not None and identity not in (self.served, self.pending)
            if fresh and self.engine is None:
                engine = self.open()  # nothing to serve meanwhile: load it now
                if engine is not None:
                    threading.Thread(target=self._warm_up, args=(engine,), daemon=True).start()
            elif fresh:
                self.pending = identity
                threading.Thread(target=self._reload, args=(identity,), daemon=True).start()
            if self.engine is None:
                raise IndexUnavailable(self.error or "the search index is not available")
            return self.engine
