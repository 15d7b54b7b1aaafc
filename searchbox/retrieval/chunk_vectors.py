"""The vectors of a corpus's chunks known so far, and how much of a scope they cover.

A large room is not embedded before its first search: dense search ranks the chunks embedded so far (by
the background indexer, by earlier queries' candidates, or by an earlier run, the app's upload preview or
the CLI, through the disk cache) together with what the query itself asks to embed, and says how much of
the scope that was (`Coverage`), so that nothing unembedded is ever silently missing.

One embedding runs at a time. A search under way makes the background indexer wait: the indexer embeds a
slice at a time and starts none while a search goes on.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from searchbox.cancel import WATCH_S, Cancelled, CancelToken
from searchbox.retrieval.encoder import Encoder

SLICE_SECONDS = 0.5  # what one background slice should take: a search waits for at most about this long
_MIN_SLICE, _MAX_SLICE = 8, 512


@dataclass(frozen=True)
class Coverage:
    """How many of a scope's chunks a dense ranking covered."""

    embedded: int
    total: int

    @property
    def complete(self) -> bool:
        return self.embedded >= self.total

    def line(self) -> str:
        return f"dense: {self.embedded:,} of {self.total:,} chunks embedded"

    def record(self) -> dict[str, int]:
        return {"embedded": self.embedded, "total": self.total}


class ChunkVectors:
    def __init__(self, texts: list[str], encoder: Encoder) -> None:
        self.texts = texts  # each chunk's index text
        self.encoder = encoder
        self._vectors: np.ndarray | None = None  # allocated with the first vector, when its length is known
        self._known = np.zeros(len(texts), dtype=bool)
        self._state = threading.Lock()  # guards the two arrays
        self._embedding = threading.Lock()  # one embedding at a time
        self._waiting = 0  # searches under way: the background starts no slice meanwhile
        self._adopted = False

    def adopt_cached(self) -> None:
        """Take every chunk vector the caches already hold (once): an earlier run's, the upload preview's."""
        with self._state:
            if self._adopted:
                return
            self._adopted = True
        missing = [i for i in range(len(self.texts)) if not self._known[i]]
        found = self.encoder.cached([self.texts[i] for i in missing], "passage")
        self._store([(i, v) for i, v in zip(missing, found) if v is not None])

    def known(self, ids: list[int]) -> list[int]:
        with self._state:
            return [i for i in ids if self._known[i]]

    def coverage(self, ids: list[int]) -> Coverage:
        return Coverage(len(self.known(ids)), len(ids))

    def matrix(self, ids: list[int]) -> np.ndarray:
        with self._state:
            assert self._vectors is not None and self._known[ids].all(), "embed these chunks first"
            return self._vectors[ids]

    @contextmanager
    def foreground(self) -> Iterator[None]:
        """A search under way: the background indexer starts no slice meanwhile (its BM25 index, its query and
        its candidates would otherwise share the CPU with one)."""
        with self._state:
            self._waiting += 1
        try:
            yield
        finally:
            with self._state:
                self._waiting -= 1

    def ensure(self, ids: list[int]) -> None:
        """Embed those of `ids` not known yet, before any background slice."""
        if not self._missing(ids):
            return
        with self.foreground(), self._embedding:
            self._embed(self._missing(ids))

    def fill(self, ids: list[int], stop: threading.Event, cancel: CancelToken | None = None) -> None:
        """Embed every chunk of `ids` in slices, yielding to foreground searches, until done or `stop` is set.
        A time limit the run sets around one tool call only skips a slice; a stop request ends it."""
        todo = self._missing(ids)
        while todo and not stop.is_set():
            if self._waiting:
                stop.wait(0.02)
                continue
            size = self._slice()
            piece, todo = todo[:size], todo[size:]
            with self._embedding:
                try:
                    self._embed(self._missing(piece))
                except Cancelled:
                    if cancel is not None and cancel.requested is not None:
                        return
                    todo = piece + todo
            if todo and cancel is not None and cancel.cut is not None:
                stop.wait(WATCH_S)  # a tool call's time limit ran out: the loop clears it once that call ends

    def _slice(self) -> int:
        stats = self.encoder.stats
        rate = stats.texts_embedded / stats.embed_seconds if stats.embed_seconds > 0 else 0
        return max(_MIN_SLICE, min(_MAX_SLICE, int(rate * SLICE_SECONDS)))

    def _missing(self, ids: list[int]) -> list[int]:
        with self._state:
            return [i for i in dict.fromkeys(ids) if not self._known[i]]

    def _embed(self, ids: list[int]) -> None:
        if ids:
            vectors = self.encoder.encode([self.texts[i] for i in ids], "passage")
            self._store(list(zip(ids, vectors)))

    def _store(self, rows: list[tuple[int, np.ndarray]]) -> None:
        if not rows:
            return
        with self._state:
            if self._vectors is None:
                self._vectors = np.zeros((len(self.texts), rows[0][1].shape[0]), dtype=np.float32)
            for i, vector in rows:
                self._vectors[i] = vector
                self._known[i] = True
