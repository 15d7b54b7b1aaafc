"""Asking a running loop to stop: the loop checks between LLM deltas and between tool calls."""

from __future__ import annotations

import threading
from typing import Literal

StopRequest = Literal["paused", "cancelled", "interrupted"]


class RunControl:
    def __init__(self) -> None:
        self._reason: StopRequest | None = None
        self._lock = threading.Lock()

    def request(self, reason: StopRequest) -> None:
        with self._lock:
            if self._reason is None:  # the first request wins: a pause then a cancel stays a pause
                self._reason = reason

    @property
    def requested(self) -> StopRequest | None:
        return self._reason
