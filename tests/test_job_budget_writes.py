"""write and edit count against the job's disk and file budget (JOB_DISK_MB, JOB_FILES) as bash's
commands do: a change that would pass it is refused before anything is written."""

from __future__ import annotations

from pathlib import Path

from searchbox.dataroom.work_dir import prepare_work_dir
from searchbox.tools.registry import REGISTRY
from searchbox.tools.sandbox import SandboxConfig
from searchbox.citations.ledger import SourceLedger
from searchbox.tools.tool import ToolContext


def context(tmp_path: Path, disk_bytes: int, inodes: int = 1000) -> ToolContext:
    source = tmp_path / "room"
    source.mkdir()
    (source / "a.txt").write_text("a document\n")
    work = prepare_work_dir(tmp_path / "job", source)
    return ToolContext(work, SourceLedger(), SandboxConfig(job_disk_bytes=disk_bytes, job_inodes=inodes))


def test_write_and_edit_stay_within_the_job_disk_budget(tmp_path: Path) -> None:
    ctx = context(tmp_path, disk_bytes=256 * 1024)
    ok = REGISTRY["write"].run(ctx, {"path": "notes.md", "content": "x" * 100_000})
    assert not ok.is_error, ok.text
    refused = REGISTRY["write"].run(ctx, {"path": "more.md", "content": "y" * 200_000})
    assert refused.is_error and "past its 256KB budget" in refused.text and not (ctx.work_dir / "more.md").exists()
    # Rewriting a file counts its new size instead of its old one.
    assert not REGISTRY["write"].run(ctx, {"path": "notes.md", "content": "start " + "z" * 150_000}).is_error
    grown = REGISTRY["edit"].run(ctx, {"path": "notes.md", "edits": [{"oldText": "start", "newText": "w" * 200_000}]})
    assert grown.is_error and "budget" in grown.text
    assert (ctx.work_dir / "notes.md").read_text() == "start " + "z" * 150_000  # nothing was written


def test_write_stays_within_the_job_file_budget(tmp_path: Path) -> None:
    ctx = context(tmp_path, disk_bytes=2**30, inodes=3)
    used = REGISTRY["write"].run(ctx, {"path": "one.md", "content": "1"})
    assert not used.is_error, used.text
    refused = REGISTRY["write"].run(ctx, {"path": "deep/er/two.md", "content": "2"})  # 3 more: 2 folders, 1 file
    assert refused.is_error and "budget is 3" in refused.text and not (ctx.work_dir / "deep").exists()
    assert not REGISTRY["write"].run(ctx, {"path": "deep/two.md", "content": "2"}).is_error
