"""Builds a `ChatResponse` from OpenAI-style chat chunks, emitting live events on the way.

Both backends speak this shape: the HTTP client gets it from the endpoint, llama-cpp-python yields
it in-process. Native `tool_calls` deltas are assembled by index (arguments concatenated); when
none came back, tool calls written in the text are parsed. Reasoning from a `reasoning_content`
(or `reasoning`) field and from `<think>` tags both end up in `ChatResponse.reasoning`, and its tokens in
`Usage.reasoning`: the server's count when it sent one, else the backend's tokenizer's, else the streamed
reasoning deltas (one token each on llama.cpp's servers), else an estimate from the characters.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from searchbox.llm.clients.live_split import LiveSplitter
from searchbox.llm.dialects.call_objects import new_call_id, parse_arguments
from searchbox.llm.dialects.parsing import parse_assistant_text
from searchbox.llm.types import ChatResponse, StreamEvent, Tool, ToolCall, Usage, dump_arguments

# Characters per token: about four for English prose and JSON in the BPE vocabularies of current models;
# only for a count no server, tokenizer or stream gave.
CHARS_PER_TOKEN = 4


class ResponseBuilder:
    def __init__(self, tools: list[Tool] | None = None, *, starts_in_reasoning: bool = False,
                 count_tokens: Callable[[str], int] | None = None) -> None:
        self._tools = tools
        self._starts_in_reasoning = starts_in_reasoning
        self._count_tokens = count_tokens  # the backend's tokenizer, where it has one (the built-in runtime)
        self._live = LiveSplitter(starts_in_reasoning=starts_in_reasoning)
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._native: dict[int, dict[str, str]] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None  # the endpoint's own usage object, if it sent one
        self.server_timings: dict[str, Any] | None = None  # llama-server's `timings` object
        self.has_output = False  # any text, reasoning or tool-call delta yet
        self.output_deltas = 0  # chunks that carried output: one token each on llama.cpp servers
        self.reasoning_deltas = 0  # streamed chunks (not a whole completion) that carried reasoning_content

    def add_chunk(self, chunk: dict[str, Any]) -> list[StreamEvent]:
        """Take one streamed chunk (or a whole non-streamed completion); return the live events."""
        events: list[StreamEvent] = []
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        if isinstance(chunk.get("timings"), dict):
            self.server_timings = chunk["timings"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or choice.get("message") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning:
                self._reasoning.append(reasoning)
                self.reasoning_deltas += "delta" in choice
                events.append(StreamEvent("reasoning", reasoning))
            content = delta.get("content")
            if content:
                self._content.append(content)
                events.extend(StreamEvent(kind, text) for kind, text in self._live.feed(content))
            for position, part in enumerate(delta.get("tool_calls") or []):
                self._add_tool_delta(part, position)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
            carried = bool(reasoning or content or delta.get("tool_calls"))
            self.output_deltas += carried
            self.has_output = self.has_output or carried
        return events

    def finish(self, usage: Usage, timings: dict[str, float]) -> list[StreamEvent]:
        """The held-back live text, one event per tool call, and the final "done" event."""
        events = [StreamEvent(kind, text) for kind, text in self._live.flush()]
        response = self.response(usage, timings)
        events.extend(StreamEvent("tool_call", tool_call=call) for call in response.tool_calls)
        events.append(StreamEvent("done", response=response))
        return events

    def response(self, usage: Usage, timings: dict[str, float]) -> ChatResponse:
        text = "".join(self._content)
        parsed = parse_assistant_text(text, self._tools, starts_in_reasoning=self._starts_in_reasoning)
        reasoning = "\n\n".join(p for p in ("".join(self._reasoning).strip(), parsed.reasoning) if p)
        calls = [self._native_call(self._native[i]) for i in sorted(self._native)] or parsed.tool_calls
        finish = self.finish_reason
        if calls and finish in (None, "stop"):
            finish = "tool_calls"
        usage = self._with_reasoning(usage, reasoning, tagged=bool(parsed.reasoning))
        return ChatResponse(parsed.text, reasoning, calls, usage, finish, timings, "" if calls else parsed.unread)

    def _with_reasoning(self, usage: Usage, reasoning: str, tagged: bool) -> Usage:
        """`usage` with its reasoning tokens counted, unless the server counted them (a server's 0 beside
        reasoning text is no count); never more than the output holds, since the output includes them."""
        if not reasoning or (usage.reasoning_by == "server" and usage.reasoning):
            return usage
        if self._count_tokens is not None:
            count, by = self._count_tokens(reasoning), "tokenizer"
        elif self.reasoning_deltas and not tagged:
            count, by = self.reasoning_deltas, "deltas"
        else:
            count, by = max(1, len(reasoning) // CHARS_PER_TOKEN), "estimate"
        if usage.output:
            count = min(count, usage.output)
        return dataclasses.replace(usage, reasoning=count, reasoning_by=by)

    def _add_tool_delta(self, part: dict[str, Any], position: int) -> None:
        index = part.get("index", position)
        acc = self._native.setdefault(index, {"id": "", "name": "", "arguments": ""})
        function = part.get("function") or {}
        # The name arrives whole in one delta (some servers repeat it in every delta): never concatenate it.
        acc["id"] = acc["id"] or part.get("id") or ""
        acc["name"] = acc["name"] or function.get("name") or ""
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # a few servers send an object instead of a string
            arguments = dump_arguments(arguments)
        acc["arguments"] += arguments or ""

    @staticmethod
    def _native_call(acc: dict[str, str]) -> ToolCall:
        arguments, error = parse_arguments(acc["arguments"])
        return ToolCall(acc["id"] or new_call_id(), acc["name"], arguments, acc["arguments"], error)
