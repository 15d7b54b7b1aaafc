"""Local model backends: sentence-transformers / transformers weights and model2vec static embedders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from searchbox.retrieval.model_paths import resolve_model_dir, is_static_model
from searchbox.retrieval.interfaces import LoadReport, ModelLoadError, Role, normalize_rows
from searchbox.settings import Settings

# Prompt names models use for each role, in the order we try them.
_PROMPT_NAMES: dict[Role, tuple[str, ...]] = {
    "query": ("query", "retrieval.query", "search_query"),
    "passage": ("document", "passage", "retrieval.passage", "search_document"),
}


def pick_device(requested: str, min_free_vram_mb: int) -> tuple[str, list[str]]:
    """cuda only when it exists and has enough free memory; otherwise the CPU, with the reason."""
    if requested != "cuda":
        return "cpu", []
    import torch

    if not torch.cuda.is_available():
        return "cpu", ["EMBED_DEVICE=cuda but no CUDA device is available: using the CPU"]
    free, _total = torch.cuda.mem_get_info()
    free_mb = free // (1024 * 1024)
    if free_mb < min_free_vram_mb:
        return "cpu", [f"only {free_mb} MB of VRAM free (< MIN_FREE_VRAM_MB={min_free_vram_mb}): using the CPU"]
    return "cuda", []


def _load_on_device(load: Any, device: str, notes: list[str]) -> tuple[Any, str]:
    """Load with `load(device)`; a CUDA out-of-memory at load falls back to the CPU."""
    try:
        return load(device), device
    except Exception as exc:
        if device == "cuda" and "out of memory" in str(exc).lower():
            import torch

            torch.cuda.empty_cache()
            notes.append("CUDA out of memory while loading: using the CPU")
            return load("cpu"), "cpu"
        raise


class SentenceTransformerEmbedder:
    def __init__(self, model: Any, name: str) -> None:
        self.model = model
        self.name = name
        prompts = getattr(model, "prompts", {}) or {}
        self._prompt = {
            role: next((p for p in names if p in prompts), None) for role, names in _PROMPT_NAMES.items()
        }

    def embed(self, texts: list[str], role: Role) -> np.ndarray:
        if not texts:  # encode([]) gives a 1-d empty array, which normalize_rows would turn into one row
            get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
            return np.zeros((0, get_dim() or 0), dtype=np.float32)
        import torch

        # inference_mode skips autograd bookkeeping that no_grad still pays for.
        with torch.inference_mode():
            vectors = self.model.encode(
                texts,
                batch_size=64,
                prompt_name=self._prompt[role],
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return normalize_rows(vectors)


class StaticEmbedder:
    """model2vec: a token-embedding lookup and a mean; thousands of passages a second on a CPU."""

    def __init__(self, model: Any, name: str) -> None:
        self.model = model
        self.name = name

    def embed(self, texts: list[str], role: Role) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.model.dim), dtype=np.float32)
        return normalize_rows(self.model.encode(texts, show_progress_bar=False))


def _quiet_loading() -> None:
    """No per-weight progress bars in the CLI's output or the app's logs."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()


def load_local_embedder(settings: Settings) -> tuple[SentenceTransformerEmbedder | StaticEmbedder, LoadReport]:
    model_dir = resolve_model_dir(settings.embed_model)
    if is_static_model(model_dir):
        from model2vec import StaticModel

        model = StaticModel.from_pretrained(str(model_dir))
        report = LoadReport(settings.embed_model, "model2vec", settings.embed_device, "cpu")
        if settings.embed_device == "cuda":
            report.notes.append("static embedders run on the CPU")
        return StaticEmbedder(model, settings.embed_model), report

    device, notes = pick_device(settings.embed_device, settings.min_free_vram_mb)
    _quiet_loading()

    def load(dev: str) -> Any:
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(str(model_dir), device=dev, trust_remote_code=True)

    try:
        model, device = _load_on_device(load, device, notes)
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"could not load embedding model {settings.embed_model}: {exc}") from exc
    if settings.embed_dtype == "int8":
        if device == "cpu":
            model = _quantize_int8(model)
        else:
            notes.append("EMBED_DTYPE=int8 applies on the CPU only: kept float32 on CUDA")
    report = LoadReport(settings.embed_model, "sentence-transformers", settings.embed_device, device, notes)
    return SentenceTransformerEmbedder(model, settings.embed_model), report


def _quantize_int8(model: Any) -> Any:
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch announces the API's move to torchao on every call
        from torch.ao.quantization import per_channel_dynamic_qconfig

        # Per-channel weight scales: one scale per output row keeps the vectors close to float32
        # (cosine ~0.95 on 1400-character chunks, against ~0.8-0.86 with one scale per matrix),
        # at the same speed.
        return torch.ao.quantization.quantize_dynamic(
            model, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8
        )


class _LocalReranker:
    """A reranker over a loaded torch model; subclasses say how the model scores a list."""

    def __init__(self, model: Any, name: str) -> None:
        self.model = model
        self.name = name

    def score(self, query: str, documents: list[str]) -> list[float]:
        if not documents:
            return []
        import torch

        with torch.inference_mode():
            return self._scores(query, documents)

    def _scores(self, query: str, documents: list[str]) -> list[float]:
        raise NotImplementedError


class CrossEncoderReranker(_LocalReranker):
    """A cross-encoder: one score per (query, document) pair."""

    def _scores(self, query: str, documents: list[str]) -> list[float]:
        scores = self.model.predict([(query, d) for d in documents], show_progress_bar=False)
        return np.asarray(scores, dtype=np.float32).reshape(len(documents), -1)[:, -1].astype(float).tolist()


class ListwiseReranker(_LocalReranker):
    """Rerankers such as jina-reranker-v3 that score a whole list in one pass via `model.rerank`."""

    def _scores(self, query: str, documents: list[str]) -> list[float]:
        scores = [0.0] * len(documents)
        for item in self.model.rerank(query, documents):
            scores[int(item["index"])] = float(item["relevance_score"])
        return scores


def _is_listwise(model_dir: Path) -> bool:
    config_path = model_dir / "config.json"
    if not config_path.exists():
        return False
    architectures = json.loads(config_path.read_text()).get("architectures") or []
    return any("ForRanking" in a for a in architectures)


def load_local_reranker(settings: Settings) -> tuple[CrossEncoderReranker | ListwiseReranker, LoadReport]:
    model_dir = resolve_model_dir(settings.rerank_model)
    device, notes = pick_device(settings.embed_device, settings.min_free_vram_mb)
    listwise = _is_listwise(model_dir)
    _quiet_loading()

    def load(dev: str) -> Any:
        if listwise:
            from transformers import AutoModel

            return AutoModel.from_pretrained(str(model_dir), dtype="auto", trust_remote_code=True).to(dev).eval()
        from sentence_transformers import CrossEncoder

        return CrossEncoder(str(model_dir), device=dev, trust_remote_code=True)

    try:
        model, device = _load_on_device(load, device, notes)
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"could not load reranker {settings.rerank_model}: {exc}") from exc
    backend = "transformers-listwise" if listwise else "cross-encoder"
    report = LoadReport(settings.rerank_model, backend, settings.embed_device, device, notes)
    reranker = ListwiseReranker(model, settings.rerank_model) if listwise else CrossEncoderReranker(model, settings.rerank_model)
    return reranker, report
