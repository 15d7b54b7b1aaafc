"""THINKING (issue 45 item 3): the level reaches the model in the forms servers read, from the native loop, from
Pi and through searchbox's relay; reasoning tokens are counted apart, as a part of the output, into the records
and the token chart.

The endpoint is scripted (testkit/scripted_endpoint.py): it sends reasoning_content and a usage with
reasoning_tokens, which no small local model does. Real servers with the fields: tests/llm/test_llama_server.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import SMALL_DATAROOM, write_tree
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

from searchbox.agent.pi.install import pi_problem
from searchbox.agent.run import run_job
from searchbox.evaluation.report import results_frame, summary_table
from searchbox.evaluation.report_charts import cost
from searchbox.jobs.job import create_job
from searchbox.llm import connect
from searchbox.llm.clients.openai_client import OpenAIClient, thinking_fields
from searchbox.llm.llamacpp.model import GGUF_TEMPLATE, LlamaCppModel
from searchbox.llm.serve import ModelServer, requested_thinking
from searchbox.llm.weights.gguf import PACKAGED_GEMMA, resolve_gguf
from searchbox.records.events import Notice, read_events
from searchbox.records.files import read_json, read_jsonl
from searchbox.settings import Settings
from searchbox.ui.charts import turn_deltas
from testkit.scripted_endpoint import Reply, ScriptedEndpoint

MESSAGES = [{"role": "user", "content": "When does the lease end?"}]
REASONING = "The abstract's Expiration line gives the date; nothing else in the dataroom disagrees."
# A thinking model's reply as llama-server sends it: reasoning_content deltas, then the answer, and the usage
# counting the reasoning inside completion_tokens, where OpenAI puts it.
THOUGHT = Reply(text="The office lease runs until 31 March 2029.", reasoning=REASONING,
                usage={"prompt_tokens": 40, "completion_tokens": 30, "reasoning_tokens": 18})
LEVELS = {
    "auto": {},
    "off": {"chat_template_kwargs": {"enable_thinking": False}},
    "low": {"chat_template_kwargs": {"enable_thinking": True}, "reasoning_effort": "low"},
    "medium": {"chat_template_kwargs": {"enable_thinking": True}, "reasoning_effort": "medium"},
    "high": {"chat_template_kwargs": {"enable_thinking": True}, "reasoning_effort": "high"},
}
# What Pi sends for each level: both as chat template variables (its "chat-template" format).
PI_LEVELS = {
    "auto": {},
    "off": {"chat_template_kwargs": {"enable_thinking": False}},
    "high": {"chat_template_kwargs": {"enable_thinking": True, "reasoning_effort": "high"}},
}
needs_pi = pytest.mark.skipif(pi_problem() is not None, reason=f"{pi_problem()}")


def _thinking_part(body: dict[str, Any]) -> dict[str, Any]:
    return {key: body[key] for key in ("chat_template_kwargs", "reasoning_effort", "enable_thinking") if key in body}


# -- the native loop -------------------------------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
def test_a_native_run_sends_each_level_in_the_forms_servers_read(tmp_path: Path, level: str) -> None:
    with ScriptedEndpoint(default=THOUGHT) as endpoint:
        settings = _settings(tmp_path, llama_url=endpoint.url, thinking=level)
        job = _job(tmp_path, settings)
        assert run_job(job, settings, connect(settings)) == "first_turn_done"
        sent = [_thinking_part(r.body) for r in endpoint.requests]
    assert sent and all(part == LEVELS[level] for part in sent), sent
    assert read_json(job / "config.json", {})["THINKING"] == level
    assert read_json(job / "run_meta.json", {})["thinking"] == {"level": level, "no_effect": None}


def test_reasoning_tokens_land_in_every_record_apart_from_and_inside_the_output(tmp_path: Path) -> None:
    with ScriptedEndpoint(default=THOUGHT) as endpoint:
        settings = _settings(tmp_path, llama_url=endpoint.url, thinking="high")
        job = _job(tmp_path, settings)
        assert run_job(job, settings, connect(settings)) == "first_turn_done"
    [usage] = [row["usage"] for row in read_jsonl(job / "session.jsonl") if row.get("usage")]
    assert usage["output"] == 30 and usage["reasoning"] == 18 and usage["reasoningBy"] == "server", usage
    [end] = [e for e in read_jsonl(job / "events.jsonl") if e["type"] == "step_end"]
    assert end["usage"]["reasoning"] == 18
    rows = list(read_jsonl(job / "turns.jsonl"))
    assert rows[-1]["tokens"]["reasoning"] == 18 and rows[-1]["tokens"]["output"] == 30
    meta = read_json(job / "run_meta.json", {})
    assert meta["tokens"]["reasoning"] == 18 and meta["tokens"]["total"] == 70  # reasoning is not added again
    # The token chart's data: the output's reasoning and the rest of it, which sum to the output.
    assert turn_deltas(rows) == [{"turn": 1, "input": 40, "cacheRead": 0, "output": 12, "reasoning": 18}]


def test_thinking_takes_only_its_levels() -> None:
    with pytest.raises(ValueError, match="THINKING must be one of auto, off, low, medium, high"):
        Settings.resolve(env={"THINKING": "max"})
    with pytest.raises(ValueError, match="THINKING must be one of"):
        thinking_fields("on")


def test_the_compare_tab_shows_reasoning_tokens_as_a_column_and_a_part_of_the_cost() -> None:
    rows = [{"entry": entry, "question_id": f"q{i}", "turns": 1, "wall_s": 2.0,
             "tokens": {"input": 1000, "output": 300, "cacheRead": 0, "reasoning": reasoning, "total": 1300}}
            for entry, reasoning in (("think-high", 200), ("think-off", 0)) for i in (1, 2)]
    df = results_frame(rows)
    table = summary_table(df)
    assert table.set_index("entry")["reasoning tokens"].to_dict() == {"think-high": 200, "think-off": 0}
    figure = cost(df)
    parts = {trace.name: list(trace.y) for trace in figure.data if trace.name != "wall time"}
    assert parts["reasoning"] == [200, 0] and parts["output"] == [100, 300]  # the output's rest: no double count
    # A sweep from before reasoning was counted has no such part, and its column is empty.
    old = results_frame([{**rows[-1], "tokens": {"input": 1000, "output": 300, "cacheRead": 0, "total": 1300}}])
    assert "reasoning" not in {trace.name for trace in cost(old).data}
    assert summary_table(old)["reasoning tokens"].isna().all()


# -- the built-in runtime --------------------------------------------------------------------------

# Qwen3's switch, as its chat template reads it: an empty, closed think block when thinking is off.
THINKING_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                     "<|im_start|>assistant\n{% if enable_thinking is defined and not enable_thinking %}"
                     "<think>\n\n</think>\n\n{% endif %}")


@pytest.mark.real_model
def test_the_built_in_runtime_hands_thinking_to_a_template_that_reads_it() -> None:
    """No packaged model's template reads enable_thinking, so the 270M is given Qwen3's switch the way
    llama-cpp-python sets up a GGUF's own template: the prompt it evaluates then holds the closed block under
    off, and not under auto or high."""
    model = LlamaCppModel(resolve_gguf(PACKAGED_GEMMA), 1024)
    try:
        llama = model._llama
        llama.metadata["tokenizer.chat_template"] = THINKING_TEMPLATE
        llama._chat_handlers[GGUF_TEMPLATE] = Jinja2ChatFormatter(THINKING_TEMPLATE, "", "").to_chat_handler()
        llama.chat_format = model.chat_format = GGUF_TEMPLATE
        model.template_reads = ("enable_thinking",)
        prompt = {level: model.complete(MESSAGES, max_tokens=1, temperature=0, thinking=level).usage.input
                  for level in ("auto", "high", "off")}
        closed_block = len(llama.tokenize("<think>\n\n</think>\n\n".encode(), add_bos=False, special=True))
        assert prompt["auto"] == prompt["high"] and prompt["off"] == prompt["auto"] + closed_block, prompt
        assert model.thinking_effect("off") is None
        assert "low, medium and high are the same there" in (model.thinking_effect("high") or "")
    finally:
        model.close()


@pytest.mark.real_model
def test_a_run_on_the_built_in_runtime_whose_template_reads_no_thinking_says_so(tmp_path: Path) -> None:
    settings = _settings(tmp_path, llm_gguf=PACKAGED_GEMMA, context_window=2048, max_output_tokens=24,
                         thinking="high", max_steps_per_turn=1)
    job = _job(tmp_path, settings)
    run_job(job, settings, connect(settings))
    said = [e.message for e in read_events(job / "events.jsonl") if isinstance(e, Notice)]
    assert any("THINKING=high has no effect on" in note and "reads neither enable_thinking" in note for note in said)
    thinking = read_json(job / "run_meta.json", {})["thinking"]
    assert thinking["level"] == "high" and "has no effect" in thinking["no_effect"]
    usages = [row["usage"] for row in read_jsonl(job / "session.jsonl") if row.get("usage")]
    assert usages and all(u["reasoning"] == 0 for u in usages)


# -- counting reasoning a server did not count -----------------------------------------------------


@pytest.mark.parametrize("stream, by, count", [("on", "deltas", -(-len(REASONING) // 3)),
                                               ("off", "estimate", len(REASONING) // 4)])
def test_reasoning_a_server_did_not_count_is_counted_by_deltas_or_estimated(stream: str, by: str, count: int) -> None:
    """llama-server sends reasoning_content in deltas of one token each; a whole completion has only its text."""
    reply = Reply(text="31 March 2029.", reasoning=REASONING, usage={"prompt_tokens": 40, "completion_tokens": 60})
    with ScriptedEndpoint(default=reply) as endpoint:
        response = OpenAIClient(endpoint.url, "m", stream=stream).complete(MESSAGES, max_tokens=64, thinking="high")
    assert response.reasoning == REASONING
    assert (response.usage.reasoning, response.usage.reasoning_by) == (count, by)
    assert response.usage.output == 60  # the server's output count, reasoning inside it, as it was


def test_think_tags_in_the_text_are_estimated_and_never_more_than_the_output() -> None:
    reply = Reply(text=f"<think>{REASONING}</think>31 March 2029.", usage={"prompt_tokens": 40, "completion_tokens": 9})
    with ScriptedEndpoint(default=reply) as endpoint:
        response = OpenAIClient(endpoint.url, "m").complete(MESSAGES, max_tokens=64)
    assert response.reasoning == REASONING and response.text == "31 March 2029."
    assert (response.usage.reasoning, response.usage.reasoning_by) == (9, "estimate")


# -- the relay searchbox serves Pi ----------------------------------------------------------------


@pytest.mark.parametrize("asked, got", [("off", "off"), ("medium", "medium"), ("auto", "low")])
def test_the_relay_passes_the_level_a_request_asks_for_else_the_runs(asked: str, got: str) -> None:
    with ScriptedEndpoint(default=THOUGHT) as endpoint:
        with ModelServer(OpenAIClient(endpoint.url, "m"), max_tokens=64, thinking="low") as relay:
            response = OpenAIClient(relay.base_url, "m").complete(MESSAGES, max_tokens=64, thinking=asked)
        assert _thinking_part(endpoint.requests[-1].body) == LEVELS[got]
    # The relay's usage carries the endpoint's reasoning count where OpenAI puts it.
    assert (response.usage.reasoning, response.usage.reasoning_by) == (18, "server")
    assert response.reasoning == REASONING


def test_the_relay_reads_the_level_in_each_form_pi_and_the_client_send_it() -> None:
    for body in (PI_LEVELS["high"], LEVELS["high"]):
        assert requested_thinking(body, "auto") == "high"
    assert requested_thinking(PI_LEVELS["off"], "high") == "off"
    assert requested_thinking({"chat_template_kwargs": {"enable_thinking": True}}, "medium") == "medium"
    assert requested_thinking({"reasoning_effort": "xhigh"}, "auto") == "auto"  # not a level of THINKING's


# -- under HARNESS=pi ------------------------------------------------------------------------------


@needs_pi
@pytest.mark.slow
@pytest.mark.parametrize("level", PI_LEVELS)
def test_pi_sends_its_thinking_level_and_records_the_reasoning_tokens(tmp_path: Path, level: str) -> None:
    with ScriptedEndpoint(default=THOUGHT) as endpoint:
        settings = _settings(tmp_path, harness="pi", llama_url=endpoint.url, thinking=level)
        job = _job(tmp_path, settings)
        assert run_job(job, settings, connect(settings)) == "first_turn_done"
        sent = [_thinking_part(r.body) for r in endpoint.requests]
    assert sent and all(part == PI_LEVELS[level] for part in sent), sent
    models = read_json(job / "pi" / "agent" / "models.json", {})["providers"]["searchbox"]
    assert models["models"][0]["reasoning"] is (level != "auto")
    [usage] = [row["usage"] for row in read_jsonl(job / "session.jsonl") if row.get("usage")]
    assert usage["reasoning"] == 18 and usage["reasoningBy"] == "server", usage
    assert list(read_jsonl(job / "turns.jsonl"))[-1]["tokens"]["reasoning"] == 18
    assert read_json(job / "run_meta.json", {})["tokens"]["reasoning"] == 18


@needs_pi
@pytest.mark.slow
def test_pi_relayed_plain_requests_get_the_level_too(tmp_path: Path) -> None:
    with ScriptedEndpoint(default=THOUGHT) as endpoint:
        settings = _settings(tmp_path, harness="pi", llama_url=endpoint.url, thinking="off", llm_stream="off")
        job = _job(tmp_path, settings)
        assert run_job(job, settings, connect(settings)) == "first_turn_done"
        sent = [_thinking_part(r.body) for r in endpoint.requests]
    # Pi's chat template variables reach the endpoint as the client sends THINKING=off.
    assert sent and all(part == LEVELS["off"] for part in sent), sent


# -- helpers ---------------------------------------------------------------------------------------


def _settings(tmp_path: Path, **knobs: Any) -> Settings:
    return Settings.resolve(env={}, **{"retrieval_preset": "packaged", "searchbox_cache_dir": str(tmp_path / "cache"),
                                       "searchbox_tools": "", "turn_budget": 1, "max_output_tokens": 256,
                                       "llm_attempts": 1, "model_id": "m", **knobs})


def _job(tmp_path: Path, settings: Settings) -> Path:
    job = tmp_path / "job"
    create_job(job, "When does the office lease end?", write_tree(tmp_path / "room", SMALL_DATAROOM), settings)
    return job
