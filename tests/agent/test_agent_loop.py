"""The turn loop against a scripted endpoint: the cases a tiny real model cannot produce on demand.

Each test runs a real job (real dataroom, real tools, real records) through `run_job` with the
OpenAI-compatible client talking HTTP to a scripted server.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from conftest import SMALL_DATAROOM, write_tree
from testkit.clock import fixed_day
from testkit.scripted_endpoint import Fault, Reply, ScriptedEndpoint
from searchbox.agent.control import RunControl
from searchbox.records.events import Event, ToolEnd
from searchbox.agent.assists.ask_sources import ask_sources
from searchbox.agent.assists.empty_reply import EMPTY_REPLY
from searchbox.agent.assists.wrap_up import WRAP_UP
from searchbox.agent.prompts import COMPACTED_PREFIX, CONTINUE
from searchbox.agent.run import run_job
from searchbox.jobs.job import create_job
from searchbox.llm.clients.openai_client import OpenAIClient
from searchbox.records.files import read_json, read_jsonl
from searchbox.records.job_folder import SCHEMA_VERSION
from searchbox.settings import Settings
from searchbox.ui.feed import Feed

QUESTION = "When does the office lease end?"
RECORD_FILES = ["session.jsonl", "events.jsonl", "turns.jsonl", "sources.json", "run_meta.json", "timing.json",
                "config.json", "query.txt", "input.zip"]


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def usage(prompt: int, completion: int = 5) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion}


@pytest.fixture
def job(tmp_path: Path) -> tuple[Path, Path]:
    source = write_tree(tmp_path / "room", SMALL_DATAROOM)
    return tmp_path / "job", source


def make_settings(tmp_path: Path, url: str, **overrides: Any) -> Settings:
    base = {"llama_url": url, "model_id": "scripted", "searchbox_tools": "keyword_search",
            "retrieval_preset": "packaged", "searchbox_cache_dir": str(tmp_path / "cache")}
    return Settings.resolve(env={}, **{**base, **overrides})


def run(job: tuple[Path, Path], endpoint: ScriptedEndpoint, tmp_path: Path, control: RunControl | None = None,
        events: list[Event] | None = None, **overrides: Any) -> tuple[str, Path]:
    job_dir, source = job
    settings = make_settings(tmp_path, endpoint.url, **overrides)
    if not job_dir.exists():
        create_job(job_dir, QUESTION, source, settings)
    client = OpenAIClient(endpoint.url, "scripted", max_attempts=2, backoff_s=0.01)
    listeners = [events.append] if events is not None else []
    return run_job(job_dir, settings, client, listeners, control), job_dir


def test_one_turn_with_tools_writes_every_record(job, tmp_path: Path) -> None:
    script = [
        Reply(tool_calls=[call("ls", path="dataroom")], usage=usage(300)),
        Reply(tool_calls=[call("read", path="dataroom/legal/lease.txt")], usage=usage(420)),
        Reply(text="The lease runs until 31 March 2029 [s1].", usage=usage(600, 12)),
    ]
    with ScriptedEndpoint(script) as endpoint:
        reason, job_dir = run(job, endpoint, tmp_path)
        first_request = endpoint.requests[0].body
        url = endpoint.url
    assert reason == "first_turn_done"
    for name in RECORD_FILES:
        assert (job_dir / name).exists(), name
    assert (job_dir / "work" / "ANSWER.md").read_text().startswith("The lease runs until 31 March 2029 [s1].")
    system = first_request["messages"][0]["content"]
    assert "ANSWER.md" in system and "[s" in system and "no network" in system
    assert first_request["messages"][1] == {"role": "user", "content": QUESTION}
    assert {t["function"]["name"] for t in first_request["tools"]} >= {"read", "bash", "grep", "keyword_search"}

    meta = read_json(job_dir / "run_meta.json")
    assert meta["stop_reason"] == "first_turn_done" and meta["done"] and meta["turns"] == 1
    assert meta["tool_calls"] == 2 and meta["tool_counts"] == {"ls": 1, "read": 1}
    citations = meta["citations"]
    assert {k: citations[k] for k in ("cited", "valid", "invalid", "invalid_ids")} == \
        {"cited": ["s1"], "valid": 1, "invalid": 0, "invalid_ids": []}
    # The lease file holds the date the answer gives: the citation is checked and supported.
    assert citations["supported"] == 1 and citations["checks"][0]["matched"] == ["31 March 2029"]
    assert meta["config"]["LLAMA_URL"] == url and meta["airgap"] in ("netns", "none")
    # Token totals are the sums over the session file.
    assert meta["tokens"] == {"input": 1320, "output": 22, "cacheRead": 0, "cacheWrite": 0, "reasoning": 0,
                              "total": 1342}
    turns = read_jsonl(job_dir / "turns.jsonl")
    assert len(turns) == 1 and turns[0]["tokens_spent"] == 1320 and turns[0]["answer"]["present"]
    events = [e["type"] for e in read_jsonl(job_dir / "events.jsonl")]
    assert events[0] == "run_start" and events[-1] == "stop" and events.count("tool_end") == 2
    timing = read_json(job_dir / "timing.json")
    assert set(timing["tools"]) == {"ls", "read"} and timing["wall_ms"] >= timing["tool_ms"]
    sources = read_json(job_dir / "sources.json")
    assert sources["schema_version"] == SCHEMA_VERSION == meta["schema_version"] == timing["schema_version"]
    assert {row["schema_version"] for row in turns} == {SCHEMA_VERSION}
    assert sources["sources"][0]["id"] == "s1" and sources["sources"][0]["path"] == "dataroom/legal/lease.txt"


def test_an_empty_reply_is_asked_again_once_per_turn(job, tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("ls", path="dataroom")]), Reply(text=""), Reply(text="The lease ends in 2029 [s1].")]
    with ScriptedEndpoint(script) as endpoint:
        reason, job_dir = run(job, endpoint, tmp_path, harness_assists="empty_reply")
        last = endpoint.requests[-1].body["messages"]
    assert reason == "first_turn_done" and last[-1] == {"role": "user", "content": EMPTY_REPLY}
    assert (job_dir / "work" / "ANSWER.md").read_text().strip() == "The lease ends in 2029 [s1]."
    fired = [(e["assist"], e["hook"], e["sent"]) for e in read_jsonl(job_dir / "events.jsonl") if e["type"] == "assist"]
    assert fired == [("empty_reply", "follow_up", EMPTY_REPLY)]
    assert read_json(job_dir / "run_meta.json")["assist_firings"] == {"empty_reply": 1}

    with ScriptedEndpoint([Reply(text=""), Reply(text=""), Reply(text="never asked for")]) as endpoint:
        run((tmp_path / "job2", job[1]), endpoint, tmp_path, harness_assists="empty_reply")
        assert len(endpoint.requests) == 2  # asked once more, then the turn ends


def test_an_answer_that_cites_nothing_is_asked_for_its_sources_once(job, tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("read", path="dataroom/legal/lease.txt")]), Reply(text="It ends in 2029."),
              Reply(text="It ends in 2029 [s1].")]
    with ScriptedEndpoint(script) as endpoint:
        reason, job_dir = run(job, endpoint, tmp_path, harness_assists="ask_sources")
        last = endpoint.requests[-1].body["messages"]
    assert reason == "first_turn_done" and last[-1] == {"role": "user", "content": ask_sources(["s1"])}
    assert (job_dir / "work" / "ANSWER.md").read_text().strip() == "It ends in 2029 [s1]."
    assert read_json(job_dir / "run_meta.json")["citations"]["valid"] == 1

    # Asked once: a second uncited answer stands; and with no source shown, nothing is asked.
    with ScriptedEndpoint([Reply(tool_calls=[call("read", path="dataroom/legal/lease.txt")]), Reply(text="2029."),
                           Reply(text="Still 2029."), Reply(text="never asked for")]) as endpoint:
        run((tmp_path / "job2", job[1]), endpoint, tmp_path, harness_assists="ask_sources")
        assert len(endpoint.requests) == 3
    with ScriptedEndpoint([Reply(tool_calls=[call("ls", path="dataroom")]), Reply(text="Five files.")]) as endpoint:
        run((tmp_path / "job3", job[1]), endpoint, tmp_path, harness_assists="ask_sources")
        assert len(endpoint.requests) == 2


def test_a_forced_step_calls_the_forced_tool_when_it_is_on_offer(job, tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("keyword_search", query="lease")]), Reply(text="It ends in 2029 [s1].")]
    with ScriptedEndpoint(script) as endpoint:
        run(job, endpoint, tmp_path, force_tool_steps=1, forced_tool="keyword_search")
        choices = [r.body.get("tool_choice") for r in endpoint.requests]
    assert choices == [{"type": "function", "function": {"name": "keyword_search"}}, "auto"]
    with ScriptedEndpoint(list(script)) as endpoint:  # search_dataroom is not on offer here: any tool
        run((tmp_path / "job2", job[1]), endpoint, tmp_path, force_tool_steps=1, forced_tool="search_dataroom")
        assert endpoint.requests[0].body.get("tool_choice") == "required"
    # Turn 2's forced step is the model's choice of tool: forced to the same tool, the 1.5B repeated its search.
    with ScriptedEndpoint([*script, Reply(tool_calls=[call("ls", path="dataroom")]), Reply(text="2029 [s1].")]) as endpoint:
        run((tmp_path / "job3", job[1]), endpoint, tmp_path, force_tool_steps=1, forced_tool="keyword_search",
            turn_budget=2, force_budget=True)
        choices = [r.body.get("tool_choice") for r in endpoint.requests]
    assert choices == [{"type": "function", "function": {"name": "keyword_search"}}, "auto", "required", "auto"]


def test_force_budget_sends_continue_until_the_budget_is_spent(job, tmp_path: Path) -> None:
    script = [Reply(text=f"Answer, version {n}.") for n in (1, 2, 3)]
    with ScriptedEndpoint(script) as endpoint:
        reason, job_dir = run(job, endpoint, tmp_path, turn_budget=3, force_budget=True)
        last = endpoint.requests[-1].body["messages"]
    assert reason == "budget_spent"
    assert [m["content"] for m in last if m["role"] == "user"] == [QUESTION, CONTINUE, CONTINUE]
    rows = read_jsonl(job_dir / "turns.jsonl")
    assert [r["turn"] for r in rows] == [1, 2, 3] and rows[-1]["budget_used_pct"] == 100.0
    # The backstop wrote turn 1's answer and never overwrote it.
    assert (job_dir / "work" / "ANSWER.md").read_text().strip() == "Answer, version 1."


def test_an_answer_the_model_wrote_is_never_overwritten(job, tmp_path: Path) -> None:
    script = [
        Reply(tool_calls=[call("write", path="ANSWER.md", content="# Lease\nUntil 31 March 2029.")]),
        Reply(text="Done, see ANSWER.md."),
    ]
    with ScriptedEndpoint(script) as endpoint:
        _, job_dir = run(job, endpoint, tmp_path)
    assert (job_dir / "work" / "ANSWER.md").read_text() == "# Lease\nUntil 31 March 2029."
    assert (job_dir / "snapshots" / "ANSWER-t1.md").exists()


def test_text_form_calls_broken_json_and_unknown_tools(job, tmp_path: Path) -> None:
    script = [
        Reply(text='<tool_call>{"name": "grep", "arguments": {"pattern": "Harbour",}}</tool_call>'),
        Reply(text="<function=ls><parameter=path>dataroom/legal</parameter></function>"),
        Reply(tool_calls=[call("teleport", to="mars")]),
        Reply(tool_calls=[{"name": "read", "arguments": '{"path": "dataroom/legal/lease.txt"'}]),
        Reply(tool_calls=[{"name": "read", "arguments": "{{{ not json at all"}]),
        Reply(text="It ends on 31 March 2029 [s1]."),
    ]
    events: list[Event] = []
    with ScriptedEndpoint(script) as endpoint:
        reason, job_dir = run(job, endpoint, tmp_path, events=events)
    assert reason == "first_turn_done"
    ends = [e for e in events if isinstance(e, ToolEnd)]
    assert [e.name for e in ends] == ["grep", "ls", "teleport", "read", "read"]
    assert not ends[0].is_error and "Harbour" in ends[0].preview
    assert not ends[1].is_error and "lease.txt" in ends[1].preview
    assert ends[2].is_error and "no tool named 'teleport'" in ends[2].preview
    assert not ends[3].is_error  # the missing brace was repaired
    assert ends[4].is_error and "could not be parsed" in ends[4].preview
    feed = Feed(QUESTION)  # what did not parse stays in sight once the call ended (it showed "{}")
    for event in events:
        feed.add(event)
    assert "{{{ not json at all" in [m for m in feed.messages if "read" in m.get("metadata", {}).get("title", "")][-1]["content"]


def test_a_repeated_identical_call_gets_a_nudge(job, tmp_path: Path) -> None:
    same = Reply(tool_calls=[call("grep", pattern="lease")])
    script = [same, same, same, same, Reply(text="The lease ends in 2029.")]
    events: list[Event] = []
    with ScriptedEndpoint(script) as endpoint:
        run(job, endpoint, tmp_path, events=events, harness_assists="repeat_guard")
    ends = [e for e in events if isinstance(e, ToolEnd)]
    assert [e.is_error for e in ends] == [False, False, True, True]
    assert "already called grep" in ends[2].preview


def test_compaction_summarizes_older_messages_and_keeps_the_session(job, tmp_path: Path) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        if not body.get("tools"):  # the compaction request offers no tools
            return Reply(text="## Goal\nFind the lease end.\n## Progress\nRead the lease [s1].", usage=usage(900, 40))
        contents = " ".join(str(m.get("content")) for m in body["messages"])
        if COMPACTED_PREFIX.strip() in contents:
            return Reply(text="31 March 2029 [s1].", usage=usage(500))
        n = sum(1 for m in body["messages"] if m["role"] == "tool")
        return Reply(tool_calls=[call("read", path="dataroom/legal/lease.txt", offset=1 + n)], usage=usage(1900))

    events: list[Event] = []
    with ScriptedEndpoint(default=answer) as endpoint:
        reason, job_dir = run(job, endpoint, tmp_path, events=events, context_window=2048, max_output_tokens=256)
        after = endpoint.requests[-1].body["messages"]
    assert reason == "first_turn_done"
    assert any(e.type == "compaction" for e in events)
    assert after[1]["role"] == "user" and QUESTION in after[1]["content"] and COMPACTED_PREFIX.strip() in after[1]["content"]
    session = read_jsonl(job_dir / "session.jsonl")
    assert any(r["type"] == "compaction" for r in session)
    # The session keeps every message; the compaction call's tokens are counted too.
    messages = [r for r in session if r["type"] == "message"]
    assert messages[0]["message"]["content"] == QUESTION
    assert read_json(job_dir / "run_meta.json")["tokens"]["output"] >= 40


def test_context_overflow_compacts_and_retries_once(job, tmp_path: Path) -> None:
    script = [
        Reply(tool_calls=[call("ls")], usage=usage(200)),
        Fault.overflow(),
        Reply(text="## Goal\nLease end.", usage=usage(300)),  # the summary
        Reply(text="31 March 2029."),
    ]
    events: list[Event] = []
    with ScriptedEndpoint(script) as endpoint:
        reason, _ = run(job, endpoint, tmp_path, events=events)
    assert reason == "first_turn_done"
    assert [e.type for e in events].count("compaction") == 1


def test_an_unreachable_endpoint_stops_with_error_llm_and_keeps_records(job, tmp_path: Path) -> None:
    with ScriptedEndpoint(default=Fault.refuse()) as endpoint:
        reason, job_dir = run(job, endpoint, tmp_path)
    assert reason == "error_llm"
    meta = read_json(job_dir / "run_meta.json")
    assert meta["stop_reason"] == "error_llm" and not meta["done"]
    assert read_jsonl(job_dir / "events.jsonl")[-1]["type"] == "stop"


def test_a_stream_that_drops_midway_is_retried(job, tmp_path: Path) -> None:
    with ScriptedEndpoint([Fault.drop(), Reply(text="31 March 2029.")]) as endpoint:
        reason, job_dir = run(job, endpoint, tmp_path)
    assert reason == "first_turn_done"
    assert (job_dir / "work" / "ANSWER.md").read_text().strip() == "31 March 2029."


def paused_after_first_tool(job: tuple[Path, Path], endpoint: ScriptedEndpoint,
                            tmp_path: Path) -> tuple[Path, Settings, OpenAIClient]:
    """A new job run until its first tool ended, then paused: its folder, settings and client, to resume with."""
    control = RunControl()

    def pause(event: Event) -> None:
        if event.type == "tool_end":
            control.request("paused")

    job_dir, source = job
    settings = make_settings(tmp_path, endpoint.url)
    create_job(job_dir, QUESTION, source, settings)
    client = OpenAIClient(endpoint.url, "scripted", max_attempts=1)
    assert run_job(job_dir, settings, client, [pause], control) == "paused"
    return job_dir, settings, client


def test_pause_then_resume_continues_from_the_session(job, tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("ls")]), Reply(tool_calls=[call("grep", pattern="Harbour")]), Reply(text="Ends 31 March 2029 [s1].")]
    with ScriptedEndpoint(script) as endpoint:
        job_dir, settings, client = paused_after_first_tool(job, endpoint, tmp_path)
        assert read_json(job_dir / "run_meta.json")["stop_reason"] == "paused"
        assert run_job(job_dir, settings, client) == "first_turn_done"
        resumed_request = endpoint.requests[1].body["messages"]
    assert [m["role"] for m in resumed_request] == ["system", "user", "assistant", "tool"]
    assert len(read_jsonl(job_dir / "turns.jsonl")) == 1
    assert read_json(job_dir / "run_meta.json")["tool_calls"] == 2


def test_the_prompts_date_is_recorded_and_kept_when_a_run_resumes_on_another_day(job, tmp_path: Path,
                                                                                    monkeypatch) -> None:
    import datetime as dt

    import searchbox.agent.run_settings as run_module

    Clock = fixed_day(dt.date(2026, 12, 2))
    monkeypatch.setattr(run_module.dt, "date", Clock)
    script = [Reply(tool_calls=[call("ls")]), Reply(text="Ends 31 March 2029 [s1].")]
    with ScriptedEndpoint(script) as endpoint:
        job_dir, settings, client = paused_after_first_tool(job, endpoint, tmp_path)
        Clock.today_is = dt.date(2026, 12, 3)  # resumed the next day
        assert run_job(job_dir, settings, client) == "first_turn_done"
        systems = [request.body["messages"][0]["content"] for request in endpoint.requests]
    assert all("Today's date: 2026-12-02." in system for system in systems)
    assert read_json(job_dir / "run_meta.json")["derived"]["PROMPT_DATE"] == "2026-12-02"
    assert read_json(job_dir / "config.json")["PROMPT_DATE"] == "2026-12-02"


def test_prompt_date_repeats_a_run_of_another_day(job, tmp_path: Path) -> None:
    with ScriptedEndpoint([Reply(text="Ends 31 March 2029.")]) as endpoint:
        reason, job_dir = run(job, endpoint, tmp_path, prompt_date="2025-06-30")
        system = endpoint.requests[0].body["messages"][0]["content"]
    assert reason == "first_turn_done"
    assert "Today's date: 2025-06-30." in system
    assert "PROMPT_DATE" not in read_json(job_dir / "run_meta.json")["derived"]  # set, not derived


def test_a_run_stopped_between_a_response_and_its_tools_runs_those_tools_on_resume(job, tmp_path: Path) -> None:
    # A preemption can land right after the model asked for tools: the resumed run must not ask again.
    control = RunControl()

    def pause_after_the_response(event: Event) -> None:
        if event.type == "step_end":
            control.request("paused")

    script = [Reply(tool_calls=[call("grep", pattern="Harbour"), call("ls")]), Reply(text="Ends 31 March 2029 [s1].")]
    with ScriptedEndpoint(script) as endpoint:
        job_dir, source = job
        settings = make_settings(tmp_path, endpoint.url)
        create_job(job_dir, QUESTION, source, settings)
        client = OpenAIClient(endpoint.url, "scripted", max_attempts=1)
        assert run_job(job_dir, settings, client, [pause_after_the_response], control) == "paused"
        assert run_job(job_dir, settings, client) == "first_turn_done"
        resumed_request = endpoint.requests[1].body["messages"]
    assert len(endpoint.requests) == 2
    assert [m["role"] for m in resumed_request] == ["system", "user", "assistant", "tool", "tool"]
    assert "Harbour" in resumed_request[3]["content"]
    assert read_json(job_dir / "run_meta.json")["tool_calls"] == 2


def test_cancel_and_ceiling(job, tmp_path: Path) -> None:
    control = RunControl()
    control.request("cancelled")
    with ScriptedEndpoint([Reply(text="never asked")]) as endpoint:
        reason, _ = run(job, endpoint, tmp_path, control=control)
    assert reason == "cancelled"

    slow = Reply(tool_calls=[call("ls")], delay_s=0.4, chunk_chars=200)
    with ScriptedEndpoint(default=slow) as endpoint:
        reason, job_dir = run((tmp_path / "job2", job[1]), endpoint, tmp_path, ceiling_seconds=1)
    assert reason == "ceiling_seconds"
    assert read_json(job_dir / "run_meta.json")["stop_reason"] == "ceiling_seconds"


def test_hallucinated_citations_are_counted(job, tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("read", path="dataroom/legal/lease.txt")]),
              Reply(text="Until 31 March 2029 [s1], per the board [s7].")]
    with ScriptedEndpoint(script) as endpoint:
        _, job_dir = run(job, endpoint, tmp_path)
    citations = read_json(job_dir / "run_meta.json")["citations"]
    assert citations["valid"] == 1 and citations["invalid_ids"] == ["s7"]


def test_a_refused_dataroom_is_recorded(tmp_path: Path) -> None:
    from searchbox.dataroom.unpack import DataroomError

    bad = tmp_path / "bad.zip"
    bad.write_text("not a zip")
    with pytest.raises(DataroomError):
        create_job(tmp_path / "job", QUESTION, bad, Settings.resolve(env={}))
    assert read_json(tmp_path / "job" / "run_meta.json")["stop_reason"] == "error_dataroom"


def test_events_stream_to_listeners_while_the_run_goes(job, tmp_path: Path) -> None:
    seen: list[str] = []
    lock = threading.Lock()

    def listen(event: Event) -> None:
        with lock:
            seen.append(event.type)

    with ScriptedEndpoint([Reply(text="Short answer.", chunk_chars=2)]) as endpoint:
        job_dir, source = job
        settings = make_settings(tmp_path, endpoint.url)
        create_job(job_dir, QUESTION, source, settings)
        run_job(job_dir, settings, OpenAIClient(endpoint.url, "scripted"), [listen])
    assert seen[0] == "run_start" and "delta" in seen and seen[-1] == "stop"
    assert seen.index("turn_start") < seen.index("step_end") < seen.index("turn_end")


def test_a_turn_cut_at_its_step_limit_still_ends_with_an_answer(job, tmp_path: Path) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        if not body.get("tools"):
            return Reply(text="Best answer so far: 31 March 2029.")
        return Reply(tool_calls=[call("grep", pattern=f"lease{len(body['messages'])}")])

    with ScriptedEndpoint(default=answer) as endpoint:
        reason, job_dir = run(job, endpoint, tmp_path, max_steps_per_turn=2, harness_assists="wrap_up")
        last = endpoint.requests[-1].body
    assert reason == "first_turn_done" and len(endpoint.requests) == 3
    assert "tools" not in last and last["messages"][-1] == {"role": "user", "content": WRAP_UP}
    assert (job_dir / "work" / "ANSWER.md").read_text().strip() == "Best answer so far: 31 March 2029."


def test_premise_check_adds_its_line_to_the_task_and_only_then(job, tmp_path: Path) -> None:
    from searchbox.agent.prompts import CHECK_PREMISE, task_block

    systems = []
    for premise in (True, False):
        with ScriptedEndpoint([Reply(text="Ends 31 March 2029.")]) as endpoint:
            run((tmp_path / f"job-{premise}", job[1]), endpoint, tmp_path, premise_check=premise)
            systems.append(endpoint.requests[0].body["messages"][0]["content"])
    assert CHECK_PREMISE.strip() in systems[0] and "take for granted" not in systems[1]
    assert CHECK_PREMISE in task_block(premise=True)  # the block HARNESS=pi appends to Pi's own prompt
