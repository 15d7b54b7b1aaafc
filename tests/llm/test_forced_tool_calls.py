"""Forced tool calls of chat-template models: a grammar holds the response to one valid call in the
model's own format (tool_grammar), on llama-cpp-python's template path where tool_choice="required"
alone does nothing.

The grammars are checked against llama.cpp's own GBNF parser for every tool a run can get; the
generation tests use the packaged Qwen2.5-Coder 0.5B Instruct (n_ctx 4096, a few tools, small
max_tokens) and skip when its part packages are not installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from searchbox.llm import LLMError
from searchbox.llm.dialects.call_format import call_format, example_call, render_call
from searchbox.llm.weights.gguf import PACKAGED_GEMMA, resolve_gguf
from searchbox.llm.grammars.schema_grammar import MAX_CHARS, MAX_ITEMS, grammar_schema
from searchbox.llm.llamacpp.model import LlamaCppModel, load_llamacpp
from searchbox.llm.weights.packaged import PACKAGED_QWEN_05B
from searchbox.llm.dialects.parsing import parse_tool_calls
from searchbox.llm.grammars.tool_grammar import call_grammar
from searchbox.tools.registry import REGISTRY

N_CTX = 4096
ALL_TOOLS = REGISTRY.schemas()
# A few real tools keep the prompt short: prefill dominates on two CPU cores.
TOOLS = [t for t in ALL_TOOLS if t["function"]["name"] in ("search_dataroom", "grep", "read", "ls")]
MESSAGES = [
    {"role": "system", "content": "You are a research agent. Answer from the documents in dataroom/ using the tools."},
    {"role": "user", "content": "Who audited the FY2025 financial statements?"},
]
QWEN3_CODER_TEMPLATE = ("{{- '<tool_call>\\n<function=' + tool_call.name + '>\\n' }}"
                        "{{- '<parameter=' + args_name + '>\\n' }}")


@pytest.fixture(scope="module")
def qwen() -> LlamaCppModel:
    try:
        path = resolve_gguf(PACKAGED_QWEN_05B)
    except LLMError as exc:
        pytest.skip(f"{PACKAGED_QWEN_05B} is not available here ({exc})")
    return load_llamacpp(path, N_CTX)


@pytest.fixture(scope="module")
def vocab() -> Iterator[Any]:
    """A tokenizer for llama.cpp's grammar parser, which checks grammars against a vocabulary."""
    from llama_cpp import Llama

    llama = Llama(str(resolve_gguf(PACKAGED_GEMMA)), vocab_only=True, verbose=False)
    yield llama._model.vocab
    llama.close()


def _required(name: str) -> set[str]:
    tool = next(t for t in ALL_TOOLS if t["function"]["name"] == name)
    return set(tool["function"]["parameters"].get("required", []))


@pytest.mark.parametrize("template, fmt", [
    ("{%- for tool_call in message.tool_calls %}{{- '\\n<tool_call>\\n{\"name\": \"' }}", "json"),  # Qwen2.5
    (QWEN3_CODER_TEMPLATE, "xml"),  # Qwen3.6, Qwen3-Coder
    ("{{ '<start_of_turn>model\\n' }}", "json"),  # no call format of its own: the common one
])
def test_the_call_format_comes_from_the_template(template: str, fmt: str) -> None:
    assert call_format(template) == fmt


@pytest.mark.parametrize("fmt", ["json", "xml"])
@pytest.mark.parametrize("in_reasoning", [False, True])
@pytest.mark.real_model
def test_llama_cpp_accepts_the_grammar_for_every_tool_a_run_can_get(vocab: Any, fmt: str, in_reasoning: bool) -> None:
    import llama_cpp

    for tools in (ALL_TOOLS, ALL_TOOLS[:1], [t for t in ALL_TOOLS if t["function"]["name"] == "ls"]):
        grammar = call_grammar(tools, fmt, in_reasoning=in_reasoning)
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
        assert sampler, f"llama.cpp rejected the {fmt} grammar:\n{grammar}"
        llama_cpp.llama_sampler_free(sampler)


