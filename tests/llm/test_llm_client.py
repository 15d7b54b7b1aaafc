"""The OpenAI-compatible client against a real local HTTP endpoint playing a script."""

from __future__ import annotations

import json
import time

import pytest

from searchbox.llm import ContextOverflow, LLMError, LLMUnavailable, connect
from searchbox.llm.clients.openai_client import OpenAIClient, chat_completions_url
from searchbox.llm.types import Usage
from searchbox.settings import Settings
from testkit.scripted_endpoint import Fault, Reply, ScriptedEndpoint

MESSAGES = [{"role": "system", "content": "You answer from the dataroom."}, {"role": "user", "content": "When does the lease end?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}},
        },
    }
]
SECRET = "sk-test-8f2d1c0b9a7e6d5c"


def client(endpoint: ScriptedEndpoint, **kwargs: object) -> OpenAIClient:
    options = {"max_attempts": 3, "backoff_s": 0.01, "read_timeout_s": 5.0, "connect_timeout_s": 1.0} | kwargs
    return OpenAIClient(endpoint.url, "scripted-model", **options)  # type: ignore[arg-type]


def test_streamed_text_arrives_in_order_and_the_response_is_complete() -> None:
    reply = Reply(text="The lease runs until 31 March 2029 [s1].", usage={"prompt_tokens": 120, "completion_tokens": 14, "cached_tokens": 100})
    with ScriptedEndpoint([reply]) as endpoint:
        events = list(client(endpoint).stream(MESSAGES, None, max_tokens=64))
    deltas = [e.text for e in events if e.kind == "text"]
    assert len(deltas) > 5 and "".join(deltas) == reply.text
    done = events[-1]
    assert done.kind == "done" and done.response is not None
    response = done.response
    assert response.text == reply.text and response.tool_calls == [] and response.finish_reason == "stop"
    assert (response.usage.input, response.usage.output, response.usage.cache_read, response.usage.total) == (120, 14, 100, 134)
    body = endpoint.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["model"] == "scripted-model" and body["messages"] == MESSAGES and "tools" not in body


def test_a_seed_is_sent_when_given_and_left_to_the_server_otherwise() -> None:
    with ScriptedEndpoint([Reply(text="a"), Reply(text="b")]) as endpoint:
        list(client(endpoint).stream(MESSAGES, None, max_tokens=8, seed=7))
        client(endpoint).complete(MESSAGES, max_tokens=8)
    assert endpoint.requests[0].body["seed"] == 7 and "seed" not in endpoint.requests[1].body


def test_a_server_that_reports_no_usage_gets_an_estimate_marked_as_such() -> None:
    # llama-cpp-python's server sends no usage in a stream, whatever stream_options asks.
    reply = Reply(text="The lease runs until 31 March 2029 [s1].", chunk_chars=4, usage=None)
    with ScriptedEndpoint([reply]) as endpoint:
        response = client(endpoint).complete(MESSAGES, TOOLS, max_tokens=64)
    prompt_chars = len(json.dumps(MESSAGES, ensure_ascii=False)) + len(json.dumps(TOOLS, ensure_ascii=False))
    assert response.usage.estimated and response.usage.input == prompt_chars // 4
    assert response.usage.output == 10  # one per streamed delta: 40 characters, 4 a chunk
    assert response.usage.as_dict()["estimated"] == 1
    assert "estimated" not in Usage(input=5).as_dict()


def test_native_tool_calls_are_assembled_from_deltas() -> None:
    reply = Reply(
        text="",
        tool_calls=[
            {"id": "call_a", "name": "read", "arguments": {"path": "legal/lease.txt", "limit": 40}},
            {"id": "call_b", "name": "grep", "arguments": {"pattern": "break date"}},
        ],
        chunk_chars=4,
    )
    with ScriptedEndpoint([reply]) as endpoint:
        events = list(client(endpoint).stream(MESSAGES, TOOLS, max_tokens=64, tool_choice="auto"))
        sent = endpoint.requests[0].body
    response = events[-1].response
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_a", "read", {"path": "legal/lease.txt", "limit": 40}),
        ("call_b", "grep", {"pattern": "break date"}),
    ]
    assert [e.tool_call.name for e in events if e.kind == "tool_call"] == ["read", "grep"]
    assert response.finish_reason == "tool_calls"
    assert sent["tools"] == TOOLS and sent["tool_choice"] == "auto"
    assert response.as_message()["tool_calls"][0]["function"]["name"] == "read"


