"""The turn loop (design §2.3): the minimal harness, and the hooks where assists act.

A turn is one user message followed by the agent working until it is idle (a response with no tool
calls); a step is one LLM response plus the tools it called. The question is sent once. With
force-budget off the run stops after turn 1 (first_turn_done); on, it sends "Continue." until the
budget is spent (budget_spent); either becomes no_answer when the run ends without an answer
(agent/answered.py). After each turn, when ANSWER.md does not exist, the final
non-thinking text is written to it (the backstop). Compaction, the per-turn timeout, the step limit
and the run's ceiling keep a run within its window and finite. Nothing else decides what the model
sees, unless an assist is on (agent/assists/, HARNESS_ASSISTS); each firing is an `assist` event.
Everything the loop does leaves as events on the bus and lines in the session file.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from searchbox.agent.answered import settled_stop
from searchbox.agent.assists import Assists
from searchbox.agent.assists.base import RunView
from searchbox.agent.backstop import backstop_answer
from searchbox.agent.compaction import compact, needs_compaction
from searchbox.agent.control import RunControl
from searchbox.records.events import (DONE_REASONS, PREVIEW_CHARS, AssistFired, Compaction, Delta, EventBus, Notice, RunStart,
                                      StepEnd, StepStart, Stop, ToolEnd, ToolStart, TurnEnd, TurnStart, read_events, turn_ended)
from searchbox.agent.prompts import CONTINUE, run_system_prompt
from searchbox.agent.session import Session
from searchbox.llm.errors import ContextOverflow, LLMError
from searchbox.llm.types import ChatModel, ChatResponse, ToolCall, ToolChoice
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings
from searchbox.cancel import Cancelled
from searchbox.tools.tool import ToolResult


class Toolbox(Protocol):
    def schemas(self) -> list[dict[str, Any]]: ...

    def call(self, name: str, arguments: dict[str, Any] | None, parse_error: str | None) -> ToolResult: ...

    def source_texts(self, ids: list[str]) -> dict[str, str]:
        """The texts of these source ids, those that can be read."""


class _TurnOver(Exception):
    """The current turn must end now (timeout, step limit); the run itself may go on."""


class _RunOver(Exception):
    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


@dataclass
class LoopState:
    turn: int = 0
    step: int = 0
    tool_calls: int = 0


class AgentLoop:
    def __init__(self, job_dir: Path, settings: Settings, model: ChatModel, toolbox: Toolbox,
                 bus: EventBus, control: RunControl | None = None) -> None:
        self.folder = JobFolder(job_dir)
        self.work_dir = self.folder.work
        self.settings = settings
        self.model = model
        self.toolbox = toolbox
        self.bus = bus
        self.control = control or RunControl()
        self.session = Session.load(self.folder.session)
        self.system = run_system_prompt(settings, toolbox.schemas())
        self.state = LoopState(turn=len(self.folder.read_turns()), step=self.session.responses(),
                               tool_calls=self.session.tool_results())
        self.started = time.monotonic()
        self._turn_deadline = float("inf")  # when the current turn passes TURN_TIMEOUT_SECONDS
        self.view = RunView(question="", offered=frozenset(s["function"]["name"] for s in toolbox.schemas()),
                            answer_written=self.folder.has_answer, source_texts=toolbox.source_texts)
        self.assists = Assists(settings, self._fired)

    # -- the run --------------------------------------------------------------------------

    def run(self, question: str) -> str:
        """Run (or resume) until a stop reason; returns it. Never raises for LLM or tool trouble."""
        resumed = bool(self.session.messages)
        self.view.question = question
        self.bus.emit(RunStart(resumed=resumed, turns_done=self.state.turn, model=self.model.model_id,
                               context_window=self.settings.context_window))
        unrecorded_turn = False
        if not resumed:
            self.session.append({"role": "user", "content": question})
        elif self.session.messages[-1].get("role") == "assistant" and not self.session.messages[-1].get("tool_calls"):
            turns_in_session = 1 + sum(1 for m in self.session.messages if m.get("role") == "user" and m.get("content") == CONTINUE)
            # Killed after a turn's last response but before its turn_end: end that turn, do not redo it.
            unrecorded_turn = turns_in_session > self.state.turn
            if not unrecorded_turn:  # the last turn finished idle: resuming means the next turn
                self._send_continue_if_budget_left()
        try:
            reason = settled_stop(self._turns(unrecorded_turn), self.folder, question, self.session.messages, self.bus)
        except _RunOver as over:
            reason = over.reason
            if over.detail:
                self.bus.emit(Notice(level="error", message=over.detail))
        self.bus.emit(Stop(reason=reason, turns=self.state.turn, done=reason in DONE_REASONS,
                           tokens=self.session.token_totals()))
        return reason

    def _send_continue_if_budget_left(self) -> None:
        if self.settings.force_budget and self.state.turn < self.settings.turn_budget:
            self.session.append({"role": "user", "content": CONTINUE})

    def _turns(self, unrecorded_turn: bool = False) -> str:
        while True:
            if self.state.turn >= self.settings.turn_budget and not unrecorded_turn:
                return "budget_spent"
            self.state.turn += 1
            self.bus.turn, self.bus.step = self.state.turn, 0
            turn_started = time.monotonic()
            if unrecorded_turn:
                unrecorded_turn = False
                self.bus.step = self.state.step  # the turn's last response, as the events before the stop said
            else:
                self.bus.emit(TurnStart(budget=self.settings.turn_budget))
                self.view.turn = self.state.turn
                self.view.asked_again.clear()
                self.assists.turn_start(self.view)
                try:
                    self._steps(turn_started)
                except _TurnOver as over:
                    self.bus.emit(Notice(level="warning", message=str(over)))
                    self._wrap_up()
            backstop_answer(self.folder, self.bus, self.session.messages, lambda final: self.assists.answer(self.view, final))
            self.bus.emit(TurnEnd(tool_calls=self.state.tool_calls, tokens=self.session.token_totals(),
                                  compactions=self.session.compactions, seconds=round(time.monotonic() - turn_started, 3)))
            if not self.settings.force_budget:
                return "first_turn_done"
            if self.state.turn >= self.settings.turn_budget:
                return "budget_spent"
            self._check_stop()
            self.session.append({"role": "user", "content": CONTINUE})

    def _steps(self, turn_started: float) -> None:
        self._turn_deadline = turn_started + self.settings.turn_timeout_seconds
        self._finish_interrupted_step()
        for step_in_turn in range(1, self.settings.max_steps_per_turn + 1):
            self._check_stop()
            if time.monotonic() - turn_started > self.settings.turn_timeout_seconds:
                raise _TurnOver(turn_ended(self.state.turn, "turn_timeout"))
            self.state.step += 1
            self.bus.step = self.state.step
            self.view.step_in_turn = step_in_turn
            response = self._respond(self.assists.tool_choice(self.view))
            if not response.tool_calls:
                follow_up = self.assists.follow_up(self.view, response.text)
                if follow_up is None:
                    return  # idle: the turn is over
                self.view.asked_again.append(response.text)
                self.session.append({"role": "user", "content": follow_up})
                continue
            self.view.asked_again.clear()  # the model searched again: its next answer stands on its own
            for call in response.tool_calls:
                self._check_stop()
                self._run_tool(call)
        raise _TurnOver(turn_ended(self.state.turn, "max_steps"))

    def _fired(self, assist: str, hook: str, sent: str) -> None:
        self.bus.emit(AssistFired(assist=assist, hook=hook, sent=sent))

    def _finish_interrupted_step(self) -> None:
        """Run the tool calls a stopped run left without results (a pause or preemption between a
        response and its tools, or a crash): asking the model again would repeat the step, and
        endpoints refuse a history whose tool calls have no results. A call that was running when the
        app died is not run again (it may be what killed it): its result says so."""
        started = self._calls_started_since_the_last_response()
        answered: set[str] = set()
        for message in reversed(self.session.messages):
            if message.get("role") == "tool":
                answered.add(str(message.get("tool_call_id")))
                continue
            if message.get("role") != "assistant":
                return
            self.bus.step = self.state.step  # the step that response opened, as its events said before the stop
            for part in message.get("tool_calls") or []:
                if part["id"] in answered:
                    continue
                self._check_stop()
                raw = part["function"]["arguments"]
                self._run_tool(ToolCall(part["id"], part["function"]["name"], json.loads(raw), raw),
                               crashed=part["id"] in started)
            return

    def _calls_started_since_the_last_response(self) -> set[str]:
        started: set[str] = set()
        for event in read_events(self.folder.events):
            match event:
                case StepEnd():
                    started.clear()
                case ToolStart(call_id=call_id):
                    started.add(call_id)
        return started

    def _wrap_up(self) -> None:
        """A turn cut short: an assist may ask for one more response, with no tools on offer."""
        message = self.assists.turn_cut(self.view)
        if message is None:
            return
        self._check_stop()
        self.session.append({"role": "user", "content": message})
        self.state.step += 1
        self.bus.step = self.state.step
        self._respond("none")

    # -- one step -------------------------------------------------------------------------

    def _respond(self, tool_choice: ToolChoice) -> ChatResponse:
        self.bus.emit(StepStart())
        self._maybe_compact()
        started = time.monotonic()
        try:
            response = self._stream(tool_choice)
        except ContextOverflow:
            self.bus.emit(Notice(level="warning", message="the endpoint reported a context overflow: compacting and retrying once"))
            self._compact(forced=True)
            try:
                response = self._stream(tool_choice)
            except ContextOverflow as exc:
                raise _RunOver("error_llm", f"context overflow even after compaction: {exc}") from exc
        llm_ms = (time.monotonic() - started) * 1000
        usage = response.usage.as_dict()
        self.session.append(response.as_message(), usage=usage, reasoning=response.reasoning or None,
                            timings=response.timings or None, unread=response.unread or None)
        self.bus.emit(StepEnd(usage=usage, llm_ms=round(llm_ms, 1), timings=response.timings,
                              tool_calls=[c.name for c in response.tool_calls], text=response.text,
                              finish_reason=response.finish_reason, context_tokens=usage["input"] + usage["output"],
                              unread=response.unread))
        return response

    def _stream(self, tool_choice: ToolChoice) -> ChatResponse:
        messages = self.session.context(self.system)
        tools = None if tool_choice == "none" else self.toolbox.schemas() or None
        try:
            for event in self.model.stream(messages, tools, max_tokens=self.settings.max_output_tokens,
                                           tool_choice=tool_choice if tools else "auto", seed=self.settings.llm_seed):
                if self.control.requested:
                    raise _RunOver(self.control.requested)
                if event.kind in ("text", "reasoning", "retry"):
                    self.bus.emit(Delta(kind=event.kind, text=event.text))
                elif event.kind == "notice":
                    self.bus.emit(Notice(level="warning", message=event.text))
                elif event.kind == "done" and event.response is not None:
                    return event.response
        except (ContextOverflow, _RunOver):
            raise
        except Exception as exc:  # a backend's own bug must end the run cleanly, records kept
            raise _RunOver("error_llm", f"{type(exc).__name__}: {exc}"[:2000]) from exc
        raise _RunOver("error_llm", "the model's stream ended without a response")

    def _run_tool(self, call: ToolCall, crashed: bool = False) -> None:
        self.state.tool_calls += 1
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
                                    (self._turn_deadline, "turn_timeout")))
            try:
                output = self.toolbox.call(call.name, call.arguments, call.parse_error)
            finally:
                token.set_deadline(None)
        duration_ms = (time.monotonic() - started) * 1000
        self.view.sources_shown += [s for s in output.sources if s not in self.view.sources_shown]
        # A cut call keeps its result (what it had, and that it was cut): a resumed run never runs it again.
        self.session.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": output.text},
                            ended=output.ended)
        self.bus.emit(ToolEnd(call_id=call.id, name=call.name, arguments=call.arguments or {},
                              raw_arguments=call.raw_arguments, duration_ms=round(duration_ms, 1),
                              is_error=output.is_error, ended=output.ended, preview=output.text[:PREVIEW_CHARS],
                              details=output.details,
                              gist=output.one_line()))

    # -- compaction, stopping, the answer ------------------------------------------------------

    def _maybe_compact(self) -> None:
        if self.session.usages:
            last = self.session.usages[-1]
            if needs_compaction(last.get("input", 0) + last.get("output", 0), self.settings):
                self._compact(forced=False)

    def _compact(self, forced: bool) -> None:
        tokens_before = sum(self.session.usages[-1].get(k, 0) for k in ("input", "output")) if self.session.usages else 0
        try:
            result = compact(self.model, self.session, self.settings)
        except LLMError as exc:
            raise _RunOver("error_llm", f"compaction failed: {exc}") from exc
        if result is None:
            if forced:
                raise _RunOver("error_llm", "the context overflowed and there was nothing left to compact")
            return
        summary, usage, first_kept = result
        self.session.record_compaction(summary, first_kept, tokens_before, usage.as_dict())
        self.bus.emit(Compaction(tokens_before=tokens_before, first_kept=first_kept,
                                 compactions=self.session.compactions, summary_chars=len(summary)))

    def _check_stop(self) -> None:
        if self.control.requested:
            raise _RunOver(self.control.requested)
        if time.monotonic() - self.started > self.settings.ceiling_seconds:
            raise _RunOver("ceiling_seconds")

