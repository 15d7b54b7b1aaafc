"""The assists replayed over a minimal-loop run (searchbox/evaluation/assist_replay.py) agree with the loop
itself: where the replay says an assist alone would first act, the run with it alone on acts there; where
it says the assist never acts, that run is the minimal run, message for message."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import SMALL_DATAROOM, write_tree
from testkit.fake_model import FakeChatModel, Said
from searchbox.agent.run import run_job
from searchbox.evaluation.assist_replay import replay, same_transcript
from searchbox.evaluation.transcript import run_transcript
from searchbox.jobs.job import create_job
from searchbox.records.events import AssistFired, load_events
from searchbox.records.files import read_jsonl
from searchbox.settings import Settings
from searchbox.settings.loop import ASSIST_NAMES

QUESTION = "When does the office lease end?"
SAME = Said(calls=[("keyword_search", {"query": "lease"})])
# Every situation an assist acts on: an empty reply, an uncited answer after a read, the same call three
# times in a turn cut at its step limit.
SCRIPT = [Said(""), Said(calls=[("read", {"path": "dataroom/legal/lease.txt"})]), Said("It ends in 2029."),
          SAME, SAME, SAME]
KNOBS: dict[str, Any] = {"searchbox_tools": "keyword_search", "retrieval_preset": "packaged", "turn_budget": 3,
                         "force_budget": True, "max_steps_per_turn": 3}


def run(job_dir: Path, source: Path, cache: Path, assists: str, script: list[Said] = SCRIPT) -> Path:
    settings = Settings.resolve(env={}, harness_assists=assists, searchbox_cache_dir=str(cache), **KNOBS)
    create_job(job_dir, QUESTION, source, settings)
    run_job(job_dir, settings, FakeChatModel(list(script), default=Said("The lease ends in 2029.")))
    return job_dir


def first_firing(job_dir: Path, assist: str) -> tuple[str, int] | None:
    return next(((e.hook, e.step) for e in load_events(job_dir) if isinstance(e, AssistFired) and e.assist == assist),
                None)


@pytest.fixture(scope="module")
def minimal(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("replay")
    source = write_tree(root / "room", SMALL_DATAROOM)
    return run(root / "minimal", source, root / "cache", ""), source, root / "cache"


def test_the_replay_finds_where_each_assist_alone_would_first_act(minimal) -> None:
    firings = {name: (f.hook, f.step) if f else None for name, f in replay(minimal[0]).items()}
    assert firings == {
        "forced_tool": None,  # FORCED_TOOL (search_dataroom) is not on offer
        "force_tool_steps": ("tool_choice", 1),
        "empty_reply": ("follow_up", 1),
        "ask_sources": ("follow_up", 3),
        "source_hint": ("follow_up", 3),  # the lease shows 2029
        "keep_answer": None,  # alone, no assist ever asked again
        "repeat_guard": ("before_tool_call", 6),
        "wrap_up": ("turn_cut", 6),
    }


@pytest.mark.parametrize("assist", ASSIST_NAMES)
def test_the_run_with_one_assist_on_is_what_the_replay_said(minimal, assist: str, tmp_path: Path) -> None:
    baseline, source, cache = minimal
    said = replay(baseline, (assist,))[assist]
    alone = run(tmp_path / "job", source, cache, assist)
    if said is None:
        assert first_firing(alone, assist) is None and same_transcript(alone, baseline)
    else:
        assert first_firing(alone, assist) == (said.hook, said.step)


def test_call_ids_aside_a_transcript_is_compared_message_for_message(minimal, tmp_path: Path) -> None:
    copy = shutil.copytree(minimal[0], tmp_path / "copy")
    session = copy / "session.jsonl"
    assert same_transcript(copy, minimal[0])
    session.write_text(session.read_text().replace("2029", "2030"))
    assert not same_transcript(copy, minimal[0])


def test_after_the_backstop_wrote_an_answer_a_later_turn_s_answer_is_not_asked_again(minimal, tmp_path: Path) -> None:
    """The backstop writes turn 1's answer to ANSWER.md, so turn 2's uncited answer is no answer of the run:
    the loop does not ask for its sources, and the replay must not say it would."""
    _, source, cache = minimal
    read = SCRIPT[1]
    script = [read, Said("It ends on 31 March 2029 [s1]."), read, Said("It ends in 2029.")]
    baseline = run(tmp_path / "minimal", source, cache, "", script)
    assert replay(baseline, ("ask_sources",))["ask_sources"] is None
    alone = run(tmp_path / "alone", source, cache, "ask_sources", script)
    assert first_firing(alone, "ask_sources") is None and same_transcript(alone, baseline)


def test_a_finished_run_is_read_back_as_its_model_saw_it(minimal, tmp_path: Path) -> None:
    """The benches that ask a run's model again start from this (bench/follow_up_replay.py, prompt_lookup.py)."""
    baseline, _, _ = minimal
    run = run_transcript(baseline)
    assert run.messages[0]["role"] == "system" and "keyword_search" in {t["function"]["name"] for t in run.tools}
    assert len(run.messages) == 1 + len(read_jsonl(baseline / "session.jsonl"))
    assert [m["role"] for m in run.messages[1:3]] == ["user", "assistant"]
    assert run.messages[1]["content"] == QUESTION and run.settings.turn_budget == KNOBS["turn_budget"]
    with pytest.raises(ValueError, match="not a job folder"):
        run_transcript(tmp_path)
