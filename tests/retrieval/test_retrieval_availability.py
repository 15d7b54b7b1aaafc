"""Offline fallback of the retrieval models: with no hub and nothing cached, a run that did not choose
its models gets the packaged embedder with hybrid search, says so, and records the change as derived."""

from __future__ import annotations

from pathlib import Path

from searchbox.retrieval.availability import fit_retrieval, why_unavailable
from searchbox.settings import Settings
from searchbox.ui.visitors import RunRequest

NEVER_CACHED = "searchbox-tests/never-cached-embedder"


def overrides_for(settings: Settings, **form) -> dict:
    return RunRequest(question="q", **form).overrides(settings)


def test_default_models_missing_offline_fall_back_to_the_packaged_embedder_with_hybrid_search() -> None:
    settings = Settings.resolve(env={})  # conftest sets HF_HUB_OFFLINE: the Jina defaults cannot be fetched
    assert why_unavailable(settings.embed_model) is not None
    fitted, notes = fit_retrieval(settings)
    assert fitted.embed_model == "packaged:minilm" and fitted.search_mode == "hybrid" and fitted.rerank_model == "none"
    assert {"embed_model", "search_mode", "rerank_model"} <= fitted.derived
    assert len(notes) == 1 and "HF_HUB_OFFLINE" in notes[0] and "hybrid" in notes[0]


def test_models_the_user_chose_are_never_swapped() -> None:
    chosen = Settings.resolve(env={"EMBED_MODEL": NEVER_CACHED})
    fitted, notes = fit_retrieval(chosen)
    assert fitted.embed_model == NEVER_CACHED and fitted.search_mode == "dense"
    assert [n for n in notes if "reranks by embedding cosine" not in n] == []  # only the unchosen reranker
    preset = Settings.resolve(env={}, retrieval_preset="nano")
    assert fit_retrieval(preset) == (preset, [])


def test_models_that_are_here_are_kept(tmp_path: Path) -> None:
    packaged = Settings.resolve(env={"RETRIEVAL_PRESET": "packaged"})
    assert fit_retrieval(packaged) == (packaged, [])
    local = Settings.resolve(env={}).with_derived(embed_model=str(tmp_path), rerank_model="none")
    assert why_unavailable(str(tmp_path)) is None
    assert fit_retrieval(local)[0].embed_model == str(tmp_path)


def test_the_app_leaves_retrieval_unchosen_unless_the_visitor_changed_it() -> None:
    operator = Settings.resolve(env={})
    args = dict(budget=1, force=False, high=[], low=[], llm="auto", endpoint="", model_id="")
    untouched = overrides_for(operator, retrieval="default", embed_backend="local", rerank_backend="local", **args)
    assert not {"retrieval_preset", "embed_backend", "rerank_backend"} & set(untouched)
    changed = overrides_for(operator, retrieval="packaged", embed_backend="local", rerank_backend="local", **args)
    assert changed["retrieval_preset"] == "packaged"
