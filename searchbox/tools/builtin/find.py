"""find: files by glob pattern, sorted, relative to work/."""

from __future__ import annotations

import subprocess
from typing import Any

from searchbox.tools.arguments import ToolArgumentError
from searchbox.tools.builtin.common import OPTIONAL_PATH_ARGUMENT, existing_dir, listing, rg_command, under_work
from searchbox.tools.tool import ToolContext, ToolResult, tool


@tool(
    brief="Find files by glob pattern, e.g. '*.pdf'.",
    description="Find files by glob pattern, e.g. '*.pdf' (any depth), '**/*.md' or 'reports/*.xlsx' (relative "
    "to path). Returns sorted paths relative to the working folder.",
    properties={
        "pattern": {"type": "string", "description": "glob pattern", "maxLength": 500},
        "path": OPTIONAL_PATH_ARGUMENT,
        "limit": {"type": "integer", "description": "most results to return", "default": 1000, "minimum": 1,
                  "maximum": 10_000},
    },
    required=["pattern"],
)
def find(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    folder = existing_dir(ctx, args.get("path") or ".")
    pattern, limit = args["pattern"], args["limit"]
    command = rg_command(ctx, folder, pattern) + ["--files", "--", "."]
    listed = subprocess.run(command, cwd=folder, stdin=subprocess.DEVNULL, capture_output=True)
    names = listed.stdout.decode("utf-8", "surrogateescape").splitlines()
    if not names:
        if listed.returncode == 2 and listed.stderr:
            raise ToolArgumentError(f"find: {listed.stderr.decode('utf-8', 'replace').strip()}")
        return ToolResult("No files found matching pattern", details={"count": 0})
    paths = sorted(under_work(ctx, folder, name) for name in names)
    return listing(ctx, paths[:limit], len(paths), limit, f"{limit} results limit reached ({len(paths)} in all). "
                   f"Use limit={limit * 2} for more, or refine the pattern")
