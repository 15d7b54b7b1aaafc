"""The in-process tools against files a model can make with bash: FIFOs, sockets, sparse giants, links
that point at host folders or at themselves (design §5: special files refused, sizes checked before
anything is loaded). Each case uses the real kind of file."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from searchbox.tools.builtin.edit import EDIT_MAX_BYTES
from searchbox.tools.registry import REGISTRY
from searchbox.citations.ledger import SourceLedger
from searchbox.tools.tool import ToolContext, ToolResult
from searchbox.tools.truncate import MAX_LINE_CHARS

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "dataroom").mkdir(parents=True)
    (work / "notes.md").write_text("a note\n")
    return work


@pytest.fixture
def ctx(work: Path) -> ToolContext:
    return ToolContext(work, SourceLedger())


def at_once(call: Callable[[], ToolResult], fifo: Path) -> ToolResult:
    """The tool's output within 5 s. A tool that waits on the FIFO is released by opening its other
    end (O_RDWR never blocks on a FIFO), so a failing test fails instead of hanging the suite."""
    done: list[ToolResult] = []
    worker = threading.Thread(target=lambda: done.append(call()), daemon=True)
    worker.start()
    worker.join(5)
    if worker.is_alive():
        peer = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
        os.close(peer)
        worker.join(5)
        pytest.fail(f"the tool blocked on the FIFO {fifo.name}")
    return done[0]


def test_fifos_are_refused_at_once_by_every_tool(ctx: ToolContext, work: Path) -> None:
    fifo = work / "pipe"
    os.mkfifo(fifo)
    calls = {
        "grep": {"pattern": "x", "path": "pipe"},
        "write": {"path": "pipe", "content": "into the pipe"},
        "edit": {"path": "pipe", "edits": [{"oldText": "a", "newText": "b"}]},
        "read": {"path": "pipe"},
    }
    for name, args in calls.items():
        out = at_once(lambda: REGISTRY[name].run(ctx, args), fifo)
        assert out.is_error and "'pipe' is a FIFO (named pipe), not a regular file" in out.text, (name, out.text)
    # A folder holding a FIFO is still searched and listed; the FIFO is never opened.
    assert at_once(lambda: REGISTRY["grep"].run(ctx, {"pattern": "note"}), fifo).text == "notes.md:1:a note"
    assert "pipe" not in at_once(lambda: REGISTRY["find"].run(ctx, {"pattern": "*"}), fifo).text
    assert at_once(lambda: REGISTRY["ls"].run(ctx, {}), fifo).text.splitlines() == ["dataroom/", "notes.md", "pipe"]


def test_write_to_a_fifo_with_a_reader_sends_it_nothing(ctx: ToolContext, work: Path) -> None:
    fifo = work / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, as a background `cat pipe &` would be
    try:
        out = at_once(lambda: REGISTRY["write"].run(ctx, {"path": "pipe", "content": "secret"}), fifo)
        assert out.is_error and "is a FIFO" in out.text
        assert os.read(reader, 100) == b""  # nothing was written, and the writer is gone
    finally:
        os.close(reader)


def test_sockets_are_refused(ctx: ToolContext, work: Path) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(work / "sock"))
    try:
        for name, args in {"read": {"path": "sock"}, "grep": {"pattern": "x", "path": "sock"},
                           "edit": {"path": "sock", "edits": [{"oldText": "a", "newText": "b"}]},
                           "write": {"path": "sock", "content": "x"}}.items():
            out = REGISTRY[name].run(ctx, args)
            assert out.is_error and "'sock' is a socket, not a regular file" in out.text, (name, out.text)
    finally:
        server.close()


# The app's own peak memory while a tool handles a 256 MiB sparse file (12 KB of disk): measured in a
# fresh interpreter, since a process's peak only ever grows.
_PEAK_SCRIPT = """
import json, resource, sys
from pathlib import Path
from searchbox.tools.registry import REGISTRY
from searchbox.citations.ledger import SourceLedger
from searchbox.tools.tool import ToolContext
ctx = ToolContext(Path(sys.argv[1]), SourceLedger())
peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
rows = {}
for name, args in json.loads(sys.argv[2]).items():
    before = peak()
    out = REGISTRY[name].run(ctx, args)
    rows[name] = {"grew_mb": peak() - before, "error": out.is_error, "head": out.text[:300], "tail": out.text[-300:]}
