"""The activity feed: run events translated, one at a time, into chat messages for a `gr.Chatbot`.

Pure and incremental: `add(event)` touches only the messages that event concerns, so a long run
costs O(1) amortized per event; the app yields `messages` after each batch. Messages are plain
dicts in Gradio's messages format (role, content, metadata with title/status/duration/log), so the
translation is testable without a server.
"""

from __future__ import annotations

import json
import re
from typing import Any

from searchbox import inert
from searchbox.records.events import (NO_ANSWER, PREVIEW_CHARS, AssistFired, Compaction, Delta, Event, Notice, RunStart, StepEnd, StepStart,
                                      Stop, ToolEnd, ToolStart, TurnEnd, TurnStart)
from searchbox.agent.prompts import CONTINUE

Message = dict[str, Any]

_ICONS = {"bash": "💻", "read": "📄", "grep": "🔎", "find": "🗂️", "ls": "📁", "edit": "✏️", "write": "📝"}
_TITLE_ARGS_CHARS = 80
_PREVIEW_LINES = 15
_NOTICE_ICONS = {"warning": "⚠️", "error": "❌"}


class Feed:
    def __init__(self, question: str) -> None:
        # Everything shown is the model's, a document's or a visitor's: Markdown goes through searchbox.inert
        # (nothing in it may load from outside the app); arguments and results are shown in code fences.
        self._messages: list[Message] = [{"role": "user", "content": inert.markdown(question)}]
        self._tools: dict[str, Message] = {}  # call_id -> its message; ids repeat across steps, the latest wins
        self._streams: dict[str, tuple[Message, list[str]]] = {}  # "text"/"reasoning" of the current step
        self._dirty: set[str] = set()
        self._pending: dict[int, Message] = {}  # id(message) -> message still marked "pending"
        self._turn: Message | None = None
        self._turn_tools = 0

    @property
    def messages(self) -> list[Message]:
        """The whole feed (the live list: read it, don't mutate it). Streamed text is joined here,
        once per read, rather than once per delta."""
        self._flush()
        return self._messages

    def add(self, event: Event) -> None:
        match event:
            case RunStart(resumed=True, turns_done=done):
                self._append("", title="⏯️ Resumed", status="done", log=f"after {_plural(done, 'turn')}" if done else None)
            case TurnStart(budget=budget):
                title = f"Turn {event.turn} / {budget}" if budget else f"Turn {event.turn}"
                if event.turn > 1:  # the user's message opens the turn, so it comes before the turn's header
                    self._messages.append({"role": "user", "content": CONTINUE})
                self._turn = self._append("", title=title, status="pending")
                self._turn_tools = 0
            case StepStart():
                self._close_streams()
            case Delta(kind="retry", text=text):  # the stream broke and restarts: what it showed is void
                for message, _ in self._streams.values():
                    self._remove(message)
                self._streams.clear()
                self._dirty.clear()
                self._append("", title="↻ Stream restarted", status="done", log=_one_line(text, _TITLE_ARGS_CHARS) or None)
            case Delta(kind="text" | "reasoning" as kind, text=text):
                self._delta(kind, text)
            case StepEnd():
                self._step_end(event)
            case ToolStart(call_id=call_id, name=name, arguments=arguments, raw_arguments=raw):
                self._tools[call_id] = self._tool_message(name, arguments, raw)
            case ToolEnd():
                self._tool_end(event)
            case TurnEnd(seconds=seconds) if self._turn is not None:
                self._turn["metadata"]["log"] = _plural(self._turn_tools, "tool call")
                self._done(self._turn, seconds)
                self._turn = None
            case Compaction(error=error) if error:  # Pi went on without it; the error may quote the endpoint
                self._append(f"⚠️ Context compaction failed: {inert.markdown(error)}")
            case Compaction(tokens_before=tokens_before, summary_chars=chars, compactions=n):
                log = f"{tokens_before:,} tokens before, summary of {chars:,} chars"
                self._append("", title=f"🗜️ Context compacted (#{n})", status="done", log=log)
            case AssistFired(assist=assist, hook=hook, sent=sent):  # the harness acting, not the model
                self._append(inert.markdown(sent), title=f"🧩 Assist {assist} ({hook.replace('_', ' ')})", status="done")
            case Notice(level=level, message=message):
                if level in _NOTICE_ICONS:  # warnings and errors stay in plain sight; they may quote tool output
                    self._append(f"{_NOTICE_ICONS[level]} {inert.markdown(message)}")
                else:
                    self._append("", title=f"ℹ️ {_one_line(message, 200)}", status="done")
            case Stop(reason=reason, turns=turns, done=done):
                for message in list(self._pending.values()):  # a stop can cut a step or a turn short
                    self._done(message, None)
                self._close_streams()
                icon = "✅" if done else "⚠️" if reason == NO_ANSWER else "⏹️"
                note = ": the run ended without an answer, it is not done" if reason == NO_ANSWER else ""
                self._append(f"{icon} Stopped: {reason} after {_plural(turns, 'turn')}{note}")

    # -- the longer cases --------------------------------------------------------------------------

    def _delta(self, kind: str, text: str) -> None:
        if kind not in self._streams:
            message = self._append("", title="Reasoning", status="pending") if kind == "reasoning" \
                else self._append("")
            self._streams[kind] = (message, [])
        self._streams[kind][1].append(text)
        self._dirty.add(kind)

    def _step_end(self, event: StepEnd) -> None:
        self._flush()
        seconds = round(event.llm_ms / 1000, 2)
        if "reasoning" in self._streams:
            self._done(self._streams["reasoning"][0], seconds)
        # The response's text is the authority: deltas may have held markup the parser removed.
        text = event.text.strip()
        streamed = self._streams.get("text")
        if streamed and text:
            streamed[0]["content"] = inert.markdown(text)
        elif streamed:
            self._remove(streamed[0])
        elif text:  # a replay from events.jsonl has no deltas
            self._append(inert.markdown(text))
        if event.unread:  # the parser read it as nothing: shown as written, never as the model's answer
            self._append(_fenced(event.unread), title="🧾 Unread model output", status="done",
                         log="read as neither answer text nor a tool call")
        self._close_streams()

    def _tool_message(self, name: str, arguments: dict[str, Any], raw: str | None) -> Message:
        """A call's message as its start opens it: its arguments, titled by the tool and their gist."""
        return self._append(_arguments_block(name, arguments, raw), title=_tool_title(name, arguments),
                            status="pending")

    def _tool_end(self, event: ToolEnd) -> None:
        name, details = event.name, event.details
        # The message the call's start opened; a feed that joined mid-run, or a replay missing the start,
        # opens it here.
        message = self._tools.pop(event.call_id, None) or self._tool_message(name, event.arguments, event.raw_arguments)
        parts = [message["content"]]
        log = None
        # A pause, a stop or a time limit of the run cut the call (cut_by_pause -> "cut by pause").
        cut = event.ended.replace("_", " ") if event.ended.startswith("cut_by_") else None
        if name == "bash" and "exit_code" in details:
            programs = ", ".join(details.get("programs") or []) or "none"
            status = cut or ("timed out" if details.get("timed_out") else f"exit code {details['exit_code']}")
            parts.append(f"programs: {inert.literal(programs)} · {status}")
            log = "timed out" if details.get("timed_out") else f"exit {details['exit_code']}"
        elif event.is_error:
            log = "error"
        log = cut or event.gist or log
        parts.append(_fenced(_clip(event.preview)))
        message["content"] = "\n\n".join(parts)
        if event.is_error:
            message["metadata"]["title"] = f"⚠ {message['metadata']['title']}"
        if log:
            message["metadata"]["log"] = log
        self._done(message, round(event.duration_ms / 1000, 2))
        self._turn_tools += 1

    # -- helpers -------------------------------------------------------------------------------

    def _append(self, content: str, title: str | None = None, status: str | None = None,
                log: str | None = None) -> Message:
        message: Message = {"role": "assistant", "content": content}
        if title is not None:  # a title is Markdown, and quotes tool arguments and results; a log is text
            metadata: dict[str, Any] = {"title": inert.markdown(title)}
            if status:
                metadata["status"] = status
            if log:
                metadata["log"] = log
            message["metadata"] = metadata
        if status == "pending":
            self._pending[id(message)] = message
        self._messages.append(message)
        return message

    def _done(self, message: Message, seconds: float | None) -> None:
        self._pending.pop(id(message), None)
        metadata = message.setdefault("metadata", {})
        metadata["status"] = "done"
        if seconds is not None:
            metadata["duration"] = seconds

    def _remove(self, message: Message) -> None:
        """Removes a message of the current step; it sits near the end, so the scan is short."""
        self._pending.pop(id(message), None)
        for index in range(len(self._messages) - 1, -1, -1):
            if self._messages[index] is message:
                del self._messages[index]
                return

    def _flush(self) -> None:
        for kind in self._dirty:
            message, parts = self._streams[kind]
            joined = "".join(parts)
            parts[:] = [joined]
            message["content"] = inert.markdown(joined)
        self._dirty.clear()

    def _close_streams(self) -> None:
        self._flush()
        self._streams.clear()


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _icon(name: str) -> str:
    return _ICONS.get(name, "🔍" if "search" in name else "🛠️")