def test_parameters_named_like_schema_keywords_stay_in_the_grammar() -> None:
    grep = next(t for t in ALL_TOOLS if t["function"]["name"] == "grep")
    assert "pattern" in grammar_schema(grep["function"]["parameters"])["properties"]
    assert '"\\"pattern\\""' in call_grammar([grep], "json")


def test_a_forced_call_is_bounded_by_its_schema() -> None:
    search = next(t for t in ALL_TOOLS if t["function"]["name"] == "search_dataroom")["function"]["parameters"]
    bounded = grammar_schema(search)["properties"]
    assert bounded["query"]["maxLength"] == 500
    assert (bounded["paths"]["maxItems"], bounded["paths"]["items"]["maxLength"]) == (4, 256)
    read = next(t for t in ALL_TOOLS if t["function"]["name"] == "read")["function"]["parameters"]
    assert grammar_schema(read)["properties"]["path"]["maxLength"] == MAX_CHARS  # a path's 4,096, capped
    assert grammar_schema({"type": "array", "items": {}})["maxItems"] == MAX_ITEMS  # a list the schema leaves open
    # The brief schema the packaged presets show keeps the bounds the grammar is built from.
    brief = next(t for t in REGISTRY.schemas("brief") if t["function"]["name"] == "search_dataroom")
    assert grammar_schema(brief["function"]["parameters"]) == grammar_schema(search)
    for fmt in ("json", "xml"):
        grammar = call_grammar([{"type": "function", "function": {"name": "search_dataroom", "parameters": search}}], fmt)
        assert "{0,500}" in grammar and "{0,256}" in grammar and "{0,3}" in grammar  # 1 + up to 3 more paths


@pytest.mark.real_model
def test_required_forces_one_call_in_the_models_format(qwen: LlamaCppModel) -> None:
    assert qwen.call_format == "json" and not qwen.json_actions
    for _ in range(3):  # sampled, not greedy: the grammar, not the model's habits, makes the call
        events = list(qwen.stream(MESSAGES, TOOLS, max_tokens=320, temperature=0.8, tool_choice="required"))
        response = events[-1].response
        assert events[-1].kind == "done" and response is not None
        [call] = response.tool_calls
        assert call.name in {t["function"]["name"] for t in TOOLS} and call.parse_error is None
        assert _required(call.name) <= set(call.arguments)
        # This model repeats file names in search_dataroom's paths: the list ends at the schema's 4, the call closes.
        assert len(call.arguments.get("paths", [])) <= 4
        assert [e.tool_call for e in events if e.kind == "tool_call"] == [call]
        assert response.text == "" and response.finish_reason == "tool_calls"
        assert response.usage.input > 0 and 0 < response.usage.output < 320
        assert response.timings["decode_tokens_per_s"] > 0


@pytest.mark.real_model
def test_a_forced_call_holds_no_more_than_its_schema_allows(qwen: LlamaCppModel) -> None:
    # Asked to search ten folders, the model lists all ten under an unbounded grammar (126 tokens);
    # search_dataroom's schema allows 4 paths of 256 characters, and so does its grammar.
    folders = ", ".join(f"dataroom/{n}" for n in ("01_corporate", "02_finance", "03_legal", "04_operations", "05_people",
                                                  "06_technology", "07_tax", "08_insurance", "09_board", "10_audit"))
    messages = [MESSAGES[0], {"role": "user", "content": f"{MESSAGES[1]['content']} Search all of these folders: {folders}."}]
    forced = {"type": "function", "function": {"name": "search_dataroom"}}
    [call] = qwen.complete(messages, TOOLS, max_tokens=600, temperature=0, tool_choice=forced).tool_calls
    paths = call.arguments.get("paths", [])
    assert call.parse_error is None and 0 < len(paths) <= 4 and all(len(path) <= 256 for path in paths)


