"""Issue #32: what one visitor can do to another through Gradio's file routes, against the real app in
a subprocess on loopback. Uploads are capped per client address and in total, and kept only while a
page or run needs them; an upload or a download copy is served, and an upload taken as a run's or the
explorer's input, only for the visitor it belongs to.

Visitors at different addresses are told apart as behind a reverse proxy the operator names
(SEARCHBOX_TRUSTED_PROXIES=127.0.0.1): each sends its address in X-Forwarded-For.
"""

from __future__ import annotations

import io
import json
import socket
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from gradio_client import Client, handle_file

from testkit.app_server import live, running_app, throwaway_home
from testkit.load_harness import search_args
from testkit.scripted_endpoint import Reply, ScriptedEndpoint
from testkit.tally import report

pytestmark = pytest.mark.slow  # the real app in a subprocess

A, B = "203.0.113.1", "198.51.100.2"
BEHIND_A_PROXY = {"SEARCHBOX_TRUSTED_PROXIES": "127.0.0.1"}


def room(text: str = "The lease ends in 2029.") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("notes/a.md", text)
    return buffer.getvalue()


def upload(url: str, address: str, name: str, body: bytes) -> httpx.Response:
    return httpx.post(f"{url}gradio_api/upload", files=[("files", (name, body))],
                      headers={"X-Forwarded-For": address}, timeout=60)


def fetch(url: str, address: str | None, path: str) -> int:
    headers = {"X-Forwarded-For": address} if address else {}
    return httpx.get(f"{url}gradio_api/file={path}", headers=headers, timeout=30).status_code


def call(url: str, address: str, api_name: str, data: list) -> tuple[str, str]:
    """A REST call (what a script without gradio_client sends), as (event, data) of its last message."""
    headers = {"X-Forwarded-For": address}
    started = httpx.post(f"{url}gradio_api/call/{api_name}", json={"data": data}, headers=headers, timeout=30)
    started.raise_for_status()
    stream = httpx.get(f"{url}gradio_api/call/{api_name}/{started.json()['event_id']}", headers=headers, timeout=120)
    lines = [line for line in stream.text.splitlines() if line.startswith(("event:", "data:"))]
    return lines[-2].removeprefix("event: "), lines[-1].removeprefix("data: ")


def smuggled(url: str, name: str, size: int) -> bytes:
    """The status line of an upload whose chunked body is framed apart from the Content-Length it states."""
    part = (f'--x\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n\r\n'.encode()
            + b"A" * size + b"\r\n--x--\r\n")
    request = (b"POST /gradio_api/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: 192.0.2.6\r\n"
               b"Content-Type: multipart/form-data; boundary=x\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n"
               b"Connection: close\r\n\r\n" + f"{len(part):x}\r\n".encode() + part + b"\r\n0\r\n\r\n")
    with socket.create_connection(("127.0.0.1", urlsplit(url).port or 80), timeout=30) as connection:
        connection.sendall(request)
        return connection.recv(200)


def file_data(path: str) -> dict:
    return {"path": path, "meta": {"_type": "gradio.FileData"}}


def stored(served: Path, name: str) -> list[Path]:
    return [p for p in served.rglob(name) if p.is_file()]


def wait_for(condition: Callable[[], bool], seconds: float = 45) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.3)
    return condition()


@pytest.fixture
def home() -> Iterator[Path]:
    with throwaway_home("uploads") as path:
        yield path


