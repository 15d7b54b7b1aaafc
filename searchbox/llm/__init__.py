"""The chat interface and its backends: an OpenAI-compatible endpoint, or llama.cpp in-process.

    model = connect(settings)            # LLAMA_URL -> OpenAIClient, else the llama.cpp runtime
    for event in model.stream(messages, tools, max_tokens=2048):
        ...                              # "text" / "reasoning" / "tool_call" / "retry" deltas
    response = event.response            # the last event ("done") carries the ChatResponse

Here: the interface (types, errors), what a visitor may see of a model server (disclosure), the pool's servers
(endpoints) and a model served on loopback (serve). One package a job: choice/ (which model a run gets),
llamacpp/ (the built-in runtime), clients/ (the endpoint client and stream assembly), grammars/, weights/ (where
a GGUF comes from), dialects/ (tool calls written as text); pyproject.toml layers them in that order.
"""

from searchbox.llm.choice.connect import connect
from searchbox.llm.errors import ContextOverflow, GGUFUnavailable, LLMError, LLMUnavailable
from searchbox.llm.types import ChatModel, ChatResponse, Message, StreamEvent, Tool, ToolCall, ToolChoice, Usage

__all__ = [
    "ChatModel",
    "ChatResponse",
    "ContextOverflow",
    "GGUFUnavailable",
    "LLMError",
    "LLMUnavailable",
    "Message",
    "StreamEvent",
    "Tool",
    "ToolCall",
    "ToolChoice",
    "Usage",
    "connect",
]
