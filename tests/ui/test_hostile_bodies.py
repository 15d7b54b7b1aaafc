"""Issue #43 (parts 2, 3 and 5): request bodies a hostile visitor sends, against the real app in a subprocess
on loopback, over raw sockets where a client library would not send what an attacker does (a trickle, a
body cut off part-way, a header on two lines).

- A call's body is read at most CALL_MAX (1 MB) before anything is kept: a 300 MB body to queue/join was
  held whole in memory (451 MB to 1,650 MB). Gradio's routes the app never uses are closed.
- Uploads are counted as they arrive: a trickle holds little of the room all visitors share and is cut off,
  a body cut off leaves nothing on disk before its room is given back, and each file of a multipart
  request counts.
- X-Forwarded-For sent on two lines (HAProxy's `option forwardfor` adds its own line) is one list.

Visitors at different addresses are told apart as behind a reverse proxy the operator names
(SEARCHBOX_TRUSTED_PROXIES=127.0.0.1): each sends its address in X-Forwarded-For.
"""

from __future__ import annotations

import io
import socket
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import gradio as gr
import httpx
import pytest
from gradio_client import Client
from starlette.requests import Request

from testkit.app_server import running_app, throwaway_home
from testkit.tally import report

A, B = "203.0.113.1", "198.51.100.2"
BEHIND_A_PROXY = {"SEARCHBOX_TRUSTED_PROXIES": "127.0.0.1"}
MB = 1024 * 1024
PART_HEAD = b'--x\r\nContent-Disposition: form-data; name="files"; filename="hostile.zip"\r\n\r\n'


def room(text: str = "The lease ends in 2029.") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("notes/a.md", text)
    return buffer.getvalue()


def upload(url: str, address: str, files: list[tuple[str, bytes]], **headers: str) -> httpx.Response:
    return httpx.post(f"{url}gradio_api/upload", files=[("files", file) for file in files],
                      headers={"X-Forwarded-For": address, **headers}, timeout=60)


def port_of(url: str) -> int:
    return urlsplit(url).port or 80