def test_tool_calls_written_in_text_are_parsed_and_hidden_from_live_text() -> None:
    text = (
        "<think>The lease is in legal/.</think>Let me read it.\n"
        "<tool_call>\n<function=read>\n<parameter=path>\nlegal/lease.txt\n</parameter>\n<parameter=limit>\n40\n</parameter>\n</function>\n</tool_call>"
    )
    with ScriptedEndpoint([Reply(text=text, chunk_chars=2)]) as endpoint:
        events = list(client(endpoint).stream(MESSAGES, TOOLS, max_tokens=64))
    live_text = "".join(e.text for e in events if e.kind == "text")
    live_reasoning = "".join(e.text for e in events if e.kind == "reasoning")
    assert "<" not in live_text and live_text.strip() == "Let me read it."
    assert live_reasoning == "The lease is in legal/."
    response = events[-1].response
    assert response.text == "Let me read it." and response.reasoning == "The lease is in legal/."
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("read", {"path": "legal/lease.txt", "limit": 40})]
    assert response.finish_reason == "tool_calls"


def test_reasoning_field_is_kept_apart_and_timings_are_read() -> None:
    timings = {"prompt_n": 100, "prompt_ms": 50.0, "prompt_per_second": 2000.0, "predicted_n": 20, "predicted_ms": 400.0, "predicted_per_second": 50.0, "cache_n": 30}
    reply = Reply(text="Answer.", reasoning="First I check the lease.", usage={"prompt_tokens": 130, "completion_tokens": 20}, timings=timings)
    with ScriptedEndpoint([reply]) as endpoint:
        response = client(endpoint).complete(MESSAGES, max_tokens=64)
    assert response.text == "Answer." and response.reasoning == "First I check the lease."
    assert response.usage.cache_read == 30  # from llama-server's timings when usage has no cached_tokens
    assert response.timings["prefill_tokens_per_s"] == 2000.0 and response.timings["decode_tokens_per_s"] == 50.0
    assert response.timings["prefill_ms"] == 50.0 and response.timings["decode_ms"] == 400.0


def test_wall_clock_timings_without_server_timings() -> None:
    with ScriptedEndpoint([Reply(text="slow answer", delay_s=0.01, usage={"prompt_tokens": 50, "completion_tokens": 6})]) as endpoint:
        timings = client(endpoint).complete(MESSAGES, max_tokens=64).timings
    assert timings["decode_ms"] > 0 and timings["decode_tokens_per_s"] > 0 and timings["prefill_tokens_per_s"] > 0


def test_503_is_retried_then_succeeds() -> None:
    with ScriptedEndpoint([Fault.http(503), Fault.http(429, "slow down"), Reply(text="ok")]) as endpoint:
        response = client(endpoint).complete(MESSAGES, max_tokens=16)
        assert response.text == "ok" and len(endpoint.requests) == 3


def test_refused_every_time_is_llm_unavailable() -> None:
    with ScriptedEndpoint(default=Fault.refuse()) as endpoint:
        with pytest.raises(LLMUnavailable, match="failed 3 time"):
            client(endpoint).complete(MESSAGES, max_tokens=16)
        assert len(endpoint.requests) == 3


def test_nothing_listening_is_llm_unavailable() -> None:
    endpoint = ScriptedEndpoint()
    url = endpoint.start()
    endpoint.stop()  # the port is closed now
    with pytest.raises(LLMUnavailable, match="ConnectError"):
        OpenAIClient(url, max_attempts=2, backoff_s=0.01).complete(MESSAGES, max_tokens=16)


def test_a_hanging_endpoint_times_out_and_is_retried() -> None:
    with ScriptedEndpoint([Fault.hang(5.0), Reply(text="late but fine")]) as endpoint:
        started = time.monotonic()
        response = client(endpoint, read_timeout_s=0.3).complete(MESSAGES, max_tokens=16)
    assert response.text == "late but fine" and time.monotonic() - started < 3


def test_a_stream_dropped_midway_is_retried_whole() -> None:
    with ScriptedEndpoint([Fault.drop(Reply(text="this gets cut off"), after_chunks=3), Reply(text="complete answer")]) as endpoint:
        events = list(client(endpoint).stream(MESSAGES, None, max_tokens=16))
        assert len(endpoint.requests) == 2
    kinds = [e.kind for e in events]
    assert "retry" in kinds  # tells the display to drop the partial text
    after_retry = events[kinds.index("retry") + 1 :]
    assert "".join(e.text for e in after_retry if e.kind == "text") == "complete answer"
    assert events[-1].response.text == "complete answer"


def test_dropped_every_time_is_llm_unavailable() -> None:
    with ScriptedEndpoint(default=Fault.drop()) as endpoint:
        with pytest.raises(LLMUnavailable):
            client(endpoint).complete(MESSAGES, max_tokens=16)


