"""The turn loop's decisions, driven by an in-process scripted model (testkit/fake_model.py): which
tool_choice each step gets, when the model is asked again, when a turn ends, with the assists that
decide them turned on (HARNESS_ASSISTS); the minimal loop without them is in test_assists.py. Real job
folders and real tools; no endpoint. What the HTTP path adds (streaming, retries, faults) is in
test_agent_loop.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import SMALL_DATAROOM, write_tree
from testkit.fake_model import FakeChatModel, Said
from testkit.scripted_run import scripted_run
from searchbox.agent.assists.ask_sources import ask_sources
from searchbox.agent.assists.empty_reply import EMPTY_REPLY
from searchbox.agent.assists.wrap_up import WRAP_UP
from searchbox.agent.prompts import CONTINUE
from searchbox.records.job_folder import JobFolder

QUESTION = "When does the office lease end?"
SEARCH = {"type": "function", "function": {"name": "keyword_search"}}


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "room", SMALL_DATAROOM)


def run(tmp_path: Path, source: Path, model: FakeChatModel, name: str = "job", **knobs: Any) -> tuple[str, JobFolder]:
    return scripted_run(tmp_path, QUESTION, source, model, name, **knobs)


def test_turn_1_s_forced_step_names_the_forced_tool_and_later_turns_let_the_model_choose(tmp_path, source) -> None:
    model = FakeChatModel([Said(calls=[("keyword_search", {"query": "lease"})]), Said("It ends in 2029 [s1]."),
                           Said(calls=[("ls", {"path": "dataroom"})]), Said("Still 2029 [s1]."),
                           Said(calls=[("read", {"path": "dataroom/legal/lease.txt"})]), Said("2029 [s1].")])
    reason, folder = run(tmp_path, source, model, force_tool_steps=1, forced_tool="keyword_search",
                         turn_budget=3, force_budget=True)
    assert reason == "budget_spent"
    assert [r.tool_choice for r in model.requests] == [SEARCH, "auto", "required", "auto", "required", "auto"]
    assert [r.messages[-1]["content"] for r in model.requests if r.messages[-1]["role"] == "user"] == \
        [QUESTION, CONTINUE, CONTINUE]
    assert [row["turn"] for row in folder.read_turns()] == [1, 2, 3]


def test_an_empty_reply_and_an_uncited_answer_are_each_asked_again_once(tmp_path, source) -> None:
    model = FakeChatModel([Said(calls=[("read", {"path": "dataroom/legal/lease.txt"})]), Said(""),
                           Said("It ends in 2029."), Said("It ends in 2029.")])
    reason, folder = run(tmp_path, source, model, harness_assists="empty_reply,ask_sources,source_hint")
    assert reason == "first_turn_done" and len(model.requests) == 4
    asked = [r.messages[-1]["content"] for r in model.requests[2:]]
    # The second uncited answer stands; the id that holds the answer's figure is named by source_hint.
    assert asked == [EMPTY_REPLY, ask_sources(["s1"]) + " Of the sources shown, [s1] shows “2029”."]
    assert folder.answer_text().strip() == "It ends in 2029."


def test_the_request_for_sources_names_the_shown_source_that_holds_the_answer_s_facts(tmp_path, source) -> None:
    """Given only the ids, the 1.5B cited the first one shown, which did not hold the auditor's name."""
    model = FakeChatModel([Said(calls=[("read", {"path": "dataroom/finance/costs.md"}),
                                       ("read", {"path": "dataroom/legal/lease.txt"})]),
                           Said("The lease at 14 Harbour Street runs until 31 March 2029."),
                           Said("The lease runs until 31 March 2029 [s2].")])
    reason, folder = run(tmp_path, source, model, harness_assists="ask_sources,source_hint")
    asked = model.requests[2].messages[-1]["content"]
    assert asked == (ask_sources(["s1", "s2"]) + " Of the sources shown, [s2] shows “14 Harbour Street”, “31 March 2029”.")
    assert folder.answer_text().strip() == "The lease runs until 31 March 2029 [s2]."


def test_the_third_identical_call_in_a_row_is_answered_with_a_nudge_not_run(tmp_path, source) -> None:
    same = Said(calls=[("keyword_search", {"query": "lease"})])
    model = FakeChatModel([same, same, same, Said("2029 [s1].")])
    run(tmp_path, source, model, harness_assists="repeat_guard")
    results = [m for m in model.requests[-1].messages if m["role"] == "tool"]
    assert len(results) == 3 and results[0]["content"] == results[1]["content"]
    assert results[2]["content"].startswith("You already called keyword_search with exactly these arguments 3 times")


def test_a_turn_at_its_step_limit_ends_with_a_response_offered_no_tools(tmp_path, source) -> None:
    model = FakeChatModel([Said(calls=[("ls", {"path": "dataroom"})]), Said(calls=[("ls", {"path": "dataroom/legal"})]),
                           Said("The lease ends in 2029 [s1].")])
    reason, folder = run(tmp_path, source, model, max_steps_per_turn=2, harness_assists="wrap_up")
    assert reason == "first_turn_done"
    last = model.requests[-1]
    assert last.messages[-1] == {"role": "user", "content": WRAP_UP} and last.tools == []
    assert folder.answer_text().strip() == "The lease ends in 2029 [s1]."


def test_a_reply_to_the_request_for_sources_that_cites_none_does_not_replace_the_answer(tmp_path, source) -> None:
    read = Said(calls=[("read", {"path": "dataroom/legal/lease.txt"})])
    model = FakeChatModel([read, Said("The lease ends on 31 March 2029."),
                           Said("Sorry, but you didn't provide the id of the source that I used.")])
    _, folder = run(tmp_path, source, model, harness_assists="ask_sources,keep_answer")
    assert folder.answer_text().strip() == "The lease ends on 31 March 2029."
    # A reply that does cite is the answer.
    model = FakeChatModel([read, Said("The lease ends on 31 March 2029."), Said("It ends on 31 March 2029 [s1].")])
    _, folder = run(tmp_path, source, model, name="job2", harness_assists="ask_sources,keep_answer")
    assert folder.answer_text().strip() == "It ends on 31 March 2029 [s1]."
