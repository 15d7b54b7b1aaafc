"""Tool-call conformance of a model: how it behaves at the steps of the agent loop that matter.

Each probe situation (see probes.py) is sent as the loop sends it, and the response is scored:
a parseable call (every call's arguments parsed), the right tool (and the argument value the
situation names, where it names one), valid arguments (the project's own validation, as a run
applies it before running a tool), and, where the right move is to stop, an answer. Models fail at
tool calling more than at anything else; this says how, per model, before a sweep spends hours.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from searchbox.evaluation.probes import Probe, Situation, build_situations
from searchbox.llm.dialects.call_parsing import with_call_parsing
from searchbox.llm.errors import LLMError
from searchbox.llm.dialects.parsing import parse_tool_calls
from searchbox.llm.types import ChatModel, ChatResponse, Tool, ToolCall
from searchbox.records.job_folder import ANSWER_NAME
from searchbox.settings import Settings
from searchbox.tools.arguments import ToolArgumentError, validate_arguments



@dataclass(frozen=True)
class Outcome:
    """One response to one probe."""

    probe: str
    expects_call: bool
    forced: bool
    seconds: float
    calls: list[dict[str, Any]]  # name, arguments (None when unparseable), raw
    text: str
    parseable: bool  # at least one call, and every call's arguments parsed
    right: bool  # call probes: a call of the right tool; answer probes: the answer
    valid: bool | None  # every call names a tool on offer with valid arguments; None without a call
    tokens: int = 0  # output tokens of the response
    problem: str = ""  # what was wrong, when something was
    error: str = ""  # the model failed to answer at all

    @property
    def passed(self) -> bool:
        return self.right and (not self.expects_call or bool(self.parseable and self.valid))


@dataclass
class ModelReport:
    model: str
    outcomes: list[Outcome] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """Counts with their denominators: each rate is over the responses it applies to."""
        calls = [o for o in self.outcomes if o.expects_call]
        answers = [o for o in self.outcomes if not o.expects_call]
        with_call = [o for o in self.outcomes if o.valid is not None]
        forced = [o for o in self.outcomes if o.forced]
        forced_tokens = [o.tokens for o in forced if not o.error]
        seconds = [o.seconds for o in self.outcomes if not o.error]
        return {
            "model": self.model,
            "responses": len(self.outcomes),
            "passed": sum(o.passed for o in self.outcomes),
            "parseable": (sum(o.parseable for o in calls), len(calls)),
            "right_tool": (sum(o.right for o in calls), len(calls)),
            "valid_args": (sum(bool(o.valid) for o in with_call), len(with_call)),
            "forced_call": (sum(o.parseable for o in forced), len(forced)),
            # What a grammar-held call costs: bounded by the tool's schema (schema_grammar), not the output cap.
            "forced_tokens": sum(forced_tokens) / len(forced_tokens) if forced_tokens else None,
            "answers": (sum(o.right for o in answers), len(answers)),
            "errors": sum(bool(o.error) for o in self.outcomes),
            "mean_latency_s": sum(seconds) / len(seconds) if seconds else None,
        }

    def as_dict(self) -> dict[str, Any]:
        return {"summary": self.summary(), "skipped": self.skipped, "outcomes": [asdict(o) for o in self.outcomes]}


def score(situation: Situation, response: ChatResponse, seconds: float) -> Outcome:
    probe, expect = situation.probe, situation.probe.expect
    calls = response.tool_calls
    parseable = bool(calls) and all(c.arguments is not None and not c.parse_error for c in calls)
    problems = [_call_problem(situation, c) for c in calls]
    valid = None if not calls else not any(problems)
    if expect.call:
        right = any(_right_call(situation, c) for c in calls)
        if not calls:
            problem = "no call" + (f": {_clip(response.text)}" if response.text.strip() else "")
        elif not right:
            problem = "wrong call: " + ", ".join(_shown(c) for c in calls)
        else:
            problem = "; ".join(p for p in problems if p)
    else:
        # With no tools on offer (a wrap-up) a call written as text is not parsed as one, yet it is no answer.
        written = [] if calls else parse_tool_calls(response.text, _all_schemas(situation), "lenient")[0]
        answered = not calls and not written and bool(response.text.strip())
        wrote = expect.write_answer and any(_writes_answer(c) and not p for c, p in zip(calls, problems))
        right = answered or wrote
        if right:
            problem = ""
        elif calls or written:
            problem = ("called " if calls else "wrote a call as text: ") + ", ".join(_shown(c) for c in calls or written)
        else:
            problem = "empty answer"
    return Outcome(probe.id, expect.call, probe.forced, seconds,
                   [{"name": c.name, "arguments": c.arguments, "raw": c.raw_arguments} for c in calls],
                   response.text, parseable, right, valid, response.usage.output, problem)


def _all_schemas(situation: Situation) -> list[Tool]:
    return [spec.openai_schema() for spec in situation.specs.values()]


def _call_problem(situation: Situation, call: ToolCall) -> str:
    """Why this call would not run as the model meant it, or "" when it would."""
    if call.arguments is None or call.parse_error:
        return f"{call.name}: arguments do not parse ({call.parse_error})"
    spec = situation.specs.get(call.name) if situation.tools else None
    if spec is None:
        return f"{call.name}: no such tool on offer"
    try:
        validate_arguments(spec, call.arguments)
    except ToolArgumentError as exc:
        return str(exc)
    return ""


def _right_call(situation: Situation, call: ToolCall) -> bool:
    expect = situation.probe.expect
    if call.name not in expect.tools or call.arguments is None:
        return False
    return all(_same(call.arguments.get(key), value) for key, value in expect.arguments.items())


def _writes_answer(call: ToolCall) -> bool:
    return call.name == "write" and call.arguments is not None and _same(call.arguments.get("path"), ANSWER_NAME)


def _same(value: Any, expected: Any) -> bool:
    """Equal, a path written as ./path counting as path (the tools resolve both alike)."""
    if isinstance(value, str) and isinstance(expected, str):
        return value.strip().removeprefix("./") == expected
    return bool(value == expected)


def _shown(call: ToolCall) -> str:
    return f"{call.name}({_clip(call.raw_arguments, 80)})"


def _clip(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def run_probes(model: ChatModel, situations: list[Situation], *, repeat: int = 1, max_tokens: int | None = None,
               on_outcome: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Every situation `repeat` times. `max_tokens` caps each probe's own output limit (MAX_OUTPUT_TOKENS)."""
    outcomes = []
    for _ in range(repeat):
        for situation in situations:
            outcome = _ask(model, situation, max_tokens)
            outcomes.append(outcome)
            if on_outcome is not None:
                on_outcome(outcome)
    return outcomes