def test_context_overflow_is_recognised_and_not_retried() -> None:
    with ScriptedEndpoint([Fault.overflow(n_prompt=9412, n_ctx=8192)]) as endpoint:
        with pytest.raises(ContextOverflow, match="exceeds the available context size"):
            client(endpoint).complete(MESSAGES, max_tokens=16)
        assert len(endpoint.requests) == 1


def test_garbage_in_the_stream_is_a_clear_error() -> None:
    with ScriptedEndpoint([Fault.garbage()]) as endpoint:
        with pytest.raises(LLMError, match="not a JSON object.*upstream proxy error"):
            client(endpoint).complete(MESSAGES, max_tokens=16)


def test_other_client_errors_are_not_retried() -> None:
    with ScriptedEndpoint([Fault.http(404, "model not found")]) as endpoint:
        with pytest.raises(LLMError, match="HTTP 404.*model not found") as info:
            client(endpoint).complete(MESSAGES, max_tokens=16)
        assert not isinstance(info.value, LLMUnavailable) and len(endpoint.requests) == 1


def test_the_api_key_is_sent_but_never_shown() -> None:
    leaky = Fault.http(401, f"invalid key {SECRET}")  # a server that echoes the key back
    with ScriptedEndpoint([Reply(text="ok"), leaky], default=Fault.http(503, f"down, key={SECRET}")) as endpoint:
        model = client(endpoint, api_key=SECRET)
        model.complete(MESSAGES, max_tokens=16)
        assert endpoint.requests[0].headers["Authorization"] == f"Bearer {SECRET}"
        with pytest.raises(LLMError) as unauthorized:
            model.complete(MESSAGES, max_tokens=16)
        with pytest.raises(LLMUnavailable) as unavailable:
            model.complete(MESSAGES, max_tokens=16)
    for error in (unauthorized.value, unavailable.value):
        assert SECRET not in str(error) and "***" in str(error)


def test_api_key_from_the_environment() -> None:
    for env in ({"LLAMA_API_KEY": SECRET}, {"OPENAI_API_KEY": SECRET}):
        with ScriptedEndpoint([Reply(text="ok")]) as endpoint:
            model = connect(Settings.resolve(env={**env, "LLAMA_URL": endpoint.url}))
            model.complete(MESSAGES, max_tokens=16)
            model.close()
            assert endpoint.requests[0].headers["Authorization"] == f"Bearer {SECRET}"


def test_no_key_is_sent_unless_one_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # read by Settings.resolve only, never by the client itself
    with ScriptedEndpoint([Reply(text="ok")]) as endpoint:
        client(endpoint).complete(MESSAGES, max_tokens=16)
        assert "Authorization" not in endpoint.requests[0].headers


def test_a_server_that_ignores_stream_true_is_understood() -> None:
    reply = Reply(text="whole answer", tool_calls=[{"name": "ls", "arguments": {"path": "."}}], whole=True)
    with ScriptedEndpoint([reply]) as endpoint:
        response = client(endpoint).complete(MESSAGES, max_tokens=16)
    assert response.text == "whole answer" and [c.name for c in response.tool_calls] == ["ls"]


@pytest.mark.parametrize(
    "base, url",
    [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/v1/chat/completions"),
        ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/v1/chat/completions"),
        ("https://api.example.com/v1/chat/completions", "https://api.example.com/v1/chat/completions"),
    ],
)
def test_endpoint_url_forms(base: str, url: str) -> None:
    assert chat_completions_url(base) == url


def test_connect_uses_the_endpoint_when_llama_url_is_set() -> None:
    with ScriptedEndpoint([Reply(text="ok")]) as endpoint:
        model = connect(Settings.resolve(env={}, llama_url=endpoint.url, model_id="qwen3.6"))
        assert isinstance(model, OpenAIClient) and model.model_id == "qwen3.6"
        assert model.complete(MESSAGES, max_tokens=8).text == "ok"
        assert endpoint.requests[0].body["model"] == "qwen3.6"
        model.close()


def test_errors_name_the_endpoint_as_the_caller_says() -> None:
    with ScriptedEndpoint(default=Fault.http(400, "bad request")) as endpoint:
        for shown_as, name in (("model server 2 of 3", "model server 2 of 3"), (None, f"chat endpoint {endpoint.url}/chat/completions")):
            with pytest.raises(LLMError) as info:
                client(endpoint, shown_as=shown_as).complete(MESSAGES, max_tokens=8)
            assert str(info.value).startswith(f"{name} answered with HTTP 400"), info.value
