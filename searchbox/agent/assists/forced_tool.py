"""forced_tool: turn 1's first FORCE_TOOL_STEPS steps must call FORCED_TOOL, when the run offers it.

Forced to call a tool of its own choosing, the packaged 1.5B sometimes grepped an invented path and
answered nothing; searching first did better. Later turns are left to force_tool_steps: forced to the
same tool at each Continue, the 1.5B sent the identical search every turn (docs/findings/2026-12-06-figures-from-code-comments.md)."""

from __future__ import annotations

from searchbox.agent.assists.base import Assist, RunView
from searchbox.llm.types import ToolChoice


class ForcedTool(Assist):
    name = "forced_tool"

    def tool_choice(self, run: RunView) -> ToolChoice | None:
        tool = self.settings.forced_tool
        if run.turn == 1 and run.step_in_turn <= self.settings.force_tool_steps and tool in run.offered:
            return {"type": "function", "function": {"name": tool}}
        return None
