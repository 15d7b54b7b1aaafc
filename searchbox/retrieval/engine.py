"""The retrieval engine of one job: dense, keyword and hybrid search, rerank, over lazy scopes.

Nothing is embedded at construction. A scope (the whole dataroom, or some paths) is embedded on
its first dense search, through the job's `Encoder` (so through the cache); the BM25 index is built
on the first keyword or hybrid search. With DENSE_PREFILTER set, a search over a larger scope embeds
only its query's BM25 candidates and ranks them with every chunk embedded before (by earlier queries,
the background indexer, or an earlier run through the disk cache); each dense ranking says how much of
its scope it covered (chunk_vectors.Coverage). The BM25 index, too, comes from the disk when the same
chunks were indexed before (bm25_cache).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from searchbox.cancel import CancelToken, cuttable
from searchbox.dataroom.corpus import Corpus
from searchbox.retrieval.bm25 import BM25Index
from searchbox.retrieval.bm25_cache import BM25Cache
from searchbox.retrieval.cache import EmbeddingCache
from searchbox.retrieval.chunk_vectors import ChunkVectors, Coverage
from searchbox.retrieval.encoder import Encoder
from searchbox.retrieval.interfaces import LoadReport, Reranker
from searchbox.retrieval.models import embedding_cache_name, load_embedder, load_reranker
from searchbox.settings import Settings

_RRF_K = 60  # the usual reciprocal-rank-fusion constant


@dataclass(frozen=True)
class Hit:
    chunk: int  # index into corpus.chunks
    score: float


class RetrievalEngine:
    def __init__(self, corpus: Corpus, settings: Settings, encoder: Encoder) -> None:
        self.corpus = corpus
        self.bm25_cache = BM25Cache(Path(settings.cache_dir) / "bm25", settings.bm25_cache_mb * 2**20)
        self.settings = settings
        self.encoder = encoder
        self._bm25: BM25Index | None = None
        self._reranker: Reranker | None = None
        self.rerank_report: LoadReport | None = None
        self._vectors: ChunkVectors | None = None
        self._lock = threading.Lock()

    @classmethod
    def for_corpus(cls, corpus: Corpus, settings: Settings, seed_caches: list[Path] | None = None,
                   cancel: CancelToken | None = None) -> RetrievalEngine:
        return cls(corpus, settings, job_encoder(settings, seed_caches, cancel))

    # -- building blocks -------------------------------------------------------------------

    def index_text(self, chunk: int) -> str:
        """The text a chunk is embedded, keyword-indexed and reranked by (CHUNK_CONTEXT)."""
        c = self.corpus.chunks[chunk]
        return c.indexed_text() if self.settings.chunk_context else c.text

    def scope(self, paths: list[str] | None) -> list[int]:
        return self.corpus.chunks_for(paths)

    def bm25(self) -> BM25Index:
        with self._lock:
            if self._bm25 is None:
                self._bm25 = self.bm25_cache.index([self.index_text(i) for i in range(len(self.corpus.chunks))])
            return self._bm25

    def reranker(self) -> Reranker:
        with self._lock:
            if self._reranker is None:
                self._reranker, self.rerank_report = cuttable(self.encoder.cancel,
                                                              lambda: load_reranker(self.settings, self.encoder.encode))
            return self._reranker

    def vectors(self) -> ChunkVectors:
        """The chunks' vectors known so far, with those the caches held when first asked."""
        with self._lock:
            if self._vectors is None:
                self._vectors = ChunkVectors([self.index_text(i) for i in range(len(self.corpus.chunks))],
                                             self.encoder)
            vectors = self._vectors
        vectors.adopt_cached()
        return vectors

    def fill_vectors(self, stop: threading.Event) -> None:
        """Embed the whole dataroom, a slice at a time, yielding to searches (the background indexer's work)."""
        self.vectors().fill(list(range(len(self.corpus.chunks))), stop, self.encoder.cancel)

    # -- rankings --------------------------------------------------------------------------

    def keyword_search(self, query: str, k: int, paths: list[str] | None = None) -> list[Hit]:
        ids = self.scope(paths)
        if not ids:
            return []
        scores = self.bm25().scores(query)[ids]
        return [h for h in _top(ids, scores, k) if h.score > 0]

    def dense_search(self, query: str, k: int, paths: list[str] | None = None) -> tuple[list[Hit], Coverage]:
        """Top-k by cosine over the scope's embedded chunks, and how many of the scope's chunks that was."""
        ids = self.scope(paths)
        if not ids:
            return [], Coverage(0, 0)
        prefilter = self.settings.dense_prefilter
        vectors = self.vectors()
        with vectors.foreground():
            q = self.encoder.encode([query], "query")[0]
            if prefilter and len(ids) > prefilter:
                vectors.ensure([h.chunk for h in self.keyword_search(query, prefilter, paths)])
                covered = vectors.known(ids)
            else:
                vectors.ensure(ids)
                covered = ids
            coverage = Coverage(len(covered), len(ids))
            if not covered:
                return [], coverage
            return _top(covered, vectors.matrix(covered) @ q, k), coverage

    def hybrid_search(self, query: str, k: int, paths: list[str] | None = None,
                      keyword_candidates: int | None = None) -> tuple[list[Hit], Coverage]:
        """Reciprocal-rank fusion of the dense ranking, to depth max(50, 4k), and BM25's top
        `keyword_candidates` (default HYBRID_BM25_CANDIDATES, else the same depth)."""
        depth = max(50, 4 * k)
        dense, coverage = self.dense_search(query, depth, paths)
        keyword = self.keyword_search(query, keyword_candidates or self.settings.hybrid_bm25_candidates or depth, paths)
        fused: dict[int, float] = {}
        for ranking in (dense, keyword):
            for rank, hit in enumerate(ranking):
                fused[hit.chunk] = fused.get(hit.chunk, 0.0) + 1.0 / (_RRF_K + rank + 1)
        ranked = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]
        return [Hit(chunk, score) for chunk, score in ranked], coverage

    def search(self, query: str, k: int, paths: list[str] | None = None) -> tuple[list[Hit], str, Coverage]:
        """search_dataroom's ranking: dense unless SEARCH_MODE=hybrid. Returns hits, mode, dense coverage."""
        if self.settings.search_mode == "hybrid":
            hits, coverage = self.hybrid_search(query, k, paths)
            return hits, "hybrid", coverage
        hits, coverage = self.dense_search(query, k, paths)
        return hits, "dense", coverage

    def answer_candidates(self, question: str, k: int) -> tuple[list[Hit], int, Coverage]:
        """Dense retrieval of max(20, 6k) candidates, reranked to the k best. Returns hits, candidates and
        the dense coverage."""
        candidates, coverage = self.dense_search(question, max(20, 6 * k))
        if not candidates:
            return [], 0, coverage
        scores = self.rerank(question, [self.index_text(h.chunk) for h in candidates])
        order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))[:k]
        return [Hit(candidates[i].chunk, float(scores[i])) for i in order], len(candidates), coverage

    def rerank(self, query: str, documents: list[str]) -> list[float]:
        """Scores of a cross-encoder pass, which a cut of the run does not wait for."""
        reranker = self.reranker()
        return cuttable(self.encoder.cancel, lambda: reranker.score(query, documents))


def job_encoder(settings: Settings, seed_caches: list[Path] | None = None,
                cancel: CancelToken | None = None) -> Encoder:
    """The settings' embedder behind the disk cache; the model loads on the first text not cached (a
    cut of the run does not wait for a batch or a load)."""
    cache = EmbeddingCache(Path(settings.cache_dir) / "embeddings.sqlite", seed_caches or [],
                           settings.embed_cache_mb * 2**20)
    return Encoder(embedding_cache_name(settings), lambda: load_embedder(settings), cache, cancel)


def _top(ids: list[int], scores: np.ndarray, k: int) -> list[Hit]:
    k = min(k, len(ids))
    if k <= 0:
        return []
    part = np.argpartition(-scores, k - 1)[:k] if k < len(ids) else np.arange(len(ids))
    order = part[np.lexsort((part, -scores[part]))]
    return [Hit(ids[i], float(scores[i])) for i in order]
