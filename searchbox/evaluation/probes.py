"""The probe situations of the tool-call conformance check, built as the agent loop would send them.

Probes are declared in conformance_probes.json. Each becomes a `Situation`: the loop's own system
prompt, the question, the probe's earlier steps replayed with the real tools on the built-in
dataroom (so tool results and their [sN] ids are what a run would see), the tool schemas the run
offers, and the tool_choice the loop would send.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from searchbox.agent.assists.wrap_up import WRAP_UP
from searchbox.agent.prompts import CONTINUE, system_prompt
from searchbox.agent.toolbox import RunToolbox
from searchbox.assets import BUILTIN_DATAROOM
from searchbox.llm.types import Message, Tool, ToolCall, ToolChoice, dump_arguments
from searchbox.settings import Settings
from searchbox.tools.registry import ToolRegistry
from searchbox.workspace import Workspace

DEFAULT_PROBES = Path(__file__).with_name("conformance_probes.json")
_LOOP_MESSAGES = {"continue": CONTINUE, "wrap_up": WRAP_UP}


@dataclass(frozen=True)
class Expectation:
    """What a right response does: call one of `tools` (with `arguments` where given), or answer."""

    tools: tuple[str, ...] = ()  # empty: the probe expects the answer
    arguments: dict[str, Any] = field(default_factory=dict)
    write_answer: bool = False  # an answer probe also accepts a write of ANSWER.md

    @property
    def call(self) -> bool:
        return bool(self.tools)


@dataclass(frozen=True)
class Probe:
    id: str
    situation: str
    question: str
    history: tuple[dict[str, Any], ...]
    tool_choice: ToolChoice
    expect: Expectation
    max_tokens: int

    @property
    def forced(self) -> bool:
        """tool_choice required or naming a tool: the response must be a call."""
        return self.tool_choice not in ("auto", "none")

    @property
    def named_tool(self) -> str | None:
        return self.tool_choice["function"]["name"] if isinstance(self.tool_choice, dict) else None


@dataclass(frozen=True)
class Situation:
    probe: Probe
    messages: list[Message]
    tools: list[Tool] | None  # None after a wrap-up, as the loop sends it
    specs: ToolRegistry  # the tools on offer, for validating the arguments of a call


def load_probes(path: Path = DEFAULT_PROBES) -> list[Probe]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    default_tokens = int(raw.get("max_tokens", 384))
    probes = [_probe(entry, default_tokens) for entry in raw["probes"]]
    ids = [p.id for p in probes]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: probe ids must be unique, got {ids}")
    return probes


def _probe(entry: dict[str, Any], default_tokens: int) -> Probe:
    where = f"probe {entry.get('id', '?')!r}"
    choice = entry.get("tool_choice", "auto")
    if not (choice in ("auto", "required", "none") or isinstance(choice, dict) and choice.get("function", {}).get("name")):
        raise ValueError(f"{where}: tool_choice must be auto, required, none or a named function, got {choice!r}")
    expect = entry["expect"]
    if ("call" in expect) == ("answer" in expect):
        raise ValueError(f"{where}: expect must hold exactly one of call or answer")
    if "call" in expect:
        expectation = Expectation(tools=tuple(expect["call"]["tools"]), arguments=dict(expect["call"].get("arguments", {})))
    else:
        expectation = Expectation(write_answer=bool(expect["answer"].get("write_answer")))
    if choice == "none" and expectation.call:
        raise ValueError(f"{where}: with tool_choice none no call can be right")
    for step in entry.get("history", []):
        if not ("call" in step or step.get("loop_message") in _LOOP_MESSAGES):
            raise ValueError(f"{where}: a history step is a call or a loop_message ({', '.join(_LOOP_MESSAGES)}), got {step}")
    return Probe(id=entry["id"], situation=entry.get("situation", ""), question=entry["question"],
                 history=tuple(entry.get("history", [])), tool_choice=choice, expect=expectation,
                 max_tokens=int(entry.get("max_tokens", default_tokens)))


def skip_reason(probe: Probe, offered: list[str]) -> str | None:
    """Why this run's tool set cannot pose the probe (it needs a tool that is not on offer), else None."""
    if probe.named_tool is not None and probe.named_tool not in offered:
        return f"tool_choice names {probe.named_tool}, not on offer"
    if probe.expect.call and not set(probe.expect.tools) & set(offered):
        return f"none of {', '.join(probe.expect.tools)} is on offer"
    return None


def build_situations(probes: list[Probe], settings: Settings, source: Path = BUILTIN_DATAROOM) -> tuple[list[Situation], dict[str, str]]:
    """The situations this run's tool set can pose, and why the others were skipped (by probe id)."""
    situations: list[Situation] = []
    skipped: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="searchbox-probes-") as tmp:
        job_dir = Path(tmp) / "job"
        Workspace.create(job_dir, source, settings)
        for probe in probes:
            # A fresh workspace (and source ledger) per probe: ids start at s1, as in a new run.
            toolbox = RunToolbox(Workspace.open(job_dir, settings), settings)
            reason = skip_reason(probe, toolbox.names)
            if reason:
                skipped[probe.id] = reason
                continue
            messages = [{"role": "system", "content": system_prompt()}, {"role": "user", "content": probe.question}]
            for n, step in enumerate(probe.history):
                messages += _replay(toolbox, step, f"call_{n}", probe.id)
            tools = None if probe.tool_choice == "none" else toolbox.schemas()
            situations.append(Situation(probe, messages, tools, toolbox.tools))
    return situations, skipped


def _replay(toolbox: RunToolbox, step: dict[str, Any], call_id: str, probe_id: str) -> list[Message]:
    """One earlier step as the loop records it: the assistant's call and the tool's real result."""
    if "loop_message" in step:
        return [{"role": "user", "content": _LOOP_MESSAGES[step["loop_message"]]}]
    name, arguments = step["call"]["name"], step["call"].get("arguments", {})
    output = toolbox.call(name, arguments, None)
    if output.is_error:
        # The situation would not be the one the probe describes: the probe file or the dataroom changed.
        raise ValueError(f"probe {probe_id!r}: replaying {name}({arguments}) failed: {output.text[:300]}")
    call = ToolCall(call_id, name, arguments, dump_arguments(arguments))
    return [{"role": "assistant", "content": "", "tool_calls": [call.as_message_part()]},
            {"role": "tool", "tool_call_id": call_id, "name": name, "content": output.text}]
