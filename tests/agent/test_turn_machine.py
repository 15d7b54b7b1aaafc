"""The turn machine (searchbox/agent/turns.py) is the one loop of every harness: whatever drives a turn,
the backstop goes through the assists' hook, and a resumed run picks up by the same rule (a turn killed
before its turn_end is ended, not run again; a turn a stop cut is reopened with the driver's message;
a run whose last turn ended goes on as the budget says).

The runs are real (run_job, the job folder, its records) with a scripted driver in the harness's place:
it drives each turn with the replies of its script, recorded as a harness's own transcript records them,
as Pi's driver does. Pi's own driver is resumed the same way in test_pi_harness.py."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import SMALL_DATAROOM, write_tree
from testkit.fake_model import FakeChatModel
from searchbox.agent import run as run_module
from searchbox.agent.assists.ask_sources import ask_sources
from searchbox.agent.prompts import CONTINUE
from searchbox.agent.run import run_job
from searchbox.agent.turns import RunOver, TurnMachine
from searchbox.jobs.job import create_job
from searchbox.records.events import (AssistFired, Event, Listener, StepEnd, StepStart, TurnEnd, TurnStart,
                                      load_events)
from searchbox.records.files import read_jsonl
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings

QUESTION = "When does the office lease end?"
ANSWER = "The lease ends on 31 March 2029."

# One turn of a script: the replies the model gives, in order; a user message between two of them is an
# assist's follow-up to the first; an exception is raised where it stands (a stop).
Turn = list[dict[str, Any] | Exception]


def reply(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


class ScriptedDriver:
    """Drives each turn with the next turn of its script, recorded as a harness's own transcript records it
    (as Pi's driver does): no model, no tools. Keeps each driven turn's opening message."""

    resume_message: str | None = CONTINUE

    def __init__(self, machine: TurnMachine, turns: list[Turn], openings: list[str | None]) -> None:
        self.machine, self.turns, self.openings = machine, turns, openings

    def running(self) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()

    def token_totals(self) -> dict[str, int]:
        return self.machine.session.token_totals()

    def public(self, detail: str) -> str:
        return detail

    def drive_turn(self, opening: str | None) -> None:
        self.openings.append(opening)
        for item in self.turns.pop(0):
            if isinstance(item, Exception):
                raise item
            self.machine.session.append(item)
            if item["role"] == "user":
                self.machine.view.asked_again.append(self.machine.session.messages[-2]["content"])
                continue
            self.machine.begin_step()
            self.machine.bus.emit(StepStart())
            self.machine.bus.emit(StepEnd(text=item["content"]))


class Killed(Exception):
    """The app died here: no stop event, nothing cleaned up."""


def kill_at(kind: str) -> Listener:
    def listen(event: Event) -> None:
        if event.type == kind:
            raise Killed(kind)
    return listen


@dataclass
class ScriptedJob:
    folder: JobFolder
    settings: Settings
    script: list[Turn]  # the turns not driven yet
    openings: list[str | None]  # each driven turn's opening message

    def run(self, *listeners: Listener) -> str:
        """Run or resume it, as the app does: run_job, the scripted driver in the native one's place."""
        return run_job(self.folder.root, self.settings, FakeChatModel([]), list(listeners))


Scripted = Callable[..., ScriptedJob]  # (turns, **knobs): a job with that script and those knobs


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Scripted:
    def start(turns: list[Turn], **knobs: Any) -> ScriptedJob:
        settings = Settings.resolve(env={}, **{"searchbox_tools": "", "retrieval_preset": "packaged",
                                               "searchbox_cache_dir": str(tmp_path / "cache"), **knobs})
        create_job(tmp_path / "job", QUESTION, write_tree(tmp_path / "room", SMALL_DATAROOM), settings)
        job = ScriptedJob(JobFolder(tmp_path / "job"), settings, list(turns), [])
        monkeypatch.setattr(run_module, "NativeDriver",
                            lambda machine: ScriptedDriver(machine, job.script, job.openings))
        return job
    return start


def turns_started(folder: JobFolder) -> list[int]:
    return [e.turn for e in load_events(folder.root) if isinstance(e, TurnStart)]


def test_the_backstop_goes_through_the_assists_hook_whatever_drives_the_turn(scripted: Scripted) -> None:
    # An assist asked for sources after the answer; the reply to that cites nothing: keep_answer keeps the answer.
    job = scripted([[reply(ANSWER), {"role": "user", "content": ask_sources(["s1"])}, reply("Sorry, which source?")]],
                   harness_assists="keep_answer")
    assert job.run() == "first_turn_done"
    fired = [e for e in load_events(job.folder.root) if isinstance(e, AssistFired)]
    assert [(e.assist, e.hook, e.sent) for e in fired] == [("keep_answer", "answer", ANSWER)]
    assert job.folder.answer_text().strip() == ANSWER


def test_a_turn_killed_before_its_turn_end_is_ended_on_resume_not_run_again(scripted: Scripted) -> None:
    job = scripted([[reply(ANSWER)], [reply("It still ends on 31 March 2029.")]], turn_budget=2, force_budget=True)
    with pytest.raises(Killed):
        job.run(kill_at("step_end"))
    assert job.folder.read_turns() == [] and not job.folder.has_answer()
    assert job.run() == "budget_spent"
    # Turn 1 was driven once, before the kill; the resumed run ended it (backstop, turn_end) and drove turn 2.
    assert job.openings == [QUESTION, CONTINUE] and job.script == []
    assert [row["turn"] for row in job.folder.read_turns()] == [1, 2] and turns_started(job.folder) == [1, 2]
    assert job.folder.answer_text().strip() == ANSWER


def test_a_run_killed_after_its_last_turn_ended_stops_as_the_budget_says_on_resume(scripted: Scripted) -> None:
    job = scripted([[reply(ANSWER)]])
    with pytest.raises(Killed):
        job.run(kill_at("turn_end"))
    assert job.run() == "first_turn_done"  # force-budget off: no turn follows the first
    assert job.openings == [QUESTION] and turns_started(job.folder) == [1]
    assert sum(isinstance(e, TurnEnd) for e in load_events(job.folder.root)) == 1


@pytest.mark.parametrize("resume_message", [CONTINUE, None])
def test_a_turn_a_stop_cut_is_reopened_with_the_drivers_resume_message(
        scripted: Scripted, monkeypatch: pytest.MonkeyPatch, resume_message: str | None) -> None:
    """A reply the stop cut (Pi's aborted message) looks like a turn's end; the stop event says it is not."""
    monkeypatch.setattr(ScriptedDriver, "resume_message", resume_message)
    job = scripted([[reply(""), RunOver("paused")], [reply(ANSWER)]])
    assert job.run() == "paused"
    assert job.run() == "first_turn_done"
    assert job.openings == [QUESTION, resume_message] and turns_started(job.folder) == [1, 1]
    users = [row["message"]["content"] for row in read_jsonl(job.folder.session) if row["message"]["role"] == "user"]
    assert users == [QUESTION, *([resume_message] if resume_message else [])]
    assert job.folder.answer_text().strip() == ANSWER
