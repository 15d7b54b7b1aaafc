"""The file gate: what Gradio's own routes for files are not told about visitors.

An ASGI middleware in front of Gradio's routes (app.py hands it to launch()). It keeps two of them
to the visitor they belong to, by client address (ui.visitors.address_of):

- POST /gradio_api/upload: an upload must say its size (one Content-Length and no Transfer-Encoding;
  a browser's and gradio_client's always do), and is refused before a byte is stored when its address or the app is
  over a cap (ui.uploads; 413, 429 or 507, with the reason as the body: the page shows it after
  "HTTP 429:", gradio_client names the status). What Gradio stored is granted to that address.
- GET /gradio_api/file=PATH: an upload is served only to the address that sent it, a download copy
  (ui.handoff) only to the address it was offered to. To anyone else the answer is Gradio's own for a
  path that does not exist, so it tells nothing.
- A call whose input names a file by URL (a FileData whose path is http(s)://...) is refused (400):
  Gradio would download it into its folder before any handler runs, with no size limit and past every
  upload cap, and the server would fetch whatever a visitor names. Files come by upload only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from gradio_client.utils import is_file_obj_with_meta, is_http_url_like
from starlette.datastructures import Headers

from searchbox.ui.handoff import offered_to
from searchbox.ui.uploads import UploadLedger, UploadRefused
from searchbox.ui.visitors import address_of

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_UPLOAD = re.compile(r"/gradio_api/upload/?$")
_FILE = re.compile(r"/gradio_api/file(?:=|/)(.+)$", re.DOTALL)
_CALL = re.compile(r"/gradio_api/")
BY_URL = "This app takes files by upload only, not by URL: download the file and upload it."


class FileGate:
    def __init__(self, app: ASGIApp, uploads: UploadLedger) -> None:
        self.app = app
        self.uploads = uploads

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, method = scope.get("path", ""), scope.get("method", "")
        if method == "POST" and _UPLOAD.search(path):
            await self._upload(scope, receive, send)
            return
        if method == "POST" and _CALL.search(path):
            await self._call(scope, receive, send)
            return
        served = _FILE.search(path) if method in ("GET", "HEAD") else None
        if served and not self._may_fetch(served.group(1), _address(scope)):
            await _plain(send, 403, f"File not allowed: {served.group(1)}.")
            return
        await self.app(scope, receive, send)

    def _may_fetch(self, path: str, address: str) -> bool:
        offered = offered_to(path)
        if offered is not None:
            return bool(offered) and offered == address
        uploaders = self.uploads.uploaders(path)
        return uploaders is None or address in uploaders  # a file of Gradio's own: its rules

    async def _call(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass a call on unless its inputs name a file by URL; its body, read here, is handed on whole."""
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if _names_a_url(body):
            await _plain(send, 400, BY_URL)
            return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()  # after the body: the disconnect, when it comes
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

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
        status, body = 0, bytearray()

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                body.extend(message.get("body", b""))
            await send(message)

        stored: list[str] = []
        try:
            await self.app(scope, receive, watch)
            if status == 200:
                stored = [p for p in json.loads(bytes(body)) if isinstance(p, str)]
        finally:
            if stored:
                self.uploads.stored(grant, stored)
            else:
                self.uploads.cancel(grant)


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
    return address_of(client[0] if client else "", Headers(scope=scope).get("x-forwarded-for", ""))


async def _plain(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
