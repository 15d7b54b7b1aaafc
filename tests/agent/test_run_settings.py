"""A run's settings are fitted in one place: the model's preset limits, the runtime's window, the retrieval
models this machine has, the prompt's day (read back when the run resumes); each change recorded as derived."""

from __future__ import annotations

import datetime

from searchbox.agent.run_settings import fit_run_settings
from searchbox.llm.choice.presets import SMALL_MODEL_ASSISTS, find_preset
from searchbox.llm.weights.packaged import PACKAGED_QWEN_05B
from searchbox.settings import Settings
from testkit.fake_model import FakeChatModel


def model_with_window(tokens: int | None) -> FakeChatModel:
    model = FakeChatModel([])
    model.context_window = tokens
    return model


def test_every_fit_of_a_run_is_made_in_one_call_and_recorded_as_derived() -> None:
    # conftest sets HF_HUB_OFFLINE: the default Jina models cannot be had, so retrieval falls back too.
    requested = Settings.resolve(env={}, max_steps_per_turn=3)
    fitted, notes = fit_run_settings(requested, model_with_window(8192), preset=find_preset(PACKAGED_QWEN_05B))
    assert fitted.derived_config() == {
        "CONTEXT_WINDOW": 8192, "MAX_OUTPUT_TOKENS": 1024, "HARNESS_ASSISTS": SMALL_MODEL_ASSISTS,
        "TOOL_OUTPUT_BYTES": 4096, "TOOL_DESCRIPTIONS": "brief",  # the preset's, then the runtime's window
        "EMBED_MODEL": "packaged:minilm", "SEARCH_MODE": "hybrid", "RERANK_MODEL": "none",  # this machine's,
        "DENSE_PREFILTER": 50,  # with the packaged preset's prefilter
        "PROMPT_DATE": datetime.date.today().isoformat()}  # the day the run starts
    assert fitted.max_steps_per_turn == 3 and "max_steps_per_turn" in fitted.explicit  # the user's own stays
    assert len(notes) == 1 and "HF_HUB_OFFLINE" in notes[0]


def test_a_resumed_run_names_the_day_it_first_started_and_set_knobs_are_never_fitted() -> None:
    requested = Settings.resolve(env={}, retrieval_preset="packaged", context_window=4096)
    fitted, notes = fit_run_settings(requested, model_with_window(None), recorded={"PROMPT_DATE": "2026-12-02"})
    assert fitted.derived_config() == {"PROMPT_DATE": "2026-12-02"} and notes == []
    repeat = Settings.resolve(env={}, retrieval_preset="packaged", prompt_date="2025-06-30")
    assert fit_run_settings(repeat, model_with_window(None), recorded={"PROMPT_DATE": "2026-12-02"}) == (repeat, [])
