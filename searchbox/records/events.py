"""The typed events a run emits: one frozen dataclass per type. The CLI prints them, the app renders
them, events.jsonl keeps the tool executions and timings (the activity feed's source).

Consumers match on the class (`match event: case ToolEnd(name=name): ...`), never on payload keys.
Every event carries an envelope (turn, step, elapsed, seq) that the bus stamps at emit; `seq`
numbers a job's events in order across all its runs (a resumption goes on from the last recorded
one), so a replay and a live stream are joined by it rather than by time.

A row of events.jsonl is `to_row()`: the envelope, `schema_version`, the type and the payload side by
side. Rows of version 1 (no version, no seq) still read: their seq is derived from their order.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from searchbox.records.files import append_jsonl, read_jsonl
from searchbox.records.job_folder import JobFolder

# 1: rows without a version or seq (and run_start's `turns_done` once written as `turn`); 2: versioned, with seq.
SCHEMA_VERSION = 2

# The stop reasons of a run that did what it was asked; any other stop is a pause, a cancel or a failure.
DONE_REASONS = frozenset({"first_turn_done", "budget_spent"})
# The stop of a run whose turns ended where a done one would, but without an answer (agent/answered.py): not done.
NO_ANSWER = "no_answer"

# A row's own keys; the payload sits beside them in the row, so no event type may use them as fields.
ENVELOPE_KEYS = frozenset({"schema_version", "seq", "type", "turn", "step", "elapsed", "ts"})


@dataclass(frozen=True, kw_only=True)
class Event:
    type: ClassVar[str]
    recorded: ClassVar[bool] = True  # written to events.jsonl (deltas are not: the session has the text)

    turn: int = 0
    step: int = 0
    elapsed: float = 0.0  # seconds since the run (or its resumption) started
    seq: int = 0  # the job's event number, from 1; 0 until the bus emits it

    def payload(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ENVELOPE_KEYS}

    def to_row(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "seq": self.seq, "type": self.type, "turn": self.turn,
                "step": self.step, "elapsed": round(self.elapsed, 3), "ts": time.time(), **self.payload()}

    @staticmethod
    def from_row(row: dict[str, Any], seq: int = 0) -> Event:
        """A row (of any schema version) back as the event that wrote it, elapsed rounded to the
        millisecond. `seq` stands in for a row that has none (version 1). Keys the type does not
        know are left out (a newer writer's); a missing payload field takes its default.
        Raises ValueError for a row of no known type or without a field its type requires."""
        cls = EVENT_TYPES.get(str(row.get("type")))
        if cls is None:
            raise ValueError(f"no event type {row.get('type')!r}")
        known = _PAYLOAD_FIELDS[cls]
        data = {k: v for k, v in row.items() if k in known}
        turn = row.get("turn", 0)
        if cls is RunStart and "turns_done" not in row:  # version 1: the payload's `turn` overwrote the envelope's
            data["turns_done"], turn = turn, 0
        try:
            return cls(turn=int(turn), step=int(row.get("step", 0)), elapsed=float(row.get("elapsed", 0.0)),
                       seq=int(row.get("seq") or seq), **data)
        except TypeError as exc:
            raise ValueError(f"a {cls.type} row lacks a field: {exc}") from exc


@dataclass(frozen=True, kw_only=True)
class RunStart(Event):
    type: ClassVar[str] = "run_start"
    resumed: bool = False
    turns_done: int = 0  # turns finished before this run (a resumption)
    model: str = ""
    context_window: int | None = None  # the window the run really has, fitted to its model


@dataclass(frozen=True, kw_only=True)
class TurnStart(Event):
    type: ClassVar[str] = "turn_start"
    budget: int | None = None


@dataclass(frozen=True, kw_only=True)
class StepStart(Event):
    type: ClassVar[str] = "step_start"


@dataclass(frozen=True, kw_only=True)
class Delta(Event):
    """Live text or reasoning of the current response; `retry` voids what the step streamed so far."""
    type: ClassVar[str] = "delta"
    recorded: ClassVar[bool] = False
    kind: str  # "text", "reasoning" or "retry"
    text: str = ""


@dataclass(frozen=True, kw_only=True)
class StepEnd(Event):
    type: ClassVar[str] = "step_end"
    usage: dict[str, int] = field(default_factory=dict)
    llm_ms: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    tool_calls: list[str] = field(default_factory=list)  # the names of the tools the response called
    text: str = ""
    finish_reason: str | None = None
    context_tokens: int = 0
    unread: str = ""  # what the model wrote that the parser read as neither text nor a call (llm.types.ChatResponse)


@dataclass(frozen=True, kw_only=True)
class ToolStart(Event):
    type: ClassVar[str] = "tool_start"
    call_id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None  # as the model wrote them (what to show when they did not parse)


# How much of a tool's result a tool_end event keeps (the feed shows it; the model got all of it).
PREVIEW_CHARS = 400


@dataclass(frozen=True, kw_only=True)
class ToolEnd(Event):
    type: ClassVar[str] = "tool_end"
    call_id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None
    duration_ms: float = 0.0
    is_error: bool = False
    ended: str = "completed"  # or how it was cut: timed_out, cut_by_pause, cut_by_stop, cut_by_crash, ...
    preview: str = ""  # the first PREVIEW_CHARS of the result the model got
    details: dict[str, Any] = field(default_factory=dict)  # the tool's own facts (bash: exit_code, programs)
    gist: str = ""  # one line saying what the result held

    def sources(self) -> list[str]:
        """The source ids the result showed the model, in order (read names its range's as "source")."""
        if "source" in self.details:
            return [str(self.details["source"])]
        return [str(s) for s in self.details.get("sources") or []]


@dataclass(frozen=True, kw_only=True)
class TurnEnd(Event):
    type: ClassVar[str] = "turn_end"
    tool_calls: int = 0  # in the whole run so far
    tokens: dict[str, int] = field(default_factory=dict)  # the run's totals so far
    compactions: int = 0
    seconds: float | None = None


@dataclass(frozen=True, kw_only=True)
class Compaction(Event):
    """Older messages were summarised; or, with `error`, a compaction failed and the run went on without it
    (Pi's: the native loop stops with error_llm instead)."""
    type: ClassVar[str] = "compaction"
    tokens_before: int = 0
    first_kept: int = 0
    compactions: int = 1  # done in the whole run so far, this one included unless it failed
    summary_chars: int = 0
    error: str = ""  # why it failed; empty for one that was done


@dataclass(frozen=True, kw_only=True)
class AssistFired(Event):
    """An assist of the loop acted (searchbox/agent/assists/): what it sent the model, or put in the
    place of what the model said. The minimal loop emits none."""
    type: ClassVar[str] = "assist"
    assist: str  # its name, as HARNESS_ASSISTS names it
    hook: str  # where it acted: tool_choice, before_tool_call, follow_up, turn_cut or answer
    sent: str  # the message, the tool_choice, the tool result or the answer it gave


@dataclass(frozen=True, kw_only=True)
class Notice(Event):
    """Something a person should know (a fallback, a retry, a nudge)."""
    type: ClassVar[str] = "notice"
    level: str = "info"  # "info", "warning" or "error"
    message: str


# The limits that end a turn (the run goes on), as both harnesses' notices word them.
TURN_ENDERS = {"turn_timeout": "passed TURN_TIMEOUT_SECONDS", "max_steps": "reached MAX_STEPS_PER_TURN"}


def turn_ended(turn: int, limit: str) -> str:
    """The notice's words for a turn that `limit` (a TURN_ENDERS key) ended."""
    return f"turn {turn} {TURN_ENDERS[limit]} and was ended"


def ends_a_turn(event: Event) -> bool:
    """Whether the event is the notice of a turn that a limit ended."""
    return isinstance(event, Notice) and any(f" {words} and was ended" in event.message for words in TURN_ENDERS.values())


@dataclass(frozen=True, kw_only=True)
class Stop(Event):
    type: ClassVar[str] = "stop"
    reason: str
    turns: int = 0
    done: bool = False
    tokens: dict[str, int] = field(default_factory=dict)


EVENT_TYPES: dict[str, type[Event]] = {cls.type: cls for cls in Event.__subclasses__()}
_PAYLOAD_FIELDS = {cls: frozenset(f.name for f in dataclasses.fields(cls)) - ENVELOPE_KEYS for cls in EVENT_TYPES.values()}


def check_event_types(types: Iterable[type[Event]]) -> None:
    """A payload field named like an envelope key would take the envelope's place in the row (a
    `turn` in run_start's payload once did): refused at import."""
    for cls in types:
        own = {f.name for f in dataclasses.fields(cls) if f.name in vars(cls).get("__annotations__", {})}
        if clash := own & ENVELOPE_KEYS:
            raise TypeError(f"{cls.__name__} has fields {sorted(clash)} that would overwrite the envelope's")


check_event_types(EVENT_TYPES.values())


def read_events(path: Path) -> list[Event]:
    """An events.jsonl back as events, in order, each with its seq (derived from the order for rows
    that have none). Rows that cannot be read (an unknown type, a missing field) are left out: a
    replay shows what it can."""
    events: list[Event] = []
    last_seq = 0
    for row in read_jsonl(path):
        try:
            event = Event.from_row(row, seq=last_seq + 1)
        except (ValueError, TypeError):
            continue
        last_seq = max(last_seq, event.seq)
        events.append(event)
    return events


def load_events(job_dir: Path) -> list[Event]:
    """The job's events.jsonl read back, for a replay (no deltas: those are never recorded)."""
    return read_events(JobFolder(job_dir).events)


def last_seq(events: list[Event]) -> int:
    return max((event.seq for event in events), default=0)


Listener = Callable[[Event], None]


class EventBus:
    """Stamps events with their envelope, records the durable ones in events.jsonl and fans them out
    to listeners. A bus over a job's file goes on numbering from the last event recorded there."""

    def __init__(self, path: Path | None, listeners: list[Listener] | None = None) -> None:
        self.path = path
        self.listeners = list(listeners or [])
        self.started = time.monotonic()
        self.turn = 0
        self.step = 0
        self.seq = last_seq(read_events(path)) if path is not None else 0

    def emit(self, event: Event) -> Event:
        self.seq += 1
        event = dataclasses.replace(event, turn=self.turn, step=self.step, elapsed=time.monotonic() - self.started,
                                    seq=self.seq)
        if self.path is not None and event.recorded:
            append_jsonl(self.path, event.to_row())
        for listener in self.listeners:
            listener(event)
        return event
