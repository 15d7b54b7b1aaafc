"""Cutting a running tool short: the token a run's stop requests and time limits set, and that every
long piece of tool work watches (a bash command, ripgrep, an embedding batch).

A stop request (pause, stop, an app shutdown) is sticky: once made, everything the run starts after
it is cut at once. A time limit (the run's ceiling, a turn's timeout) is a deadline the loop sets
around one tool call and clears after it, because the run itself may go on.

How a tool call ended is recorded with its result (`ended`): "completed", "timed_out" (its own
timeout, bash's `timeout` argument) or one of CUT_ENDINGS.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

# A cut's reason (a run's stop request, or the time limit that ran out) -> the tool call's `ended`.
CUT_ENDINGS = {
    "paused": "cut_by_pause",
    "cancelled": "cut_by_stop",
    "interrupted": "cut_by_interrupt",  # the app shutting down, Ctrl-C in the CLI
    "ceiling_seconds": "cut_by_ceiling",
    "turn_timeout": "cut_by_turn_timeout",
    "crashed": "cut_by_crash",  # the app died while the call ran: on resume it is not run again
}
# What a person (and the model, on resume) is told cut the call.
CUT_CAUSES = {
    "paused": "the run was paused",
    "cancelled": "the run was stopped",
    "interrupted": "the run was interrupted",
    "ceiling_seconds": "the run reached its time ceiling (CEILING_SECONDS)",
    "turn_timeout": "the turn reached its time limit (TURN_TIMEOUT_SECONDS)",
    "crashed": "the app stopped while it ran",
}
COMPLETED = "completed"
TIMED_OUT = "timed_out"
WATCH_S = 0.05  # how often a watcher looks at a deadline; a request wakes it at once


class Cancelled(Exception):
    """Tool work stopped because its token was cut; `reason` is a key of CUT_ENDINGS."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"cut short: {CUT_CAUSES.get(reason, reason)}")
        self.reason = reason

    @property
    def ended(self) -> str:
        return CUT_ENDINGS.get(self.reason, f"cut_by_{self.reason}")


class CancelToken:
    def __init__(self) -> None:
        self._requested = threading.Event()
        self._request: str | None = None
        self._lock = threading.Lock()
        self._deadline: tuple[float, str] | None = None  # (monotonic time, reason)

    def request(self, reason: str) -> None:
        """Cut everything now and from now on; the first request's reason is kept."""
        with self._lock:
            if self._request is None:
                self._request = reason
        self._requested.set()

    @property
    def requested(self) -> str | None:
        return self._request

    def set_deadline(self, at: float | None, reason: str = "") -> None:
        """Cut what runs at monotonic time `at` (None: no deadline)."""
        self._deadline = None if at is None else (at, reason)

    @property
    def cut(self) -> str | None:
        """Why work must stop now, or None."""
        if self._request is not None:
            return self._request
        deadline = self._deadline
        if deadline is not None and time.monotonic() >= deadline[0]:
            return deadline[1]
        return None

    def check(self) -> None:
        """Raise Cancelled when work must stop: call it between two pieces of work."""
        if (reason := self.cut) is not None:
            raise Cancelled(reason)

    def wait(self, timeout: float) -> str | None:
        """Wait up to `timeout` seconds for a cut; returns its reason, or None."""
        end = time.monotonic() + timeout
        while (reason := self.cut) is None:
            left = end - time.monotonic()
            if left <= 0:
                return None
            self._requested.wait(min(left, WATCH_S))  # a request wakes it; a deadline is looked at each WATCH_S
        return reason


def cuttable(token: CancelToken | None, work: Callable[[], T]) -> T:
    """`work()`, in a worker thread while the token is watched: a cut raises Cancelled at once, for work
    that cannot stop part-way (a model's forward pass, a model load). The work then ends in the
    background and its result is dropped (a model it loaded is kept for the next run, see
    retrieval/models.py)."""
    if token is None:
        return work()
    token.check()
    outcome: list[T | BaseException] = []
    done = threading.Event()

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # raised again in the caller's thread
            outcome.append(exc)
        finally:
            done.set()

    # Not a daemon: a process that exits right after a cut waits for the work (torch aborts the
    # process when a thread still computes at exit).
    threading.Thread(target=run, name="searchbox-cuttable", daemon=False).start()
    while not done.wait(WATCH_S):
        token.check()
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


@contextmanager
def on_cut(token: CancelToken | None, action: Callable[[], None]) -> Iterator[None]:
    """Call `action` (kill a process) once if the token is cut while the block runs, from a watcher
    thread: for work that blocks where it cannot look at the token itself (reading a pipe). Also on the
    way out of a block that a cut ended by raising, so nothing is left running."""
    if token is None:
        yield
        return
    done = threading.Event()
    fired = threading.Lock()

    def fire() -> None:
        if fired.acquire(blocking=False):
            action()

    def watch() -> None:
        while not done.is_set():
            if token.wait(WATCH_S) is not None:
                fire()
                return

    watcher = threading.Thread(target=watch, name="searchbox-cut-watch", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()
        if token.cut is not None:
            fire()
