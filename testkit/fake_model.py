"""An in-process scripted chat model for the loop's logic: no server, no HTTP, no threads. Each
`stream` call takes the next reply of the script and records what the loop sent (messages, tools,
tool_choice), so a test reads the conversation the loop held. The HTTP path (the OpenAI-compatible
client against testkit/scripted_endpoint.py, and a real llama.cpp server) keeps its own tests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from searchbox.cancel import CancelToken
from searchbox.llm.types import ChatModel, ChatResponse, Message, StreamEvent, Tool, ToolCall, ToolChoice, Usage


@dataclass(frozen=True)
class Said:
    """One scripted reply: its text and the tool calls it makes, as (name, arguments)."""
    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    usage: Usage = Usage(input=100, output=5)
    unread: str = ""  # output the parser read as nothing (llm.types.ChatResponse.unread)


@dataclass
class Request:
    messages: list[Message]
    tools: list[str]
    tool_choice: ToolChoice
    max_tokens: int
    thinking: str = "auto"


class FakeChatModel(ChatModel):
    model_id = "fake"

    def __init__(self, script: list[Said], default: Said | None = None) -> None:
        self.script = list(script)
        self.default = default
        self.requests: list[Request] = []
        self._calls = 0

    def stream(self, messages: list[Message], tools: list[Tool] | None, *, max_tokens: int, temperature: float = 0.6,
               tool_choice: ToolChoice = "auto", seed: int | None = None,
               thinking: str = "auto", cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        self.requests.append(Request([dict(m) for m in messages], [t["function"]["name"] for t in tools or []],
                                     tool_choice, max_tokens, thinking))
        if not self.script and self.default is None:
            raise AssertionError(f"the loop asked for reply {len(self.requests)}, but the script has none left")
        said = self.script.pop(0) if self.script else self.default
        assert said is not None
        calls = []
        for name, arguments in said.calls:
            self._calls += 1
            calls.append(ToolCall(f"call_{self._calls}", name, arguments, json.dumps(arguments)))
        if said.text:
            yield StreamEvent("text", text=said.text)
        yield StreamEvent("done", response=ChatResponse(said.text, "", calls, said.usage,
                                                        "tool_calls" if calls else "stop", unread=said.unread))

    def close(self) -> None:
        pass
