"""A real Pi run (issue 23): the pinned Pi (1.6.0) against the packaged Qwen2.5-Coder-1.5B, which searchbox loads with
llama.cpp and serves to Pi on a loopback OpenAI-compatible server, on the built-in dataroom.

What the small model does under Pi's own prompt, in most runs: it calls tools (a built-in or a retrieval
tool, often written as JSON in its text), the calls run through searchbox's tools, and the run ends with
the records a native run leaves, its answer free of the calls' markup.
The run is one step, its turn cut after it: that step's prefill of Pi's prompt and its decode are most of
the test's time (with two steps it took 202 s, the suite's longest). Which tools it picks and whether it cites vary, so the test
prints them rather than asserting them (the 0.5B model called no tool at all under Pi's prompt);
tests/agent/test_pi_harness.py holds the exact behaviour with a scripted model.

What issue 23 asks of a real run (a search, a built-in and a cited source) is beyond the packaged models as
far as measured: in the harness matrix's 30 Pi runs with the 1.5B, none did all three
(docs/findings/2026-12-02-harness-matrix.md).
The live test below asks it of a capable model behind a real endpoint:

    LIVE=1 LLAMA_URL=http://127.0.0.1:8080/v1 [MODEL_ID=...] python -m pytest -q tests/agent/test_pi_real_model.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from searchbox.agent.control import RunControl
from searchbox.agent.pi.install import pi_problem, pinned_version
from searchbox.agent.run import connect_and_run
from searchbox.assets import BUILTIN_DATAROOM
from searchbox.jobs.job import create_job
from searchbox.records.events import read_events
from searchbox.records.files import read_json
from searchbox.settings import Settings
from searchbox.tools.builtin import BUILTIN_TOOLS

pytestmark = [pytest.mark.real_model, pytest.mark.slow,
              pytest.mark.skipif(pi_problem() is not None, reason=str(pi_problem()))]

# It asks for a search: left to choose, the 1.5B answered from nothing more often.
QUESTION = "Search the dataroom: what interest rate applies to the Cobalt Ridge Bank term loan?"
LIVE_URL = os.environ.get("LLAMA_URL", "") if os.environ.get("LIVE") == "1" else ""
BUILT_INS = {tool.name for tool in BUILTIN_TOOLS}
RECORDS = ("config.json", "events.jsonl", "query.txt", "run_meta.json", "session.jsonl", "sources.json",
           "timing.json", "turns.jsonl")


def test_pi_answers_from_the_built_in_dataroom_with_the_packaged_model(tmp_path: Path) -> None:
    """Whether the 1.5B calls a tool at all varies: Pi's prompt names the job's folder and the checkout's, so
    the same seed samples differently on another machine (in CI one run answered from nothing, and
    here one seed in three did). Each run must leave whole records; one of at most three seeds must have
    called a tool, and that run's calls must have gone through searchbox's tools."""
    for attempt, seed in enumerate((7, 8, 9)):
        settings = Settings.resolve(env={}, harness="pi", llm_gguf="packaged:qwen2.5-coder-1.5b",
                                    retrieval_preset="packaged", turn_budget=1, max_steps_per_turn=1,
                                    max_output_tokens=512, llm_seed=seed, searchbox_cache_dir=str(tmp_path / "cache"))
        job = tmp_path / f"job{attempt}"
        create_job(job, QUESTION, BUILTIN_DATAROOM, settings)
        reason = connect_and_run(job, settings, RunControl(), [])

        meta = read_json(job / "run_meta.json", {})
        ends = [e for e in read_events(job / "events.jsonl") if e.type == "tool_end"]
        print(f"\nPI REAL MODEL (seed {seed}): stop {reason}; tools {[(e.name, e.is_error) for e in ends]}; "
              f"sources {len(read_json(job / 'sources.json', {}).get('sources', []))}; "
              f"citations {meta.get('citations', {}).get('cited')}; tokens {meta.get('tokens')}; "
              f"answer {(job / 'work' / 'ANSWER.md').is_file()}; {meta.get('elapsed_seconds')} s")
        # One step, its turn cut after it: a step that called a tool leaves no answer, which is no_answer (issue 45).
        assert reason == meta["stop_reason"] and reason in ("first_turn_done", "budget_spent", "no_answer"), meta
        assert meta["done"] == (reason != "no_answer")
        assert (job / "work" / "ANSWER.md").is_file() or reason == "no_answer", meta
        assert meta["harness"]["name"] == "pi" and meta["harness"]["version"] == pinned_version()
        assert all((job / name).is_file() for name in RECORDS)
        assert meta["tool_calls"] == len(ends)
        written = job / "work" / "ANSWER.md"
        answer = written.read_text(encoding="utf-8") if written.is_file() else ""
        assert '"arguments"' not in answer, answer  # a call the model wrote is a call, not the answer's text
        if ends:
            break
    assert ends, "the model called no tool at any of three seeds"
    assert set(meta["tool_counts"]) <= {"read", "bash", "edit", "write", "grep", "find", "ls", "search_dataroom",
                                        "answer_question"}
    assert meta["tokens"]["input"] > 0 and meta["tokens"]["output"] > 0  # from Pi's session file


@pytest.mark.skipif(not LIVE_URL, reason="a live test: set LIVE=1 and LLAMA_URL to a capable model's endpoint")
def test_pi_with_a_capable_model_searches_uses_a_built_in_and_cites_a_source(tmp_path: Path) -> None:
    settings = Settings.resolve(env={}, harness="pi", llama_url=LIVE_URL, model_id=os.environ.get("MODEL_ID", ""),
                                retrieval_preset="packaged", turn_budget=1, searchbox_cache_dir=str(tmp_path / "cache"))
    job = tmp_path / "job"
    create_job(job, QUESTION, BUILTIN_DATAROOM, settings)
    reason = connect_and_run(job, settings, RunControl(), [])

    meta = read_json(job / "run_meta.json", {})
    called = meta.get("tool_counts") or {}
    citations = meta.get("citations") or {}
    print(f"\nPI LIVE: stop {reason}; tools {called}; citations {citations.get('cited')}, "
          f"{citations.get('valid')} valid, {citations.get('supported')} supported; {meta.get('elapsed_seconds')} s")
    assert meta["harness"]["name"] == "pi" and all((job / name).is_file() for name in RECORDS)
    assert "search_dataroom" in called, f"no search: {called}"
    assert BUILT_INS & set(called), f"no built-in: {called}"
    assert citations.get("valid", 0) >= 1, f"no source shown to it is cited: {citations.get('cited')}"
