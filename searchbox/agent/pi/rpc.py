"""The Pi process in RPC mode: commands as JSON lines on its stdin, responses and events as JSON lines
on its stdout, split on LF only (a JSON string may hold U+2028, which text line readers split on).
Pi runs in its own process group, so closing it ends whatever it started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

Line = dict[str, Any]


class PiExited(Exception):
    """Pi's process ended, or did not answer a command in time."""


class PiProcess:
    def __init__(self, argv: list[str], *, cwd: Path, env: dict[str, str], stderr_path: Path,
                 on_event: Callable[[Line], None]) -> None:
        self.on_event = on_event  # every line that is not a command's response; {"type": "_exit"} at the end
        self._stderr_path = stderr_path
        self._stderr = stderr_path.open("ab")
        self.process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self._stderr, start_new_session=True)
        self._write_lock = threading.Lock()
        self._waiting: dict[str, tuple[threading.Event, list[Line]]] = {}
        self._next_id = 0
        self._reader = threading.Thread(target=self._read, name="pi-rpc", daemon=True)
        self._reader.start()

    def send(self, command: Line) -> None:
        """A command without waiting for its response (a prompt's events come long after it)."""
        data = (json.dumps(command, ensure_ascii=True) + "\n").encode()  # ASCII: no raw separators on the wire
        with self._write_lock:
            try:
                assert self.process.stdin is not None
                self.process.stdin.write(data)
                self.process.stdin.flush()
            except (BrokenPipeError, ValueError, OSError) as exc:
                raise PiExited(f"Pi's stdin is closed: {exc}") from exc

    def request(self, command: Line, timeout: float = 30.0) -> Line:
        """Send a command and wait for its response; PiExited when none comes in time."""
        with self._write_lock:
            self._next_id += 1
            request_id = f"sb-{self._next_id}"
        done, slot = threading.Event(), []
        self._waiting[request_id] = (done, slot)
        try:
            self.send({**command, "id": request_id})
            if not done.wait(timeout) or not slot:
                ended = "Pi exited" if self.process.poll() is not None else f"no answer within {timeout:.0f} s"
                raise PiExited(f"{ended} to {command.get('type')!r}")
            return slot[0]
        finally:
            self._waiting.pop(request_id, None)

    def stderr_tail(self, chars: int = 1500) -> str:
        try:
            with self._stderr_path.open("rb") as handle:
                handle.seek(max(0, self._stderr_path.stat().st_size - chars))
                return handle.read().decode("utf-8", errors="replace").strip()
        except OSError:
            return ""

    def close(self, grace_s: float = 3.0) -> None:
        """End Pi and everything in its process group."""
        if self.process.poll() is None:
            try:
                assert self.process.stdin is not None
                self.process.stdin.close()  # RPC mode exits when its input ends
            except OSError:
                pass
            try:
                self.process.wait(grace_s)
            except subprocess.TimeoutExpired:
                pass
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.process.pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            try:
                self.process.wait(grace_s)
                break
            except subprocess.TimeoutExpired:
                continue
        self._reader.join(grace_s)
        self._stderr.close()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:  # a binary stream splits on b"\n" only
            line = raw.rstrip(b"\n").removesuffix(b"\r")
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                continue  # not a record of the protocol (a stray print): nothing to act on
            if not isinstance(message, dict):
                continue
            waiting = self._waiting.get(str(message.get("id"))) if message.get("type") == "response" else None
            if waiting is not None:
                waiting[1].append(message)
                waiting[0].set()
            elif message.get("type") != "response":
                self.on_event(message)
        code = self.process.wait()
        for done, _ in list(self._waiting.values()):
            done.set()  # no answer will come: a request fails now, not at its timeout
        self.on_event({"type": "_exit", "code": code})
