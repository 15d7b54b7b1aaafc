"""The run's events: typed, versioned rows, a sequence number per job, rows of older versions read."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from searchbox.records.events import (EVENT_TYPES, SCHEMA_VERSION, AssistFired, Compaction, Delta, Event, EventBus, Notice,
                                      RunStart, StepEnd, StepStart, Stop, ToolEnd, ToolStart, TurnEnd, TurnStart,
                                      check_event_types, load_events)
from searchbox.records.stats import RunStats

ONE_OF_EACH: list[Event] = [
    RunStart(resumed=True, turns_done=2, model="m", context_window=4096),
    TurnStart(budget=3),
    StepStart(),
    StepEnd(usage={"input": 10, "output": 2}, llm_ms=12.5, timings={"decode_ms": 3.0}, tool_calls=["ls"], text="hi",
            finish_reason="tool_calls", context_tokens=12),
    ToolStart(call_id="c1", name="ls", arguments={"path": "dataroom"}, raw_arguments='{"path": "dataroom"}'),
    ToolEnd(call_id="c1", name="ls", arguments={"path": "dataroom"}, raw_arguments='{"path": "dataroom"}',
            duration_ms=3.5, is_error=False, preview="a.txt", details={"entries": 1}, gist="1 entry"),
    Compaction(tokens_before=1900, first_kept=4, compactions=1, summary_chars=120),
    Notice(level="warning", message="careful"),
    AssistFired(assist="ask_sources", hook="follow_up", sent="Your answer cites no source."),
    TurnEnd(tool_calls=1, tokens={"input": 10, "total": 12}, compactions=1, seconds=0.5),
    Stop(reason="budget_spent", turns=3, done=True, tokens={"input": 10, "total": 12}),
]


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path.parent


def test_every_type_is_declared_once_and_goes_to_a_row_and_back() -> None:
    assert set(EVENT_TYPES) == {type(e).type for e in ONE_OF_EACH} | {"delta"}
    for n, event in enumerate(ONE_OF_EACH, 1):
        row = json.loads(json.dumps(event.to_row()))
        assert row["schema_version"] == SCHEMA_VERSION and row["type"] == event.type
        assert Event.from_row(row) == event
        assert Event.from_row({**row, "seq": n}).seq == n


def test_the_bus_numbers_a_jobs_events_on_across_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    heard: list[Event] = []
    first = EventBus(path, [heard.append])
    first.emit(RunStart(model="m"))
    first.emit(Delta(kind="text", text="hel"))  # numbered, not recorded
    first.emit(Stop(reason="paused"))
    # The resumed run's first event has the envelope the first run's had (same type, turn and step,
    # on a clock started again at zero): the seq tells them apart, live and replayed.
    second = EventBus(path, [heard.append])
    second.emit(RunStart(resumed=True, model="m"))
    assert [e.seq for e in heard] == [1, 2, 3, 4]
    assert (heard[0].type, heard[0].turn, heard[0].step) == (heard[3].type, heard[3].turn, heard[3].step)
    assert load_events(tmp_path) == [Event.from_row(json.loads(json.dumps(e.to_row()))) for e in heard if e.recorded]
    assert [e.seq for e in load_events(tmp_path)] == [1, 3, 4]


def test_rows_of_the_first_version_still_read(tmp_path: Path) -> None:
    """Version 1 rows have no version and no seq, and run_start's `turn` was its turns done (it
    overwrote the envelope's turn); rows of unknown types and broken rows are left out."""
    job_dir = write_rows(tmp_path / "events.jsonl", [
        {"type": "run_start", "turn": 2, "step": 0, "elapsed": 0.0, "ts": 1.0, "resumed": True, "model": "m"},
        {"type": "turn_start", "turn": 3, "step": 0, "elapsed": 0.01, "ts": 1.0, "budget": 4},
        {"type": "a_type_from_the_future", "turn": 3, "step": 1, "elapsed": 0.02},
        {"type": "tool_end", "turn": 3, "step": 1, "elapsed": 0.5, "ts": 1.0},  # no call_id, no name
        {"type": "tool_end", "turn": 3, "step": 1, "elapsed": 0.6, "ts": 1.0, "call_id": "c", "name": "ls",
         "arguments": {}, "duration_ms": 3.0, "is_error": False, "preview": "x", "details": {}, "later_field": 1},
        {"type": "stop", "turn": 3, "step": 1, "elapsed": 0.7, "ts": 1.0, "reason": "paused", "turns": 3, "done": False},
    ])
    events = load_events(job_dir)
    assert [type(e) for e in events] == [RunStart, TurnStart, ToolEnd, Stop]
    assert events[0] == RunStart(resumed=True, turns_done=2, model="m", turn=0, seq=1)
    assert [e.seq for e in events] == [1, 2, 3, 4]
    assert events[2].gist == "" and events[3].tokens == {}  # fields added since take their defaults
    bus = EventBus(job_dir / "events.jsonl")  # a new run of that job numbers on after them
    assert bus.emit(RunStart(resumed=True)).seq == 5
    assert load_events(job_dir)[-1].seq == 5


def test_a_payload_field_may_not_take_an_envelope_keys_place() -> None:
    @dataclass(frozen=True, kw_only=True)
    class Shadowing(Event):
        type: ClassVar[str] = "shadowing"
        turn: int = 7

    with pytest.raises(TypeError, match="turn"):
        check_event_types([Shadowing])
    check_event_types(EVENT_TYPES.values())


def test_wall_time_adds_the_parts_of_a_run_not_the_boot_before_them() -> None:
    """Each part is timed from its run_start to its stop, on its own bus's clock: the notices of a
    model's boot and of a part's setup come before the run_start, on clocks of their own, and a
    part killed before its stop counts up to its last event."""
    events: list[Event] = [
        Notice(message="loading", elapsed=0.0), Notice(message="ready", elapsed=30.0),  # the boot's bus
        Notice(message="retrieval falls back", elapsed=0.001), RunStart(elapsed=0.002),
        StepEnd(elapsed=1.0), Stop(reason="paused", elapsed=2.0),
        Notice(message="retrieval falls back", elapsed=0.001), RunStart(resumed=True, elapsed=0.002),
        ToolEnd(call_id="c", name="ls", elapsed=1.5),  # killed here
        Notice(message="retrieval falls back", elapsed=0.001), RunStart(resumed=True, elapsed=0.002),
        Stop(reason="budget_spent", elapsed=3.0),
    ]
    stats = RunStats()
    for event in events:
        stats.add(event)
    assert stats.wall_ms == pytest.approx(2000 + 1500 + 3000)
