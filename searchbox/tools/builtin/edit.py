"""edit: exact, unique replacements in a file of work/, all or none."""

from __future__ import annotations

import difflib
import os
from typing import Any

from searchbox.tools.arguments import ToolArgumentError
from searchbox.tools.builtin.common import PATH_ARGUMENT, within_job_budget
from searchbox.tools.paths import confine_write, open_regular, relative_to_work
from searchbox.tools.tool import ToolContext, ToolResult, tool
from searchbox.tools.truncate import format_size, truncate_head

# edit holds a file several times over (text, the changed copy, the diff); notes and answers are far smaller.
EDIT_MAX_BYTES = 8 * 2**20


@tool(
    brief="Replace exact text in a file: edits=[{oldText, newText}].",
    description="Edit a file by exact replacement: each oldText must occur exactly once in the file (include "
    "surrounding text to make it unique). All edits apply, or none. Files in dataroom/ cannot be edited.",
    properties={
        "path": PATH_ARGUMENT,
        "edits": {"type": "array", "minItems": 1, "maxItems": 50, "description": "replacements to make",
                  "items": {"type": "object", "required": ["oldText", "newText"], "properties": {
                      "oldText": {"type": "string", "description": "exact text to replace"},
                      "newText": {"type": "string", "description": "text to put in its place"}}}},
    },
    required=["path", "edits"],
)
def edit(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    target = confine_write(ctx.work_dir, args["path"])
    rel = relative_to_work(ctx.work_dir, target)
    if not target.exists():
        raise ToolArgumentError(f"File not found: {args['path']}")
    with open(open_regular(target, rel, os.O_RDWR), "r+b") as handle:  # one descriptor: checked, read, rewritten
        size = os.fstat(handle.fileno()).st_size
        if size > EDIT_MAX_BYTES:  # checked before reading: a sparse file costs no disk but all of its size here
            raise ToolArgumentError(f"{rel} is {format_size(size)}, over the {format_size(EDIT_MAX_BYTES)} that edit "
                                    "loads; change it with bash (e.g. sed -i)")
        try:
            original = handle.read().decode("utf-8")  # bytes: text mode would hide \r\n
        except UnicodeDecodeError:
            raise ToolArgumentError(f"{rel} is not UTF-8 text; edit it with bash or rewrite it with write") from None
        crlf = "\r\n" in original  # models send \n; the file keeps its own line endings
        content = original.replace("\r\n", "\n")
        changed = _apply_edits(content, rel, args["edits"])
        within_job_budget(ctx, target, len((changed.replace("\n", "\r\n") if crlf else changed).encode("utf-8")))
        handle.seek(0)
        handle.truncate()
        handle.write((changed.replace("\n", "\r\n") if crlf else changed).encode("utf-8"))
    diff = list(difflib.unified_diff(content.splitlines(), changed.splitlines(), rel, rel, n=2, lineterm=""))
    added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    count = len(args["edits"])
    summary = f"Successfully replaced {count} block{'s' if count > 1 else ''} in {rel} (+{added} -{removed} lines)."
    shown = truncate_head("\n".join(diff[2:]), max_bytes=ctx.max_bytes)  # without the ---/+++ header lines
    return ToolResult(f"{summary}\n{shown.text}", details={"path": rel, "replacements": count, "diff": "\n".join(diff)})


def _apply_edits(content: str, rel: str, changes: list[dict[str, Any]]) -> str:
    """The text with every edit applied, or an error and none."""
    spans = sorted(_locate(content, rel, n, e) for n, e in enumerate(changes, 1))
    for before, after in zip(spans, spans[1:]):
        if after[0] < before[1]:
            raise ToolArgumentError(
                f"edits[{before[3]}] and edits[{after[3]}] overlap in {rel}; merge them into one edit"
            )
    changed = content
    for start, end, new_text, _ in reversed(spans):  # from the end, so earlier offsets stay valid
        changed = changed[:start] + new_text + changed[end:]
    if changed == content:
        raise ToolArgumentError(f"No changes made to {rel}: every newText equals its oldText")
    return changed


def _locate(content: str, rel: str, n: int, change: dict[str, Any]) -> tuple[int, int, str, int]:
    """Where edits[n] applies: its oldText must occur exactly once."""
    old, new = change.get("oldText"), change.get("newText")
    if not isinstance(old, str) or not old:
        raise ToolArgumentError(f"edits[{n}] needs a non-empty oldText")
    if not isinstance(new, str):
        raise ToolArgumentError(f"edits[{n}] needs a newText (a string; empty to delete the oldText)")
    old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
    found = content.count(old)
    if found == 0:
        raise ToolArgumentError(
            f"Could not find edits[{n}].oldText in {rel}. It must match exactly, including whitespace and newlines; "
            "read the file first. No edit was applied."
        )
    if found > 1:
        raise ToolArgumentError(
            f"Found {found} occurrences of edits[{n}].oldText in {rel}. It must be unique: "
            "include more surrounding text. No edit was applied."
        )
    start = content.index(old)
    return start, start + len(old), new, n