def request_head(url: str, path: str, *lines: str) -> bytes:
    return "\r\n".join([f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port_of(url)}", *lines, "", ""]).encode()


def upload_head(url: str, address: str, length: int) -> bytes:
    return request_head(url, "/gradio_api/upload", f"X-Forwarded-For: {address}",
                        "Content-Type: multipart/form-data; boundary=x", f"Content-Length: {length}")


def answer(connection: socket.socket, seconds: float = 20) -> bytes:
    """The server's answer, head and body; b"" when none came within `seconds`."""
    connection.settimeout(seconds)
    got = b""
    try:
        while b"\r\n\r\n" not in got or len(got) < _answer_length(got):
            chunk = connection.recv(65536)
            if not chunk:
                break
            got += chunk
    except TimeoutError:
        pass
    return got


def _answer_length(got: bytes) -> int:
    head, _, _ = got.partition(b"\r\n\r\n")
    lengths = [line.split(b":", 1)[1] for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:")]
    return len(head) + 4 + (int(lengths[0]) if lengths else 0)


class Trickle:
    """An upload that declares `length` bytes, sends its part's head and `first` bytes, then a byte every
    `every` seconds until stopped or cut off."""

    def __init__(self, url: str, address: str, length: int, first: int = 0, every: float = 0.5) -> None:
        self.connection = socket.create_connection(("127.0.0.1", port_of(url)), timeout=30)
        self.connection.sendall(upload_head(url, address, length) + PART_HEAD + b"A" * first)
        self.every = every
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._trickle, daemon=True)
        self.thread.start()

    def _trickle(self) -> None:
        while not self.stopped.wait(self.every):
            try:
                self.connection.send(b"A")
            except OSError:  # cut off
                return

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()
        self.connection.close()


def temp_files(served: Path) -> list[Path]:
    """What Gradio is writing, or left: its temporary files sit in the upload folder itself (a stored upload
    is in a folder of its own)."""
    return [p for p in served.glob("tmp*") if p.is_file()] if served.is_dir() else []


def stored_files(served: Path) -> list[Path]:
    return [p for p in served.rglob("*") if p.is_file()] if served.is_dir() else []


def wait_for(condition: Callable[[], bool], seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.2)
    return condition()


@pytest.fixture
def home() -> Iterator[Path]:
    with throwaway_home("hostile") as path:
        yield path


@pytest.mark.slow
def test_a_call_body_past_the_cap_is_refused_before_it_is_read(home: Path) -> None:
    """One anonymous 300 MB JSON body to queue/join took the app from 451 MB to 1,650 MB: the gate read every
    call's body whole before it checked anything."""
    with running_app(home, GRADIO_TEMP_DIR=str(home / "gradio")) as url:
        with socket.create_connection(("127.0.0.1", port_of(url)), timeout=30) as declared:
            declared.sendall(request_head(url, "/gradio_api/queue/join", "Content-Type: application/json",
                                          f"Content-Length: {300 * MB}") + b'{"data": ["' + b"x" * (2 * MB))
            refused = answer(declared)
        assert refused.startswith(b"HTTP/1.1 413"), refused[:200]
        # A chunked body says no size: refused as soon as it passes the cap, while it is still coming.
        with socket.create_connection(("127.0.0.1", port_of(url)), timeout=30) as chunked:
            chunked.sendall(request_head(url, "/gradio_api/call/jobs", "Content-Type: application/json",
                                         "Transfer-Encoding: chunked") + b"6\r\n" + b'{"data' + b"\r\n")
            for _ in range(6):
                chunked.sendall(f"{256 * 1024:x}\r\n".encode() + b"x" * (256 * 1024) + b"\r\n")
            refused_chunked = answer(chunked)
        assert refused_chunked.startswith(b"HTTP/1.1 413"), refused_chunked[:200]
        assert b"more than the app takes for a call" in refused_chunked
        small = httpx.post(f"{url}gradio_api/call/jobs", json={"data": ["someone"]}, timeout=30)
        assert small.status_code == 200 and "event_id" in small.json()  # a call of the page's size passes
    report("call bodies", "2 of 2 call bodies past 1 MB refused (413) before the rest was sent: one declaring "
           "300 MB, one chunked; a call of the page's size passes")


@pytest.mark.slow
def test_routes_the_app_never_uses_are_closed(home: Path) -> None:
    """process_recording stored a 150 MB body outside every cap while its reply was unread; deep_link wrote
    a session's state into the upload folder and served it to any address."""
    served = home / "gradio"
    with running_app(home, GRADIO_TEMP_DIR=str(served)) as url:
        recording = httpx.post(f"{url}gradio_api/process_recording", files=[("data", ("rec.wav", b"R" * 150_000))],
                               timeout=30)
        client = Client(url, verbose=False)
        client.predict("someone", api_name="/jobs")  # a session Gradio holds state for
        deep_link = httpx.get(f"{url}gradio_api/deep_link", params={"session_hash": client.session_hash}, timeout=30)
        component = httpx.post(f"{url}gradio_api/component_server", files=[("data", ("a.bin", b"C" * 1000))],
                               timeout=30)
        history = httpx.get(f"{url}gradio_api/run-history/buckets", timeout=30)
        by_url = httpx.get(f"{url}gradio_api/file=https://93.184.216.34/room.zip", timeout=30)
        statuses = [r.status_code for r in (recording, deep_link, component, history)]
        assert statuses == [404, 404, 404, 404], [(r.status_code, r.text[:100]) for r in
                                                  (recording, deep_link, component, history)]
        assert by_url.status_code == 403 and "File not allowed" in by_url.text
        client.close()
    assert not (served / "deep_links").exists()
    assert [p.name for p in stored_files(served)] == []
    report("closed routes", "4 of 4 routes the app never uses closed (process_recording, deep_link, "
           "component_server, run history); a file by URL not fetched; nothing stored")


@pytest.mark.slow
def test_trickled_uploads_do_not_starve_another_visitors_upload(home: Path) -> None:
    """Four addresses declared 100 MB uploads and sent a byte every 2 s: every other visitor's upload got 507
    for as long as they trickled, with 0 bytes stored."""
    served = home / "gradio"
    with running_app(home, GRADIO_TEMP_DIR=str(served), SEARCHBOX_UPLOADS_TOTAL_MB="400", **BEHIND_A_PROXY) as url:
        trickles = [Trickle(url, f"192.0.2.{n}", 100 * MB) for n in range(4)]
        try:
            assert wait_for(lambda: len(temp_files(served)) == 4)  # all four are being written
            other = upload(url, B, [("b.zip", room())])
            assert other.status_code == 200, other.text
        finally:
            for trickle in trickles:
                trickle.close()
    report("trickled uploads", "4 trickles declaring 100 MB each against a total of 400 MB: another visitor's "
           "upload stored (200)")


@pytest.mark.slow
def test_a_trickle_is_cut_off_and_its_bytes_deleted_before_its_room_is_free(home: Path) -> None:
    served = home / "gradio"
    with running_app(home, GRADIO_TEMP_DIR=str(served), SEARCHBOX_UPLOADS_PER_ADDRESS="1",
                     SEARCHBOX_UPLOAD_STALL_SECONDS="2", **BEHIND_A_PROXY) as url:
        trickle = Trickle(url, A, MB, first=100_000)
        try:
            assert wait_for(lambda: len(temp_files(served)) == 1)
            started = time.monotonic()
            cut = answer(trickle.connection, 15)
            took = time.monotonic() - started
        finally:
            trickle.close()
        assert cut.startswith(b"HTTP/1.1 408") and b"too slowly" in cut, cut[:200]
        assert temp_files(served) == []  # deleted by the time the answer came
        assert upload(url, A, [("again.zip", room())]).status_code == 200  # its room is free again
    report("a trickle", f"an upload sending a byte every 0.5 s cut off (408) after {took:.1f} s with "
           "SEARCHBOX_UPLOAD_STALL_SECONDS=2; its 100 KB gone from disk; its address's room free again")


@pytest.mark.slow
def test_an_upload_cut_off_mid_body_leaves_nothing_on_disk(home: Path) -> None:
    """Uploads cut off mid-body left their bytes on disk, tracked by nothing, and freed the address's cap
    (8 aborted: 200 MB)."""
    served = home / "gradio"
    with running_app(home, GRADIO_TEMP_DIR=str(served), SEARCHBOX_UPLOADS_PER_ADDRESS="1", **BEHIND_A_PROXY) as url:
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", port_of(url)), timeout=30) as aborted:
                aborted.sendall(upload_head(url, A, 2 * MB) + PART_HEAD + b"A" * 600_000)
                assert wait_for(lambda: sum(p.stat().st_size for p in temp_files(served)) >= 500_000)
        assert wait_for(lambda: temp_files(served) == [])
        assert stored_files(served) == []
        assert upload(url, A, [("after.zip", room())]).status_code == 200
    report("aborted uploads", "3 of 3 uploads whose client left part-way (600 KB each) left nothing on disk; "
           "their address's room free again")


@pytest.mark.slow
def test_each_file_of_a_multipart_upload_counts(home: Path) -> None:
    """The count cap was per request: one multipart request stored 60 files against a cap of 5."""
    served = home / "gradio"
    with running_app(home, GRADIO_TEMP_DIR=str(served), SEARCHBOX_UPLOADS_PER_ADDRESS="5", **BEHIND_A_PROXY) as url:
        many = upload(url, A, [(f"f{n}.zip", room(f"note {n}")) for n in range(60)])
        assert many.status_code == 429 and "more files than your address may keep" in many.text, many.text
        assert stored_files(served) == []
        five = upload(url, A, [(f"g{n}.zip", room(f"note {n}")) for n in range(5)])
        assert five.status_code == 200 and len(five.json()) == 5
        assert upload(url, A, [("h.zip", room())]).status_code == 429
    assert len(stored_files(served)) == 5
    report("files per request", "a request of 60 files against a cap of 5 refused (429), nothing stored; "
           "5 in one request stored, a 6th refused")


@pytest.mark.slow
def test_a_forwarded_header_on_two_lines_is_one_list(home: Path) -> None:
    """With SEARCHBOX_TRUSTED_PROXIES set, X-Forwarded-For on two lines (as HAProxy's option forwardfor adds
    its own) let a client pick its address: 8 of 8 uploads accepted against a cap of 5."""
    with running_app(home, GRADIO_TEMP_DIR=str(home / "gradio"), SEARCHBOX_UPLOADS_PER_ADDRESS="5",
                     **BEHIND_A_PROXY) as url:
        statuses = []
        for n in range(8):
            # The client's own line first, then the one its proxy added with the address it saw.
            lines = [("X-Forwarded-For", f"6.6.6.{n}"), ("X-Forwarded-For", A)]
            sent = httpx.post(f"{url}gradio_api/upload", files=[("files", (f"r{n}.zip", room(f"{n}")))],
                              headers=lines, timeout=60)
            statuses.append(sent.status_code)
    assert statuses == [200] * 5 + [429] * 3, statuses
    report("forwarded header on two lines", "3 of 8 uploads past a cap of 5 refused: the proxy's line counts")


def test_a_handler_reads_a_forwarded_header_on_two_lines_as_one_list(monkeypatch: pytest.MonkeyPatch) -> None:
    from searchbox.ui.visitors import client_address

    monkeypatch.delenv("SPACE_ID", raising=False)
    monkeypatch.setenv("SEARCHBOX_TRUSTED_PROXIES", "10.0.0.2")
    scope = {"type": "http", "client": ("10.0.0.2", 5000),
             "headers": [(b"x-forwarded-for", b"6.6.6.6"), (b"x-forwarded-for", b"198.51.100.7")]}
    assert client_address(gr.Request(request=Request(scope))) == "198.51.100.7"
