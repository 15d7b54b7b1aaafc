"""The assists: named policies the loop runs only when HARNESS_ASSISTS (or a preset for a small model)
turns them on, each in a module of its own with its prompt text beside it. `Assists` is the loop's one
handle on them: it asks the assists that are on, in ASSIST_NAMES order, and reports every firing."""

from __future__ import annotations

import json
from collections.abc import Callable

from searchbox.agent.assists.ask_sources import AskSources
from searchbox.agent.assists.base import Assist, RunView
from searchbox.agent.assists.empty_reply import EmptyReply
from searchbox.agent.assists.force_tool_steps import ForceToolSteps
from searchbox.agent.assists.forced_tool import ForcedTool
from searchbox.agent.assists.keep_answer import KeepAnswer
from searchbox.agent.assists.repeat_guard import RepeatGuard
from searchbox.agent.assists.source_hint import SourceHint
from searchbox.agent.assists.wrap_up import WrapUp
from searchbox.llm.types import ToolCall, ToolChoice
from searchbox.settings import Settings
from searchbox.settings.loop import ASSIST_NAMES
from searchbox.tools.tool import ToolResult

ASSISTS: dict[str, type[Assist]] = {cls.name: cls for cls in (ForcedTool, ForceToolSteps, EmptyReply, AskSources,
                                                              SourceHint, KeepAnswer, RepeatGuard, WrapUp)}
if tuple(ASSISTS) != ASSIST_NAMES:  # settings/loop.py names them for the knob; the two lists must agree
    raise ImportError(f"the assists {tuple(ASSISTS)} are not settings.loop.ASSIST_NAMES {ASSIST_NAMES}")

Fired = Callable[[str, str, str], None]  # (assist, hook, what it sent)


class Assists:
    def __init__(self, settings: Settings, fired: Fired) -> None:
        self.on = [ASSISTS[name](settings) for name in settings.assists]
        self.fired = fired

    def turn_start(self, run: RunView) -> None:
        for assist in self.on:
            assist.turn_start(run)

    def tool_choice(self, run: RunView) -> ToolChoice:
        """The first assist's choice for this step; "auto" when none makes one."""
        for assist in self.on:
            choice = assist.tool_choice(run)
            if choice is not None:
                self.fired(assist.name, "tool_choice", choice if isinstance(choice, str) else json.dumps(choice))
                return choice
        return "auto"

    def before_tool_call(self, run: RunView, call: ToolCall) -> ToolResult | None:
        for assist in self.on:
            result = assist.before_tool_call(run, call)
            if result is not None:
                self.fired(assist.name, "before_tool_call", result.text)
                return result
        return None

    def follow_up(self, run: RunView, reply: str) -> str | None:
        """Every assist's follow-up to this reply, as one user message (chat templates want the roles to
        alternate), or None: the turn ends."""
        parts = []
        for assist in self.on:
            message = assist.follow_up(run, reply)
            if message is not None:
                self.fired(assist.name, "follow_up", message)
                parts.append(message)
        return " ".join(parts) or None

    def turn_cut(self, run: RunView) -> str | None:
        for assist in self.on:
            message = assist.turn_cut(run)
            if message is not None:
                self.fired(assist.name, "turn_cut", message)
                return message
        return None

    def answer(self, run: RunView, final: str) -> str | None:
        for assist in self.on:
            answer = assist.answer(run, final)
            if answer is not None:
                self.fired(assist.name, "answer", answer)
                return answer
        return None
