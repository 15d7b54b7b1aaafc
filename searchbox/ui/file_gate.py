"""The file gate: what Gradio's own routes for files are not told about visitors.

An ASGI middleware in front of Gradio's routes (app.py hands it to launch()). It keeps two of them
to the visitor they belong to, by client address (ui.visitors.address_of), and keeps every request's body
within bounds before Gradio reads it:

- POST /gradio_api/upload: an upload must say its size (one Content-Length and no Transfer-Encoding;
  a browser's and gradio_client's always do), and is refused before a byte is stored when its address or the app is
  over a cap (ui.uploads; 413, 429 or 507, with the reason as the body: the page shows it after
  "HTTP 429:", gradio_client names the status). As it arrives its bytes and its parts (files) are
  counted against those caps again, and it must keep a pace (Pace): an upload that passes a cap part-way
  or trickles is cut off (429, 507 or 408). Gradio deletes what it stored of a body cut off (or left by
  its client) before the upload's room is given back. What Gradio stored is granted to that address.
- GET /gradio_api/file=PATH: an upload is served only to the address that sent it, a download copy
  (ui.handoff) only to the address it was offered to. To anyone else the answer is Gradio's own for a
  path that does not exist, so it tells nothing. A URL is not fetched for anyone.
- Any other POST (a call: queue/join, call/..., run/...) is read here, at most CALL_MAX and at the same
  pace, then handed on (413 past it, at once: a 300 MB body was held whole in memory). A call whose input
  names a file by URL (a FileData whose path is http(s)://...) is refused (400): Gradio would download it
  into its folder before any handler runs, with no size limit and past every upload cap, and the server
  would fetch whatever a visitor names. Files come by upload only.
- Gradio's routes this app never uses, which store or serve what no cap counts, are closed (404, CLOSED):
  process_recording stored a 150 MB body, deep_link wrote session state into the upload folder and
  served it to anyone.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from gradio_client.utils import is_file_obj_with_meta, is_http_url_like
from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.datastructures import Headers
from starlette.formparsers import MultiPartException

from searchbox.ui.handoff import offered_to
from searchbox.ui.uploads import Grant, UploadLedger, UploadRefused
from searchbox.ui.visitors import address_of, forwarded_for

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_UPLOAD = re.compile(r"/gradio_api/upload/?$")
_FILE = re.compile(r"/gradio_api/file(?:=|/)(.+)$", re.DOTALL)
# Recording upload, deep links, custom components' server functions (a multipart form of up to 1000
# files), streamed media inputs and outputs, and the proxy for gr.load'ed Spaces.
CLOSED = re.compile(r"/gradio_api/(?:process_recording|deep_link|component_server|stream/|proxy=)")
# The page's calls are its form's fields as JSON, a few KB with a long question: a pasted page of text
# fits a hundred times over.
CALL_MAX = 1024 * 1024
# Bytes a second a body must bring, over each SEARCHBOX_UPLOAD_STALL_SECONDS: a slow phone link sends ten
# times that, and a trickle (a byte every 2 s) held an upload's room for as long as it went on.
MIN_PACE = 16 * 1024
BY_URL = "This app takes files by upload only, not by URL: download the file and upload it."


class Stalled(Exception):
    """A body came in slower than the pace (MIN_PACE)."""


class Pace:
    """Over each `stall_s` seconds a body must bring MIN_PACE bytes a second, or the rest of it when less;
    `stall_s` 0: any pace."""

    def __init__(self, stall_s: float, length: int) -> None:
        self.stall_s, self.left = stall_s, length
        self._start_period()

    def _start_period(self) -> None:
        self._ends = time.monotonic() + self.stall_s
        self._due = min(self.left, int(MIN_PACE * self.stall_s))

    def _period_over(self) -> None:
        if self._due > 0:
            raise Stalled(f"This request's body came in too slowly (less than {MIN_PACE // 1024} KB a second over "
                          f"{self.stall_s:g} s) and was cut off; nothing of it is kept.")
        self._start_period()

    async def receive(self, receive: Receive) -> Message:
        """The next message of the body, or Stalled."""
        while True:
            wait = max(0.0, self._ends - time.monotonic()) if self.stall_s else None
            try:
                message = await asyncio.wait_for(receive(), wait)
            except TimeoutError:
                self._period_over()
                continue
            size = len(message.get("body", b""))
            self.left -= size
            self._due -= size
            if self.stall_s and time.monotonic() >= self._ends:
                self._period_over()
            return message


class _Parts:
    """Counts the parts of a multipart body as it streams (with python-multipart, the parser Gradio's own uses)."""

    def __init__(self, content_type: str) -> None:
        _, options = parse_options_header(content_type)
        boundary = options.get(b"boundary")
        self.count = 0
        self._parser = MultipartParser(boundary, {"on_part_begin": self._begin}) if boundary else None

    def _begin(self) -> None:
        self.count += 1

    def write(self, data: bytes) -> None:
        if self._parser is not None:  # with no boundary Gradio refuses the upload itself
            self._parser.write(data)


class _UploadBody:
    """An upload's body as Gradio reads it: counted against its grant and paced as it arrives. A body that
    passes a cap, stalls or is left by its client is cut off: Gradio is told with the exception its own
    parser meets on a bad form, on which it deletes the files it was writing."""

    def __init__(self, uploads: UploadLedger, gate_receive: Receive, headers: Headers, grant: Grant) -> None:
        self.uploads, self._receive, self.grant = uploads, gate_receive, grant
        self.pace = Pace(uploads.limits.stall_s, grant.size)
        self.parts = _Parts(headers.get("content-type", ""))
        self.arrived = 0
        self.done = False
        self.cut: UploadRefused | None = None  # status 0: the client went away, no one to answer

    async def receive(self) -> Message:
        if self.done:
            return await self._receive()  # after the body: the disconnect, when it comes
        try:
            message = await self.pace.receive(self._receive)
            if message["type"] != "http.request":
                raise UploadRefused(0, "The client went away part-way through its upload.")
            body = message.get("body", b"")
            self.arrived += len(body)
            try:
                self.parts.write(body)
            except MultipartParseError as exc:
                raise UploadRefused(400, f"This upload is not a well-formed multipart form: {exc}") from exc
            self.uploads.grow(self.grant, self.arrived, self.parts.count)
        except Stalled as stalled:
            self.cut = UploadRefused(408, str(stalled))
        except UploadRefused as refused:
            self.cut = refused
        if self.cut is not None:
            raise MultiPartException(str(self.cut))
        self.done = not message.get("more_body", False)
        return message


class FileGate:
    def __init__(self, app: ASGIApp, uploads: UploadLedger) -> None:
        self.app = app
        self.uploads = uploads

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, method = scope.get("path", ""), scope.get("method", "")
        if CLOSED.match(path):
            await _plain(send, 404, f"This app does not serve {path}.")
            return
        if method == "POST" and _UPLOAD.search(path):
            await self._upload(scope, receive, send)
            return
        if method == "POST":
            await self._call(scope, receive, send)
            return
        served = _FILE.search(path) if method in ("GET", "HEAD") else None
        if served and not self._may_fetch(served.group(1), _address(scope)):
            await _plain(send, 403, f"File not allowed: {served.group(1)}.")
            return
        await self.app(scope, receive, send)

    def _may_fetch(self, path: str, address: str) -> bool:
        if is_http_url_like(path):
            return False  # Gradio would fetch it for whoever asks
        offered = offered_to(path)
        if offered is not None:
            return bool(offered) and offered == address
        uploaders = self.uploads.uploaders(path)
        return uploaders is None or address in uploaders  # a file of Gradio's own: its rules

    async def _call(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass a call on unless its body passes CALL_MAX or stalls, or its inputs name a file by URL; its
        body, read here, is handed on whole."""
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > CALL_MAX:
            await _plain(send, 413, _too_big(int(declared)))
            return
        pace = Pace(self.uploads.limits.stall_s, int(declared) if declared.isdigit() else CALL_MAX)
        body = bytearray()
        more = True
        while more:
            try:
                message = await pace.receive(receive)
            except Stalled as stalled:
                await _plain(send, 408, str(stalled))
                return
            if message["type"] != "http.request":  # the client went away
                return
            body += message.get("body", b"")
            if len(body) > CALL_MAX:  # a body with no Content-Length: refused as soon as it passes
                await _plain(send, 413, _too_big(len(body)))
                return
            more = message.get("more_body", False)
        if _names_a_url(bytes(body)):
            await _plain(send, 400, BY_URL)
            return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()  # after the body: the disconnect, when it comes
            sent = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)

    async def _upload(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        lengths = headers.getlist("content-length")
        # The size is counted before the body is read, so the body must be framed by it alone: a chunked
        # body sent beside a small Content-Length was stored whole (200 KB counted as 10 bytes).
        if len(lengths) != 1 or not lengths[0].isdigit() or "transfer-encoding" in headers:
            await _plain(send, 411, "An upload must say its size: one Content-Length header, and no Transfer-Encoding.")
            return
        try:
            grant = self.uploads.reserve(_address(scope), int(lengths[0]))
        except UploadRefused as refused:
            await _plain(send, refused.status, str(refused))
            return
        upload = _UploadBody(self.uploads, receive, headers, grant)
        status, body = 0, bytearray()

        async def watch(message: Message) -> None:
            nonlocal status
            if upload.cut is not None:
                return  # Gradio's answer to a body cut off: the gate answers instead
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                body.extend(message.get("body", b""))
            await send(message)

        stored: list[str] = []
        try:
            await self.app(scope, upload.receive, watch)
            if status == 200:
                stored = [p for p in json.loads(bytes(body)) if isinstance(p, str)]
        finally:
            # Gradio is done: it moved the files into place, or deleted what it was writing.
            if stored:
                self.uploads.stored(grant, stored)
            else:
                self.uploads.cancel(grant)
        if upload.cut is not None and upload.cut.status:
            await _plain(send, upload.cut.status, str(upload.cut))


def _names_a_url(body: bytes) -> bool:
    """Whether a call's JSON names a file by URL anywhere in its data (Gradio's own test for a file)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return False  # not JSON: Gradio refuses it itself
    found = False

    def visit(value: Any) -> None:
        nonlocal found
        if is_file_obj_with_meta(value):
            found = found or is_http_url_like(value["path"])
        elif isinstance(value, dict):
            for item in value.values():
                visit(item)
        elif isinstance(value, list):
            for item in value:
                visit(item)

    try:
        visit(data)
    except RecursionError:
        return True  # nested past what can be checked: not passed on unchecked
    return found


def _address(scope: Scope) -> str:
    client = scope.get("client")
    return address_of(client[0] if client else "", forwarded_for(Headers(scope=scope)))


def _too_big(size: int) -> str:
    return (f"This request's body ({size / 1024:.0f} KB or more) is more than the app takes for a call "
            f"({CALL_MAX // 1024} KB); files go to /gradio_api/upload.")


async def _plain(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
