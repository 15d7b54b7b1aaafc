"""`Encoder.encode(texts, role)`: the one path every embedding in searchbox goes through.

It deduplicates, asks the cache, embeds only what is missing (longest first, so batches hold texts of
similar length and pad little), stores the new vectors, and loads the model only on the first miss:
a search whose vectors are all cached never loads a model.

Missing texts are embedded in batches sized to take about BATCH_SECONDS each (a role's first call starts
with one text; its later calls at the size its last batch found), each (and the model's
load) watched by the run's cancel token (cancel.cuttable): a pause or stop cuts a long embedding at
once (the batch under way ends in the background and is dropped; no other starts), and the vectors of
finished batches stay in the cache for the resumed run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from searchbox.cancel import CancelToken, cuttable
from searchbox.retrieval.cache import EmbeddingCache
from searchbox.retrieval.interfaces import Embedder, LoadReport, Role

BATCH_SECONDS = 0.25  # what one batch should take: a cut waits for at most about this long
FIRST_BATCH = 1  # the first batch, before the speed is known: the longest text alone
MAX_BATCH = 64  # past this a batch gains nothing on a CPU (on a GPU it is reached at once)


@dataclass
class EncoderStats:
    texts_embedded: int = 0
    embed_seconds: float = 0.0
    load_seconds: float = 0.0


class Encoder:
    def __init__(self, model_name: str, load: Callable[[], tuple[Embedder, LoadReport]], cache: EmbeddingCache,
                 cancel: CancelToken | None = None) -> None:
        self.model_name = model_name
        self.cancel = cancel  # the run's: checked between batches (cancel.Cancelled is raised)
        self._load = load
        self._embedder: Embedder | None = None
        self.report: LoadReport | None = None
        self.cache = cache
        self.stats = EncoderStats()
        self._lock = threading.Lock()
        # Per role (queries are short, passages long): the size the last batch found, where the next call starts.
        self._batch: dict[Role, int] = {}

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                started = time.perf_counter()
                self._embedder, self.report = cuttable(self.cancel, self._load)
                self.stats.load_seconds += time.perf_counter() - started
            return self._embedder

    def cached(self, texts: list[str], role: Role) -> list[np.ndarray | None]:
        """What the caches hold for these texts, embedding nothing."""
        return self.cache.get_many(self.model_name, role, texts)

    def encode(self, texts: list[str], role: Role) -> np.ndarray:
        unique = list(dict.fromkeys(texts))
        cached = self.cache.get_many(self.model_name, role, unique)
        missing = [t for t, v in zip(unique, cached) if v is None]
        vectors = dict(zip(unique, cached))
        if missing:
            missing.sort(key=len, reverse=True)
            embedder = self.embedder
            size, done = self._batch.get(role, FIRST_BATCH), 0
            while done < len(missing):
                batch = missing[done:done + size]
                started = time.perf_counter()
                fresh = cuttable(self.cancel, lambda: embedder.embed(batch, role))
                seconds = time.perf_counter() - started
                self.stats.embed_seconds += seconds
                self.stats.texts_embedded += len(batch)
                self.cache.put_many(self.model_name, role, batch, fresh)  # kept, even if the next batch is cut
                vectors.update(zip(batch, fresh))
                done += len(batch)
                size = self._batch[role] = max(1, min(MAX_BATCH, int(BATCH_SECONDS * len(batch) / max(seconds, 1e-6))))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([vectors[t] for t in texts]).astype(np.float32, copy=False)

