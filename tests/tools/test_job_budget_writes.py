"""write and edit count against the job's disk and file budget (JOB_DISK_MB, JOB_FILES) as bash's
commands do: a change that would pass it is refused before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

from searchbox.dataroom.work_dir import prepare_work_dir
from searchbox.settings import Settings
from searchbox.tools.paths import MAX_DEPTH
from searchbox.tools.registry import REGISTRY
from searchbox.ui.explorer import explorer_budget, load_dataroom, run_tool
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


def test_write_refuses_a_path_deeper_than_max_depth(tmp_path: Path) -> None:
    """Issue #43: three explorer `write` calls (`d/` x 900, 1,800, 1,990) built a 1,990-deep chain that
    stopped the app from starting."""
    ctx = context(tmp_path, disk_bytes=2**30)
    refused = REGISTRY["write"].run(ctx, {"path": "d/" * 900 + "f.txt", "content": "x"})
    assert refused.is_error and f"more than the {MAX_DEPTH} a path in the working folder may have" in refused.text
    assert not (ctx.work_dir / "d").exists()
    deepest = "/".join(["d"] * (MAX_DEPTH - 1) + ["f.txt"])
    assert not REGISTRY["write"].run(ctx, {"path": deepest, "content": "x"}).is_error
    assert REGISTRY["edit"].run(ctx, {"path": "d/" * MAX_DEPTH + "f.txt",
                                      "edits": [{"oldText": "x", "newText": "y"}]}).is_error


def test_the_explorer_has_a_smaller_disk_budget_than_a_run(tmp_path: Path, packaged_settings: Settings) -> None:
    """Issue #43: the explorer's `write` took 60 MB in 2.6 s, bounded only by JOB_DISK_MB (4 GiB) per folder."""
    explorer = explorer_budget(packaged_settings)
    assert explorer.job_disk_mb == packaged_settings.searchbox_explore_disk_mb < packaged_settings.job_disk_mb
    workspace, _, _ = load_dataroom(None, explorer, lambda: tmp_path / "explore")
    too_much = json.dumps({"path": "big.txt", "content": "x" * (explorer.job_disk_mb * 2**20 + 1)})
    _, _, raw = run_tool(workspace, "write", too_much, explorer, lambda: tmp_path / "other")
    assert json.loads(raw)["is_error"] and "budget" in raw and not (workspace.work_dir / "big.txt").exists()
