"""The chat interface every LLM backend implements (design §6: a new backend is one module behind it).

Messages are OpenAI chat dicts (`role`, `content`, `tool_calls`, `tool_call_id`); tools are OpenAI
function schemas. A backend streams `StreamEvent`s; the last one (kind "done") carries the whole
`ChatResponse`, which is the authority: live deltas are only for display.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from searchbox.cancel import CancelToken

Message = dict[str, Any]
Tool = dict[str, Any]
# "auto", "none", or {"type": "function", "function": {"name": ...}} to force one tool.
ToolChoice = str | dict[str, Any]
# THINKING's levels: auto sends nothing (the server's or the template's default), off turns thinking off,
# low/medium/high turn it on at that effort.
THINKING_LEVELS = ("auto", "off", "low", "medium", "high")


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any] | None  # None when the arguments could not be parsed
    raw_arguments: str
    parse_error: str | None = None

    def as_message_part(self) -> dict[str, Any]:
        """The OpenAI `tool_calls` entry that puts this call back into the history.

        Always valid JSON (repaired, or `{}` when unparseable): servers such as llama-server refuse
        a history whose arguments do not parse. The error result tells the model what went wrong.
        """
        arguments = dump_arguments(self.arguments) if self.arguments is not None else "{}"
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": arguments}}


# How a response's reasoning tokens were counted (Usage.reasoning_by): the server's own count
# (completion_tokens_details.reasoning_tokens), the reasoning text run through the model's tokenizer, the
# streamed reasoning deltas (one token each on llama.cpp's servers), or the text's characters / 4.
REASONING_COUNTS = ("server", "tokenizer", "deltas", "estimate")


@dataclass(frozen=True)
class Usage:
    input: int = 0  # prompt tokens
    output: int = 0  # completion tokens, reasoning included (as OpenAI and llama-server count them)
    cache_read: int = 0  # prompt tokens served from a prefix cache
    cache_write: int = 0
    estimated: bool = False  # counted by the client because the backend reported none
    reasoning: int = 0  # of the output, the tokens of the reasoning
    reasoning_by: str = ""  # how `reasoning` was counted (REASONING_COUNTS); "" when there was none

    @property
    def total(self) -> int:
        return self.input + self.output

    def as_dict(self) -> dict[str, Any]:
        counts: dict[str, Any] = {
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "reasoning": self.reasoning,
            "total": self.total,
        }
        if self.reasoning_by:
            counts["reasoningBy"] = self.reasoning_by
        return {**counts, "estimated": 1} if self.estimated else counts


@dataclass(frozen=True)
class ChatResponse:
    text: str  # the answer, with reasoning and tool-call markup removed
    reasoning: str
    tool_calls: list[ToolCall]
    usage: Usage
    finish_reason: str | None
    # prefill_ms, decode_ms, prefill_tokens_per_s, decode_tokens_per_s when known; backends may add more.
    timings: dict[str, float] = field(default_factory=dict)
    # What the model wrote that was read as neither text nor a call (parsing.ParsedText.unread): the session
    # keeps it beside the message, never in it, so that it is shown but never becomes the answer.
    unread: str = ""

    def as_message(self) -> Message:
        """The assistant message to append to the history."""
        message: Message = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [call.as_message_part() for call in self.tool_calls]
        return message


StreamKind = Literal["text", "reasoning", "tool_call", "retry", "notice", "done"]


@dataclass(frozen=True)
class StreamEvent:
    """One live delta. "retry" means the stream broke and restarts: discard what was shown. "notice" is
    something about the backend the run's feed should say (once), e.g. that it now sends plain requests."""

    kind: StreamKind
    text: str = ""
    tool_call: ToolCall | None = None
    response: ChatResponse | None = None


class ChatModel(ABC):
    """One chat model, local or remote. Blocking: callers run it in a thread."""

    model_id: str
    context_window: int | None = None  # tokens, when the backend knows it (the built-in runtime does)
    runtime: dict[str, Any] | None = None  # how the built-in runtime loaded and keeps its cache; None elsewhere

    @abstractmethod
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
        """Deltas as they arrive; the last event has kind "done" and the full response. A seed fixes the
        sampling (the same seed, prompt and model give the same reply); None lets the backend pick.
        `thinking` (THINKING_LEVELS) is sent in the form the backend reads; one that cannot apply it says
        so in a "notice" event. A cut of `cancel` (a stop, the client of a served model gone) raises
        Cancelled: the built-in runtime checks it between two batches of the prompt and between two tokens,
        so a stop does not wait for a long prompt's evaluation; an endpoint's client leaves it to its
        consumer, between two events."""

    def complete(
        self,
        messages: list[Message],
        tools: list[Tool] | None = None,
        *,
        max_tokens: int,
        temperature: float = 0.6,
        tool_choice: ToolChoice = "auto",
        seed: int | None = None,
        thinking: str = "auto",
        cancel: CancelToken | None = None,
    ) -> ChatResponse:
        events = self.stream(messages, tools, max_tokens=max_tokens, temperature=temperature, tool_choice=tool_choice,
                             seed=seed, thinking=thinking, cancel=cancel)
        for event in events:
            if event.kind == "done" and event.response is not None:
                return event.response
        raise RuntimeError(f"{type(self).__name__}.stream ended without a done event")

    def thinking_effect(self, thinking: str) -> str | None:
        """Why a THINKING level does not do here what it says (a backend that cannot pass it on), for the run's
        feed and records; None where it goes to the model as asked (an endpoint is sent it: the server decides)."""
        return None

    @abstractmethod
    def close(self) -> None:
        """Release the connection or the model's memory."""


def dump_arguments(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, ensure_ascii=False)
