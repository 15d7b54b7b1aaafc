"""What can go wrong when talking to a chat model, as the agent loop needs to tell it apart."""

from __future__ import annotations


class LLMError(RuntimeError):
    """The model could not answer; the message says why (and never contains a secret)."""


class LLMUnavailable(LLMError):
    """The endpoint stayed unreachable after every retry: the run stops with `error_llm`."""


class ContextOverflow(LLMError):
    """The prompt does not fit the model's context: the loop compacts and retries once."""


class GGUFUnavailable(LLMError):
    """A GGUF that must come from the hub cannot: offline, or the hub is unreachable, and it is not cached."""


class PackagedModelUnavailable(LLMError):
    """A packaged GGUF cannot be had: a part package is missing or has another version, or the parts do
    not make the file they should. The message names the pip command that fixes it."""
