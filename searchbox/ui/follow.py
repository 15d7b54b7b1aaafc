"""Waiting on a run's events from the event loop, as the page and the REST API follow a run."""

from __future__ import annotations

import asyncio
import queue
import time

from searchbox.records.events import Event

_POLL_S = 0.05  # how often a watched run's events are looked for


async def drain(subscription: queue.Queue, timeout: float) -> tuple[list[Event], bool]:
    """Events waiting now (waiting up to `timeout` for the first); True once the run's stream ended.

    Polls on the event loop rather than blocking a worker thread: every watched run parked a thread
    of asyncio's small default pool (CPUs + 4), so a few visitors' runs starved every other handler's
    file work (creating a job, opening a dashboard) under load."""
    events: list[Event] = []
    deadline = time.monotonic() + timeout
    while True:
        try:
            while True:
                item = subscription.get_nowait()
                if item is None:
                    return events, True
                events.append(item)
        except queue.Empty:
            if events or time.monotonic() >= deadline:
                return events, False
        await asyncio.sleep(_POLL_S)
