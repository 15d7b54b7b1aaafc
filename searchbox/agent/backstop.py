"""The backstop (design §2.3), one rule for every harness: after a turn, when the model wrote no
ANSWER.md, its final non-thinking reply becomes the answer; an answer the model wrote is never
overwritten, and a link or special file left at the name is never read or written through. A tool call
written in the reply, read as one or not, is never part of the answer (llm/dialects/written_calls.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from searchbox.llm.dialects.written_calls import without_call_attempts
from searchbox.llm.types import Tool
from searchbox.records.events import EventBus, Notice
from searchbox.records.job_folder import JobFolder


def final_reply(messages: list[dict[str, Any]], tools: list[Tool] | None) -> str:
    """The last assistant message that said something (reasoning is kept apart, so never in it), less the
    calls of `tools` written in it; empty when the last one that said something said only calls."""
    said = next((str(m["content"]) for m in reversed(messages)
                 if m.get("role") == "assistant" and str(m.get("content") or "").strip()), "")
    return without_call_attempts(said, tools).strip()


def backstop_answer(folder: JobFolder, bus: EventBus, messages: list[dict[str, Any]], tools: list[Tool] | None,
                    instead: Callable[[str], str | None] | None = None) -> None:
    """Write the final reply to ANSWER.md when there is none; `instead` (an assist's hook) may give
    another text to write, and that write says nothing in the feed: the assist's own event does."""
    answer = folder.read_answer()
    if answer.exists and answer.problem is None:
        return
    if answer.problem:
        bus.emit(Notice(level="warning", message=f"work/{answer.problem}"))
    final = final_reply(messages, tools)
    other = instead(final) if instead is not None else None
    if other is not None:
        folder.create_answer(other.strip() + "\n")
    elif final and folder.create_answer(final.strip() + "\n"):
        bus.emit(Notice(level="info", message="ANSWER.md written from the model's final message"))
