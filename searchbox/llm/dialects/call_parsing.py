"""TOOL_CALL_PARSING for any chat model: with "lenient", a reply that made no call is read again for
calls written outside the chat template's tags.

Backends read a reply strictly: native `tool_calls`, else the tag formats chat templates define
(parsing.py). A model connected for a lenient run is wrapped here, and the wrapper reads the answer
text of each reply with no call for calls set apart from prose (written_calls.py). A wrapper rather
than a backend option: the built-in runtime's model is shared by every run of its GGUF, whatever
each run's knob says.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from searchbox.cancel import CancelToken
from searchbox.llm.dialects.parsing import ToolCallParsing, parse_tool_calls
from searchbox.llm.types import ChatModel, ChatResponse, Message, StreamEvent, Tool, ToolChoice


def with_call_parsing(model: ChatModel, mode: ToolCallParsing) -> ChatModel:
    """The model as a run with TOOL_CALL_PARSING=`mode` uses it."""
    return LenientCalls(model) if mode == "lenient" else model


def read_written_calls(response: ChatResponse, tools: list[Tool] | None) -> ChatResponse:
    """The response with the calls its text holds outside call tags, when it made none otherwise."""
    if response.tool_calls or not tools:
        return response
    calls, text = parse_tool_calls(response.text, tools, "lenient")
    if not calls:
        return response
    return dataclasses.replace(response, text=text, tool_calls=calls, finish_reason="tool_calls")


class LenientCalls(ChatModel):
    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.context_window = inner.context_window
        self.runtime = inner.runtime

    def stream(
        self,
        messages: list[Message],
        tools: list[Tool] | None,
        *,
        max_tokens: int,
        temperature: float = 0.6,
        tool_choice: ToolChoice = "auto",
        seed: int | None = None,
        thinking: str = "auto",
        cancel: CancelToken | None = None,
    ) -> Iterator[StreamEvent]:
        offered = tools if tool_choice != "none" else None
        for event in self.inner.stream(messages, tools, max_tokens=max_tokens, temperature=temperature,
                                       tool_choice=tool_choice, seed=seed, thinking=thinking, cancel=cancel):
            if event.kind == "done" and event.response is not None:
                response = read_written_calls(event.response, offered)
                if response is not event.response:
                    yield from (StreamEvent("tool_call", tool_call=call) for call in response.tool_calls)
                    event = StreamEvent("done", response=response)
            yield event

    def thinking_effect(self, thinking: str) -> str | None:
        return self.inner.thinking_effect(thinking)

    def close(self) -> None:
        self.inner.close()
