"""Live text deltas split into answer and reasoning, with tool-call markup hidden.

A tag can arrive split across deltas (`<tool_` then `call>`); the possible start of a tag is held
back until the next delta settles it, so a half tag is never shown. The final `ChatResponse` is
parsed from the whole text by `parsing`; this only decides what to show while streaming.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

Piece = tuple[Literal["text", "reasoning"], str]

# "<tools>", "<tool_response>": template markup small models echo; parsing drops it, so it is never shown.
_OPENERS = {"<think>": "think", "<tool_call>": "call", "<function=": "function", "<tools>": "tools",
            "<tool_response>": "response", "</think>": "text"}
_CLOSERS = {"think": "</think>", "call": "</tool_call>", "function": "</function>", "tools": "</tools>",
            "response": "</tool_response>"}


class LiveSplitter:
    def __init__(self, *, starts_in_reasoning: bool = False) -> None:
        self._state = "think" if starts_in_reasoning else "text"
        self._pending = ""

    def feed(self, delta: str) -> list[Piece]:
        self._pending += delta
        out: list[Piece] = []
        while self._pending:
            if self._state == "text":
                hits = [(self._pending.find(tag), tag) for tag in _OPENERS if tag in self._pending]
                if not hits:
                    self._emit(out, "text", _hold_back(self._pending, _OPENERS))
                    break
                at, tag = min(hits)
                out.append(("text", self._pending[:at]))
                self._pending = self._pending[at + len(tag) :]
                self._state = _OPENERS[tag]  # a stray "</think>" is dropped and the state stays text
            else:
                closer = _CLOSERS[self._state]
                at = self._pending.find(closer)
                if at < 0:
                    shown = "reasoning" if self._state == "think" else None  # tool-call markup is never shown
                    self._emit(out, shown, _hold_back(self._pending, [closer]))
                    break
                if self._state == "think":
                    out.append(("reasoning", self._pending[:at]))
                self._pending = self._pending[at + len(closer) :]
                self._state = "text"
        return [(kind, text) for kind, text in out if text]

    def flush(self) -> list[Piece]:
        """What was held back, at the end of the stream (an unfinished tool call stays hidden)."""
        text, self._pending = self._pending, ""
        if not text or self._state in ("call", "function", "tools", "response"):
            return []
        return [("reasoning" if self._state == "think" else "text", text)]

    def _emit(self, out: list[Piece], kind: Literal["text", "reasoning"] | None, keep: int) -> None:
        cut = len(self._pending) - keep
        if kind is not None:
            out.append((kind, self._pending[:cut]))
        self._pending = self._pending[cut:]


def _hold_back(text: str, tags: Iterable[str]) -> int:
    """Length of the longest end of `text` that could be the start of one of `tags`."""
    longest = 0
    for tag in tags:
        for k in range(min(len(tag) - 1, len(text)), longest, -1):
            if text.endswith(tag[:k]):
                longest = k
                break
    return longest
