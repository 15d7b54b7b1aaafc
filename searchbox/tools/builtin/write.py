"""write: a whole file in work/, folders created, never inside dataroom/."""

from __future__ import annotations

import os
from typing import Any

from searchbox.tools.arguments import ToolArgumentError
from searchbox.tools.builtin.common import PATH_ARGUMENT, within_job_budget
from searchbox.tools.paths import confine_write, open_regular, relative_to_work
from searchbox.tools.tool import ToolContext, ToolResult, tool
from searchbox.tools.truncate import byte_size


@tool(
    brief="Write a file (not inside dataroom/).",
    description="Write a file, replacing it if it exists; missing folders are created. Not inside dataroom/.",
    properties={
        "path": PATH_ARGUMENT,
        "content": {"type": "string", "description": "the whole file content", "minLength": 0},
    },
    required=["path", "content"],
)
def write(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    target = confine_write(ctx.work_dir, args["path"])
    rel = relative_to_work(ctx.work_dir, target)
    if target.is_dir():
        raise ToolArgumentError(f"'{rel}' is a directory; give a file path")
    content = args["content"]
    within_job_budget(ctx, target, len(content.encode("utf-8")))
    target.parent.mkdir(parents=True, exist_ok=True)
    # Emptied only once known to be a regular file: a FIFO made with bash would block the open forever.
    with open(open_regular(target, rel, os.O_WRONLY | os.O_CREAT), "wb") as handle:
        handle.truncate()
        handle.write(content.encode("utf-8"))
    size = byte_size(content)
    return ToolResult(f"Successfully wrote {size} bytes to {rel}", details={"path": rel, "bytes": size})
