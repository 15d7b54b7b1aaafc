"""HARNESS=native: how searchbox's own harness drives a turn (design §2.3) for the turn machine
(agent/turns.py), which owns everything around the turns.

Each step sends the session's context to the model and runs the tools its response called, until a
response calls none. Compaction keeps the context within the model's window. Nothing else decides what
the model sees, unless an assist is on (agent/assists/, HARNESS_ASSISTS): a tool_choice before each step,
a follow-up instead of ending the turn, one last response offered no tools when a limit cut the turn;
each firing is an `assist` event. A turn the run stopped in goes on from the session as it stands.
"""

from __future__ import annotations

import contextlib
import json
import time

from searchbox.agent.compaction import compact, needs_compaction
from searchbox.agent.prompts import run_system_prompt
from searchbox.agent.turns import RunOver, TurnMachine
from searchbox.cancel import Cancelled
from searchbox.llm.errors import ContextOverflow, LLMError
from searchbox.llm.types import ChatResponse, ToolCall, ToolChoice
from searchbox.records.events import TURN_ENDERS, Compaction, Delta, Notice, StepEnd, StepStart, ToolStart, read_events


class NativeDriver:
    resume_message: str | None = None  # the session is the model's whole context: a stopped turn goes on from it

    def __init__(self, machine: TurnMachine) -> None:
        self.machine = machine
        self.settings = machine.settings
        self.session = machine.session
        self.bus = machine.bus
        self.system = run_system_prompt(machine.settings, machine.toolbox.schemas())

    def running(self) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()

    def token_totals(self) -> dict[str, int]:
        return self.session.token_totals()

    def public(self, detail: str) -> str:
        return detail  # the chat client scrubs the endpoint from its own errors (llm/clients/openai_client.py)

    # -- one turn -------------------------------------------------------------------------

    def drive_turn(self, opening: str | None) -> None:
        self._finish_interrupted_step()
        limit = self._steps()
        if limit is not None:
            self.machine.cut_turn(limit)
            self._wrap_up()

    def _steps(self) -> str | None:
        """Steps until the model is idle (None), or the turn limit that ended them."""
        view, assists = self.machine.view, self.machine.assists
        step_in_turn = 0
        while True:
            step_in_turn += 1
            limit = self.machine.turn_limit(step_in_turn)
            if limit in TURN_ENDERS:
                return limit
            if limit is not None:
                raise RunOver(limit)
            self.machine.begin_step()
            view.step_in_turn = step_in_turn
            response = self._respond(assists.tool_choice(view))
            if not response.tool_calls:
                follow_up = assists.follow_up(view, response.text)
                if follow_up is None:
                    return None  # idle: the turn is over
                view.asked_again.append(response.text)
                self.session.append({"role": "user", "content": follow_up})
                continue
            view.asked_again.clear()  # the model searched again: its next answer stands on its own
            for call in response.tool_calls:
                self.machine.check_stop()
                self.machine.run_tool(call)

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
            self.bus.step = self.machine.progress.step  # the step that response opened, as its events said
            for part in message.get("tool_calls") or []:
                if part["id"] in answered:
                    continue
                self.machine.check_stop()
                raw = part["function"]["arguments"]
                self.machine.run_tool(ToolCall(part["id"], part["function"]["name"], json.loads(raw), raw),
                                      crashed=part["id"] in started)
            return

    def _calls_started_since_the_last_response(self) -> set[str]:
        started: set[str] = set()
        for event in read_events(self.machine.folder.events):
            match event:
                case StepEnd():
                    started.clear()
                case ToolStart(call_id=call_id):
                    started.add(call_id)
        return started

    def _wrap_up(self) -> None:
        """A turn cut short: an assist may ask for one more response, with no tools on offer."""
        message = self.machine.assists.turn_cut(self.machine.view)
        if message is None:
            return
        self.machine.check_stop()
        self.session.append({"role": "user", "content": message})
        self.machine.begin_step()
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
                raise RunOver("error_llm", f"context overflow even after compaction: {exc}") from exc
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
        tools = None if tool_choice == "none" else self.machine.toolbox.schemas() or None
        try:
            for event in self.machine.model.stream(messages, tools, max_tokens=self.settings.max_output_tokens,
                                                   tool_choice=tool_choice if tools else "auto", seed=self.settings.llm_seed,
                                                   thinking=self.settings.thinking, cancel=self.machine.control.token):
                if self.machine.control.requested:
                    raise RunOver(self.machine.control.requested)
                if event.kind in ("text", "reasoning", "retry"):
                    self.bus.emit(Delta(kind=event.kind, text=event.text))
                elif event.kind == "notice":
                    self.bus.emit(Notice(level="warning", message=event.text))
                elif event.kind == "done" and event.response is not None:
                    return event.response
        except (ContextOverflow, RunOver):
            raise
        except Cancelled as cut:  # a stop during the prompt's evaluation
            raise RunOver(self.machine.control.requested or cut.reason) from cut
        except Exception as exc:  # a backend's own bug must end the run cleanly, records kept
            raise RunOver("error_llm", f"{type(exc).__name__}: {exc}"[:2000]) from exc
        raise RunOver("error_llm", "the model's stream ended without a response")

    # -- compaction -----------------------------------------------------------------------

    def _maybe_compact(self) -> None:
        if self.session.usages:
            last = self.session.usages[-1]
            if needs_compaction(last.get("input", 0) + last.get("output", 0), self.settings):
                self._compact(forced=False)

    def _compact(self, forced: bool) -> None:
        tokens_before = sum(self.session.usages[-1].get(k, 0) for k in ("input", "output")) if self.session.usages else 0
        try:
            result = compact(self.machine.model, self.session, self.settings)
        except LLMError as exc:
            raise RunOver("error_llm", f"compaction failed: {exc}") from exc
        if result is None:
            if forced:
                raise RunOver("error_llm", "the context overflowed and there was nothing left to compact")
            return
        summary, usage, first_kept = result
        self.session.record_compaction(summary, first_kept, tokens_before, usage.as_dict())
        self.bus.emit(Compaction(tokens_before=tokens_before, first_kept=first_kept,
                                 compactions=self.session.compactions, summary_chars=len(summary)))
