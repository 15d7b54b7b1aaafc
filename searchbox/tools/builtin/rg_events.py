"""ripgrep's JSON events, read within a bounded size.

A match in a huge line comes as one JSON line holding the whole line (a 256 MiB sparse file is one line
of NULs, each written as `\\u0000`: over 1.5 GB of JSON). Reading that with `readline()` and `json.loads`
sent the app's peak memory to 3.4 GB; here such an event is read in pieces and only what grep shows of
it is kept: its path, its line number and the line's start.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from typing import IO, Any

EVENT_BYTES = 64 * 1024  # longer events carry an overlong line, or thousands of submatches of one
_PREVIEW_CHARS = 4096  # of the line's JSON text: enough for grep's 500-character cut after unescaping
# The fields come in this order (ripgrep's JSON printer); a string body is [^"\\] or escapes.
_STRING = rb'"((?:[^"\\]|\\.)*)'
_HEAD = re.compile(rb'\{"type":"(match|context)","data":\{"path":\{"(text|bytes)":' + _STRING
                   + rb'"\},"lines":\{"(text|bytes)":' + _STRING, re.DOTALL)
# Unambiguous in the raw stream: a quote inside a JSON string is escaped, so `number":` cannot occur there.
_LINE_NUMBER = re.compile(rb'"line_number":(\d+)')


def rg_events(stream: IO[bytes]) -> Iterator[dict[str, Any]]:
    """Each JSON event ripgrep writes; an overlong one as {"type", "data": {"path", "lines" (its start),
    "line_number"}} built from its pieces."""
    while raw := stream.readline(EVENT_BYTES):
        yield json.loads(raw) if raw.endswith(b"\n") else _overlong(raw, stream)


def _overlong(head: bytes, stream: IO[bytes]) -> dict[str, Any]:
    number = _line_number_in_rest(head, stream)
    found = _HEAD.match(head)
    if found is None or number is None:  # not a match or context event: nothing grep shows
        return {"type": "overlong"}
    kind, path_kind, path, lines_kind, lines = found.groups()
    return {"type": kind.decode(), "data": {
        "path": {path_kind.decode(): _json_string(path) if path_kind == b"text" else path.decode()},
        "lines": {"text": _preview(lines_kind, lines[:_PREVIEW_CHARS])},
        "line_number": number,
    }}


def _line_number_in_rest(head: bytes, stream: IO[bytes]) -> int | None:
    """Reads the event to its end, a bounded piece at a time; its line number, found on the way."""
    number, piece, carry = None, head, b""
    while True:
        if number is None and (found := _LINE_NUMBER.search(carry + piece)):
            number = int(found.group(1))
        if not piece or piece.endswith(b"\n"):
            return number
        carry = piece[-32:]  # the field may straddle two pieces
        piece = stream.readline(EVENT_BYTES)


def _json_string(body: bytes) -> str:
    return json.loads(b'"' + body + b'"')


def _preview(kind: bytes, body: bytes) -> str:
    """The start of a JSON string body cut anywhere: an escape cut in half (at most 12 characters, a
    surrogate pair) is dropped."""
    if kind == b"bytes":
        return base64.b64decode(body[: len(body) // 4 * 4]).decode("utf-8", "replace")
    for end in range(len(body), max(len(body) - 12, 0) - 1, -1):
        try:
            return _json_string(body[:end])
        except ValueError:
            continue
    return ""
