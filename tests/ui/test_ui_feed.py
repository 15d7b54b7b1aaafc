"""The activity feed: run events in, Gradio chat messages out (no server needed)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from conftest import SMALL_DATAROOM, write_tree
from testkit.scripted_endpoint import Fault, Reply, ScriptedEndpoint
from searchbox.records.events import EVENT_TYPES, PREVIEW_CHARS, Event, load_events
from searchbox.agent.run import run_job
from searchbox.jobs.job import create_job
from searchbox.llm.clients.openai_client import OpenAIClient
from searchbox.progress import ProgressPrinter
from searchbox.settings import Settings
from searchbox.ui.dashboard import Dashboard
from searchbox.ui.feed import Feed

QUESTION = "When does the office lease end?"


def ev(type: str, turn: int = 1, step: int = 1, /, **data: Any) -> Event:
    return EVENT_TYPES[type](turn=turn, step=step, **data)


def titles(feed: Feed) -> list[str]:
    return [m.get("metadata", {}).get("title", "") for m in feed.messages]


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def run_scripted_job(tmp_path: Path, listeners: list[Any] | None = None) -> tuple[Path, list[Event]]:
    """A real two-turn job against a scripted endpoint: reasoning, a bash pipeline, a failing bash,
    a read, a compaction, a stream that breaks and is retried, citations."""
    timings = {"prefill_ms": 50.0, "decode_ms": 100.0}
    script = [
        Reply(reasoning="Let me look.", tool_calls=[call("bash", command="grep -ri lease dataroom | head -5")],
              usage={"prompt_tokens": 300, "completion_tokens": 20}, timings=timings),
        Reply(text="Reading.", tool_calls=[call("read", path="dataroom/legal/lease.txt"), call("bash", command="cat nope.txt")],
              usage={"prompt_tokens": 1600, "completion_tokens": 30}),  # over the small window: compaction next
        Reply(text="## Goal\nThe lease end.", usage={"prompt_tokens": 900, "completion_tokens": 40}),  # the summary
        Reply(text="The lease ends 31 March 2029 [s1].", usage={"prompt_tokens": 700, "completion_tokens": 12}),
        Fault.drop(Reply(text="partial answer that never ends"), after_chunks=3),
        Reply(text="Still 31 March 2029 [s1].", usage={"prompt_tokens": 800, "completion_tokens": 10}),
    ]
    events: list[Event] = []
    job_dir = tmp_path / "job"
    source = write_tree(tmp_path / "room", SMALL_DATAROOM)
    with ScriptedEndpoint(script) as endpoint:
        settings = Settings.resolve(env={}, llama_url=endpoint.url, model_id="scripted", searchbox_tools="keyword_search",
                                    retrieval_preset="packaged", searchbox_cache_dir=str(tmp_path / "cache"),
                                    turn_budget=2, force_budget=True, context_window=2048, max_output_tokens=256)
        create_job(job_dir, QUESTION, source, settings)
        client = OpenAIClient(endpoint.url, "scripted", max_attempts=2, backoff_s=0.01)
        assert run_job(job_dir, settings, client, [events.append, *(listeners or [])]) == "budget_spent"
    return job_dir, events


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Event]]:
    return run_scripted_job(tmp_path_factory.mktemp("feed"))


def test_the_question_comes_first_and_turns_get_dividers() -> None:
    feed = Feed(QUESTION)
    feed.add(ev("run_start", 0, 0, resumed=False, turns_done=0))
    feed.add(ev("turn_start", 1, 0, budget=3))
    assert feed.messages[0] == {"role": "user", "content": QUESTION}
    assert feed.messages[1]["metadata"] == {"title": "Turn 1 / 3", "status": "pending"}
    feed.add(ev("turn_end", 1, 0, tool_calls=0, tokens={}, compactions=0, seconds=4.2))
    feed.add(ev("turn_start", 2, 0, budget=3))
    divider = feed.messages[1]["metadata"]
    assert divider["status"] == "done" and divider["duration"] == 4.2 and divider["log"] == "0 tool calls"
    assert feed.messages[-2] == {"role": "user", "content": "Continue."}
    assert feed.messages[-1]["metadata"]["title"] == "Turn 2 / 3"


def test_a_tool_message_is_updated_in_place_by_call_id() -> None:
    feed = Feed(QUESTION)
    command = "grep -ri lease dataroom | head -5"
    feed.add(ev("tool_start", call_id="call_0", name="bash", arguments={"command": command}))
    message = feed.messages[-1]
    assert message["metadata"] == {"title": f"💻 bash: {command}", "status": "pending"}
    assert message["content"] == f"```bash\n{command}\n```"
    feed.add(ev("tool_end", call_id="call_0", name="bash", arguments={"command": command}, duration_ms=1234.5,
                is_error=False, preview="lease.txt: until 2029", details={"command": command, "exit_code": 0,
                                                                          "programs": ["grep", "head"]}))
    assert len(feed.messages) == 2 and feed.messages[-1] is message
    assert message["metadata"]["status"] == "done" and message["metadata"]["duration"] == 1.23
    assert "programs: grep, head · exit code 0" in message["content"]
    assert message["content"].endswith("```\nlease.txt: until 2029\n```")


def test_a_call_a_pause_cut_says_so() -> None:
    feed = Feed(QUESTION)
    feed.add(ev("tool_start", call_id="call_0", name="bash", arguments={"command": "sleep 300"}))
    feed.add(ev("tool_end", call_id="call_0", name="bash", arguments={"command": "sleep 300"}, duration_ms=1500,
                is_error=True, ended="cut_by_pause", preview="Command cut before it finished: the run was paused",
                gist="error", details={"command": "sleep 300", "exit_code": None, "cut": "paused", "programs": ["sleep"]}))
    message = feed.messages[-1]
    assert message["metadata"]["log"] == "cut by pause"
    assert "programs: sleep · cut by pause" in message["content"]


def test_repeated_call_ids_match_the_latest_start_and_errors_are_flagged() -> None:
    feed = Feed(QUESTION)
    for step, path in ((1, "a.txt"), (2, "b.txt")):  # backends number calls per response: ids repeat
        feed.add(ev("tool_start", 1, step, call_id="call_0", name="read", arguments={"path": path, "offset": 3}))
        feed.add(ev("tool_end", 1, step, call_id="call_0", name="read", arguments={"path": path, "offset": 3},
                    duration_ms=5, is_error=step == 2, preview="No such file", details={}))
    first, second = feed.messages[1:]
    assert first["metadata"]["title"] == "📄 read: a.txt, offset=3" and first["metadata"]["status"] == "done"
    assert second["metadata"]["title"] == "⚠ 📄 read: b.txt, offset=3" and second["metadata"]["log"] == "error"


def test_a_result_preview_is_clipped_and_cannot_close_its_fence() -> None:
    feed = Feed(QUESTION)
    feed.add(ev("tool_start", call_id="c", name="grep", arguments={"pattern": "x"}))
    preview = "```\n" + "\n".join(f"line {n}" for n in range(40))
    feed.add(ev("tool_end", call_id="c", name="grep", arguments={"pattern": "x"}, duration_ms=1, is_error=False,
                preview=preview, details={}))
    content = feed.messages[-1]["content"]
    assert "````\n```\nline 0" in content and "line 13" in content and "line 14" not in content
    assert content.endswith("…\n````")

    # One long line, cut by the loop at PREVIEW_CHARS: marked as cut too; a short result is not.
    feed.add(ev("tool_end", call_id="d", name="grep", arguments={"pattern": "x"}, duration_ms=1, is_error=False,
                preview="y" * PREVIEW_CHARS, details={}))
    assert feed.messages[-1]["content"].endswith("y\n…\n```")
    feed.add(ev("tool_end", call_id="e", name="grep", arguments={"pattern": "x"}, duration_ms=1, is_error=False,
                preview="found", details={}))
    assert "…" not in feed.messages[-1]["content"]


def test_reasoning_and_text_stream_into_separate_messages() -> None:
    feed = Feed(QUESTION)
    feed.add(ev("step_start"))
    for piece in ("Let me ", "think."):
        feed.add(ev("delta", kind="reasoning", text=piece))
    for piece in ("The lease ", "ends in 2029 <tool_call>"):
        feed.add(ev("delta", kind="text", text=piece))
    reasoning, text = feed.messages[1:]
    assert reasoning == {"role": "assistant", "content": "Let me think.", "metadata": {"title": "Reasoning", "status": "pending"}}
    assert text == {"role": "assistant", "content": "The lease ends in 2029 &lt;tool_call&gt;"}  # markup shown as text
    feed.add(ev("step_end", usage={}, llm_ms=2500, timings={}, tool_calls=[], text="The lease ends in 2029.", context_tokens=9))
    assert reasoning["metadata"] == {"title": "Reasoning", "status": "done", "duration": 2.5}
    assert text["content"] == "The lease ends in 2029."  # the parsed response wins over the deltas


def test_a_retry_discards_what_the_step_streamed() -> None:
    feed = Feed(QUESTION)
    feed.add(ev("step_start"))
    feed.add(ev("delta", kind="reasoning", text="hmm"))
    feed.add(ev("delta", kind="text", text="partial ans"))
    feed.add(ev("delta", kind="retry", text="peer closed connection"))
    feed.add(ev("delta", kind="text", text="Full answer."))
    feed.add(ev("step_end", usage={}, llm_ms=10, timings={}, tool_calls=[], text="Full answer.", context_tokens=9))
    contents = [m["content"] for m in feed.messages]
    assert "partial ans" not in contents and "hmm" not in contents and contents[-1] == "Full answer."
    assert feed.messages[-2]["metadata"] == {"title": "↻ Stream restarted", "status": "done", "log": "peer closed connection"}


def test_a_step_with_only_tool_calls_leaves_no_empty_text() -> None:
    feed = Feed(QUESTION)
    feed.add(ev("step_start"))
    feed.add(ev("delta", kind="text", text="  "))
    feed.add(ev("step_end", usage={}, llm_ms=10, timings={}, tool_calls=["ls"], text="", context_tokens=9))
    assert len(feed.messages) == 1


def test_notices_compaction_resume_and_the_stop_line() -> None:
    feed = Feed(QUESTION)
    feed.add(ev("run_start", 0, 0, resumed=True, turns_done=2))
    feed.add(ev("turn_start", 3, 0, budget=5))
    feed.add(ev("step_start", 3, 7))
    feed.add(ev("delta", 3, 7, kind="reasoning", text="still thinking"))
    feed.add(ev("compaction", 3, 7, tokens_before=120400, first_kept=9, compactions=2, summary_chars=3100))
    feed.add(ev("notice", 3, 7, level="warning", message="turn 3 reached MAX_STEPS_PER_TURN and was ended"))
    feed.add(ev("notice", 3, 7, level="info", message="ANSWER.md written from the model's final message"))
    feed.add(ev("stop", 3, 7, reason="paused", turns=3, done=False))
    messages = feed.messages
    assert messages[1]["metadata"] == {"title": "⏯️ Resumed", "status": "done", "log": "after 2 turns"}
    assert "🗜️ Context compacted (#2)" in titles(feed)
    assert any(m["content"] == "⚠️ turn 3 reached MAX_STEPS_PER_TURN and was ended" for m in messages)
    assert "ℹ️ ANSWER.md written from the model's final message" in titles(feed)
    assert messages[-1] == {"role": "assistant", "content": "⏹️ Stopped: paused after 3 turns"}
    # The stop closes what it cut short: nothing keeps spinning.
    assert all(m.get("metadata", {}).get("status") != "pending" for m in messages)


def test_a_failed_compaction_is_shown_and_counted_apart_from_done_ones() -> None:
    """Pi goes on without a compaction that failed: the feed and the CLI say why, the count and the
    context chart keep only the compactions that were done."""
    failed = ev("compaction", 2, 4, first_kept=0, compactions=0, error="Auto-compaction failed: 400 the summary **failed**")
    done = ev("compaction", 2, 5, tokens_before=9000, first_kept=6, compactions=1, summary_chars=800)
    feed = Feed(QUESTION)
    feed.add(failed)
    assert feed.messages[-1]["content"].startswith("⚠️ Context compaction failed: Auto-compaction failed: 400")
    out = io.StringIO()
    ProgressPrinter(out)(failed)
    assert out.getvalue() == "  ! the context compaction failed: Auto-compaction failed: 400 the summary **failed**\n"
    dashboard = Dashboard()
    for event in (failed, done):
        dashboard.add(event)
    assert dashboard.stats.compactions == 1 and [c["tokens_before"] for c in dashboard.compactions] == [9000]
    assert EVENT_TYPES["compaction"].from_row(failed.to_row()) == failed


def test_a_long_run_stays_linear() -> None:
    feed = Feed(QUESTION)
    feed.add(ev("step_start"))
    for _ in range(50_000):
        feed.add(ev("delta", kind="text", text="word "))
    assert len(feed.messages[-1]["content"]) == 250_000
    for n in range(5_000):
        feed.add(ev("tool_start", 1, n, call_id=f"c{n}", name="ls", arguments={}))
        feed.add(ev("tool_end", 1, n, call_id=f"c{n}", name="ls", arguments={}, duration_ms=1, is_error=False, preview="x", details={}))
    assert len(feed.messages) == 5_002


def test_a_real_run_renders_every_event(scripted_run: tuple[Path, list[Event]]) -> None:
    _, events = scripted_run
    feed = Feed(QUESTION)
    for event in events:
        feed.add(event)
    messages, shown = feed.messages, titles(feed)
    assert messages[0]["content"] == QUESTION
    assert shown.count("Turn 1 / 2") == 1 and shown.count("Turn 2 / 2") == 1
    assert {"role": "user", "content": "Continue."} in messages
    tools = [m for m in messages if "bash" in m.get("metadata", {}).get("title", "") or "read:" in m.get("metadata", {}).get("title", "")]
    assert [m["metadata"]["title"] for m in tools] == [
        "💻 bash: grep -ri lease dataroom | head -5", "📄 read: dataroom/legal/lease.txt", "⚠ 💻 bash: cat nope.txt"]
    assert all(m["metadata"]["status"] == "done" and "duration" in m["metadata"] for m in tools)
    assert "programs: grep, head · exit code 0" in tools[0]["content"]
    assert "programs: cat · exit code 1" in tools[2]["content"] and tools[2]["metadata"]["log"].startswith("exit 1, ")
    assert "31 March 2029" in tools[1]["content"]
    reasoning = next(m for m in messages if m.get("metadata", {}).get("title") == "Reasoning")
    assert reasoning["content"] == "Let me look." and reasoning["metadata"]["status"] == "done"
    assert any(t.startswith("🗜️ Context compacted") for t in shown) and "↻ Stream restarted" in shown
    texts = [m["content"] for m in messages if m["role"] == "assistant" and "metadata" not in m]
    assert texts[:3] == ["Reading.", "The lease ends 31 March 2029 [s1].", "Still 31 March 2029 [s1]."]
    assert not any("partial answer" in t for t in texts)
    assert texts[-1] == "✅ Stopped: budget_spent after 2 turns"
    assert all(m.get("metadata", {}).get("status") != "pending" for m in messages)
    gr.Chatbot().postprocess(messages)  # Gradio takes the messages as they are


def test_a_replay_from_events_jsonl_shows_tools_and_answers(scripted_run: tuple[Path, list[Event]]) -> None:
    job_dir, _ = scripted_run
    feed = Feed(QUESTION)
    for event in load_events(job_dir):
        feed.add(event)
    contents = [m["content"] for m in feed.messages]
    assert "The lease ends 31 March 2029 [s1]." in contents and contents[-1].startswith("✅ Stopped")
    assert sum("bash" in t for t in titles(feed)) == 2


def test_a_resumption_reads_the_same_live_and_replayed_from_events_jsonl(tmp_path: Path) -> None:
    from searchbox.records.events import EventBus, RunStart
    from searchbox.ui.dashboard import Dashboard

    live_feed, live_dashboard = Feed(QUESTION), Dashboard(context_window=131072)
    bus = EventBus(tmp_path / "events.jsonl", [live_feed.add, live_dashboard.add])
    bus.turn = 2  # the envelope's turn when a run resumes after two turns
    bus.emit(RunStart(resumed=True, turns_done=2, model="m", context_window=16384))
    replayed = Feed(QUESTION)
    for event in load_events(tmp_path):
        replayed.add(event)
    assert live_feed.messages == replayed.messages
    assert replayed.messages[1]["metadata"]["log"] == "after 2 turns"
    assert load_events(tmp_path)[0].turn == 2  # the payload no longer shadows the envelope
    assert live_dashboard.context_window == 16384  # the window fitted to the model, not the job's setting
