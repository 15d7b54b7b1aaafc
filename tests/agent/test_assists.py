"""The minimal loop and the assists (issue 21): with no assist on, the model sees the question once and
`Continue.`, nothing else; each assist acts only when HARNESS_ASSISTS (or its own knob, or a small
model's preset) turns it on, and every firing is an `assist` event, counted in run_meta.json, shown in
the feed and the terminal. What each assist sends is tested in test_loop_logic.py."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import SMALL_DATAROOM, write_tree
from testkit.fake_model import FakeChatModel, Said
from searchbox.llm.dialects.parsing import PARSER_VERSION
from searchbox.agent import harness
from searchbox.agent.assists import ASSISTS
from searchbox.agent.assists.empty_reply import EMPTY_REPLY
from searchbox.agent.assists.repeat_guard import nudge
from searchbox.agent.assists.source_hint import answer_terms
from searchbox.agent.assists.wrap_up import WRAP_UP
from searchbox.agent.prompts import CONTINUE
from searchbox.agent.run import run_job
from searchbox.jobs.job import create_job
from searchbox.progress import ProgressPrinter
from searchbox.records.events import AssistFired, load_events
from searchbox.records.files import read_json, read_jsonl
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings, SettingsError
from searchbox.settings.loop import ASSIST_NAMES
from searchbox.ui.feed import Feed

QUESTION = "When does the office lease end?"
READ = Said(calls=[("read", {"path": "dataroom/legal/lease.txt"})])


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "room", SMALL_DATAROOM)


def run(tmp_path: Path, source: Path, model: FakeChatModel, **knobs: Any) -> tuple[str, JobFolder]:
    settings = Settings.resolve(env={}, **{"searchbox_tools": "keyword_search", "retrieval_preset": "packaged",
                                           "searchbox_cache_dir": str(tmp_path / "cache"), **knobs})
    job_dir = tmp_path / "job"
    create_job(job_dir, QUESTION, source, settings)
    return run_job(job_dir, settings, model), JobFolder(job_dir)


def fired(folder: JobFolder) -> list[tuple[str, str]]:
    return [(e.assist, e.hook) for e in load_events(folder.root) if isinstance(e, AssistFired)]


def test_a_minimal_loop_run_sends_no_user_message_but_the_question_and_continue(tmp_path, source) -> None:
    """Every situation an assist would act on, with none on: an empty reply, an uncited answer after a
    search, the same call again and again, a turn at its step limit."""
    same = Said(calls=[("keyword_search", {"query": "lease"})])
    model = FakeChatModel([Said(""), READ, Said("It ends in 2029."), same, same, same])
    reason, folder = run(tmp_path, source, model, turn_budget=3, force_budget=True, max_steps_per_turn=3)
    assert reason == "budget_spent" and len(model.requests) == 6  # no wrap-up response after turn 3's limit
    users = [row["message"]["content"] for row in read_jsonl(folder.session) if row["message"]["role"] == "user"]
    assert users == [QUESTION, CONTINUE, CONTINUE]
    assert {r.tool_choice for r in model.requests} == {"auto"}
    results = [row["message"]["content"] for row in read_jsonl(folder.session) if row["message"]["role"] == "tool"]
    assert len(results) == 4 and not any("already called" in text for text in results)  # every call ran
    assert folder.answer_text().strip() == "It ends in 2029."  # the backstop: the final text, as it was
    assert fired(folder) == []
    meta = read_json(folder.run_meta)
    assert meta["assist_firings"] == {} and meta["harness"]["assists"] == []


def test_every_firing_is_an_event_counted_in_run_meta_and_shown(tmp_path, source) -> None:
    search = Said(calls=[("keyword_search", {"query": "lease"})])
    model = FakeChatModel([search, Said(""), READ, READ, READ,
                           Said("The lease at 14 Harbour Street runs until 31 March 2029."),
                           Said("Sorry, I cannot say which source that was.")])
    reason, folder = run(tmp_path, source, model, harness_assists=",".join(ASSIST_NAMES), forced_tool="keyword_search",
                         max_steps_per_turn=7)
    assert reason == "first_turn_done"
    assert fired(folder) == [("forced_tool", "tool_choice"), ("empty_reply", "follow_up"),
                             ("repeat_guard", "before_tool_call"), ("ask_sources", "follow_up"),
                             ("source_hint", "follow_up"), ("keep_answer", "answer")]
    meta = read_json(folder.run_meta)
    assert meta["assist_firings"] == {"forced_tool": 1, "force_tool_steps": 0, "empty_reply": 1, "ask_sources": 1,
                                      "source_hint": 1, "keep_answer": 1, "repeat_guard": 1, "wrap_up": 0}
    assert folder.answer_text().strip() == "The lease at 14 Harbour Street runs until 31 March 2029."
    events = [e for e in load_events(folder.root) if isinstance(e, AssistFired)]
    assert events[1].sent == EMPTY_REPLY and events[2].sent == nudge("read", 3)

    feed = Feed(QUESTION)
    for event in load_events(folder.root):
        feed.add(event)
    shown = [m for m in feed.messages if "Assist" in (m.get("metadata") or {}).get("title", "")]
    assert [m["metadata"]["title"] for m in shown][:2] == ["🧩 Assist forced_tool (tool choice)",
                                                           "🧩 Assist empty_reply (follow up)"]
    assert shown[1]["content"] == EMPTY_REPLY
    # What an assist sent may quote the model's or a document's words: the feed renders it inert.
    feed.add(AssistFired(assist="source_hint", hook="follow_up", sent="[s1] shows “<img src=x onerror=alert(1)>”"))
    assert "<img" not in feed.messages[-1]["content"] and "&lt;img" in feed.messages[-1]["content"]
    out = io.StringIO()
    printer = ProgressPrinter(out)
    for event in events:
        printer(event)
    assert out.getvalue().splitlines()[1] == f"  + assist empty_reply (follow_up): {EMPTY_REPLY}"


def test_a_turn_cut_at_its_limit_is_wrapped_up_only_by_the_assist(tmp_path, source) -> None:
    model = FakeChatModel([Said(calls=[("ls", {"path": "dataroom"})]), Said("The lease ends in 2029.")])
    _, folder = run(tmp_path, source, model, max_steps_per_turn=1, harness_assists="wrap_up")
    assert fired(folder) == [("wrap_up", "turn_cut")] and model.requests[-1].messages[-1]["content"] == WRAP_UP


def test_which_assists_are_on() -> None:
    assert Settings.resolve(env={}).assists == ()  # the minimal loop
    assert Settings.resolve(env={"HARNESS_ASSISTS": " wrap_up, ask_sources "}).assists == ("ask_sources", "wrap_up")
    with pytest.raises(SettingsError, match="no assist 'nudge'"):
        Settings.resolve(env={"HARNESS_ASSISTS": "wrap_up,nudge"})
    # An assist's own knob, set, turns it on; FORCE_TOOL_STEPS=0 or an empty FORCED_TOOL turns it off.
    assert Settings.resolve(env={"FORCE_TOOL_STEPS": "2"}).assists == ("force_tool_steps",)
    assert Settings.resolve(env={"FORCED_TOOL": "grep"}).assists == ("forced_tool",)
    both = "forced_tool,force_tool_steps"
    assert Settings.resolve(env={"HARNESS_ASSISTS": both, "FORCE_TOOL_STEPS": "0"}).assists == ()
    assert Settings.resolve(env={"HARNESS_ASSISTS": both, "FORCED_TOOL": ""}).assists == ("force_tool_steps",)
    assert tuple(ASSISTS) == ASSIST_NAMES


def test_the_hint_s_own_matcher_finds_names_dates_and_numbers() -> None:
    terms = answer_terms("The lease at 14 Harbour Street runs until 31 March 2029, says Pellworth & Strand LLP.",
                         "When does the Harbour lease end?")
    assert terms == ["14 Harbour Street", "31 March 2029", "Pellworth & Strand LLP"]
    # Terms the question holds are in every search result: they say nothing about which source to cite.
    assert answer_terms("FY2024 was audited.", "Who audited FY2024?") == []


def test_a_pi_runs_record_says_who_read_its_calls() -> None:
    """searchbox where it serves Pi the model (the built-in runtime, an endpoint relayed plain requests), else
    the endpoint: Pi takes its native tool calls as they come."""
    records = {(url, stream): harness.harness_record(Settings.resolve(env={}, harness="pi", llama_url=url,
                                                                      llm_stream=stream))
               for url, stream in (("", "on"), ("http://127.0.0.1:9/v1", "off"), ("http://127.0.0.1:9/v1", "on"))}
    assert {key: (r["tool_call_parsing"], r["parser_version"]) for key, r in records.items()} == {
        ("", "on"): ("lenient", PARSER_VERSION), ("http://127.0.0.1:9/v1", "off"): ("lenient", PARSER_VERSION),
        ("http://127.0.0.1:9/v1", "on"): ("endpoint", None)}


def test_the_harness_record_names_the_code_that_ran(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    settings = Settings.resolve(env={"HARNESS_ASSISTS": "wrap_up"})
    record = harness.harness_record(settings)
    assert record["name"] == "native" and record["assists"] == ["wrap_up"] and record["tool_call_parsing"] == "lenient"
    assert record["parser_version"] == PARSER_VERSION
    assert record["version"] == harness.package_version() and re.fullmatch(r"\d+\.\d+\.\d+.*", record["version"])
    if (harness._ROOT / ".git").exists() and shutil.which("git"):  # this checkout's commit
        head = subprocess.run(["git", "-C", str(harness._ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
        assert record["commit"] == head.stdout.strip()
    try:
        installed = harness.metadata.version("searchbox")
    except harness.metadata.PackageNotFoundError:
        installed = None
    monkeypatch.setattr(harness, "_ROOT", tmp_path)  # no checkout, no pyproject: still a record, no failure
    harness.git_commit.cache_clear()
    harness.package_version.cache_clear()
    try:
        assert harness.git_commit() is None and harness.package_version() == installed
    finally:
        harness.git_commit.cache_clear()
        harness.package_version.cache_clear()
