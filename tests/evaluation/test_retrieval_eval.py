"""Retrieval-only evaluation: recall@k of grep, BM25, dense, hybrid and dense + rerank, by type."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import make_engine

from searchbox.evaluation.retrieval_eval import (KS, METHODS, evaluate, format_table, grep_rank, recall_at,
                                                 whole_room_dense)
from searchbox.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = [
    {"id": "q1", "question": "Where is the office at Harbour Street?", "type": "literal", "gold_files": ["legal/lease.txt"]},
    {"id": "q2", "question": "How many vacation days do staff get?", "type": "paraphrased", "gold_files": ["hr/handbook.md"]},
    {"id": "q3", "question": "What were revenue and headcount costs?", "type": "multihop",
     "gold_files": ["finance/revenue_2025.md", "finance/costs.md"]},
]


def test_recall_at_k() -> None:
    assert recall_at(["a", "b", "c"], ["c", "d"], 1) == 0.0
    assert recall_at(["a", "b", "c"], ["c", "d"], 3) == 0.5
    assert recall_at([], [], 5) == 0.0


def test_every_method_is_scored_by_type(small_work: Path, packaged_settings: Settings, minilm) -> None:
    engine = make_engine(small_work, packaged_settings, minilm)
    result = evaluate(engine, QUESTIONS)
    assert result["questions"] == 3 and set(result["methods"]) == set(METHODS)
    for scores in result["methods"].values():
        assert set(scores["all"]) == {f"R@{k}" for k in KS}
        assert set(scores["by_type"]) == {"literal", "paraphrased", "multihop"}
        assert all(0.0 <= v <= 1.0 for v in scores["all"].values())
    assert result["methods"]["grep"]["by_type"]["literal"]["R@1"] == 1.0
    assert result["methods"]["dense"]["by_type"]["paraphrased"]["R@1"] == 1.0
    assert grep_rank(engine.corpus, "zebra quartz") == []  # no query word in any file: grep finds nothing
    table = format_table(result)
    assert table.splitlines()[0].startswith("method") and "dense+rerank" in table


def test_the_command_writes_retrieval_json(tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    rows = [json.loads(line) for line in (ROOT / "assets" / "questions.jsonl").read_text().splitlines()[:6]]
    questions.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "out"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "SEARCHBOX_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "searchbox", "retrieval-eval", "--questions", str(questions),
                           "--out", str(out), "--set", "RETRIEVAL_PRESET=packaged"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "bm25" in done.stdout and "R@10" in done.stdout
    result = json.loads((out / "retrieval.json").read_text())
    assert result["questions"] == 6 and len(result["per_question"]) == 6
    assert result["config"]["RETRIEVAL_PRESET"] == "packaged"
    assert result["config"]["DENSE_PREFILTER"] == 0  # the preset's prefilter would make "dense" BM25's candidates


def test_dense_is_over_the_whole_room_unless_the_prefilter_is_given() -> None:
    assert whole_room_dense({"retrieval_preset": "packaged"}, {}) == {"retrieval_preset": "packaged",
                                                                      "dense_prefilter": 0}
    assert whole_room_dense({"dense_prefilter": "50"}, {}) == {"dense_prefilter": "50"}
    assert whole_room_dense({}, {"DENSE_PREFILTER": "50"}) == {}
