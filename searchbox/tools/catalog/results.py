"""How a catalog tool answers: its JSON data, indented, as the text the model sees (cut by the one
truncation rule), the source ids it cites, its gist, and the whole data for the CLI and explorer."""

from __future__ import annotations

import json
from typing import Any

from searchbox.tools.gist import counted, scalars
from searchbox.tools.tool import ToolContext, ToolResult
from searchbox.tools.truncate import truncate_head


def json_result(ctx: ToolContext, data: dict[str, Any]) -> ToolResult:
    cut = truncate_head(json.dumps(data, indent=1, ensure_ascii=False), max_bytes=ctx.max_bytes)
    text = cut.text + ("\n[output cut to the tool output limit; ask for fewer results]" if cut.truncated else "")
    hits = data.get("results")
    rows = [row for row in hits if isinstance(row, dict)] if isinstance(hits, list) else []
    sources = [row["id"] for row in rows if "id" in row]
    gist = counted(len(hits), "hits", [str(row["path"]) for row in rows if row.get("path")]) \
        if isinstance(hits, list) else scalars(data)
    return ToolResult(text, details={"sources": sources, "truncated": cut.truncated}, sources=sources, data=data,
                      gist=gist)
