"""Would an assist have changed this run? Each assist, alone, replayed over a finished run's records by
its own code: the loop's hooks are called where the run's events say the loop stood (before each step,
before each tool call, on each reply without a call, at a cut turn, at the backstop), with what the
loop's RunView held there. The first hook that returns something is where the assist alone would have
fired; the run with it on would be the same run up to there, and another after it.

An assist that never fires over a run of the minimal loop leaves that run as it was: with the same
model, seed and prompt day, the run with the assist on alone is the same run (llama.cpp samples
deterministically on one machine; bench/assist_replay.py --check compares such transcripts). This is
how a sweep learns which "assist alone" cells it need not spend a run on, and which cells an assist
touched at all.

What the records do not hold exactly: whether work/ANSWER.md existed at a reply, taken here from the
run's completed write and edit calls on it (bash writing it is not seen)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from searchbox.agent.assists import ASSISTS
from searchbox.agent.assists.base import Assist, RunView
from searchbox.llm.types import ToolCall
from searchbox.records.events import (Event, StepEnd, StepStart, ToolEnd, ToolStart, TurnEnd, TurnStart, ends_a_turn,
                                      read_events)
from searchbox.records.files import read_jsonl
from searchbox.records.job_folder import ANSWER_NAME, JobFolder
from searchbox.settings import Settings
from searchbox.settings.loop import ASSIST_NAMES
from searchbox.settings.resolved import knob_fields
from searchbox.workspace import Workspace

@dataclass(frozen=True)
class Firing:
    """Where an assist, alone, would first have acted on the run."""
    assist: str
    turn: int
    step: int  # the run's step (from 1)
    hook: str
    sent: str  # what it would have sent, or the tool it would have forced


def run_settings(config: dict[str, object], assist: str) -> Settings:
    """A run's recorded knobs (its config.json), with this assist alone on ("" for none)."""
    knobs = {f.name for f in knob_fields()}
    values = {name.lower(): value for name, value in config.items() if name.lower() in knobs}
    return Settings.resolve(env={}, **{**values, "harness_assists": assist})


def replay(job_dir: Path, assists: tuple[str, ...] = ASSIST_NAMES) -> dict[str, Firing | None]:
    """Each assist's first firing over the run in job_dir, had it alone been on; None: it never fires."""
    folder = JobFolder(job_dir)
    config, events = folder.read_config(), read_events(folder.events)
    view = {"question": folder.question(), "offered": frozenset(folder.read_meta().get("tools_enabled") or []),
            "source_texts": Workspace.open(job_dir, run_settings(config, "")).source_texts}  # no assist changes these
    firings: dict[str, Firing | None] = {}
    for name in assists:
        replayer = _Replayer(ASSISTS[name](run_settings(config, name)), **view)
        firings[name] = next((Firing(name, event.turn, event.step, *fired) for event in events
                              if (fired := replayer.at(event)) is not None), None)
    return firings


class _Replayer:
    """One assist and the RunView the loop would have kept, moved along the run's events."""

    def __init__(self, assist: Assist, question: str, offered: frozenset[str],
                 source_texts: Callable[[list[str]], dict[str, str]]) -> None:
        self.assist = assist
        self.view = RunView(question=question, offered=offered, answer_written=lambda: self.answered,
                            source_texts=source_texts)
        self.answered = False  # the model wrote work/ANSWER.md
        self.final = ""  # the last reply that said something

    def at(self, event: Event) -> tuple[str, str] | None:
        """Call the hook the loop called at this event: (hook, what the assist returned), if it returned anything."""
        assist, view = self.assist, self.view
        if isinstance(event, TurnStart):
            view.turn, view.step_in_turn = event.turn, 0
            view.asked_again.clear()
            assist.turn_start(view)
        elif isinstance(event, StepStart):
            view.step_in_turn += 1
            choice = assist.tool_choice(view)
            if choice is not None:
                return "tool_choice", choice if isinstance(choice, str) else str(choice["function"]["name"])
        elif isinstance(event, ToolStart):
            view.asked_again.clear()
            result = assist.before_tool_call(view, ToolCall(event.call_id, event.name, event.arguments,
                                                            event.raw_arguments or ""))
            if result is not None:
                return "before_tool_call", result.text
        elif isinstance(event, ToolEnd):
            view.sources_shown += [s for s in event.sources() if s not in view.sources_shown]
            if (event.name in ("write", "edit") and not event.is_error
                    and Path(str(event.arguments.get("path", ""))).name == ANSWER_NAME):
                self.answered = True
        elif isinstance(event, StepEnd) and not event.tool_calls:
            self.final = event.text if event.text.strip() else self.final
            message = assist.follow_up(view, event.text)
            if message is not None:
                return "follow_up", message
        elif ends_a_turn(event):
            message = assist.turn_cut(view)
            if message is not None:
                return "turn_cut", message
        elif isinstance(event, TurnEnd) and not self.answered:  # the backstop's turn
            answer = assist.answer(view, self.final)
            self.answered = bool((answer if answer is not None else self.final).strip())  # what it wrote
            if answer is not None:
                return "answer", answer
        return None


_CALL_ID = re.compile(r"call_[0-9A-Za-z]+")


def same_transcript(job_a: Path, job_b: Path) -> bool:
    """Whether two runs' sessions hold the same messages, tool-call ids aside (those are random)."""
    def messages(job_dir: Path) -> list[str]:
        rows = read_jsonl(JobFolder(job_dir).session)
        return [_CALL_ID.sub("call_", json.dumps(r.get("message"), sort_keys=True)) for r in rows]
    return messages(job_a) == messages(job_b)