def test_uploads_are_capped_per_address_and_in_total(home: Path) -> None:
    """Gradio stored every upload of anyone, up to SEARCHBOX_MAX_UPLOAD_MB each, for a day, with no cap on
    how many: one address could fill the disk."""
    served = home / "gradio"
    with running_app(home, GRADIO_TEMP_DIR=str(served), SEARCHBOX_UPLOADS_PER_ADDRESS="2",
                     SEARCHBOX_UPLOADS_TOTAL_MB="1", **BEHIND_A_PROXY) as url:
        assert [upload(url, A, f"a{n}.zip", room(f"note {n}")).status_code for n in range(2)] == [200, 200]
        refused = upload(url, A, "refused-a.zip", room("one too many"))
        assert refused.status_code == 429 and "Your address already has 2 uploads" in refused.text
        # gradio_client names the status; the page shows the reason after "HTTP 429:" (the body).
        room_zip = home / "room.zip"
        room_zip.write_bytes(room())
        with pytest.raises(httpx.HTTPStatusError, match="429 Too Many Requests") as raised:
            Client(url, verbose=False, headers={"X-Forwarded-For": A}).predict(handle_file(str(room_zip)),
                                                                              api_name="/load_dataroom")
        assert "Your address already has 2 uploads" in raised.value.response.text
        assert upload(url, B, "b.zip", room()).status_code == 200  # another address has room of its own
        big = bytes(range(256)) * 2400  # 600 KB: two of them pass the app's 1 MB
        assert upload(url, "192.0.2.3", "c.zip", big).status_code == 200
        full = upload(url, "192.0.2.4", "refused-d.zip", big)
        assert full.status_code == 507 and "holds all the uploads it can keep" in full.text
        unsized = httpx.post(f"{url}gradio_api/upload", headers={"X-Forwarded-For": "192.0.2.5",
                                                                "Content-Type": "multipart/form-data; boundary=x"},
                             content=iter([b"--x--\r\n"]), timeout=30)  # chunked: no Content-Length
        assert unsized.status_code == 411
        # A chunked body beside a small Content-Length: counted as 10 bytes, it was stored whole.
        assert smuggled(url, "refused-chunked.zip", 200_000).startswith(b"HTTP/1.1 411")
    assert stored(served, "refused-*.zip") == []  # nothing of a refused upload was stored
    report("uploads capped", "3 of 3 uploads over a cap refused before storing (per address: 429, raw and through "
           "gradio_client; in total: 507), 2 of 2 not framed by one Content-Length refused (411); nothing of "
           "them stored")


def test_an_upload_no_one_took_goes_soon_and_frees_its_room(home: Path) -> None:
    """An upload no run or page used stayed for SEARCHBOX_UPLOAD_KEEP_SECONDS (a day)."""
    served = home / "gradio"
    with running_app(home, GRADIO_TEMP_DIR=str(served), SEARCHBOX_UPLOADS_PER_ADDRESS="1",
                     SEARCHBOX_UPLOAD_UNCLAIMED_SECONDS="2", **BEHIND_A_PROXY) as url:
        first = upload(url, A, "first.zip", room())
        assert first.status_code == 200 and Path(first.json()[0]).is_file()
        assert wait_for(lambda: not Path(first.json()[0]).exists())
        assert upload(url, A, "second.zip", room("again")).status_code == 200  # its room is free again


def test_an_upload_a_page_took_stays_until_that_page_closes(home: Path, tmp_path: Path) -> None:
    served = home / "gradio"
    room_zip = tmp_path / "room.zip"
    room_zip.write_bytes(room())
    with running_app(home, GRADIO_TEMP_DIR=str(served), SEARCHBOX_UPLOAD_UNCLAIMED_SECONDS="2") as url:
        page = Client(url, verbose=False)
        summary, _ = page.predict(handle_file(str(room_zip)), api_name="/load_dataroom")
        assert "1 of 1 files read" in summary
        [kept] = stored(served, "room.zip")
        time.sleep(6)  # three times the unclaimed upload's time
        assert kept.is_file()
        page.close()  # as closing or reloading the tab does
        assert wait_for(lambda: not kept.exists())


def test_an_api_callers_run_lets_its_upload_go_at_once(home: Path, tmp_path: Path) -> None:
    """A script that runs on one dataroom after another, in one client: each upload stays no longer than
    its run needs it (the job has its own copy), so the per-address cap never stops the next run."""
    served = home / "gradio"
    answer = Reply(text="The lease ends in 2029 [s1].")
    with ScriptedEndpoint(default=answer) as endpoint, \
            running_app(home, GRADIO_TEMP_DIR=str(served), LLAMA_URL=endpoint.url, MODEL_ID="scripted",
                        SEARCHBOX_UPLOADS_PER_ADDRESS="1") as url:
        client = Client(url, verbose=False)
        for n in range(2):
            path = tmp_path / f"room{n}.zip"
            path.write_bytes(room(f"note {n}"))
            args = list(search_args(f"upload {n}", "api-owner"))
            args[1] = handle_file(str(path))
            assert "done" in live(client.predict(*args, api_name="/search"))["status"]
        assert wait_for(lambda: stored(served, "room*.zip") == [], 10)  # while the client is still open
        assert len(list((home / "jobs").glob("*/input.zip"))) == 2


