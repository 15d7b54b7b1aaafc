"""HARNESS=pi: how the Pi coding agent in RPC mode drives a turn (issue 23) for the turn machine
(agent/turns.py), which owns everything around the turns, as it does for the native harness.

Pi runs its own loop and compaction, untouched. Searchbox appends its task block to Pi's system prompt;
each turn's opening message (the question, then `Continue.`) is a prompt to the idle Pi, and the turn lasts
until Pi's agent_settled (its retries, compactions and overflow recovery done); a step is one of Pi's turns
(one assistant message and its tool calls).
Pause, Stop, preemption and the time limits abort Pi, and the tool running then is cut through the run's
cancel token; TURN_TIMEOUT_SECONDS and MAX_STEPS_PER_TURN end the turn that way and the run goes on. A
resumed run continues Pi's session file.
Every tool Pi calls runs here, in this thread, through the turn machine and the run's Toolbox
(tool_server.py), so sources, ledger ids, events and records come from the same code as a native run's.
Pi's events become searchbox's typed events; token totals are summed from Pi's session file.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from searchbox.agent.pi.config import (PiPaths, base_url, llm_problem, pi_argv, pi_env, relayed, url_problem,
                                       write_agent_dir)
from searchbox.agent.pi.install import pi_problem
from searchbox.agent.pi.rpc import Line, PiExited, PiProcess
from searchbox.agent.pi.tool_server import Reply, Request, ToolServer
from searchbox.agent.prompts import CONTINUE, prompt_day, task_block
from searchbox.agent.turns import RunOver, TurnMachine
from searchbox.llm.clients.assemble import CHARS_PER_TOKEN
from searchbox.llm.disclosure import hidden, operator_details
from searchbox.llm.serve import ModelServer
from searchbox.llm.types import ToolCall
from searchbox.records.events import TURN_ENDERS, Compaction, Delta, Notice, StepEnd, StepStart
from searchbox.records.files import read_jsonl
from searchbox.tools.registry import CATALOG_PATH
from searchbox.tools.tool import ToolResult

# How long a tool call may wait for the end of the response that made it before it runs anyway. Pi writes
# that message_end to stdout before it calls the tool over the socket, so the wait is only how late the
# reader thread is.
_ORDER_WAIT_S = 5.0
# How long Pi may take to end its turn after an abort, and to start.
_ABORT_WAIT_S = 15.0
_START_WAIT_S = 90.0


class PiDriver:
    # Pi's RPC takes no command that goes on from its session as it stands (each of its agent runs starts
    # from a prompt), so a turn the run stopped in is reopened with `Continue.`.
    resume_message: str | None = CONTINUE

    def __init__(self, machine: TurnMachine) -> None:
        self.machine = machine
        self.settings = machine.settings
        self.session = machine.session  # Pi's messages, as searchbox's transcript keeps them
        self.bus = machine.bus
        # Pi runs in work/: every path handed to it (socket, agent folder, sessions) must be absolute
        # (`searchbox run` with no --out makes a relative job folder). abspath, not resolve: no link followed.
        self.paths = PiPaths(Path(os.path.abspath(machine.folder.root)) / "pi")
        self.inbox: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.pi: PiProcess | None = None
        self.pi_session: Path | None = None
        self._handled: set[str] = set()  # tool calls searchbox ran whose tool_execution_end has not come yet
        # Tool calls of the responses recorded so far that have not run yet: Pi may start a tool while its
        # response still streams, and a call waits for its response's step_end, so that the records keep
        # the native loop's order. Ids leave both sets once used: an endpoint may give every response's
        # first call the same id ("call_0"), and a later response's call must not pass as already announced.
        self._announced: set[str] = set()
        self._waiting: dict[str, tuple[Request, Reply, float]] = {}
        self._step_started = time.monotonic()
        self._last_assistant: dict[str, Any] = {}
        # What the served model wrote that its parser read as nothing, from the server's thread: it belongs to
        # the next assistant message Pi ends (one request at a time). An endpoint Pi talks to directly tells none.
        self._unread: queue.Queue[str] = queue.Queue()
        self._steps_in_turn = 0

    def public(self, detail: str) -> str:
        return hidden(detail, operator_details(self.settings))  # Pi's errors and stderr may name its endpoint

    # -- the run --------------------------------------------------------------------------

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """The model Pi talks to, the tool server and Pi itself; each is ended when the run ends."""
        with contextlib.ExitStack() as stack:
            self._start(stack)
            yield

    def _start(self, stack: contextlib.ExitStack) -> None:
        problem = pi_problem() or (url_problem(self.settings.llama_url) if self.settings.llama_url else None)
        if problem:
            raise RunOver("error_harness", problem)
        url, model_id = self._model_endpoint(stack)
        write_agent_dir(self.paths, url, model_id, self.settings)
        token = secrets.token_hex(16)
        server = ToolServer(self.paths.socket, token, self._submit)
        stack.callback(server.close)
        bash = "bash" in self.machine.toolbox.names
        day = prompt_day(self.settings.prompt_date)  # Pi's own prompt names no date: the task block's is the only one
        argv = pi_argv(self.paths, model_id, task_block(day, bash=bash, quotes=self.settings.citation_quotes,
                                                            premise=self.settings.premise_check),
                       self.paths.session_file(), self.settings.thinking)
        key = "" if relayed(self.settings) else self.settings.llama_api_key
        self.pi = PiProcess(argv, cwd=self.paths.project, env=pi_env(self.paths, token, server.path, key),
                            stderr_path=self.paths.stderr, on_event=lambda line: self.inbox.put(("rpc", line)))
        stack.callback(self.pi.close)
        started = time.monotonic()
        try:
            state = self.pi.request({"type": "get_state"}, timeout=_START_WAIT_S)
        except PiExited as exc:
            raise RunOver("error_harness", f"Pi did not start: {exc}. {self.pi.stderr_tail()}") from exc
        if not state.get("success"):
            raise RunOver("error_harness", f"Pi did not start: {state.get('error')}. {self.pi.stderr_tail()}")
        session_file = (state.get("data") or {}).get("sessionFile")
        self.pi_session = Path(session_file) if session_file else None
        self.bus.emit(Notice(level="info", message=f"Pi started in {time.monotonic() - started:.1f} s"))

    def _model_endpoint(self, stack: contextlib.ExitStack) -> tuple[str, str]:
        """LLAMA_URL as it is; the built-in runtime, or an endpoint that gets plain requests (config.relayed),
        served on a loopback port for the run's length."""
        model = self.machine.model
        if not relayed(self.settings):
            return base_url(self.settings.llama_url), self.settings.model_id or model.model_id
        started = time.monotonic()
        server = ModelServer(model, max_tokens=self.settings.max_output_tokens, seed=self.settings.llm_seed,
                             thinking=self.settings.thinking, on_notice=lambda text: self.inbox.put(("notice", text)), on_unread=self._unread.put)
        server.__enter__()
        plain = " in plain (unstreamed) requests to the endpoint" if self.settings.llama_url else ""
        self.bus.emit(Notice(level="info", message=f"the model is served to Pi at {server.base_url}{plain}: "
                                                   f"up in {time.monotonic() - started:.2f} s"))

        def stop() -> None:
            stopping = time.monotonic()
            server.close()
            self.bus.emit(Notice(level="info", message=f"the model server stopped in {time.monotonic() - stopping:.2f} s"))

        stack.callback(stop)
        return server.base_url, model.model_id

    # -- one turn -------------------------------------------------------------------------

    def drive_turn(self, opening: str | None) -> None:
        """The opening message as a prompt, then Pi's events and tool calls until it settles; a stop or a
        time limit aborts Pi first."""
        assert opening is not None, "a Pi turn opens with a prompt (resume_message)"
        self._send({"type": "prompt", "message": opening})
        self._steps_in_turn = 0
        aborting: str | None = None
        aborted_at = 0.0
        while True:
            if aborting is None:
                aborting = self.machine.turn_limit(self._steps_in_turn)
                if aborting is not None:
                    aborted_at = time.monotonic()
                    self._send({"type": "abort"})
            elif time.monotonic() - aborted_at > _ABORT_WAIT_S:
                raise RunOver(aborting if aborting not in TURN_ENDERS else "error_harness",
                              f"Pi did not stop within {_ABORT_WAIT_S:.0f} s of an abort")
            try:
                kind, item = self.inbox.get(timeout=0.1)
            except queue.Empty:
                self._run_overdue_calls()
                continue
            if kind == "tool":
                self._tool_request(*item, cut=aborting)
            elif kind == "notice":  # from the relay's thread: said here, where the bus is used
                self.bus.emit(Notice(level="warning", message=item))
            elif self._on_event(item, cut=aborting) == "idle":
                if aborting in TURN_ENDERS:
                    self.machine.cut_turn(aborting)  # Pi was aborted
                    return
                if aborting is not None:
                    raise RunOver(aborting)
                if self._last_assistant.get("stopReason") == "error":
                    error = str(self._last_assistant.get("errorMessage") or "the model failed")
                    raise RunOver("error_llm", llm_problem(self.settings, error))
                return

    def _send(self, command: Line) -> None:
        assert self.pi is not None
        try:
            self.pi.send(command)
        except PiExited as exc:
            raise RunOver("error_harness", f"{exc}. {self.pi.stderr_tail()}") from exc

    # -- Pi's events ------------------------------------------------------------------------

    def _on_event(self, event: Line, cut: str | None) -> str | None:
        kind = event.get("type")
        if kind == "turn_start":
            self._steps_in_turn += 1
            self.machine.begin_step()
            self._step_started = time.monotonic()
            self.bus.emit(StepStart())
        elif kind == "message_update":
            delta = event.get("assistantMessageEvent") or {}
            if delta.get("type") == "text_delta":
                self.bus.emit(Delta(kind="text", text=str(delta.get("delta", ""))))
            elif delta.get("type") == "thinking_delta":
                self.bus.emit(Delta(kind="reasoning", text=str(delta.get("delta", ""))))
        elif kind == "message_end":
            self._message_end(event.get("message") or {}, cut)
        elif kind == "tool_execution_end":
            self._tool_pi_answered(event)
        elif kind == "compaction_end":
            self._compaction_end(event)
        elif kind in ("auto_retry_start", "summarization_retry_scheduled"):
            failed = hidden(str(event.get("errorMessage"))[:300], operator_details(self.settings))
            what = "the model" if kind == "auto_retry_start" else "the compaction's summary"
            self.bus.emit(Notice(level="warning", message=f"{what} failed ({failed}): "
                                                          f"Pi tries again ({event.get('attempt')} of {event.get('maxAttempts')})"))
        elif kind == "extension_error":
            self.bus.emit(Notice(level="error", message=f"Pi's extension failed: {str(event.get('error'))[:500]}"))
        elif kind == "agent_settled":  # not agent_end: a retry or an overflow recovery may follow that
            return "idle"
        elif kind == "_exit":
            assert self.pi is not None
            raise RunOver("error_harness", f"Pi exited (code {event.get('code')}): {self.pi.stderr_tail()}")
        return None

    def _compaction_end(self, event: Line) -> None:
        """Pi's compaction, done or failed (Pi goes on without it); one an abort cut is neither."""
        result = event.get("result")
        if isinstance(result, dict):
            tokens_before = int(result.get("tokensBefore") or 0)
            summary = str(result.get("summary") or "")
            self.session.record_compaction(summary, len(self.session.messages), tokens_before,
                                           _usage(result.get("usage") or {}))
            self.bus.emit(Compaction(tokens_before=tokens_before, first_kept=len(self.session.messages),
                                     compactions=self.session.compactions, summary_chars=len(summary)))
        elif not event.get("aborted"):
            error = hidden(str(event.get("errorMessage") or "the compaction failed")[:500], operator_details(self.settings))
            self.bus.emit(Compaction(first_kept=self.session.first_kept, compactions=self.session.compactions,
                                     error=error))

    def _message_end(self, message: dict[str, Any], cut: str | None) -> None:
        role = message.get("role")
        if role == "assistant":
            self._assistant_end(message)
            for call_id in self._announced & set(self._waiting):
                self._tool_request(*self._waiting.pop(call_id)[:2], cut=cut)
        elif role == "toolResult":
            self.session.append({"role": "tool", "tool_call_id": message.get("toolCallId"),
                                 "name": message.get("toolName"), "content": _text_of(message.get("content"))})

    def _assistant_end(self, message: dict[str, Any]) -> None:
        self._last_assistant = message
        blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
        text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
        reasoning = _thinking_of(blocks)
        calls = [b for b in blocks if b.get("type") == "toolCall"]
        self._announced.update(str(c.get("id")) for c in calls)
        usage = _usage(message.get("usage") or {}, reasoning)
        entry: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            entry["tool_calls"] = [{"id": c.get("id"), "type": "function", "function": {
                "name": c.get("name"), "arguments": json.dumps(c.get("arguments") or {}, ensure_ascii=False)}} for c in calls]
        unread = "\n".join(_drained(self._unread))
        self.session.append(entry, usage=usage, reasoning=reasoning or None, unread=unread or None)
        self.bus.emit(StepEnd(usage=usage, llm_ms=round((time.monotonic() - self._step_started) * 1000, 1),
                              tool_calls=[str(c.get("name")) for c in calls], text=text,
                              finish_reason=message.get("stopReason"), context_tokens=usage["input"] + usage["output"],
                              unread=unread))

    def _tool_pi_answered(self, event: Line) -> None:
        """A call Pi answered itself (arguments its schema refused, a tool not on offer): counted and
        shown like any other, with Pi's answer."""
        call_id = str(event.get("toolCallId"))
        if call_id in self._handled:
            self._handled.discard(call_id)
            return
        self._announced.discard(call_id)
        text = _text_of((event.get("result") or {}).get("content"))
        self.machine.answered_by_harness(call_id, str(event.get("toolName")), event.get("args") or {},
                                         ToolResult(text, is_error=bool(event.get("isError"))))

    # -- tool calls -------------------------------------------------------------------------

    def _submit(self, request: Request, reply: Reply) -> None:
        """From the tool server's threads: what the run offers is answered there; a call waits for this thread."""
        if request.get("op") == "tools":
            reply({"tools": self.machine.toolbox.names, "catalog": str(CATALOG_PATH),
                   "descriptions": self.settings.tool_descriptions})
        elif request.get("op") == "call":
            self.inbox.put(("tool", (request, reply)))
        else:
            reply({"text": f"unknown request {request.get('op')!r}", "is_error": True})

    def _tool_request(self, request: Request, reply: Reply, cut: str | None) -> None:
        call_id = str(request.get("call_id"))
        if cut is not None:
            reply({"text": f"The tool was not run: the run is stopping ({cut}).", "is_error": True})
        elif call_id in self._announced:
            self._run_tool(request, reply)
        else:
            self._waiting[call_id] = (request, reply, time.monotonic())

    def _run_overdue_calls(self) -> None:
        for call_id, (request, reply, since) in list(self._waiting.items()):
            if time.monotonic() - since > _ORDER_WAIT_S:
                del self._waiting[call_id]
                self._run_tool(request, reply)

    def _run_tool(self, request: Request, reply: Reply) -> None:
        """One call through the turn machine, as a native run's: events, time limits, cut by a stop. Pi's own
        toolResult message brings the result into the session (_message_end)."""
        call_id = str(request.get("call_id"))
        raw = request.get("arguments")
        arguments = raw if isinstance(raw, dict) else None
        self._handled.add(call_id)
        self._announced.discard(call_id)
        call = ToolCall(call_id, str(request.get("name")), arguments, json.dumps(raw, ensure_ascii=False),
                        None if arguments is not None else "not a JSON object")
        output = self.machine.run_tool(call, in_session=False)
        reply({"text": output.text, "is_error": output.is_error})

    # -- records ----------------------------------------------------------------------------

    def token_totals(self) -> dict[str, int]:
        """Summed over every LLM call in Pi's session file: its assistant messages and the usage of its
        compactions and other calls (append-only, so compaction never undercounts); searchbox's own
        transcript until Pi has written one."""
        session = self.pi_session if self.pi_session and self.pi_session.is_file() else self.paths.session_file()
        if session is None or not session.is_file():
            return self.session.token_totals()
        totals = dict.fromkeys(TOKEN_COUNTS, 0)
        for row in read_jsonl(session):
            message = row.get("message") if row.get("type") == "message" else None
            thinking = ""
            if isinstance(message, dict):
                counted = message.get("usage") if message.get("role") == "assistant" else None
                thinking = _thinking_of(message.get("content"))
            else:  # compaction, branch_summary and usage entries carry the usage of the call that made them
                counted = row.get("usage")
            if isinstance(counted, dict):
                usage = _usage(counted, thinking)
                for key in totals:
                    totals[key] += usage[key]
        totals["total"] = totals["input"] + totals["output"]
        return totals


