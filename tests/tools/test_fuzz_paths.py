"""Property-based fuzzing of path confinement (design §5): whatever path a model gives read, write, edit,
ls, find or grep, nothing from outside work/ is shown, and nothing outside work/ nor inside
work/dataroom/ is created or changed. The job folder is real: a dataroom, symlinks inside work/ that
point out of it or into the dataroom, and sentinel files outside work/ and inside the dataroom, all
checked after every example.

Tests may run as root, where file permissions stop nothing: every refusal must come from the tools.
Run with `pytest -s tests/tools/test_fuzz_paths.py` to see the RELIABILITY tally lines.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fuzz_tally import FuzzTally
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from searchbox.dataroom.work_dir import prepare_work_dir
from searchbox.tools.registry import REGISTRY
from searchbox.citations.ledger import SourceLedger
from searchbox.tools.tool import ToolContext, ToolResult

FUZZ = settings(derandomize=True, deadline=None, database=None, max_examples=300,
                suppress_health_check=[HealthCheck.too_slow])

TALLY = FuzzTally()

# In every file outside work/: a read or grep that shows it has escaped.
SECRET = "OUTSIDE-SECRET-7c1f"
# A file outside work/ whose name no generated path contains: a listing that shows it has escaped.
LISTED_ONLY = "zz-listed-only.txt"
WRITTEN = "PWNED-by-fuzz"

COMPONENTS = ("..", ".", "", "~", "dataroom", "up", "esc", "escdir", "dr", "dra", "dangling", "loop", "rel_up",
              "jobdir", "outside.txt", "outside_dir", "job-secret.txt", "job", "work", "a.md", "sub", "b.txt",
              "mine.txt", "new", "new.md", "\x00", "a\x00b", "é", "名前.md", "a\\..\\..", "..\\..", "%2e%2e",
              "x" * 300, " ", "*", "?", "\n")


@dataclass(frozen=True)
class Job:
    root: Path  # holds the job folder and the sentinels outside it
    work: Path
    ctx: ToolContext


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Job:
    root = tmp_path_factory.mktemp("fuzz_paths")
    source = root / "source"
    (source / "sub").mkdir(parents=True)
    (source / "a.md").write_text("dataroom alpha\nkeep\n")
    (source / "sub" / "b.txt").write_text("dataroom beta\nkeep\n")
    (root / "outside.txt").write_text(f"{SECRET}\nkeep\n")
    (root / "outside_dir").mkdir()
    (root / "outside_dir" / LISTED_ONLY).write_text(f"{SECRET}\nkeep\n")
    work = prepare_work_dir(root / "job", source)
    (root / "job" / "job-secret.txt").write_text(f"{SECRET}\nkeep\n")
    (work / "mine.txt").write_text("keep\nmine\n")
    links = {"up": root, "esc": root / "outside.txt", "escdir": root / "outside_dir", "dr": work / "dataroom",
             "dra": work / "dataroom" / "a.md", "dangling": root / "new-outside.txt", "loop": work / "loop",
             "rel_up": Path("../../outside.txt"), "jobdir": Path("..")}
    for name, target in links.items():
        (work / name).symlink_to(target)
    return Job(root, work, ToolContext(work, SourceLedger()))


def _snapshot(job: Job) -> dict[str, Any]:
    """Everything that must never change: the whole tree outside work/, and work/dataroom/."""
    state: dict[str, Any] = {}
    dataroom = job.work / "dataroom"
    for folder, dirs, files in os.walk(job.root):
        here = Path(folder)
        if here == job.work:
            dirs[:] = [d for d in dirs if d == "dataroom"]
            files = []
        for name in dirs + files:
            path = here / name
            if path.is_symlink():
                state[str(path)] = ("link", os.readlink(path))
            elif path.is_dir():
                state[str(path)] = ("dir",)
            else:
                state[str(path)] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
    assert any(key.startswith(str(dataroom)) for key in state) and str(job.root / "outside.txt") in state
    return state


# "<root>" and "<work>" stand for the real absolute folders, which exist only once the fixture ran.
prefix = st.sampled_from(["", "", "", "/", "./", "~/", "//", "\\", "<root>/", "<work>/", "dataroom/../"])
separator = st.sampled_from(["/", "/", "/", "//", "\\", "/./"])
component = st.sampled_from(COMPONENTS) | st.text(max_size=6)


@st.composite
def paths(draw: st.DrawFn) -> str:
    parts = draw(st.lists(component, min_size=1, max_size=6))
    return draw(prefix) + "".join(p + draw(separator) for p in parts[:-1]) + parts[-1]


def _real(job: Job, path: str) -> str:
    return path.replace("<root>", str(job.root)).replace("<work>", str(job.work))


def _call(job: Job, name: str, **args: Any) -> ToolResult:
    output = REGISTRY[name].run(job.ctx, args)
    assert isinstance(output, ToolResult) and output.text
    return output


def _assert_inside_work(job: Job, output: ToolResult) -> None:
    rel = output.details.get("path")
    if not output.is_error and rel is not None:
        resolved = (job.work / rel).resolve()
        assert resolved == job.work.resolve() or job.work.resolve() in resolved.parents


@FUZZ
@given(path=paths(), tool=st.sampled_from(["read", "ls", "find", "grep"]),
       glob=st.sampled_from(["*", "**/*", "../*", "/**", "**/../*", "**/outside*"]) | paths())
@example(path="dataroom/../..", tool="ls", glob="*")
@example(path="dataroom/../../job-secret.txt", tool="read", glob="*")
@example(path="<root>/outside.txt", tool="read", glob="*")
@example(path="esc", tool="read", glob="*")
@example(path="rel_up", tool="grep", glob="*")
@example(path="up/outside_dir", tool="find", glob="*")
@example(path="escdir", tool="ls", glob="*")
@example(path="jobdir", tool="grep", glob="*")
@example(path="/etc/passwd", tool="read", glob="*")
@example(path="a\x00b", tool="read", glob="*")
@example(path="x" * 300, tool="ls", glob="*")
def test_reads_never_show_anything_from_outside_work(job: Job, path: str, tool: str, glob: str) -> None:
    TALLY.count("path confinement, reads (read ls find grep)")
    before = _snapshot(job)
    path = _real(job, path)
    if tool == "read":
        output = _call(job, "read", path=path)
    elif tool == "ls":
        output = _call(job, "ls", path=path)
    elif tool == "find":
        output = _call(job, "find", pattern=glob, path=path)
    else:
        output = _call(job, "grep", pattern="SECRET|keep", path=path, glob=glob)
    assert SECRET not in output.text and LISTED_ONLY not in output.text, output.text[:300]
    _assert_inside_work(job, output)
    assert _snapshot(job) == before
    TALLY.count("path confinement, reads (read ls find grep): handled")


@FUZZ
@given(path=paths(), tool=st.sampled_from(["write", "edit"]))
@example(path="dataroom/../../outside.txt", tool="write")
@example(path="dataroom/a.md", tool="edit")
@example(path="./dataroom/../dataroom/new.md", tool="write")
@example(path="dr/new.md", tool="write")
@example(path="dra", tool="edit")
@example(path="esc", tool="edit")
@example(path="rel_up", tool="write")
@example(path="dangling", tool="write")
@example(path="up/new.txt", tool="write")
@example(path="jobdir/job-secret.txt", tool="edit")
@example(path="loop/x", tool="write")
@example(path="<root>/new.txt", tool="write")
@example(path="~/x", tool="write")
@example(path="a\x00b", tool="write")
@example(path="x" * 300, tool="write")
def test_writes_never_touch_outside_work_or_the_dataroom(job: Job, path: str, tool: str) -> None:
    TALLY.count("path confinement, writes (write edit)")
    before = _snapshot(job)
    path = _real(job, path)
    if tool == "write":
        output = _call(job, "write", path=path, content=f"{WRITTEN}\n")
    else:
        output = _call(job, "edit", path=path, edits=[{"oldText": "keep", "newText": WRITTEN}])
    assert _snapshot(job) == before, output.text[:300]
    _assert_inside_work(job, output)
    TALLY.count("path confinement, writes (write edit): handled")


def test_tally() -> None:
    """Reports the reliability tallies; every property above must have run and handled every input."""
    TALLY.report(2)
