"""The factory that builds retrieval's models (interfaces.py) from settings. Backends live in
`local_models` (transformers / sentence-transformers / model2vec) and `jina_api` (HTTP).
Heavy libraries are imported only when a model is actually loaded, and a local model once loaded is
kept for the next run of the same process (a sweep or the app would otherwise reload it every run).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from searchbox.retrieval.interfaces import Embedder, LoadReport, Reranker, Role
from searchbox.settings import Settings


def embedding_cache_name(settings: Settings) -> str:
    """Vectors differ by model, backend and quantization, so each gets its own cache namespace."""
    name = f"api:{settings.embed_model}" if settings.embed_backend == "api" else settings.embed_model
    return f"{name}#int8" if settings.embed_dtype == "int8" and settings.embed_backend == "local" else name


def uses_jina_api(settings: Settings) -> bool:
    """Whether a run with these settings calls the Jina API (and spends JINA_API_KEY)."""
    reranks = settings.rerank_model.strip().lower() not in {"", "none"}
    return settings.embed_backend == "api" or (settings.rerank_backend == "api" and reranks)


def load_embedder(settings: Settings) -> tuple[Embedder, LoadReport]:
    if settings.embed_backend == "api":
        from searchbox.retrieval.jina_api import JinaApiEmbedder

        embedder = JinaApiEmbedder(settings.embed_model, settings.jina_api_key, settings.jina_api_url)
        return embedder, LoadReport(settings.embed_model, "api", settings.embed_device, "api")
    from searchbox.retrieval.local_models import load_local_embedder

    key = ("embed", settings.embed_model, settings.embed_device, settings.embed_dtype)
    return _kept(key, lambda: load_local_embedder(settings))


def load_reranker(
    settings: Settings, encode: Callable[[list[str], Role], np.ndarray]
) -> tuple[Reranker, LoadReport]:
    """`encode` is the cached embedding path, used when RERANK_MODEL=none."""
    if settings.rerank_model.strip().lower() in {"", "none"}:
        return CosineReranker(encode), LoadReport("none", "cosine", settings.embed_device, "n/a")
    if settings.rerank_backend == "api":
        from searchbox.retrieval.jina_api import JinaApiReranker

        reranker = JinaApiReranker(settings.rerank_model, settings.jina_api_key, settings.jina_api_url)
        return reranker, LoadReport(settings.rerank_model, "api", settings.embed_device, "api")
    from searchbox.retrieval.local_models import load_local_reranker

    return _kept(("rerank", settings.rerank_model, settings.embed_device), lambda: load_local_reranker(settings))


_KEEP_MODELS = 3  # local models kept loaded per process; the oldest goes when another is loaded
_kept_models: OrderedDict[tuple[str, ...], tuple[Any, LoadReport]] = OrderedDict()
_kept_lock = threading.Lock()


def _kept(key: tuple[str, ...], load: Callable[[], tuple[Any, LoadReport]]) -> tuple[Any, LoadReport]:
    """The model loaded for `key` earlier in this process, else a fresh load (one at a time: two runs
    asking at once must not load it twice)."""
    with _kept_lock:
        if key in _kept_models:
            _kept_models.move_to_end(key)
            model, report = _kept_models[key]
            return model, replace(report, notes=[*report.notes, "already loaded in this process: reused"])
        model, report = load()
        _kept_models[key] = (model, report)
        while len(_kept_models) > _KEEP_MODELS:
            _kept_models.popitem(last=False)
        return model, report


class CosineReranker:
    """Reranks by embedding cosine, so a host with no cross-encoder still gets a ranking."""

    name = "cosine"

    def __init__(self, encode: Callable[[list[str], Role], np.ndarray]) -> None:
        self._encode = encode

    def score(self, query: str, documents: list[str]) -> list[float]:
        if not documents:
            return []
        q = self._encode([query], "query")[0]
        d = self._encode(documents, "passage")
        return (d @ q).astype(float).tolist()
