"""Retrieval's knobs: the embedder and reranker (local weights or the Jina API), how documents are chunked,
and how search_dataroom ranks. RETRIEVAL_PRESET names a bundle of them (bundles.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from searchbox.settings.bundles import RETRIEVAL_PRESETS
from searchbox.settings.knob import SettingsError, knob


@dataclass(frozen=True)
class RetrievalSettings:
    """The embedder and reranker, the chunks they index, and how search_dataroom ranks them."""

    TITLE: ClassVar[str] = "Retrieval"

    retrieval_preset: str = knob(
        "default", "a named bundle of retrieval knobs", choices=tuple(RETRIEVAL_PRESETS), deploy=True
    )
    embed_backend: str = knob(
        "local", "embedder backend: local weights or the Jina API", choices=("local", "api"), deploy=True
    )
    rerank_backend: str = knob(
        "local", "reranker backend: local weights or the Jina API", choices=("local", "api"), deploy=True
    )
    embed_model: str = knob(
        "jinaai/jina-embeddings-v5-text-small",
        "embedding model: a hub id, a local path, packaged:minilm or packaged:static", deploy=True
    )
    rerank_model: str = knob(
        "jinaai/jina-reranker-v3", "reranker model: a hub id, a local path, or none (rerank by embedding cosine)",
        deploy=True
    )
    embed_device: str = knob("cpu", "where local models run", choices=("cpu", "cuda"), deploy=True)
    embed_dtype: str = knob(
        "float32",
        "local transformer weights: float32, or int8 (dynamic quantization on the CPU: faster, slightly different vectors)",
        choices=("float32", "int8"),
    )
    min_free_vram_mb: int = knob(1500, "with cuda, fall back to CPU when less VRAM than this is free")
    chunk_size: int = knob(1400, "retrieval chunk size in characters")
    chunk_overlap: int = knob(180, "overlap between neighbouring chunks in characters")
    chunk_context: bool = knob(
        True, "index each chunk with its file name, title and section headings (tools still show the chunk's own text)"
    )
    search_mode: str = knob("dense", "search_dataroom ranking: dense, or hybrid (dense + BM25 fused)", choices=("dense", "hybrid"))
    hybrid_bm25_candidates: int = knob(
        0, "BM25 candidates fused in hybrid search (0 = as many as dense ones, max(50, 4k)); fewer suit a weak embedder"
    )
    dense_prefilter: int = knob(
        0, "when a scope has more chunks than this, embed only this many BM25 candidates per query (0 = off)"
    )
    background_index: bool = knob(
        True, "embed the whole dataroom in the background from the start of a run (and of an upload preview in the "
        "app), yielding to the run's own searches; searches rank what is embedded so far and say how much"
    )
    jina_api_key: str = knob("", "Jina API key for the api backends", secret=True, deploy=True)
    jina_api_url: str = knob("https://api.jina.ai/v1", "base URL of the Jina API")


def check(settings: RetrievalSettings) -> None:
    """SettingsError for a value of this section's knobs that cannot be used."""
    if settings.chunk_size < 100:
        raise SettingsError("CHUNK_SIZE must be at least 100 characters")
    if not 0 <= settings.chunk_overlap < settings.chunk_size // 2:
        raise SettingsError("CHUNK_OVERLAP must be between 0 and half of CHUNK_SIZE")
    if settings.dense_prefilter < 0:
        raise SettingsError("DENSE_PREFILTER must be 0 (off) or a positive number of candidates")
    if settings.hybrid_bm25_candidates < 0:
        raise SettingsError("HYBRID_BM25_CANDIDATES must be 0 (as many as dense ones) or a positive number")
