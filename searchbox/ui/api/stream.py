"""A job's events as server-sent events (text/event-stream): each event the run recorded, as events.jsonl
holds it (records.events: `id:` its seq, `event:` its type, `data:` its row without the wall-clock `ts`), from
the first (or past the seq a client resuming sends as Last-Event-ID) until the job stops: done, failed,
cancelled, or held by a user's pause. Then one `end` event with its state and stop reason. Live text and
reasoning (`delta` events: never recorded, so without an id) are sent as the run streams them.

The records are the source: events.jsonl is read as it grows, only its complete lines, never through a link
(records.work_files). The scheduler's subscription only wakes the stream when the run emits, so nothing polls
the file; with no event for IDLE_S the stream looks at the job's state, and sends a comment line now and then
so that proxies keep the connection. A run preempted and resumed later is followed across both."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from searchbox.jobs.store import WAITING
from searchbox.llm.disclosure import hidden
from searchbox.records.events import Delta, Event
from searchbox.records.job_folder import JobFolder
from searchbox.records.work_files import UntrustedFile, open_regular_in
from searchbox.ui.follow import drain
from searchbox.ui.services import Services

EVENTS_MAX_BYTES = 64 << 20  # no run records this much; a bigger events.jsonl is not read
IDLE_S = 2.0  # how long the stream waits for an event before it looks at the job's state
KEEP_ALIVE_S = 15.0


class EventsFile:
    """A job's events.jsonl read as it grows: the events of the complete lines past those read already."""

    def __init__(self, job_dir: Path) -> None:
        self.job_dir = job_dir
        self.name = JobFolder(job_dir).events.name
        self.offset = 0
        self.last_seq = 0

    def read(self) -> list[Event]:
        """The events recorded since the last read; UntrustedFile when the name holds no plain file."""
        try:
            fd = open_regular_in(self.job_dir, self.name, EVENTS_MAX_BYTES)
        except FileNotFoundError:  # the run has not started
            return []
        with os.fdopen(fd, "rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        complete = data[:data.rfind(b"\n") + 1]  # a line being written is read once it is whole
        self.offset += len(complete)
        events = []
        for line in complete.splitlines():
            try:
                event = Event.from_row(json.loads(line), seq=self.last_seq + 1)
            except (ValueError, TypeError, AttributeError):  # a torn or unknown row, as records.events skips it
                continue
            self.last_seq = max(self.last_seq, event.seq)
            events.append(event)
        return events


def frame(kind: str, data: dict[str, Any], hide: Sequence[str], seq: int | None = None) -> str:
    text = json.dumps(data, ensure_ascii=False, default=str)
    lines = [f"id: {seq}"] if seq is not None else []
    return "\n".join([*lines, f"event: {kind}", f"data: {hidden(text, hide) if hide else text}"]) + "\n\n"


def delta_frame(delta: Delta, hide: Sequence[str]) -> str:
    row = {k: v for k, v in delta.to_row().items() if k not in ("ts", "seq")}  # live text has no place in the records
    return frame(delta.type, row, hide)


def event_frame(event: Event, hide: Sequence[str]) -> str:
    row = {k: v for k, v in event.to_row().items() if k != "ts"}  # the time it is sent, not when it happened
    return frame(event.type, row, hide, event.seq)


async def event_stream(services: Services, job_id: str, after: int, hide: Sequence[str]) -> AsyncIterator[str]:
    """The job's events past seq `after`, until it stops; then `end`. Live text (deltas, never recorded) is
    sent as it comes, after the recorded events before it and with no id: a client resuming asks for
    recorded events only."""
    store, scheduler = services.store, services.scheduler
    events = EventsFile(store.job_dir(job_id))
    sent, wrote = after, time.monotonic()
    subscription = scheduler.subscribe(job_id)  # before reading the records: nothing recorded later is missed
    got: list[Event] = []
    look = True
    record = None
    try:
        while True:
            # What came, in order: a delta is sent as it is; a recorded event is sent from the records, read up
            # to it, so each delta follows the step it belongs to.
            stopped = False
            for item in [*got, None]:
                if item is not None and not item.recorded:
                    if isinstance(item, Delta):
                        yield delta_frame(item, hide)
                        wrote = time.monotonic()
                    continue
                if item is None and not look:
                    break
                if item is not None and item.seq <= sent:
                    continue  # read already with an earlier event of this batch
                # The state before the records: a run that stopped had recorded all its events by then.
                record = await asyncio.to_thread(store.get, job_id)
                try:
                    new = await asyncio.to_thread(events.read)
                except UntrustedFile as exc:
                    yield frame("error", {"error": str(exc)}, hide)
                    return
                for event in new:
                    if event.seq > sent:
                        yield event_frame(event, hide)
                        sent, wrote = event.seq, time.monotonic()
                stopped = record is None or record.state not in WAITING
            if stopped:
                break
            got, ended = await drain(subscription, IDLE_S)
            if ended:  # this run stopped; a preempted job runs again later, and is followed then
                scheduler.unsubscribe(job_id, subscription)
                subscription = scheduler.subscribe(job_id)
            look = ended or not got  # nothing came for IDLE_S, or the run ended: look at the records and state
            if not got and time.monotonic() - wrote >= KEEP_ALIVE_S:
                yield ": the run goes on\n\n"
                wrote = time.monotonic()
    finally:
        scheduler.unsubscribe(job_id, subscription)
    yield frame("end", {"state": record.state if record else None, "stop_reason": record.stop_reason if record else None},
                hide)
