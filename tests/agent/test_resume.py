"""A resumed run leaves the records the same run leaves when nothing stops it (turns.jsonl, the
run's events, run_meta's totals), however it was stopped: paused (between turns, after a tool call,
between a response and its tools, after a compaction), preempted by the scheduler, or killed and
restarted from what is on disk. Its events read back from events.jsonl are the events its listeners
saw live.

The scripted endpoint answers by what each request holds (the last message, tools on offer or not),
not by the order of requests, so a run stopped anywhere and resumed gets the same answers to the
same requests. The run has two forced turns, four tool calls and a compaction.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import SMALL_DATAROOM, write_tree
from testkit.scripted_endpoint import Reply, ScriptedEndpoint
from searchbox.agent.control import RunControl
from searchbox.agent.prompts import COMPACTED_PREFIX, CONTINUE
from searchbox.agent.run import run_job
from searchbox.jobs.job import create_job
from searchbox.llm.clients.openai_client import OpenAIClient
from searchbox.jobs.scheduler import Scheduler
from searchbox.jobs.store import JobStore
from searchbox.records.events import (Compaction, Delta, Event, RunStart, StepEnd, StepStart, Stop, ToolEnd, ToolStart,
                                      TurnStart, load_events)
from searchbox.records.files import read_json, read_jsonl
from searchbox.settings import Settings
from searchbox.ui.feed import Feed

QUESTION = "When does the office lease end?"
SUMMARY = "## Goal\nFind the lease end.\n## Progress\nListed the room, read the lease."
# What differs between two turns.jsonl rows of runs that did the same work: when, and for how long.
_CLOCK_KEYS = {"timestamp", "elapsed_s"}
# The same for events: when, and how long things took.
_EVENT_CLOCK_KEYS = {"elapsed", "seq", "ts", "llm_ms", "duration_ms", "seconds", "timings"}
_ROOT = Path(__file__).resolve().parents[2]


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


def _settings(tmp_path: Path, url: str) -> Settings:
    return Settings.resolve(env={}, llama_url=url, model_id="scripted", searchbox_tools="",
                            retrieval_preset="packaged", searchbox_cache_dir=str(tmp_path / "cache"),
                            turn_budget=2, force_budget=True, context_window=2048, max_output_tokens=256)


def _run(tmp_path: Path, name: str, stop_at: str | None) -> tuple[Path, list[Event], list[str]]:
    """The run, paused at the first event of type `stop_at` and resumed until it ends; its live
    events (deltas left out: they are never recorded) and the stop reasons of its parts."""
    job_dir = tmp_path / name
    live: list[Event] = []
    reasons: list[str] = []
    with ScriptedEndpoint(default=_answer) as endpoint:
        settings = _settings(tmp_path, endpoint.url)
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


# A run killed at the n-th event of a type (the event is recorded: the recorder hears it first), in
# a process of its own that dies there at once: no stop event, no clean-up, nothing left in memory.
_KILLED_RUN = """
import os, sys
from pathlib import Path
from searchbox.agent.run import run_job
from searchbox.llm.clients.openai_client import OpenAIClient
from searchbox.settings import Settings

job_dir, url, cache, kill_type, kill_n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
settings = Settings.resolve(env={}, llama_url=url, model_id="scripted", searchbox_tools="",
                            retrieval_preset="packaged", searchbox_cache_dir=cache,
                            turn_budget=2, force_budget=True, context_window=2048, max_output_tokens=256)
seen = []

def kill(event):
    seen.append(event.type)
    if event.type == kill_type and seen.count(kill_type) == kill_n:
        os._exit(9)

