"""The turn machine (design §2.3): the one loop every harness runs, configured by a driver, as Pi's own
agent loop is one loop configured by hooks.

A turn is one user message followed by the agent working until it is idle (a response with no tool
calls); a step is one LLM response plus the tools it called. The question is sent once. With
force-budget off the run stops after turn 1 (first_turn_done); on, `Continue.` opens each next turn
until the budget is spent (budget_spent); either becomes no_answer when the run ends without an answer
(agent/answered.py). After each turn the backstop writes the final reply to ANSWER.md when there is none
(agent/backstop.py), through the assists' hook. The machine owns all of that, the run's start and stop
events, the stop checks (a stop request, CEILING_SECONDS, a turn's TURN_TIMEOUT_SECONDS and
MAX_STEPS_PER_TURN), every tool call with its events and deadline, and where a resumed run picks up.
A harness supplies a `TurnDriver`: how one turn is driven until the model is idle (agent/native.py,
searchbox's own; agent/pi/driver.py, the Pi coding agent).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from searchbox.agent.answered import settled_stop
from searchbox.agent.assists import Assists
from searchbox.agent.assists.base import RunView
from searchbox.agent.backstop import backstop_answer
from searchbox.agent.control import RunControl
from searchbox.agent.prompts import CONTINUE
from searchbox.agent.session import Session
from searchbox.agent.toolbox import RunToolbox
from searchbox.cancel import Cancelled
from searchbox.llm.types import ChatModel, ToolCall
from searchbox.records.events import (DONE_REASONS, PREVIEW_CHARS, AssistFired, EventBus, Notice, RunStart, Stop,
                                      ToolEnd, ToolStart, TurnEnd, TurnStart, read_events, turn_ended)
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings
from searchbox.tools.tool import ToolResult


# Where a run starts from: a new run, or where the run it resumes stopped (TurnMachine._where_it_stopped).
StoppedAt = Literal["fresh", "mid_turn", "between_turns", "turn_unrecorded"]


class RunOver(Exception):
    """The run stops now with `reason`; `detail`, when there is one, is said in the feed as an error."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


class TurnDriver(Protocol):
    """How a harness drives one turn; everything around the turns is the TurnMachine's."""

    # The user message that reopens a turn the run stopped in; None where the driver goes on from the
    # session as it stands.
    resume_message: str | None

    def running(self) -> AbstractContextManager[object]:
        """What the driver keeps up while the run's turns go on, ended when the run stops, however it stops."""
        ...

    def drive_turn(self, opening: str | None) -> None:
        """Drive the current turn until the model is idle or a turn limit ends it (`TurnMachine.turn_limit`,
        then `TurnMachine.cut_turn`). `opening`, the user message that opens the turn, is in the session
        already; None: a turn the run stopped in goes on from the session."""
        ...

    def token_totals(self) -> dict[str, int]:
        """The run's tokens so far, as turn_end and stop record them."""
        ...

    def public(self, detail: str) -> str:
        """Why the run stopped (a RunOver's detail) as the feed may show it."""
        ...


@dataclass
class Progress:
    """The run's counts so far, a resumed run's taken from its records: turns begun, responses, tool calls."""
    turn: int = 0
    step: int = 0
    tool_calls: int = 0


