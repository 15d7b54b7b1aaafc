"""Asking a running loop to stop: the loop checks between LLM deltas and between tool calls, and the
tool running at that moment is cut through `token` (see searchbox/cancel.py)."""

from __future__ import annotations

from typing import Literal

from searchbox.cancel import CancelToken

StopRequest = Literal["paused", "cancelled", "interrupted"]


class RunControl:
    def __init__(self) -> None:
        self.token = CancelToken()  # what the run's tools watch

    def request(self, reason: StopRequest) -> None:
        self.token.request(reason)  # the first request wins: a pause then a cancel stays a pause

    @property
    def requested(self) -> StopRequest | None:
        return self.token.requested  # type: ignore[return-value]
