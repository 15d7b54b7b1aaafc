"""`Encoder.encode(texts, role)`: the one path every embedding in searchbox goes through.

It deduplicates, asks the cache, embeds only what is missing (longest first, so batches hold texts of
similar length and pad little), stores the new vectors, and loads the model only on the first miss:
a search whose vectors are all cached never loads a model.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from searchbox.retrieval.cache import EmbeddingCache
from searchbox.retrieval.interfaces import Embedder, LoadReport, Role


@dataclass
class EncoderStats:
    texts_embedded: int = 0
    embed_seconds: float = 0.0
    load_seconds: float = 0.0


class Encoder:
    def __init__(self, model_name: str, load: Callable[[], tuple[Embedder, LoadReport]], cache: EmbeddingCache) -> None:
        self.model_name = model_name
        self._load = load
        self._embedder: Embedder | None = None
        self.report: LoadReport | None = None
        self.cache = cache
        self.stats = EncoderStats()
        self._lock = threading.Lock()

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                started = time.perf_counter()
                self._embedder, self.report = self._load()
                self.stats.load_seconds += time.perf_counter() - started
            return self._embedder

    def encode(self, texts: list[str], role: Role) -> np.ndarray:
        unique = list(dict.fromkeys(texts))
        cached = self.cache.get_many(self.model_name, role, unique)
        missing = [t for t, v in zip(unique, cached) if v is None]
        vectors = dict(zip(unique, cached))
        if missing:
            missing.sort(key=len, reverse=True)
            embedder = self.embedder
            started = time.perf_counter()
            fresh = embedder.embed(missing, role)
            self.stats.embed_seconds += time.perf_counter() - started
            self.stats.texts_embedded += len(missing)
            self.cache.put_many(self.model_name, role, missing, fresh)
            vectors.update(zip(missing, fresh))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([vectors[t] for t in texts]).astype(np.float32, copy=False)