def _argument_summary(name: str, arguments: dict[str, Any]) -> str:
    """bash shows its command; other tools their first argument bare and the rest as key=value."""
    if name == "bash" and "command" in arguments:
        return _one_line(str(arguments["command"]), _TITLE_ARGS_CHARS)
    parts = []
    for index, (key, value) in enumerate(arguments.items()):
        shown = " | ".join(map(str, value)) if isinstance(value, list) else value if isinstance(value, str) \
            else json.dumps(value, ensure_ascii=False)
        parts.append(shown if index == 0 else f"{key}={shown}")
    return _one_line(", ".join(parts), _TITLE_ARGS_CHARS)


def _tool_title(name: str, arguments: dict[str, Any]) -> str:
    summary = _argument_summary(name, arguments)
    return f"{_icon(name)} {name}: {summary}" if summary else f"{_icon(name)} {name}"


def _arguments_block(name: str, arguments: dict[str, Any], raw: str | None) -> str:
    if name == "bash" and "command" in arguments:
        return _fenced(str(arguments["command"]), "bash")
    if not arguments and raw and raw.strip() not in ("", "{}"):  # arguments that did not parse
        return _fenced(raw)
    return _fenced(json.dumps(arguments, indent=1, ensure_ascii=False), "json")


def _clip(preview: str) -> str:
    """A tool_end preview (already cut at PREVIEW_CHARS) cut at _PREVIEW_LINES, marked when either cut it."""
    lines = preview.rstrip("\n").split("\n")
    clipped = "\n".join(lines[:_PREVIEW_LINES])
    cut = clipped != preview.rstrip("\n") or len(preview) >= PREVIEW_CHARS
    return clipped.rstrip() + "\n…" if cut else clipped


def _fenced(text: str, language: str = "") -> str:
    """A code fence longer than any backtick run inside, so a result cannot close it early."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"