@pytest.mark.real_model
def test_a_named_tool_is_the_one_called(qwen: LlamaCppModel) -> None:
    forced = {"type": "function", "function": {"name": "search_dataroom"}}
    response = qwen.complete(MESSAGES, TOOLS, max_tokens=64, temperature=0.8, tool_choice=forced)
    [call] = response.tool_calls
    assert call.name == "search_dataroom" and isinstance(call.arguments.get("query"), str)


@pytest.mark.real_model
def test_the_xml_format_round_trips_through_the_parser(qwen: LlamaCppModel, monkeypatch: pytest.MonkeyPatch) -> None:
    # Qwen3.6's format, forced on the small model: typed values (k, paths) come back typed.
    monkeypatch.setattr(qwen, "call_format", "xml")
    forced = {"type": "function", "function": {"name": "search_dataroom"}}
    for _ in range(2):
        response = qwen.complete(MESSAGES, TOOLS, max_tokens=96, temperature=1.0, tool_choice=forced)
        [call] = response.tool_calls
        assert call.name == "search_dataroom" and call.parse_error is None
        assert isinstance(call.arguments["query"], str)
        assert isinstance(call.arguments.get("k", 1), int) and isinstance(call.arguments.get("paths", []), list)


@pytest.mark.real_model
def test_the_history_shows_the_model_its_calls_as_it_writes_them(qwen: LlamaCppModel) -> None:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    history = [*MESSAGES, {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
               "function": {"name": "search_dataroom", "arguments": '{"query": "auditor FY2025"}'}}]},
               {"role": "tool", "tool_call_id": "call_1", "content": "[s1] audited by Hollis & Grange"}]
    template = qwen._llama.metadata["tokenizer.chat_template"]
    prompt = Jinja2ChatFormatter(template, eos_token="", bos_token="")(messages=qwen._prepare(history, TOOLS), tools=TOOLS).prompt
    # The call in the history and the example in the system message: both as the model writes calls.
    assert render_call("json", "search_dataroom", {"query": "auditor FY2025"}) in prompt
    assert example_call("json", TOOLS) in prompt.split("<|im_start|>user")[0]


def test_the_example_call_is_in_the_models_format_and_names_an_offered_search_tool() -> None:
    grep_only = [t for t in TOOLS if t["function"]["name"] == "grep"]
    for fmt in ("json", "xml"):
        [call] = parse_tool_calls(example_call(fmt, TOOLS), TOOLS)[0]
        assert call.name == "search_dataroom" and call.arguments["query"] and call.parse_error is None
        [call] = parse_tool_calls(example_call(fmt, grep_only), grep_only)[0]
        assert call.name == "grep" and set(call.arguments) == {"pattern", "path"}
    assert example_call("json", [t for t in TOOLS if t["function"]["name"] in ("read", "ls")]) is None


@pytest.mark.real_model
def test_the_example_goes_to_the_system_message_only_while_tools_are_offered(qwen: LlamaCppModel) -> None:
    assert example_call("json", TOOLS) in qwen._prepare(MESSAGES, TOOLS)[0]["content"]
    assert qwen._prepare(MESSAGES, None)[0]["content"] == MESSAGES[0]["content"]  # the wrap-up offers none
    assert qwen._prepare(MESSAGES[1:], TOOLS) == MESSAGES[1:]  # no system message: the template's own stays


@pytest.mark.real_model
def test_auto_leaves_the_model_free(qwen: LlamaCppModel) -> None:
    # No grammar without forcing: told to, the model answers in words.
    messages = [MESSAGES[0], {"role": "user", "content": "Do not use any tool. Reply with the single word: hello"}]
    response = qwen.complete(messages, TOOLS, max_tokens=8, temperature=0)
    assert response.text and not response.tool_calls
