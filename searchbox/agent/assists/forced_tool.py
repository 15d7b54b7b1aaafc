"""forced_tool: turn 1's first FORCE_TOOL_STEPS steps must call FORCED_TOOL, when the run offers it.

Forced to pick, the packaged 1.5B chose grep on an invented path in 2 of 10 literal questions and
answered neither; the 8 that searched first got 4 right and 1 partly. Later turns are left to
force_tool_steps: forced to the same tool at each Continue, the 1.5B sent the identical search every
turn."""

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
