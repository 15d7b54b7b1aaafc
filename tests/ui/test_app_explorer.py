"""The real app in a subprocess, driven with gradio_client: upload a dataroom, run tools."""

from __future__ import annotations

import json
import re
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from gradio_client import Client, handle_file

from testkit.app_server import running_app
from conftest import SMALL_DATAROOM

pytestmark = pytest.mark.slow  # the real app in a subprocess


@pytest.fixture(scope="module")
def app_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("app")
    (home / "tmp").mkdir()
    return home


@pytest.fixture(scope="module")
def app_url(app_home: Path) -> Iterator[str]:
    # A public app (no SEARCHBOX_OPERATOR) whose operator asked for unconfined bash: it must refuse it.
    with running_app(app_home, TMPDIR=str(app_home / "tmp"), BASH_SANDBOX="off") as url:
        yield url


@pytest.fixture
def room_zip(tmp_path: Path) -> Path:
    path = tmp_path / "room.zip"
    with zipfile.ZipFile(path, "w") as z:
        for rel, text in SMALL_DATAROOM.items():
            z.writestr(f"acme/{rel}", text)
    return path


def test_upload_then_search(app_url: str, room_zip: Path) -> None:
    client = Client(app_url, verbose=False)
    summary, statuses = client.predict(handle_file(str(room_zip)), api_name="/load_dataroom")
    assert "5 of 5 files read" in summary
    assert sorted(row[0] for row in statuses["data"]) == sorted(SMALL_DATAROOM)
    rows, raw = client.predict("keyword_search", '{"query": "Harbour Street lease", "k": 2}', api_name="/run_tool")
    assert rows["data"][0][1] == "dataroom/legal/lease.txt"
    assert json.loads(raw)["result"]["results"][0]["id"] == "s1"
    _, raw = client.predict("search_dataroom", '{"query": "vacation days", "k": 1}', api_name="/run_tool")
    assert json.loads(raw)["result"]["results"][0]["path"] == "dataroom/hr/handbook.md"
    rows, raw = client.predict("grep", '{"pattern": "Harbour Street"}', api_name="/run_tool")  # a built-in too
    grep = json.loads(raw)
    assert rows["data"] == [] and "result" not in grep and not grep["is_error"]
    assert re.match(r"\[s\d+\] dataroom/legal/lease\.txt:1:The office lease at 14 Harbour Street", grep["output"])


def loaded_datarooms(app_home: Path) -> list[Path]:
    """Where the app keeps what the explorer loaded: among its jobs, within SEARCHBOX_JOBS_MAX_MB."""
    return sorted((app_home / "jobs" / ".explore").glob("*"))


def test_loading_another_dataroom_frees_the_previous_one(app_url: str, app_home: Path, room_zip: Path) -> None:
    def loaded() -> list[Path]:
        return loaded_datarooms(app_home)

    before = loaded()
    client = Client(app_url, verbose=False)
    client.predict(handle_file(str(room_zip)), api_name="/load_dataroom")
    first = [p for p in loaded() if p not in before]
    client.predict(None, api_name="/load_dataroom")
    second = [p for p in loaded() if p not in before]
    assert len(first) == 1 and len(second) == 1 and first != second
    bad = room_zip.with_name("bad.zip")
    bad.write_text("not a zip")
    with pytest.raises(Exception, match="not a zip"):
        client.predict(handle_file(str(bad)), api_name="/load_dataroom")
    assert [p for p in loaded() if p not in before] == second  # a refused upload leaves nothing behind


def test_a_bad_upload_gets_a_clear_error(app_url: str, tmp_path: Path) -> None:
    fake = tmp_path / "notes.zip"
    fake.write_text("this is not a zip")
    client = Client(app_url, verbose=False)
    with pytest.raises(Exception, match="not a zip"):
        client.predict(handle_file(str(fake)), api_name="/load_dataroom")


def test_uploads_are_deleted_once_they_are_searchbox_upload_keep_seconds_old(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    room = tmp_path_factory.mktemp("room") / "room.zip"
    with zipfile.ZipFile(room, "w") as z:
        z.writestr("notes/a.md", "The lease ends in 2029.")
    home = tmp_path_factory.mktemp("app-uploads")
    served = home / "gradio"
    with running_app(home, SEARCHBOX_UPLOAD_KEEP_SECONDS="2", GRADIO_TEMP_DIR=str(served)) as url:
        Client(url, verbose=False).predict(handle_file(str(room)), api_name="/load_dataroom")
        kept = [path for path in served.rglob("room.zip") if path.is_file()]  # the upload's copies
        assert kept
        deadline = time.monotonic() + 60
        while any(path.exists() for path in kept) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert [path for path in kept if path.exists()] == []


def test_an_upload_over_the_size_limit_is_refused(tmp_path_factory: pytest.TempPathFactory) -> None:
    big = tmp_path_factory.mktemp("big") / "room.zip"
    with zipfile.ZipFile(big, "w", zipfile.ZIP_STORED) as z:
        z.writestr("a/noise.bin", bytes(range(256)) * (6 * 1024 * 1024 // 256))
    with running_app(tmp_path_factory.mktemp("app-small"), SEARCHBOX_MAX_UPLOAD_MB="5") as url:
        client = Client(url, verbose=False)
        with pytest.raises(Exception, match="maximum file size"):
            client.predict(handle_file(str(big)), api_name="/load_dataroom")
    jobs = list((tmp_path_factory.getbasetemp()).rglob("noise.bin"))
    assert not any("app-small" in str(p) for p in jobs)  # nothing of it was stored


def test_a_visitor_cannot_run_commands_and_unconfined_bash_is_refused(app_url: str, app_home: Path) -> None:
    """With BASH_SANDBOX=off one /run_tool call of a visitor read /etc/shadow and the app's environment."""
    client = Client(app_url, verbose=False)
    with pytest.raises(Exception, match="bash is not in the list of choices"):  # not offered: refused unrun
        client.predict("bash", '{"command": "cat /etc/shadow /proc/1/environ"}', api_name="/run_tool")
    assert "BASH_SANDBOX=off refused" in (app_home / "app.log").read_text()  # said at start


def test_a_closed_page_frees_its_dataroom_at_once(app_url: str, app_home: Path, room_zip: Path) -> None:
    """A visitor's loaded dataroom stayed in the temp folder for an hour after they left."""
    before = loaded_datarooms(app_home)
    client = Client(app_url, verbose=False)
    client.predict(handle_file(str(room_zip)), api_name="/load_dataroom")
    mine = [p for p in loaded_datarooms(app_home) if p not in before]
    assert len(mine) == 1
    client.close()  # ends its session, as closing or reloading the tab does
    deadline = time.monotonic() + 90
    while mine[0].exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not mine[0].exists()
