"""What an assist is: a named policy that the loop consults at fixed points, in the style of the Pi
coding agent's hooks (a tool choice before each step, beforeToolCall, a follow-up message when the agent
would stop). A hook that returns something has fired: the loop does what it returned and records it as
an `assist` event; a hook that returns None changes nothing. With no assist on, the loop is the minimal
one: the question, `Continue.` at turn boundaries, compaction and the backstop (design §2.3)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from searchbox.llm.types import ToolCall, ToolChoice
from searchbox.citations.markers import cited_ids
from searchbox.settings import Settings
from searchbox.tools.tool import ToolResult


@dataclass
class RunView:
    """What an assist may read of the run; the loop keeps it up to date."""
    question: str
    offered: frozenset[str]  # the names of the tools on offer
    answer_written: Callable[[], bool]  # whether work/ANSWER.md exists
    source_texts: Callable[[list[str]], dict[str, str]]  # the texts of these source ids (those readable)
    turn: int = 0
    step_in_turn: int = 0  # from 1
    sources_shown: list[str] = field(default_factory=list)  # the ids tool results showed, in order
    # This turn's replies without a tool call that an assist answered with a follow-up, since the model last called a tool.
    asked_again: list[str] = field(default_factory=list)


class Assist:
    name: ClassVar[str]

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def turn_start(self, run: RunView) -> None:
        """A turn begins: per-turn state starts again."""

    def tool_choice(self, run: RunView) -> ToolChoice | None:
        """Before a step: the tool_choice it must be sent with."""
        return None

    def before_tool_call(self, run: RunView, call: ToolCall) -> ToolResult | None:
        """Before a tool runs: a result that answers the call instead."""
        return None

    def follow_up(self, run: RunView, reply: str) -> str | None:
        """After a reply with no tool call, which would end the turn: a user message to send instead."""
        return None

    def turn_cut(self, run: RunView) -> str | None:
        """The turn passed its step limit or timeout: a user message for one last response, offered no tools."""
        return None

    def answer(self, run: RunView, final: str) -> str | None:
        """The backstop is about to write the model's final text to ANSWER.md: a text to write instead."""
        return None


def uncited_answer(run: RunView, reply: str) -> bool:
    """The reply is the answer (the model wrote no ANSWER.md), tools showed sources, and it cites none."""
    return bool(reply.strip()) and bool(run.sources_shown) and not cited_ids(reply) and not run.answer_written()
