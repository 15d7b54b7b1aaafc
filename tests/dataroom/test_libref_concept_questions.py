"""Checks of the libref room's second question set (assets/libref_concept_questions.jsonl): each question
describes what it asks about in other words than its gold page uses, so keyword search struggles where the
first set (libref_questions.jsonl) names it. Checked as the first set is (schema, ids, every fact in a gold
file's text and in the answer), and that it stays hard for BM25; the ranks themselves are in the finding
(docs/findings/2026-12-06-libref-concept-questions.md)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

import pytest
from testkit.question_checks import fact_problems, normalise

from searchbox.assets import LIBREF_CONCEPT_QUESTIONS, LIBREF_DATAROOM
from searchbox.dataroom.work_dir import load_corpus, prepare_work_dir
from searchbox.evaluation.questions import load_questions
from searchbox.evaluation.retrieval_eval import files_of
from searchbox.retrieval.cache import EmbeddingCache
from searchbox.retrieval.encoder import Encoder
from searchbox.retrieval.engine import RetrievalEngine
from searchbox.settings import Settings

QUESTION_KEYS = {"id", "question", "answer", "must_facts", "gold_files", "type"}


@pytest.fixture(scope="module")
def questions() -> list[dict]:
    return load_questions(LIBREF_CONCEPT_QUESTIONS)


def test_questions_are_well_formed(questions: list[dict]) -> None:
    assert len(questions) >= 18
    assert [q["id"] for q in questions] == [f"c{n:03d}" for n in range(1, len(questions) + 1)]
    for q in questions:
        assert set(q) == QUESTION_KEYS, q["id"]
        # Multihop only where the answer needs two pages; every other question is one page's concept.
        assert (q["type"], len(q["gold_files"]) > 1) in {("paraphrased", False), ("multihop", True)}, q["id"]


def test_every_fact_is_in_a_gold_file_and_every_gold_file_holds_a_fact(questions: list[dict],
                                                                        libref_texts: dict[str, str]) -> None:
    problems = fact_problems(questions, libref_texts)
    assert not problems, "\n".join(map(str, problems))


def test_questions_do_not_name_what_they_ask_about(questions: list[dict]) -> None:
    """No must-fact (a class name, a default, a phrase of the page) and no gold module's name in the question."""
    for q in questions:
        asked = normalise(q["question"])
        named = [fact for fact in q["must_facts"] if normalise(fact) in asked]
        modules = [PurePosixPath(f).stem.strip("_").replace("_", " ") for f in q["gold_files"]]
        named += [m for m in modules if re.search(rf"\b{re.escape(m)}\b", asked)]
        assert not named, (q["id"], named)


def test_keyword_search_misses_a_good_share_of_the_set(tmp_path, questions: list[dict]) -> None:
    """What the set is for: BM25 alone leaves the gold files out of its top 10 for a third of it or more."""
    settings = Settings.resolve(env={}, searchbox_cache_dir=str(tmp_path / "cache"))
    corpus = load_corpus(prepare_work_dir(tmp_path / "job", LIBREF_DATAROOM), settings)

    def no_embedder():
        raise AssertionError("BM25 must not load an embedder")

    engine = RetrievalEngine(corpus, settings, Encoder("none", no_embedder, EmbeddingCache()))
    missed = [q["id"] for q in questions
              if not set(files_of(engine, engine.keyword_search(q["question"], 60))[:10]) & set(q["gold_files"])]
    assert len(missed) * 3 >= len(questions), missed
