"""The typed events a run emits. The CLI prints them, the app renders them, events.jsonl keeps the
tool executions and timings (the activity feed's source)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from searchbox.records.files import append_jsonl

EventType = Literal[
    "run_start",
    "turn_start",
    "step_start",
    "delta",  # live text or reasoning; not written to events.jsonl
    "tool_start",
    "tool_end",
    "step_end",
    "turn_end",
    "compaction",
    "notice",  # something a person should know (a fallback, a retry, a nudge)
    "stop",
]

# Deltas are many and tiny; the session file already has the full text.
_NOT_RECORDED = {"delta"}


@dataclass(frozen=True)
class Event:
    type: EventType
    turn: int
    step: int
    elapsed: float  # seconds since the run (or its resumption) started
    data: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, "turn": self.turn, "step": self.step, "elapsed": round(self.elapsed, 3),
                "ts": time.time(), **self.data}


Listener = Callable[[Event], None]


class EventBus:
    """Fans events out to listeners and records the durable ones in events.jsonl."""

    def __init__(self, path: Path | None, listeners: list[Listener] | None = None) -> None:
        self.path = path
        self.listeners = list(listeners or [])
        self.started = time.monotonic()
        self.turn = 0
        self.step = 0

    def emit(self, type: EventType, **data: Any) -> Event:
        event = Event(type, self.turn, self.step, time.monotonic() - self.started, data)
        if self.path is not None and type not in _NOT_RECORDED:
            append_jsonl(self.path, event.as_dict())
        for listener in self.listeners:
            listener(event)
        return event
