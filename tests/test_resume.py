"""A resumed run leaves the records the same run leaves when nothing stops it, and its events read
back from events.jsonl are the events its listeners saw live.

The scripted endpoint answers by what each request holds (the last message, tools on offer or not),
not by the order of requests, so a run stopped anywhere and resumed gets the same answers to the
same requests. The run has two forced turns, four tool calls and a compaction.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import SMALL_DATAROOM, write_tree
from scripted_endpoint import Reply, ScriptedEndpoint
from searchbox.agent.control import RunControl
from searchbox.agent.prompts import COMPACTED_PREFIX, CONTINUE
from searchbox.agent.run import run_job
from searchbox.jobs.job import create_job
from searchbox.llm.openai_client import OpenAIClient
from searchbox.records.events import Delta, Event, RunStart, load_events
from searchbox.records.files import read_json, read_jsonl
from searchbox.settings import Settings
from searchbox.ui.feed import Feed

QUESTION = "When does the office lease end?"
SUMMARY = "## Goal\nFind the lease end.\n## Progress\nListed the room, read the lease."
# What differs between two turns.jsonl rows of runs that did the same work: when, and for how long.
_CLOCK_KEYS = {"timestamp", "elapsed_s"}


def _usage(prompt: int, completion: int = 5) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion}


def _call(name: str, **arguments: Any) -> Reply:
    return Reply(tool_calls=[{"name": name, "arguments": arguments}], usage=_usage(300))


def _answer(body: dict[str, Any]) -> Reply:
    if not body.get("tools"):  # the compaction request
        return Reply(text=SUMMARY, usage=_usage(900, 40))
    last = body["messages"][-1]
    if last["role"] == "tool":
        # `read` is answered near the window (2048 - 512 reserved), so the next step compacts first.
        return {"ls": _call("read", path="dataroom/legal/lease.txt"),
                "read": Reply(tool_calls=[{"name": "grep", "arguments": {"pattern": "2029"}}], usage=_usage(1900)),
                "grep": Reply(text="The lease ends 31 March 2029 [s1].", usage=_usage(500, 12)),
                "find": Reply(text="The lease ends 31 March 2029; no renewal was signed.", usage=_usage(700, 14)),
                }[last["name"]]
    if last["content"] == CONTINUE:
        return _call("find", pattern="*.txt")
    assert COMPACTED_PREFIX.strip() not in last["content"], "the compaction kept no recent message"
    return _call("ls", path="dataroom")


def _run(tmp_path: Path, name: str, stop_at: str | None) -> tuple[Path, list[Event], list[str]]:
    """The run, paused at the first event of type `stop_at` and resumed until it ends; its live
    events (deltas left out: they are never recorded) and the stop reasons of its parts."""
    job_dir = tmp_path / name
    live: list[Event] = []
    reasons: list[str] = []
    with ScriptedEndpoint(default=_answer) as endpoint:
        settings = Settings.resolve(env={}, llama_url=endpoint.url, model_id="scripted", searchbox_tools="",
                                    retrieval_preset="packaged", searchbox_cache_dir=str(tmp_path / "cache"),
                                    turn_budget=2, force_budget=True, context_window=2048, max_output_tokens=256)
        create_job(job_dir, QUESTION, write_tree(tmp_path / f"{name}-room", SMALL_DATAROOM), settings)
        client = OpenAIClient(endpoint.url, "scripted", max_attempts=1)
        control = RunControl()

        def listen(event: Event) -> None:
            if not isinstance(event, Delta):
                live.append(event)
            if event.type == stop_at and not reasons:
                control.request("paused")

        reasons.append(run_job(job_dir, settings, client, [listen], control))
        while reasons[-1] == "paused":
            reasons.append(run_job(job_dir, settings, client, [listen]))
        client.close()
    return job_dir, live, reasons


def _without_clock(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in _CLOCK_KEYS}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    job_dir, _, reasons = _run(tmp_path_factory.mktemp("whole"), "whole", stop_at=None)
    assert reasons == ["budget_spent"]
    return job_dir


# Where a run can be stopped: between two steps, between a response and its tools, right after a
# compaction (the usage of the compaction call is only in its session row), between two turns.
@pytest.mark.parametrize("stop_at", ["tool_end", "step_end", "compaction", "turn_end"])
def test_a_resumed_run_leaves_the_records_of_one_never_stopped(uninterrupted: Path, tmp_path: Path,
                                                               stop_at: str) -> None:
    job_dir, _, reasons = _run(tmp_path, "resumed", stop_at)
    assert reasons == ["paused", "budget_spent"]
    whole_turns = read_jsonl(uninterrupted / "turns.jsonl")
    assert [row["tool_calls"] for row in whole_turns] == [3, 4]
    assert whole_turns[-1]["tokens"]["output"] == 5 + 5 + 5 + 40 + 12 + 5 + 14  # the compaction call's 40 included
    assert [_without_clock(row) for row in read_jsonl(job_dir / "turns.jsonl")] == \
        [_without_clock(row) for row in whole_turns]
    whole_meta, meta = read_json(uninterrupted / "run_meta.json"), read_json(job_dir / "run_meta.json")
    for key in ("stop_reason", "turns", "tokens", "tool_calls", "tool_counts", "citations"):
        assert meta[key] == whole_meta[key], key
    assert read_json(job_dir / "timing.json")["compactions"] == 1


def test_a_resumed_run_replays_from_events_jsonl_as_its_listeners_saw_it(tmp_path: Path) -> None:
    job_dir, live, _ = _run(tmp_path, "resumed", stop_at="turn_end")
    replayed = load_events(job_dir)
    as_recorded = [Event.from_row(json.loads(json.dumps(e.to_row(), default=str))) for e in live]
    assert replayed == as_recorded  # the envelope (seq, turn, step) and the payload alike
    resumption = [e for e in replayed if isinstance(e, RunStart)][1]
    assert resumption.turns_done == 1
    feed = Feed(QUESTION)
    for event in replayed:
        feed.add(event)
    resumed = [m for m in feed.messages if (m.get("metadata") or {}).get("title") == "⏯️ Resumed"]
    assert [m["metadata"]["log"] for m in resumed] == ["after 1 turn"]