class TurnMachine:
    def __init__(self, job_dir: Path, settings: Settings, model: ChatModel, toolbox: RunToolbox, bus: EventBus,
                 control: RunControl | None, driver: Callable[[TurnMachine], TurnDriver]) -> None:
        self.folder = JobFolder(job_dir)
        self.settings = settings
        self.model = model
        self.toolbox = toolbox
        self.bus = bus
        self.control = control or RunControl()
        self.session = Session.load(self.folder.session)  # the transcript a resumed run goes on from
        self.progress = Progress(turn=len(self.folder.read_turns()), step=self.session.responses(),
                                 tool_calls=self.session.tool_results())
        self.started = time.monotonic()
        self.turn_deadline = float("inf")  # when the current turn passes TURN_TIMEOUT_SECONDS
        self.view = RunView(question="", offered=frozenset(s["function"]["name"] for s in toolbox.schemas()),
                            answer_written=self.folder.has_answer, source_texts=toolbox.source_texts)
        self.assists = Assists(settings, self._fired)
        self.driver = driver(self)

    # -- the run --------------------------------------------------------------------------

    def run(self, question: str) -> str:
        """Run (or resume) until a stop reason; returns it. Never raises for LLM, tool or harness trouble."""
        resumed = bool(self.session.messages)
        where = self._where_it_stopped() if resumed else "fresh"
        self.view.question = question
        self.bus.emit(RunStart(resumed=resumed, turns_done=self.progress.turn, model=self.model.model_id,
                               context_window=self.settings.context_window))
        try:
            with self.driver.running():
                reason = settled_stop(self._turns(question, where), self.folder, question, self.session.messages,
                                      self.toolbox.schemas(), self.bus)
        except RunOver as over:
            reason = over.reason
            if over.detail:
                self.bus.emit(Notice(level="error", message=self.driver.public(over.detail)))
        self.bus.emit(Stop(reason=reason, turns=self.progress.turn, done=reason in DONE_REASONS,
                           tokens=self.driver.token_totals()))
        return reason

    def _turns(self, question: str, where: StoppedAt) -> str:
        opening = question if where == "fresh" else self.driver.resume_message
        ended = where in ("between_turns", "turn_unrecorded")  # then the budget decides whether another turn follows
        if where == "turn_unrecorded":  # end that turn: its work is done, it is not run again
            started = self._next_turn()
            self.bus.step = self.progress.step  # the turn's last response, as the events before the stop said
            self._end_turn(started)
        while True:
            if ended:
                if not self.settings.force_budget:
                    return "first_turn_done"
                opening = CONTINUE
            if self.progress.turn >= self.settings.turn_budget:
                return "budget_spent"
            self.check_stop()
            if opening is not None:  # in the session before the turn opens: a turn_start always follows it
                self.session.append({"role": "user", "content": opening})
            started = self._next_turn()
            self.bus.emit(TurnStart(budget=self.settings.turn_budget))
            self.turn_deadline = started + self.settings.turn_timeout_seconds
            self.view.turn = self.progress.turn
            self.view.asked_again.clear()
            self.assists.turn_start(self.view)
            self.driver.drive_turn(opening)
            self._end_turn(started)
            ended = True

    def _next_turn(self) -> float:
        self.progress.turn += 1
        self.bus.turn, self.bus.step = self.progress.turn, 0
        return time.monotonic()

    def _end_turn(self, started: float) -> None:
        backstop_answer(self.folder, self.bus, self.session.messages, self.toolbox.schemas(),
                        lambda final: self.assists.answer(self.view, final))
        self.bus.emit(TurnEnd(tool_calls=self.progress.tool_calls, tokens=self.driver.token_totals(),
                              compactions=self.session.compactions, seconds=round(time.monotonic() - started, 3)))

    def _where_it_stopped(self) -> StoppedAt:
        """Where a resumed run's last part stopped, from its session, events and turns.jsonl: inside a turn;
        between turns (the last one ended idle and was recorded); or killed after a turn's last response and
        before its turn_end was recorded. A part that stopped inside a turn (not after its turn_end) leaves
        the turn to go on: a reply that a stop cut (Pi's aborted message) looks idle but is not the turn's last."""
        last = self.session.messages[-1]
        idle = last.get("role") == "assistant" and not last.get("tool_calls")
        opened, cut = 0, False  # the last turn the events opened; whether a stop cut it before its turn_end
        ended = False
        for event in read_events(self.folder.events):
            match event:
                case TurnStart():
                    opened, ended, cut = event.turn, False, False
                case TurnEnd():
                    ended = True
                case Stop():
                    cut = not ended
        if opened <= self.progress.turn:
            return "between_turns" if idle else "mid_turn"
        return "turn_unrecorded" if idle and not cut else "mid_turn"

    # -- what drivers call ----------------------------------------------------------------

    def begin_step(self) -> None:
        self.progress.step += 1
        self.bus.step = self.progress.step

    def stop_reason(self) -> str | None:
        """A stop request, or CEILING_SECONDS passed; None while the run may go on."""
        if self.control.requested:
            return self.control.requested
        if time.monotonic() - self.started > self.settings.ceiling_seconds:
            return "ceiling_seconds"
        return None

    def check_stop(self) -> None:
        if (reason := self.stop_reason()) is not None:
            raise RunOver(reason)

    def turn_limit(self, steps: int) -> str | None:
        """What ends the turn or the run now, with `steps` of the turn's steps begun (the one about to begin
        counted): MAX_STEPS_PER_TURN first (the turn's steps are spent whatever else came), then a stop
        reason, then TURN_TIMEOUT_SECONDS. A TURN_ENDERS key ends the turn; anything else, the run."""
        if steps > self.settings.max_steps_per_turn:
            return "max_steps"
        if (reason := self.stop_reason()) is not None:
            return reason
        return "turn_timeout" if time.monotonic() > self.turn_deadline else None

    def cut_turn(self, limit: str) -> None:
        """A limit (a TURN_ENDERS key) ended the current turn: the feed says so."""
        self.bus.emit(Notice(level="warning", message=turn_ended(self.progress.turn, limit)))

    def run_tool(self, call: ToolCall, *, crashed: bool = False, in_session: bool = True) -> ToolResult:
        """One call, the same for every harness: counted, its tool_start and tool_end, an assist's answer or
        the toolbox's result, cut by a stop request and by the run's time limits. A `crashed` call was
        running when the app died: it is not run again (it may be what killed it), its result says so.
        `in_session`: whether the result goes into the session here, or the harness's own transcript
        brings it there."""
        self.progress.tool_calls += 1
        if not crashed:  # a crashed call's tool_start is recorded already
            self.bus.emit(ToolStart(call_id=call.id, name=call.name, arguments=call.arguments or {},
                                    raw_arguments=call.raw_arguments))
        started = time.monotonic()
        answered = None if crashed else self.assists.before_tool_call(self.view, call)
        if crashed:
            output = ToolResult.cut(call.name, Cancelled("crashed"))
        elif answered is not None:
            output = answered
        else:
            # The run's time limits cut a running tool as a pause does (the checks between calls then end
            # the turn or the run); a stop request cuts it through the same token.
            token = self.control.token
            token.set_deadline(*min((self.started + self.settings.ceiling_seconds, "ceiling_seconds"),
                                    (self.turn_deadline, "turn_timeout")))
            try:
                output = self.toolbox.call(call.name, call.arguments, call.parse_error)
            finally:
                token.set_deadline(None)
        duration_ms = (time.monotonic() - started) * 1000
        self.view.sources_shown += [s for s in output.sources if s not in self.view.sources_shown]
        # A cut call keeps its result (what it had, and that it was cut): a resumed run never runs it again.
        if in_session:
            self.session.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": output.text},
                                ended=output.ended)
        self.bus.emit(ToolEnd(call_id=call.id, name=call.name, arguments=call.arguments or {},
                              raw_arguments=call.raw_arguments, duration_ms=round(duration_ms, 1),
                              is_error=output.is_error, ended=output.ended, preview=output.text[:PREVIEW_CHARS],
                              details=output.details, gist=output.one_line()))
        return output

    def answered_by_harness(self, call_id: str, name: str, arguments: dict[str, Any], output: ToolResult) -> None:
        """A call the harness answered without running it (arguments its schema refused, a tool not on
        offer): counted and shown like any other, with the harness's answer."""
        self.progress.tool_calls += 1
        self.bus.emit(ToolStart(call_id=call_id, name=name, arguments=arguments))
        self.bus.emit(ToolEnd(call_id=call_id, name=name, arguments=arguments, is_error=output.is_error,
                              preview=output.text[:PREVIEW_CHARS], gist=output.one_line()))

    def _fired(self, assist: str, hook: str, sent: str) -> None:
        self.bus.emit(AssistFired(assist=assist, hook=hook, sent=sent))
