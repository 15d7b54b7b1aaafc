"""The local socket through which Pi's tools run searchbox's own (issue 23 item 3): a unix socket in
the job folder, outside work/, that only a client holding the run's token may use. Each request is a
JSON line: {"token", "op": "tools"} for what the run offers, or {"token", "op": "call", "id", "name",
"arguments"}; each answer is a JSON line back. Requests go to `submit` with a function that answers
them, so the run decides when and in which thread a tool runs."""

from __future__ import annotations

import hmac
import json
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

Request = dict[str, Any]
Reply = Callable[[dict[str, Any]], None]

# sun_path holds 108 bytes; a deeper job folder gets its socket in a private folder under /tmp.
_MAX_SOCKET_PATH = 100


class ToolServer:
    def __init__(self, path: Path, token: str, submit: Callable[[Request, Reply], None]) -> None:
        self._private_dir: Path | None = None
        if len(os.fsencode(path)) > _MAX_SOCKET_PATH:
            import tempfile

            self._private_dir = Path(tempfile.mkdtemp(prefix="sbx-tools-"))  # mode 0700
            path = self._private_dir / "tools.sock"
        self.path = path
        self._token = token
        self._submit = submit
        path.unlink(missing_ok=True)
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)  # the socket file is the app user's alone from the start
        try:
            self._socket.bind(str(path))
        finally:
            os.umask(old_umask)
        self._socket.listen(8)
        self._closed = threading.Event()
        self._connections: list[socket.socket] = []
        threading.Thread(target=self._accept, name="pi-tool-server", daemon=True).start()

    def close(self) -> None:
        self._closed.set()
        for sock in [self._socket, *self._connections]:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self.path.unlink(missing_ok=True)
        if self._private_dir is not None:
            self._private_dir.rmdir()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            self._connections.append(connection)
            threading.Thread(target=self._serve, args=(connection,), name="pi-tool-conn", daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        lock = threading.Lock()

        def reply(answer: dict[str, Any]) -> None:
            data = (json.dumps(answer, ensure_ascii=True) + "\n").encode()
            with lock:
                try:
                    connection.sendall(data)
                except OSError:
                    pass  # Pi is gone: the run notices through its process

        with connection, connection.makefile("rb") as lines:
            for raw in lines:
                try:
                    request = json.loads(raw)
                except ValueError:
                    return
                if not isinstance(request, dict) or not hmac.compare_digest(str(request.get("token", "")), self._token):
                    return  # not the run's Pi: no answer, no tool
                request_id = request.get("id")
                self._submit(request, lambda answer, request_id=request_id: reply({**answer, "id": request_id}))
