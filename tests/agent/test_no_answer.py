"""A run with no answer is not done (issue 45, item 6): a run whose turns end without an answer (nothing
written, an empty reply, a reply that only repeats the question or a harness message) stops with
`no_answer`, done false, in its records, the feed, the Jobs tab and a sweep's rows; what the model wrote
that the parser could not read is kept in the session and shown. The loop is driven by a scripted model
(testkit/fake_model.py); Pi by a scripted endpoint, as in test_pi_harness.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import SMALL_DATAROOM, write_tree
from testkit.fake_model import FakeChatModel, Said
from testkit.scripted_run import scripted_run
from testkit.scripted_endpoint import Reply, ScriptedEndpoint
from searchbox.agent.answered import missing_answer
from searchbox.agent.assists.empty_reply import EMPTY_REPLY
from searchbox.agent.control import RunControl
from searchbox.agent.pi import install
from searchbox.agent.run import run_job
from searchbox.evaluation.matrix import MatrixEntry
from searchbox.evaluation.report import results_frame, summary_table
from searchbox.evaluation.sweep_rows import build_row
from searchbox.evaluation.sweep_summary import format_summary, summarize
from searchbox.jobs.scheduler import Scheduler
from searchbox.jobs.store import JobStore
from searchbox.llm.clients.openai_client import OpenAIClient
from searchbox.llm.dialects.parsing import parse_assistant_text
from searchbox.records.echoes import HarnessMessage
from searchbox.records.events import Listener, Notice, StepEnd, Stop, load_events
from searchbox.records.files import read_jsonl
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings
from searchbox.ui.feed import Feed
from searchbox.ui.jobs_view import COLUMNS, job_heading, job_row
from searchbox.ui.panels import read_answer

QUESTION = "Who audited the FY2025 financial statements?"
READ = Said(calls=[("read", {"path": "dataroom/legal/lease.txt"})])
OFFERED = [{"type": "function", "function": {"name": name, "parameters": {}}} for name in ("find", "read", "grep")]
needs_pi = pytest.mark.skipif(install.pi_problem() is not None, reason=f"{install.pi_problem()}")


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "room", SMALL_DATAROOM)


def run(tmp_path: Path, source: Path, model: Any, name: str = "job", **knobs: Any) -> tuple[str, JobFolder]:
    return scripted_run(tmp_path, QUESTION, source, model, name, **knobs)


def stopped(folder: JobFolder) -> tuple[str, bool, bool]:
    """The stop as run_meta.json, the stop event and the warning before it tell it."""
    meta = folder.read_meta()
    events = load_events(folder.root)
    stop = next(e for e in reversed(events) if isinstance(e, Stop))
    assert (stop.reason, stop.done) == (meta["stop_reason"], meta["done"])
    warned = any(isinstance(e, Notice) and e.message.startswith("No answer:") for e in events)
    return meta["stop_reason"], meta["done"], warned


# -- the rule --------------------------------------------------------------------------------------


def test_a_reply_is_no_answer_when_empty_or_only_the_question_or_a_harness_message() -> None:
    harness = [HarnessMessage("Continue.", ""), HarnessMessage(EMPTY_REPLY, "")]
    for reply in ("", "  \n", "[s1].", "Who audited the FY2025 financial statements? [s1].",
                  "who audited the fy2025 financial statements", "Continue.", "continue [s2]",
                  "Call a tool, or reply with your answer citing sources [s1]."):
        assert missing_answer(reply, QUESTION, harness) is not None, reply
    for reply in ("Pellworth & Strand LLP [s1].", "Yes [s1].", "2029",
                  "Who audited the FY2025 financial statements? Pellworth & Strand LLP [s1]."):
        assert missing_answer(reply, QUESTION, harness) is None, reply


# -- the native loop -------------------------------------------------------------------------------


def test_an_empty_final_reply_stops_with_no_answer_not_done_and_a_short_answer_is_done(tmp_path, source) -> None:
    reason, folder = run(tmp_path, source, FakeChatModel([READ, Said("")]), harness_assists="")
    assert reason == "no_answer"
    assert stopped(folder) == ("no_answer", False, True)
    assert not folder.has_answer() and read_answer(folder.root)[0] == "⚠️ *No answer: the run ended without one.*"
    reason, folder = run(tmp_path, source, FakeChatModel([READ, Said("Pellworth & Strand LLP [s1].")]), name="answered",
                         harness_assists="")
    assert reason == "first_turn_done" and stopped(folder) == ("first_turn_done", True, False)


def test_a_call_the_output_cap_cut_off_is_never_the_answer(tmp_path, source) -> None:
    cut = '{"name": "grep", "arguments": {"pattern": "The lease of the Dul'
    reason, folder = run(tmp_path, source, FakeChatModel([READ, Said(cut)]), harness_assists="")
    assert reason == "no_answer" and stopped(folder) == ("no_answer", False, True)
    assert not folder.has_answer()
    # Words before the cut-off call are the answer, without it.
    model = FakeChatModel([READ, Said("Pellworth & Strand LLP [s1].\n" + cut)])
    reason, folder = run(tmp_path, source, model, name="answered", harness_assists="")
    assert reason == "first_turn_done" and folder.answer_text() == "Pellworth & Strand LLP [s1].\n"


def test_a_reply_that_repeats_the_question_with_a_marker_is_no_answer(tmp_path, source) -> None:
    reply = "Who audited the FY2025 financial statements? [s1]."
    reason, folder = run(tmp_path, source, FakeChatModel([READ, Said(reply)]), harness_assists="")
    assert reason == "no_answer" and stopped(folder) == ("no_answer", False, True)
    assert folder.answer_text().strip() == reply  # kept as it was: the answer panel shows what there is


def test_under_force_budget_the_run_ends_with_what_its_turns_left(tmp_path, source) -> None:
    for name, replies, reason in [
        ("later", ["", "Pellworth & Strand LLP [s1]."], "budget_spent"),  # a later turn's answer counts
        ("earlier", ["Pellworth & Strand LLP [s1].", ""], "budget_spent"),  # it stands when a later turn says nothing
        ("none", ["", "Continue."], "no_answer"),  # every turn ended with nothing but the harness's own words
    ]:
        model = FakeChatModel([READ, *(Said(reply) for reply in replies)])
        assert run(tmp_path, source, model, name, harness_assists="", force_budget=True, turn_budget=2)[0] == reason, name


# -- what the parser could not read ----------------------------------------------------------------

# The packaged 1.5B's whole reply with every tool on offer, cut off: read as neither text nor a call.
UNREAD = "<tools>\nfind, read, grep"


def test_output_the_parser_read_as_nothing_is_kept_in_the_session_and_shown_in_the_feed(tmp_path, source) -> None:
    with ScriptedEndpoint([Reply(text=UNREAD, usage={"prompt_tokens": 900, "completion_tokens": 34})]) as endpoint:
        client = OpenAIClient(endpoint.url, "scripted", max_attempts=1)
        reason, folder = run(tmp_path, source, client, harness_assists="", llama_url=endpoint.url, model_id="scripted")
        client.close()
    rows = [row for row in read_jsonl(folder.session) if row.get("message", {}).get("role") == "assistant"]
    assert [(row["message"]["content"], row.get("unread")) for row in rows] == [("", UNREAD)]
    assert reason == "no_answer"
    feed = Feed(QUESTION)
    for event in load_events(folder.root):
        feed.add(event)
    unread = [m for m in feed.messages if (m.get("metadata") or {}).get("title") == "🧾 Unread model output"]
    assert len(unread) == 1 and "find, read, grep" in unread[0]["content"]
    assert feed.messages[-1]["content"] == ("⚠️ Stopped: no_answer after 1 turn: the run ended without an answer, "
                                            "it is not done")


def test_a_parsed_reply_says_what_it_could_not_read_and_nothing_when_it_read_it() -> None:
    assert parse_assistant_text(UNREAD, OFFERED).unread == UNREAD
    assert parse_assistant_text("<tool_response>\nFile not found\n</tool_response>").unread != ""
    assert parse_assistant_text("<think>hm</think>").unread == ""  # reasoning is kept as reasoning
    assert parse_assistant_text("Three years [s1].<tools></tools>").unread == ""
    assert parse_assistant_text('<tool_call>{"name": "read", "arguments": {}}</tool_call>', OFFERED).unread == ""


# -- Pi --------------------------------------------------------------------------------------------


@needs_pi
@pytest.mark.slow
def test_a_pi_run_with_no_answer_stops_with_no_answer_and_keeps_what_was_unread(tmp_path, source) -> None:
    with ScriptedEndpoint(default=Reply(text="")) as endpoint:  # Pi reads the endpoint's reply itself
        client = OpenAIClient(endpoint.url, "scripted", max_attempts=1)
        reason, folder = run(tmp_path, source, client, harness="pi", harness_assists="", llama_url=endpoint.url,
                             model_id="scripted", searchbox_tools="", max_output_tokens=256, llm_attempts=1)
        client.close()
    assert reason == "no_answer" and stopped(folder) == ("no_answer", False, True)
    # The built-in runtime's path: the model is served to Pi, and what its parser read as nothing comes back.
    model = FakeChatModel([Said(QUESTION + " [s1]."), Said(unread=UNREAD)])
    reason, folder = run(tmp_path, source, model, name="served", harness="pi", harness_assists="", searchbox_tools="",
                         force_budget=True, turn_budget=2, max_output_tokens=256)
    assert reason == "no_answer" and stopped(folder) == ("no_answer", False, True)
    rows = [row for row in read_jsonl(folder.session) if row.get("message", {}).get("role") == "assistant"]
    assert [row.get("unread") for row in rows] == [None, UNREAD]
    assert [e.unread for e in load_events(folder.root) if isinstance(e, StepEnd)] == ["", UNREAD]
    # And a real answer under Pi is done.
    reason, folder = run(tmp_path, source, FakeChatModel([Said("Pellworth & Strand LLP.")]), name="answered",
                         harness="pi", harness_assists="", searchbox_tools="", max_output_tokens=256)
    assert reason == "first_turn_done" and stopped(folder) == ("first_turn_done", True, False)


# -- the Jobs tab and a sweep ----------------------------------------------------------------------


def test_the_jobs_tab_shows_a_run_with_no_answer_as_failed_with_its_reason(tmp_path, source) -> None:
    settings = Settings.resolve(env={}, searchbox_tools="", retrieval_preset="packaged", harness_assists="",
                                searchbox_cache_dir=str(tmp_path / "cache"))
    store = JobStore(tmp_path / "jobs")
    record = store.create(QUESTION, source, {}, "alice", settings)

    def run_fn(job_dir: Path, settings: Settings, control: RunControl, listeners: list[Listener]) -> str:
        return run_job(job_dir, settings, FakeChatModel([Said("")]), listeners, control)

    scheduler = Scheduler(store, run_fn, settings)
    scheduler.submit(record.id)
    scheduler.start()
    try:
        assert scheduler.wait_idle(60)
    finally:
        scheduler.stop(timeout=60)
    finished = store.get(record.id)
    assert finished is not None and (finished.state, finished.stop_reason, finished.error) == ("failed", "no_answer", None)
    row = dict(zip(COLUMNS, job_row(finished, JobFolder(store.job_dir(record.id)).read_meta(), operator=False)))
    assert (row["state"], row["stop reason"]) == ("failed", "no_answer")
    assert job_heading(finished).startswith("⚠️ **failed** (no_answer) · ")


def test_a_sweep_counts_a_run_with_no_answer_as_not_done(tmp_path, source) -> None:
    _, folder = run(tmp_path, source, FakeChatModel([READ, Said(QUESTION + " [s1].")]), harness_assists="")
    question = {"id": "q1", "type": "fact", "question": QUESTION, "answer": "Pellworth & Strand LLP",
                "must_facts": ["Pellworth & Strand LLP"], "gold_files": ["legal/lease.txt"]}
    row = build_row(MatrixEntry("minimal", {}), question, folder.root, tmp_path)
    assert (row["stop_reason"], row["done"]) == ("no_answer", False)
    summary = summarize([row], ["minimal"])
    assert summary["entries"][0]["no_answer"] == 1
    assert format_summary(summary).splitlines()[2].split()[:3] == ["minimal", "1", "1"]
    assert summary_table(results_frame([row]))["no answer"].tolist() == [1]
