"""The recorder writes what it is handed: the run's counts of its events and the parts of run_meta.json its
owner gives it (checked citations, model and backends). It calls nothing back and never writes the ledger."""

from __future__ import annotations

from pathlib import Path

from searchbox.dataroom.work_dir import prepare_work_dir
from searchbox.records.events import Stop, ToolEnd, TurnEnd
from searchbox.records.job_folder import JobFolder
from searchbox.records.recorder import RunRecorder
from searchbox.records.stats import RunStats
from searchbox.settings import Settings


def test_the_recorder_writes_the_turn_and_the_meta_it_is_given(tmp_path: Path, source: Path) -> None:
    prepare_work_dir(tmp_path / "job", source)
    folder = JobFolder(tmp_path / "job")
    settings = Settings.resolve(env={}, turn_budget=4)
    recorder = RunRecorder(folder.root, settings)
    stats = RunStats()
    stats.add(ToolEnd(turn=1, step=1, call_id="c1", name="read", duration_ms=2.0))
    folder.answer.write_text("The lease ends in 2029 [s1].\n")
    given = {"citations": {"cited": ["s1"], "valid": 1}, "model_id": "scripted"}
    recorder.turn_end(TurnEnd(turn=1, tool_calls=1, tokens={"input": 10, "output": 5}), stats, given)
    [turn] = folder.read_turns()
    assert turn["turn"] == 1 and turn["tool_calls"] == 1 and turn["answer"]["changed"]
    assert (folder.snapshots / "ANSWER-t1.md").read_text() == "The lease ends in 2029 [s1].\n"
    meta = folder.read_meta()
    assert meta["stop_reason"] is None and meta["tool_counts"] == {"read": 1}
    assert meta["citations"] == given["citations"] and meta["model_id"] == "scripted" and meta["budget"] == 4
    recorder.stop(Stop(reason="first_turn_done", turns=1), stats, {**given, "model_id": "another"})
    meta = folder.read_meta()
    assert meta["done"] and meta["stop_reason"] == "first_turn_done" and meta["model_id"] == "another"
    assert not folder.sources.exists()  # the ledger is the workspace's to save