print(json.dumps(rows))
"""


@pytest.fixture
def sparse_giant(work: Path) -> Iterator[Path]:
    """256 MiB: 9000 text bytes (so the first 8 KB look like text), then a hole that reads as NULs."""
    giant = work / "giant.txt"
    with giant.open("wb") as handle:
        handle.write(b"a" * 9000)
        handle.truncate(256 * 2**20)
    assert giant.stat().st_blocks * 512 < 2**20  # sparse: it costs the disk nothing
    yield giant


def test_a_sparse_giant_never_enters_the_apps_memory(work: Path, sparse_giant: Path) -> None:
    calls = {
        "grep": {"pattern": "^a", "path": "giant.txt"},  # one match: a line of 256 MiB
        "edit": {"path": "giant.txt", "edits": [{"oldText": "a" * 9000, "newText": "b"}]},
        "read": {"path": "giant.txt"},
    }
    measured = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT, str(work), json.dumps(calls)], cwd=REPO,
                              capture_output=True, text=True, timeout=300, check=True)
    rows = json.loads(measured.stdout)
    for name, row in rows.items():
        assert row["grew_mb"] < 64, (name, row)  # before the bound: grep 3.4 GB, edit and read 0.5 GB
    grep = rows["grep"]
    assert not grep["error"] and grep["head"].startswith("giant.txt:1:" + "a" * 100)
    assert f"cut to {MAX_LINE_CHARS} characters" in grep["tail"]
    assert rows["edit"]["error"] and f"over the {EDIT_MAX_BYTES // 2**20}.0MB that edit loads" in rows["edit"]["head"]
    assert sparse_giant.stat().st_size == 256 * 2**20 and sparse_giant.read_bytes()[:1] == b"a"  # not rewritten
    read = rows["read"]
    assert not read["error"] and "Line 1 is longer than the 50KB limit" in read["tail"]


def test_grep_shows_the_start_of_an_overlong_line_with_its_number(ctx: ToolContext, work: Path) -> None:
    # Quotes, backslashes and two-byte characters: the line's JSON is cut mid-escape and mid-character.
    (work / "wide.txt").write_text("first\n" + 'é"\\' * 60_000 + " needle\nlast needle\n")
    out = REGISTRY["grep"].run(ctx, {"pattern": "needle", "path": "wide.txt"})
    rows = out.text.splitlines()
    assert rows[0] == "wide.txt:2:" + ('é"\\' * 200)[:MAX_LINE_CHARS] + " [... line cut]", rows[0][:80]
    assert rows[1] == "wide.txt:3:last needle" and out.details["matches"] == 2


def test_ls_never_follows_links(ctx: ToolContext, work: Path) -> None:
    (work / "etc").symlink_to("/etc")  # a host folder that exists ...
    (work / "guess").symlink_to("/no-such-host-folder")  # ... and one that does not: listed alike
    (work / "loop").symlink_to("loop")
    (work / "ping").symlink_to("pong")
    (work / "pong").symlink_to("ping")
    out = REGISTRY["ls"].run(ctx, {})
    assert not out.is_error, out.text
    assert out.text.splitlines() == ["dataroom/", "etc", "guess", "loop", "notes.md", "ping", "pong"]
    inside = REGISTRY["ls"].run(ctx, {"path": "loop"})
    assert inside.is_error and inside.text == "'loop' is a symbolic link loop"  # and no host path
    assert REGISTRY["read"].run(ctx, {"path": "ping"}).text == "'ping' is a symbolic link loop"
