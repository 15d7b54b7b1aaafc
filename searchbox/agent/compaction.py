"""Compaction: when the context nears the window, the model summarizes older messages (goal,
progress, key decisions, next steps, critical context, files read) and recent ones are kept.
The session file keeps everything; only the context sent to the model shrinks."""

from __future__ import annotations

import json
from typing import Any

from searchbox.agent.prompts import COMPACTED_PREFIX, COMPACTION_INSTRUCTIONS
from searchbox.agent.session import Message, Session
from searchbox.llm.types import ChatModel, Usage
from searchbox.settings import Settings

_CHARS_PER_TOKEN = 4  # a rough estimate, only used to decide how much to keep
_RESULT_PREVIEW = 1500


def reserve_tokens(settings: Settings) -> int:
    """Room kept free for the next response; at most a quarter of a small window."""
    return min(settings.max_output_tokens + 1024, settings.context_window // 4)


def needs_compaction(context_tokens: int, settings: Settings) -> bool:
    return context_tokens > settings.context_window - reserve_tokens(settings)


def estimate_tokens(messages: list[Message]) -> int:
    return sum(len(json.dumps(m, ensure_ascii=False)) for m in messages) // _CHARS_PER_TOKEN


def choose_first_kept(messages: list[Message], keep_tokens: int, floor: int) -> int | None:
    """Index of the first message kept verbatim: recent messages worth about keep_tokens, starting
    at a user or assistant message so no tool result is kept without its call. None when there is
    nothing older than the floor to summarize."""
    kept, index = 0, len(messages)
    while index > floor + 1:
        size = estimate_tokens([messages[index - 1]])
        if kept + size > keep_tokens:
            break
        kept += size
        index -= 1
    while index < len(messages) and messages[index].get("role") == "tool":
        index += 1
    return index if floor < index else None


def render_transcript(messages: list[Message], limit_chars: int) -> str:
    lines = []
    for m in messages:
        role = m.get("role", "?")
        if role == "tool":
            content = str(m.get("content", ""))
            lines.append(f"TOOL RESULT ({m.get('name', '')}): {content[:_RESULT_PREVIEW]}")
            continue
        text = str(m.get("content") or "")
        calls = [f"{c['function']['name']}({c['function']['arguments']})" for c in m.get("tool_calls", [])]
        lines.append(f"{role.upper()}: {text}" + (f"\n  called: {'; '.join(calls)}" if calls else ""))
    transcript = "\n\n".join(lines)
    if len(transcript) > limit_chars:  # keep both ends: the goal and the latest state
        half = limit_chars // 2
        transcript = transcript[:half] + "\n\n[... middle of the transcript left out ...]\n\n" + transcript[-half:]
    return transcript


def compact(model: ChatModel, session: Session, settings: Settings) -> tuple[str, Usage, int] | None:
    """Summarize everything before the recent messages. Returns (summary, usage, first_kept), or
    None when there is nothing to compact."""
    floor = max(session.first_kept, 1) if session.summary else 1
    first_kept = choose_first_kept(session.messages, settings.context_window // 4, floor)
    if first_kept is None:
        return None
    older = session.messages[floor:first_kept] if session.summary else session.messages[:first_kept]
    budget_chars = max(2000, (settings.context_window - reserve_tokens(settings)) * _CHARS_PER_TOKEN // 2)
    previous = f"{COMPACTED_PREFIX}{session.summary}\n\n" if session.summary else ""
    prompt: list[dict[str, Any]] = [
        {"role": "system", "content": "You write precise handover notes of research sessions."},
        {"role": "user", "content": f"{previous}{render_transcript(older, budget_chars)}\n\n{COMPACTION_INSTRUCTIONS}"},
    ]
    response = model.complete(prompt, None, max_tokens=min(2048, settings.max_output_tokens), tool_choice="none",
                              seed=settings.llm_seed, thinking=settings.thinking)
    summary = response.text.strip() or render_transcript(older, 2000)
    return summary, response.usage, first_kept
