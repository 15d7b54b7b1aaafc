"""What a visitor may set for a run: a fixed list of knobs, checked, never arbitrary URLs or files."""

from __future__ import annotations

import gradio as gr
import pytest

from searchbox.settings import Settings
from searchbox.ui.run_view import ENDPOINT_CHOICE, RunRequest, llm_choices

ARGS = dict(budget=3, force=True, high=["keyword_search"], low=["rerank"], model_id="m", retrieval="packaged",
            embed_backend="local", rerank_backend="local")


def overrides_for(settings: Settings, **form) -> dict:
    return RunRequest(question="q", **form).overrides(settings)


def test_a_visitor_cannot_point_a_public_app_at_another_endpoint() -> None:
    operator = Settings.resolve(env={"LLAMA_URL": "http://gpu-box:8080/v1", "MODEL_ID": "qwen"})
    overrides = overrides_for(operator, llm=ENDPOINT_CHOICE, endpoint="http://evil.example/v1", **ARGS)
    assert overrides["llama_url"] == "http://gpu-box:8080/v1" and overrides["model_id"] == "qwen"
    public = Settings.resolve(env={})
    assert ENDPOINT_CHOICE not in llm_choices(public)
    with pytest.raises(gr.Error):
        overrides_for(public, llm=ENDPOINT_CHOICE, endpoint="http://evil.example/v1", **ARGS)
    with pytest.raises(gr.Error):
        overrides_for(public, llm="/etc/passwd", endpoint="", **ARGS)


def test_endpoints_can_be_allowed_and_tools_are_joined() -> None:
    laptop = Settings.resolve(env={"SEARCHBOX_VISITOR_ENDPOINTS": "1"})
    overrides = overrides_for(laptop, llm=ENDPOINT_CHOICE, endpoint="http://localhost:8080/v1", **ARGS)
    assert overrides["llama_url"] == "http://localhost:8080/v1"
    assert overrides["searchbox_tools"] == "keyword_search,rerank" and overrides["turn_budget"] == 3
    none = overrides_for(laptop, **{**ARGS, "high": [], "low": []}, llm="auto", endpoint="")
    assert none["searchbox_tools"] == "" and none["llm_gguf"] == "auto" and none["llama_url"] == ""


def test_a_visitor_sees_only_their_own_runs(tmp_path) -> None:
    from conftest import SMALL_DATAROOM, write_tree
    from searchbox.ui.services import Services

    source = write_tree(tmp_path / "room", SMALL_DATAROOM)
    for operator in (False, True):
        settings = Settings.resolve(env={}, searchbox_jobs_dir=str(tmp_path / f"jobs-{operator}"),
                                    searchbox_operator=operator)
        services = Services.start(settings, run_fn=lambda *args: "first_turn_done")
        try:
            mine = services.store.create("Q?", source, {}, "alice", settings)
            assert [r.id for r in services.visible_jobs("alice")] == [mine.id]
            assert services.may_see(mine.id, "alice") is not None
            assert (services.may_see(mine.id, "mallory") is None) is not operator
            assert (services.visible_jobs("mallory") == []) is not operator
            assert services.may_see("../../etc", "alice") is None
        finally:
            services.scheduler.stop()