def _ask(model: ChatModel, situation: Situation, max_tokens: int | None) -> Outcome:
    probe = situation.probe
    limit = min(probe.max_tokens, max_tokens) if max_tokens else probe.max_tokens
    # What the loop sends: no tools after a wrap-up, and then tool_choice auto.
    choice = probe.tool_choice if situation.tools else "auto"
    started = time.monotonic()
    try:
        response = model.complete(situation.messages, situation.tools, max_tokens=limit, tool_choice=choice)
    except LLMError as exc:
        return Outcome(probe.id, probe.expect.call, probe.forced, time.monotonic() - started, [], "",
                       False, False, None, problem="the model failed", error=_clip(str(exc), 300))
    return score(situation, response, time.monotonic() - started)


def format_table(reports: list[ModelReport], markdown: bool = False) -> str:
    headers = ["model", "passed", "parseable call", "right tool", "valid args", "forced -> call",
               "tokens per forced call", "answers when it should", "mean latency"]
    rows = []
    for report in reports:
        s = report.summary()
        latency = f"{s['mean_latency_s']:.1f} s" if s["mean_latency_s"] is not None else "-"
        tokens = f"{s['forced_tokens']:.0f}" if s["forced_tokens"] is not None else "-"
        rows.append([s["model"], f"{s['passed']}/{s['responses']}", *(_rate(s[k]) for k in
                     ("parseable", "right_tool", "valid_args", "forced_call")), tokens, _rate(s["answers"]), latency])
    if markdown:
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    return "\n".join("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [headers, *rows])


def _rate(count: tuple[int, int]) -> str:
    done, total = count
    return f"{done}/{total} ({100 * done / total:.0f}%)" if total else "-"


def model_settings(base: Settings, models: list[str]) -> list[Settings]:
    """One Settings per model to check: an http(s) URL is an endpoint (LLAMA_URL, with MODEL_ID from
    the base settings), anything else an LLM_GGUF value. No models: the one the base settings name."""
    if not models:
        return [base]
    return [base.with_overrides(llama_url=m) if m.startswith(("http://", "https://"))
            else base.with_overrides(llama_url="", llm_gguf=m) for m in models]


def check_models(settings_per_model: list[Settings], probes: list[Probe], *, repeat: int = 1,
                 on_line: Callable[[str], None] = print) -> list[ModelReport]:
    """Connect to each model in turn (closing it after), pose every situation, collect the reports."""
    from searchbox.agent.run_settings import fit_run_settings
    from searchbox.llm.choice.connect import connect_for_run

    situations, skipped = build_situations(probes, settings_per_model[0])
    for probe_id, reason in skipped.items():
        on_line(f"skipped {probe_id}: {reason}")
    reports = []
    for wanted in settings_per_model:
        # The output cap a run with this model would get (its preset's, unless MAX_OUTPUT_TOKENS is set).
        connection = connect_for_run(wanted, on_note=lambda note: on_line(f"note: {note}"))
        settings, notes = fit_run_settings(wanted, connection.model, preset=connection.preset)
        for note in notes:
            on_line(f"note: {note}")
        model = with_call_parsing(connection.model, settings.tool_call_parsing)  # as a run reads its replies
        report = ModelReport(model.model_id, skipped=skipped)
        on_line(f"{model.model_id}: {len(situations)} probes x {repeat}")
        try:
            report.outcomes = run_probes(model, situations, repeat=repeat, max_tokens=settings.max_output_tokens,
                                         on_outcome=lambda o: on_line(_outcome_line(o)))
        finally:
            model.close()
        reports.append(report)
    return reports


def _outcome_line(outcome: Outcome) -> str:
    verdict = "ok  " if outcome.passed else "FAIL"
    did = ", ".join(f"{c['name']}({_clip(c['raw'], 60)})" for c in outcome.calls) or _clip(outcome.text, 60) or "-"
    why = f"  [{outcome.error or outcome.problem}]" if outcome.error or outcome.problem else ""
    return f"  {verdict} {outcome.probe:<22} {outcome.seconds:6.1f} s  {did}{why}"