def test_a_visitor_cannot_take_anothers_upload_by_its_path(home: Path) -> None:
    """Gradio takes any file in its upload folder as a call's input: a run started, and the explorer
    loaded, from the path of another visitor's upload."""
    served = home / "gradio"
    answer = Reply(text="The lease ends in 2029 [s1].")
    with ScriptedEndpoint(default=answer) as endpoint, \
            running_app(home, GRADIO_TEMP_DIR=str(served), LLAMA_URL=endpoint.url, MODEL_ID="scripted",
                        **BEHIND_A_PROXY) as url:
        theirs = upload(url, A, "theirs.zip", room()).json()[0]
        run = [*search_args("stolen", "b-owner"), "native"]  # the form, then the harness
        run[1] = file_data(theirs)  # the upload field
        attempts = {"explorer": call(url, B, "load_dataroom", [file_data(theirs), "packaged"]),
                    "run": call(url, B, "search", run)}
        for where, (event, data) in attempts.items():
            assert event == "error" and "This upload is not yours" in data, (where, event, data[:300])
        assert not list((home / "jobs").glob("*/job.json"))  # no run was made of it
        assert fetch(url, B, theirs) == 403 and fetch(url, None, theirs) == 403
        assert fetch(url, A, theirs) == 200
        event, data = call(url, A, "load_dataroom", [file_data(theirs), "packaged"])
        assert event == "complete" and "1 of 1 files read" in data  # its own visitor takes it
        # Once a page took it, another page at the same address does not: the upload is that page's.
        event, data = call(url, A, "load_dataroom", [file_data(theirs), "packaged"])
        assert event == "error" and "This upload is not yours" in data
    report("another visitor's upload", "5 of 5 refused: taken by its path for a run and for the explorer from "
           "another address, fetched from 2 other addresses, taken by a second page at its own address; no job made")


def test_a_file_named_by_url_is_refused_before_gradio_fetches_it(home: Path) -> None:
    """Gradio downloads a FileData input whose path is a URL into its folder before any handler runs, with
    no size limit: a way past every upload cap, and a fetch of whatever a visitor names."""
    served = home / "gradio"
    named = file_data("https://files.example.invalid/room.zip")
    with running_app(home, GRADIO_TEMP_DIR=str(served)) as url:
        refused = httpx.post(f"{url}gradio_api/call/load_dataroom", json={"data": [named, "packaged"]}, timeout=30)
        assert refused.status_code == 400 and "takes files by upload only" in refused.text
        with pytest.raises(Exception, match="400 Bad Request"):
            Client(url, verbose=False).predict(handle_file(named["path"]), api_name="/load_dataroom")
    assert stored(served, "room.zip") == []
    report("files named by URL", "2 of 2 calls refused before Gradio fetched anything (REST and gradio_client)")


def test_a_download_is_served_only_to_the_address_it_was_offered_to(home: Path) -> None:
    """The ANSWER.md and bundle links were capabilities: whoever held one fetched the file."""
    answer = Reply(text="The auditor was Example & Co [s1].")
    with ScriptedEndpoint(default=answer) as endpoint, \
            running_app(home, GRADIO_TEMP_DIR=str(home / "gradio"), LLAMA_URL=endpoint.url, MODEL_ID="scripted",
                        **BEHIND_A_PROXY) as url:
        client = Client(url, verbose=False, headers={"X-Forwarded-For": A}, download_files=False)
        final = live(client.predict(*search_args("downloads", "a-owner"), api_name="/search"))
        links = [final["answer_file"]["path"], final["bundle"]["path"]]
        assert all(Path(link).name in ("ANSWER.md", "bundle.zip") for link in links), json.dumps(final)[:500]
        assert [fetch(url, A, link) for link in links] == [200, 200]
        assert [fetch(url, B, link) for link in links] == [403, 403]
        assert [fetch(url, None, link) for link in links] == [403, 403]  # the proxy's own address is no one
    report("another visitor's downloads", "4 of 4 link fetches from other addresses refused; the owner's 2 served")
