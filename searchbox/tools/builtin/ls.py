"""ls: a folder's entries, sorted, dotfiles included, folders ending with '/'."""

from __future__ import annotations

import os
from typing import Any

from searchbox.tools.builtin.common import OPTIONAL_PATH_ARGUMENT, existing_dir, listing
from searchbox.tools.tool import ToolContext, ToolResult, tool


@tool(
    brief="List a directory.",
    description="List a directory, sorted, dotfiles included; directories end with '/'.",
    properties={
        "path": OPTIONAL_PATH_ARGUMENT,
        "limit": {"type": "integer", "description": "most entries to return", "default": 500, "minimum": 1,
                  "maximum": 10_000},
    },
)
def ls(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    folder = existing_dir(ctx, args.get("path") or ".")
    limit = args["limit"]
    entries = sorted(os.scandir(folder), key=lambda e: (e.name.lower(), e.name))
    if not entries:
        return ToolResult("(empty directory)", details={"count": 0})
    # A link is never followed to decide: it would tell whether a guessed host folder exists, and a
    # link loop would make the listing fail.
    names = [e.name + ("/" if e.is_dir(follow_symlinks=False) else "") for e in entries[:limit]]
    return listing(ctx, names, len(entries), limit,
                   f"{limit} entries limit reached ({len(entries)} in all). Use limit={limit * 2} for more")
