"""Indexing a dataroom in the background: from the moment a run starts (its model's first step overlaps
it) or, in the app, from the moment a room is uploaded.

A thread builds the retrieval engine (extraction and chunking included, for a room not yet loaded), its
BM25 index (kept on disk, bm25_cache), and embeds every chunk through the engine's `ChunkVectors`, a slice at a time, yielding to the run's own
searches. What it embeds lands in the disk cache too, so the run an upload preview started for, a
later run, the CLI and sweeps all reuse it. Until it is done, a search ranks what is embedded so far
and says how much that is.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from searchbox.cancel import Cancelled
from searchbox.retrieval.chunk_vectors import Coverage
from searchbox.retrieval.engine import RetrievalEngine

log = logging.getLogger(__name__)


class BackgroundIndexer:
    def __init__(self, engine: Callable[[], RetrievalEngine], name: str = "searchbox-index") -> None:
        self._engine_of = engine
        self._engine: RetrievalEngine | None = None
        self._stop = threading.Event()
        self.error: str | None = None
        self.started = 0.0
        self.finished: float | None = None
        # Not a daemon: torch aborts a process that exits while a thread still computes; stop() ends it
        # within one slice.
        self._thread = threading.Thread(target=self._run, name=name, daemon=False)

    def start(self) -> BackgroundIndexer:
        self.started = time.monotonic()
        self._thread.start()
        return self

    def stop(self, wait_s: float = 0.0) -> None:
        """Stop after the slice under way (waiting up to `wait_s` for it); what it embedded stays cached."""
        self._stop.set()
        if wait_s > 0 and self._thread.is_alive():
            self._thread.join(wait_s)

    def wait(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for it to finish; whether it has."""
        if timeout_s > 0:
            self._thread.join(timeout_s)
        return not self._thread.is_alive()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def progress(self) -> Coverage | None:
        """How much of the room is embedded so far; None while the room is still being read."""
        engine = self._engine
        if engine is None:
            return None
        return engine.vectors().coverage(list(range(len(engine.corpus.chunks))))

    def _run(self) -> None:
        try:
            self._engine = self._engine_of()
            if not self._stop.is_set():
                self._engine.bm25()  # every search ranks by it first; kept on disk for the run an upload preview precedes
            if not self._stop.is_set():
                self._engine.fill_vectors(self._stop)
        except Cancelled:
            pass  # the run was stopped: what was embedded stays in the cache
        except Exception as exc:  # the run's own searches meet the same failure and report it there
            log.warning("background indexing stopped: %s", exc)
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.finished = time.monotonic()
