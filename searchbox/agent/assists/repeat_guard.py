"""repeat_guard: a third identical tool call in a row is answered with a nudge instead of being run,
so a model stuck on one call does not spend its turn on it."""

from __future__ import annotations

import json

from searchbox.agent.assists.base import Assist, RunView
from searchbox.llm.types import ToolCall
from searchbox.settings import Settings
from searchbox.tools.tool import ToolResult

REPEAT_LIMIT = 2  # identical calls in a row that run; the next is answered with the nudge


def nudge(name: str, repeats: int) -> str:
    return (f"You already called {name} with exactly these arguments {repeats} times in a row; the result is "
            "above. Try a different query or tool, or reply with your answer.")


class RepeatGuard(Assist):
    name = "repeat_guard"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.recent: list[str] = []  # the run's calls, as name and arguments

    def before_tool_call(self, run: RunView, call: ToolCall) -> ToolResult | None:
        arguments = json.dumps(call.arguments, sort_keys=True) if call.arguments is not None else call.raw_arguments
        signature = f"{call.name}:{arguments}"
        self.recent.append(signature)
        repeats = 0  # identical calls in a row, this one included
        for previous in reversed(self.recent):
            if previous != signature:
                break
            repeats += 1
        if repeats <= REPEAT_LIMIT:
            return None
        return ToolResult(text=nudge(call.name, repeats), is_error=True, details={"repeated": repeats})