TOKEN_COUNTS = ("input", "output", "cacheRead", "cacheWrite", "reasoning")


def _usage(usage: dict[str, Any], thinking: str = "") -> dict[str, Any]:
    """Pi's usage in searchbox's keys; total is input + output, as the native loop counts it. Pi's reasoning is
    the endpoint's count (or the relay's, which counts as the built-in runtime or the client does); where it
    sent none beside thinking text, the text's estimate."""
    counts: dict[str, Any] = {key: int(usage.get(key) or 0) for key in TOKEN_COUNTS}
    if counts["reasoning"]:
        counts["reasoningBy"] = "server"
    elif thinking:
        estimate = max(1, len(thinking) // CHARS_PER_TOKEN)
        counts["reasoning"] = min(estimate, counts["output"]) if counts["output"] else estimate
        counts["reasoningBy"] = "estimate"
    return {**counts, "total": counts["input"] + counts["output"]}


def _thinking_of(content: Any) -> str:
    return "".join(str(b.get("thinking", "")) for b in content or [] if isinstance(b, dict) and b.get("type") == "thinking")


def _drained(items: queue.Queue[str]) -> list[str]:
    out = []
    while True:
        try:
            out.append(items.get_nowait())
        except queue.Empty:
            return out


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(b.get("text", "")) for b in content or [] if isinstance(b, dict) and b.get("type") == "text")
