"""force_tool_steps: the first FORCE_TOOL_STEPS steps of each turn must call a tool (tool_choice=required).

Small models left to choose often answer in prose before they have searched (see `conformance`);
a grammar holds the forced step to a valid call."""

from __future__ import annotations

from searchbox.agent.assists.base import Assist, RunView
from searchbox.llm.types import ToolChoice


class ForceToolSteps(Assist):
    name = "force_tool_steps"

    def tool_choice(self, run: RunView) -> ToolChoice | None:
        return "required" if run.step_in_turn <= self.settings.force_tool_steps else None
