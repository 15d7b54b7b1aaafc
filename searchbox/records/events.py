"""The typed events a run emits. The CLI prints them, the app renders them, events.jsonl keeps the
tool executions and timings (the activity feed's source)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from searchbox.records.files import append_jsonl, read_jsonl
from searchbox.records.job_folder import JobFolder

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

# The stop reasons of a run that did what it was asked; any other stop is a pause, a cancel or a failure.
DONE_REASONS = frozenset({"first_turn_done", "budget_spent"})

# Deltas are many and tiny; the session file already has the full text.
_NOT_RECORDED = {"delta"}
# A recorded row's own keys; the payload sits beside them, so it must not use them (a `turn` in
# run_start's payload once overwrote the envelope's, and the replayed event differed from the live one).
ENVELOPE_KEYS = frozenset({"type", "turn", "step", "elapsed", "ts"})


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

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Event:
        """An events.jsonl row back as the Event that wrote it (elapsed rounded to the millisecond)."""
        return cls(row["type"], int(row.get("turn", 0)), int(row.get("step", 0)), float(row.get("elapsed", 0.0)),
                   {k: v for k, v in row.items() if k not in ENVELOPE_KEYS})


def load_events(job_dir: Path) -> list[Event]:
    """events.jsonl read back as Events, for a replay (no deltas: those are never recorded)."""
    return [Event.from_row(row) for row in read_jsonl(JobFolder(job_dir).events) if "type" in row]


Listener = Callable[[Event], None]


def dispatch(consumer: object, event: Event) -> None:
    """Hands the event to the consumer's `_on_<type>` method, where it has one: each consumer names
    the event types it reads, and ignores the rest."""
    handler = getattr(consumer, f"_on_{event.type}", None)
    if handler is not None:
        handler(event)


class EventBus:
    """Fans events out to listeners and records the durable ones in events.jsonl."""

    def __init__(self, path: Path | None, listeners: list[Listener] | None = None) -> None:
        self.path = path
        self.listeners = list(listeners or [])
        self.started = time.monotonic()
        self.turn = 0
        self.step = 0

    def emit(self, type: EventType, **data: Any) -> Event:
        if clash := ENVELOPE_KEYS & data.keys():
            raise ValueError(f"event payload keys {sorted(clash)} would overwrite the envelope's")
        event = Event(type, self.turn, self.step, time.monotonic() - self.started, data)
        if self.path is not None and type not in _NOT_RECORDED:
            append_jsonl(self.path, event.as_dict())
        for listener in self.listeners:
            listener(event)
        return event
