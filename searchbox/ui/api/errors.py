"""The REST API's one kind of error: an HTTP status and a reason, sent as {"error": reason}."""

from __future__ import annotations


class ApiError(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