run_job(Path(job_dir), settings, OpenAIClient(url, "scripted", max_attempts=1), [kill])
sys.exit(0)
"""


def _killed_and_restarted(tmp_path: Path, kill_type: str, kill_n: int) -> tuple[Path, list[str]]:
    job_dir = tmp_path / "killed"
    with ScriptedEndpoint(default=_answer) as endpoint:
        settings = _settings(tmp_path, endpoint.url)
        create_job(job_dir, QUESTION, write_tree(tmp_path / "killed-room", SMALL_DATAROOM), settings)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(_ROOT), os.environ.get("PYTHONPATH", "")])}
        killed = subprocess.run([sys.executable, "-c", _KILLED_RUN, str(job_dir), endpoint.url, str(tmp_path / "cache"),
                                 kill_type, str(kill_n)], env=env, capture_output=True, text=True, timeout=300)
        assert killed.returncode == 9, killed.stderr[-3000:]
        client = OpenAIClient(endpoint.url, "scripted", max_attempts=1)
        reasons = [run_job(job_dir, settings, client)]  # the restarted app: everything from disk
        client.close()
    return job_dir, reasons


def _without_clock(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in _CLOCK_KEYS}


def _story(job_dir: Path, crashed: frozenset[str] = frozenset()) -> list[tuple[str, dict[str, Any]]]:
    """What the run's recorded events say happened, less the clock and less the marks an interruption
    leaves: a resumption's run_start, the turn_start that reopens the turn it stopped in, a step or a
    tool call started again because the stop came before its response or result, and the stop of
    every part but the last. The result of a call in `crashed` (the app died while it ran; it is not run
    again) is compared by which call it ended, not by what it held."""
    events = load_events(job_dir)
    story: list[tuple[str, dict[str, Any]]] = []
    turns_started: set[int] = set()
    open_step = None  # the step started and not yet ended
    for index, event in enumerate(events):
        if isinstance(event, StepStart):
            if event.step == open_step:
                continue
            open_step = event.step
        if isinstance(event, StepEnd):
            open_step = None
        if isinstance(event, RunStart) and event.resumed:
            continue
        if isinstance(event, Stop) and index < len(events) - 1:
            continue
        if isinstance(event, TurnStart):
            if event.turn in turns_started:
                continue
            turns_started.add(event.turn)
        row = {k: v for k, v in event.to_row().items() if k not in _EVENT_CLOCK_KEYS}
        if isinstance(event, ToolEnd) and event.call_id in crashed:
            row = {k: row[k] for k in ("call_id", "name", "arguments")}
        if isinstance(event, ToolStart) and story and story[-1] == (event.type, row):
            continue  # the tool started before the stop never ended: it runs again, from the start
        story.append((event.type, row))
    return story


def _assert_same_records(job_dir: Path, whole: Path, crashed: frozenset[str] = frozenset()) -> None:
    whole_turns = read_jsonl(whole / "turns.jsonl")
    assert [row["tool_calls"] for row in whole_turns] == [3, 4]
    assert whole_turns[-1]["tokens"]["output"] == 5 + 5 + 5 + 40 + 12 + 5 + 14  # the compaction call's 40 included
    assert [_without_clock(row) for row in read_jsonl(job_dir / "turns.jsonl")] == \
        [_without_clock(row) for row in whole_turns]
    whole_meta, meta = read_json(whole / "run_meta.json"), read_json(job_dir / "run_meta.json")
    for key in ("stop_reason", "turns", "tokens", "tool_calls", "tool_counts", "citations"):
        assert meta[key] == whole_meta[key], key
    assert read_json(job_dir / "timing.json")["compactions"] == 1
    assert _story(job_dir, crashed) == _story(whole, crashed)
    seqs = [event.seq for event in load_events(job_dir)]
    assert seqs == sorted(set(seqs)) and seqs[0] == 1  # numbered on across every part of the run


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    job_dir, _, reasons = _run(tmp_path_factory.mktemp("whole"), "whole", stop_at=None)
    assert reasons == ["budget_spent"]
    return job_dir


# Where a run can be paused: between two steps, between a response and its tools, right after a
# compaction (the usage of the compaction call is only in its session row), between two turns.
@pytest.mark.parametrize("stop_at", ["tool_end", "step_end", "compaction", "turn_end"])
def test_a_resumed_run_leaves_the_records_of_one_never_stopped(uninterrupted: Path, tmp_path: Path,
                                                               stop_at: str) -> None:
    job_dir, _, reasons = _run(tmp_path, "resumed", stop_at)
    assert reasons == ["paused", "budget_spent"]
    _assert_same_records(job_dir, uninterrupted)


# Killed: between a response and its tools, inside a tool call, after a turn's last response but
# before its turn was recorded.
@pytest.mark.parametrize(("kill_type", "kill_n"), [("step_end", 1), ("tool_start", 2), ("step_end", 4)])
def test_a_run_killed_and_restarted_from_disk_leaves_the_records_of_one_never_stopped(
        uninterrupted: Path, tmp_path: Path, kill_type: str, kill_n: int) -> None:
    job_dir, reasons = _killed_and_restarted(tmp_path, kill_type, kill_n)
    assert reasons == ["budget_spent"]
    assert not any(isinstance(e, Stop) for e in load_events(job_dir)[:-1])  # the killed part left no stop
    # Killed inside a tool call: the call is not run again (it may be what killed the app); its result says so.
    crashed = frozenset(e.call_id for e in load_events(job_dir) if isinstance(e, ToolEnd) and e.ended == "cut_by_crash")
    assert len(crashed) == (kill_type == "tool_start")
    _assert_same_records(job_dir, uninterrupted, crashed)


def test_a_preempted_run_leaves_the_records_of_one_never_stopped(uninterrupted: Path, tmp_path: Path) -> None:
    """The scheduler preempts the run for a new one after its first tool call, runs that one, and
    resumes the first on its own."""
    store = JobStore(tmp_path / "jobs")
    room = write_tree(tmp_path / "room", SMALL_DATAROOM)
    with ScriptedEndpoint(default=_answer) as endpoint:
        # Another visitor's run, preempted at once: no fair share of the slot first.
        settings = _settings(tmp_path, endpoint.url).with_overrides(searchbox_fair_share_seconds=0)
        first = store.create(QUESTION, room, {}, "alice", settings)
        second: list[str] = []
        reasons: dict[str, list[str]] = {}

        def run_fn(job_dir: Path, job_settings: Settings, control: RunControl, listeners: list) -> str:
            def preempt_at_first_tool(event: Event) -> None:
                if isinstance(event, ToolEnd) and not second:
                    second.append(store.create(QUESTION, room, {}, "bob", settings).id)
                    assert scheduler.submit(second[0])

            client = OpenAIClient(endpoint.url, "scripted", max_attempts=1)
            try:
                reason = run_job(job_dir, job_settings, client, [*listeners, preempt_at_first_tool], control)
            finally:
                client.close()
            reasons.setdefault(job_dir.name, []).append(reason)
            return reason

        scheduler = Scheduler(store, run_fn, settings)
        scheduler.start()
        try:
            scheduler.submit(first.id)
            assert scheduler.wait_idle(120)
        finally:
            scheduler.stop(30)
    assert reasons == {first.id: ["paused", "budget_spent"], second[0]: ["budget_spent"]}
    _assert_same_records(store.job_dir(first.id), uninterrupted)
    _assert_same_records(store.job_dir(second[0]), uninterrupted)


def test_a_resumed_run_replays_from_events_jsonl_as_its_listeners_saw_it(tmp_path: Path) -> None:
    job_dir, live, _ = _run(tmp_path, "resumed", stop_at="turn_end")
    replayed = load_events(job_dir)
    as_recorded = [Event.from_row(json.loads(json.dumps(e.to_row(), default=str))) for e in live]
    assert replayed == as_recorded  # the envelope (seq, turn, step) and the payload alike
    resumption = [e for e in replayed if isinstance(e, RunStart)][1]
    assert resumption.turns_done == 1
    assert [e.seq for e in replayed] == sorted({e.seq for e in replayed})
    assert sum(isinstance(e, Compaction) for e in replayed) == 1
    feed = Feed(QUESTION)
    for event in replayed:
        feed.add(event)
    resumed = [m for m in feed.messages if (m.get("metadata") or {}).get("title") == "⏯️ Resumed"]
    assert [m["metadata"]["log"] for m in resumed] == ["after 1 turn"]
