"""Scoring a finished run (design §4): must-fact recall, citations against the ledger and gold files,
false-premise correction, the LLM judge, and `python -m searchbox score`. Runs are hand-made job
folders (work/ANSWER.md + sources.json); the judge talks to the scripted endpoint over HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from testkit.scripted_endpoint import Reply, ScriptedEndpoint

from searchbox.assets import BUILTIN_QUESTIONS
from searchbox.grading.answer_judge import JUDGE_PROMPT
from searchbox.evaluation.questions import load_questions
from searchbox.grading.fact_match import LEXICAL_VERSION, fact_present
from searchbox.grading.score import format_score, score_run
from searchbox.llm.clients.openai_client import OpenAIClient

ROOT = Path(__file__).resolve().parents[2]
MINUTES, DECK, EMAIL = "01_corporate/board_minutes.docx", "01_corporate/board_deck.pdf", "07_correspondence/cfo.eml"

CHURN = {"id": "c1", "type": "multihop", "question": "What was the corrected gross churn for 2025?",
         "answer": "5.9%, not the 6.8% in the deck: $138,000 of churn was counted twice.",
         "must_facts": ["5.9%", "6.8%", "$138,000"], "gold_files": [EMAIL, DECK]}
SERIES_B = {"id": "n1", "type": "negative", "question": "Why did the Series B close in 2021?",
            "answer": "It did not: the Series B closed on 15 September 2022 at $8.68 per share.",
            "must_facts": ["15 September 2022", "$8.68"], "gold_files": [MINUTES]}
LEDGER = [{"id": "s1", "kind": "chunk", "path": f"dataroom/{EMAIL}", "chunk": 0, "start": 0, "end": 90},
          {"id": "s2", "kind": "range", "path": f"dataroom/{DECK}", "start": 1, "end": 20},
          {"id": "s3", "kind": "chunk", "path": f"dataroom/{MINUTES}", "chunk": 4, "start": 0, "end": 80}]


def make_run(root: Path, answer: str | None, ledger: list[dict[str, Any]] | None = LEDGER) -> Path:
    """A job-like folder as a finished run leaves it."""
    (root / "work").mkdir(parents=True)
    if answer is not None:
        (root / "work" / "ANSWER.md").write_text(answer, encoding="utf-8")
    if ledger is not None:
        (root / "sources.json").write_text(json.dumps(ledger))
    return root


def write_questions(path: Path, rows: list[Any]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


# -- fact matching -------------------------------------------------------------------------------

@pytest.mark.parametrize(("fact", "text"), [
    ("2,187,500", "The Series A issued 2187500 shares."),
    ("2187500", "2,187,500 shares"),
    ("$36.2 million", "Revenue was $36.2M."),
    ("$36.2M", "revenue of USD 36,200,000"),
    ("$9,850K", "Q4 revenue: $9.85 million"),
    ("$7,000,000.00", "$7,000,000 in the Series A"),
    ("three (3) years", "an initial term of Three  (3)\nYears"),
    ("twenty-two (22) days", "22 (22) days of leave"),
    ("9", "Nine patents in all"),
    ("8.50%", "or 8.5 percent a year"),
    ("1 April 2022", "effective April 1st, 2022"),
    ("1 April 2022", "effective 2022-04-01"),
    ("Pellworth & Strand LLP", "audited by Pellworth and Strand LLP."),
    ("EUR 395", "at €395 per sensor"),
    ("broken object-level authorisation", "a broken object level authorization flaw"),  # one-letter spelling variant
    ("(1,925)", "a net loss of $1.925 million in FY2023"),  # accounting notation, statements in thousands
])
def test_facts_match_across_formatting(fact: str, text: str) -> None:
    assert fact_present(fact, text)


@pytest.mark.parametrize(("fact", "text"), [
    ("5.9%", "Gross churn was 5.8% for the year."),
    ("5.9%", "Gross churn was 15.9% for the year."),
    ("gross churn of 5.9%", "the gross churn of 5.8%, restated"),  # the words match fuzzily; the number must not
    ("2,187,500", "The Series A issued 2,187,600 shares."),
    ("2,187,500 shares", "2,187,600 shares were issued, and 500 later"),
    ("$36.2 million", "Revenue was $36.45 million."),
    ("prime rate plus 1.25%", "prime rate plus 1.5%, with a floor of 1.25%"),  # 1.25 elsewhere does not count
    ("(1,925)", "a net loss of $1.926 million"),
    ("17 March 2026", "17 May 2026"),
    ("not modified", "The opinion was modified."),
    ("SCIM", "a scam"),
])
def test_facts_do_not_match_a_different_fact(fact: str, text: str) -> None:
    assert not fact_present(fact, text)


def test_gold_answers_score_correct_on_the_builtin_question_set(tmp_path: Path) -> None:
    """Every gold answer, scored as a run, holds its own facts: the question set and the matcher agree."""
    questions = load_questions(BUILTIN_QUESTIONS)
    failing = {}
    for q in questions:
        missing = [f for f in q["must_facts"] + q.get("computed_facts", []) if not fact_present(f, q["answer"])]
        if missing:
            failing[q["id"]] = missing
    assert not failing, failing
    # Through score_run too, for one question per type.
    for q in {q["type"]: q for q in questions if q["id"] not in failing}.values():
        assert score_run(make_run(tmp_path / q["id"], q["answer"]), q)["verdict"] == "correct", q["id"]


# -- score_run -----------------------------------------------------------------------------------

def test_a_correct_answer_citing_gold_files(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", "Corrected gross churn was **5.9%** [s1], not 6.8% [s2]; "
                                     "$138,000 of Cedar Hollow churn was double-counted [s1].")
    score = score_run(run, CHURN)
    assert score["verdict"] == "correct" and score["fact_recall"] == 1.0 and score["answer_found"]
    assert all(f["present"] for f in score["facts"])
    c = score["citations"]
    assert c["cited"] == ["s1", "s2"] and c["valid"] == ["s1", "s2"] and c["invalid"] == []
    assert (c["validity"], c["precision"], c["recall"]) == (1.0, 1.0, 1.0)
    assert c["cited_files"] == sorted([EMAIL, DECK]) and c["gold_missed"] == []
    assert score["premise"] is None and score["judge"] is None


def test_a_partial_answer(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", "Gross churn was 6.8% according to the board deck [s2].")
    score = score_run(run, CHURN)
    assert score["verdict"] == "partial"
    assert [f["present"] for f in score["facts"]] == [False, True, False]
    assert score["fact_recall"] == pytest.approx(1 / 3) and score["reason"] == "1 of 3 facts present"


def test_a_wrong_answer_and_a_missing_answer(tmp_path: Path) -> None:
    wrong = score_run(make_run(tmp_path / "wrong", "Churn was 5.8% [s2]."), CHURN)
    assert wrong["verdict"] == "wrong" and wrong["fact_recall"] == 0.0
    missing = score_run(make_run(tmp_path / "missing", None), CHURN)
    assert missing["verdict"] == "wrong" and not missing["answer_found"]
    assert missing["reason"] == "the run has no work/ANSWER.md"
    assert missing["citations"]["cited"] == [] and missing["citations"]["precision"] is None
    empty = score_run(make_run(tmp_path / "empty", "  \n"), CHURN)
    assert empty["verdict"] == "wrong" and empty["reason"] == "work/ANSWER.md is empty"


def test_each_fact_says_what_its_verdict_rests_on_and_the_score_names_its_grader(tmp_path: Path) -> None:
    question = {"id": "t1", "type": "literal", "question": "What is the initial term of the MSA?",
                "answer": "Three (3) years from 1 April 2022.", "must_facts": ["three (3) years", "1 April 2022"],
                "gold_files": []}
    answer = "The MSA has an initial two-year term that began on 1 April 2022 [s1]."
    score = score_run(make_run(tmp_path / "run", answer), question)
    term, start = score["facts"]
    assert term["status"] == "contradicted" and not term["present"]
    assert term["explanation"] == ("2 where the fact has 3 (beside 'years') in "
                                   '"The MSA has an initial two-year term that began on 1 April 2022."')
    assert start["status"] == "present" and start["rule"] == "exact"
    assert start["passage"] == "The MSA has an initial two-year term that began on 1 April 2022."
    # A wrong figure earns no credit: an answer with a contradicted fact is wrong, not partial.
    assert score["verdict"] == "wrong" and score["reason"] == "1 of 2 facts present, 1 contradicted"
    assert score["grader"] == {"lexical": LEXICAL_VERSION, "judge": None}
    printed = format_score(score)
    assert "CONTRADICTED" in printed and "2 where the fact has 3" in printed


def test_computed_facts_count_like_must_facts(tmp_path: Path) -> None:
    question = {**CHURN, "must_facts": ["$138,000"], "computed_facts": ["$908,000"]}
    score = score_run(make_run(tmp_path / "run", "$138,000 was counted twice [s1]."), question)
    assert score["verdict"] == "partial"
    assert [(f["kind"], f["present"]) for f in score["facts"]] == [("must", True), ("computed", False)]


def test_a_hallucinated_citation_is_invalid(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", "Churn was 5.9% [s1], not 6.8% [s9]; $138,000 double-counted [s1, s9].")
    c = score_run(run, CHURN)["citations"]
    assert c["cited"] == ["s1", "s9"] and c["valid"] == ["s1"] and c["invalid"] == ["s9"]
    assert c["validity"] == 0.5 and c["precision"] == 1.0 and c["recall"] == 0.5
    # Without a ledger nothing can be valid.
    c = score_run(make_run(tmp_path / "no-ledger", "Churn was 5.9% [s1].", ledger=None), CHURN)["citations"]
    assert c["invalid"] == ["s1"] and c["validity"] == 0.0 and c["precision"] is None and c["ledger_size"] == 0


def test_citation_precision_and_recall_against_gold_files(tmp_path: Path) -> None:
    # s1 (gold e-mail) and s3 (minutes, not gold for this question); the gold deck is never cited.
    run = make_run(tmp_path / "run", "Churn was 5.9% [s1] and 6.8% in the deck [s3]; $138,000 [s1; s3].")
    c = score_run(run, CHURN)["citations"]
    assert c["valid"] == ["s1", "s3"] and c["precision"] == 0.5 and c["recall"] == 0.5
    assert c["gold_cited"] == [EMAIL] and c["gold_missed"] == [DECK]
    uncited = score_run(make_run(tmp_path / "uncited", "Churn was 5.9%."), CHURN)["citations"]
    assert uncited["validity"] is None and uncited["precision"] is None and uncited["recall"] == 0.0


def test_a_corrected_false_premise(tmp_path: Path) -> None:
    by_facts = score_run(make_run(tmp_path / "facts", "The Series B closed on 15 September 2022 at $8.68 [s3]."), SERIES_B)
    assert by_facts["verdict"] == "correct"
    assert by_facts["premise"] == {"corrected": True, "rule": "must_facts", "phrase": None}
    by_phrase = score_run(make_run(tmp_path / "phrase", "The minutes hold no record of a 2021 Series B [s3]."), SERIES_B)
    assert by_phrase["verdict"] == "wrong"
    assert by_phrase["premise"] == {"corrected": True, "rule": "phrase", "phrase": "no record"}
    accepted = score_run(make_run(tmp_path / "accepted", "It closed in 2021 because investors were keen."), SERIES_B)
    assert accepted["premise"] == {"corrected": False, "rule": None, "phrase": None}


# -- the LLM judge -------------------------------------------------------------------------------

def judge_client(endpoint: ScriptedEndpoint) -> OpenAIClient:
    return OpenAIClient(endpoint.url, "judge-model", max_attempts=1, read_timeout_s=5.0, connect_timeout_s=1.0)


def test_the_judge_gives_a_verdict(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", "Churn was 5.9% [s1].")
    reply = Reply(text='Here you go:\n```json\n{"verdict": "Partial", "reason": "misses the double count",}\n```')
    with ScriptedEndpoint([reply]) as endpoint:
        model = judge_client(endpoint)
        score = score_run(run, CHURN, judge=model)
        model.close()
        sent = endpoint.requests[0].body["messages"]
    judge = score["judge"]
    assert judge["verdict"] == "partial" and judge["reason"] == "misses the double count"
    assert judge["raw"] == reply.text and judge["model"] == "judge-model"
    assert judge["prompt"] == JUDGE_PROMPT.format(question=CHURN["question"], gold=CHURN["answer"], answer="Churn was 5.9% [s1].")
    assert sent == [{"role": "user", "content": judge["prompt"]}]
    assert score["verdict"] == "partial"  # the fact verdict stands on its own


def test_a_garbage_verdict_is_kept_raw(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", "Churn was 5.9% [s1].")
    with ScriptedEndpoint([Reply(text="I think it is mostly fine, honestly."), Reply(text='{"verdict": "great"}')]) as endpoint:
        model = judge_client(endpoint)
        garbage = score_run(run, CHURN, judge=model)["judge"]
        invalid = score_run(run, CHURN, judge=model)["judge"]
        model.close()
    assert garbage["verdict"] == "unknown" and garbage["raw"] == "I think it is mostly fine, honestly."
    assert invalid["verdict"] == "unknown" and invalid["raw"] == '{"verdict": "great"}' and "great" in invalid["reason"]


# -- python -m searchbox score -------------------------------------------------------------------

def score_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "searchbox", "score", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


def test_the_cli_scores_a_run_and_writes_score_json(tmp_path: Path) -> None:
    questions = write_questions(tmp_path / "q.jsonl", [CHURN, SERIES_B])
    run = make_run(tmp_path / "run", "Churn was 5.9% [s1], not 6.8% [s7].")
    result = score_cli(str(run), "--questions", str(questions), "--id", "c1")
    assert result.returncode == 0, result.stderr
    assert "verdict: partial (2 of 3 facts present)" in result.stdout and "invalid: s7" in result.stdout
    stored = json.loads((run / "score.json").read_text())
    assert stored["id"] == "c1" and stored["verdict"] == "partial" and stored["citations"]["invalid"] == ["s7"]
    assert not list(run.glob(".*.tmp"))


def test_the_cli_judge_uses_the_configured_endpoint(tmp_path: Path) -> None:
    questions = write_questions(tmp_path / "q.jsonl", [CHURN])
    run = make_run(tmp_path / "run", "Churn was 5.9% [s1], not 6.8% [s2]; $138,000 was counted twice.")
    with ScriptedEndpoint([Reply(text='{"verdict": "correct", "reason": "all facts"}')]) as endpoint:
        result = score_cli(str(run), "--questions", str(questions), "--id", "c1", "--judge", env={"LLAMA_URL": endpoint.url})
    assert result.returncode == 0, result.stderr
    assert "judge (" in result.stdout and "correct - all facts" in result.stdout
    assert json.loads((run / "score.json").read_text())["judge"]["verdict"] == "correct"


def test_the_cli_judge_can_be_another_endpoint_than_the_runs_model(tmp_path: Path) -> None:
    questions = write_questions(tmp_path / "q.jsonl", [CHURN])
    run = make_run(tmp_path / "run", "Churn was 5.9% [s1], not 6.8% [s2]; $138,000 was counted twice.")
    with ScriptedEndpoint([Reply(text='{"verdict": "correct", "reason": "all facts"}')]) as endpoint:
        result = score_cli(str(run), "--questions", str(questions), "--id", "c1", "--judge-url", endpoint.url,
                           "--judge-model", "judge-70b", env={"LLAMA_URL": "http://127.0.0.1:9/v1"})
        sent = endpoint.requests[0].body
    assert result.returncode == 0, result.stderr
    assert sent["model"] == "judge-70b" and "You grade an answer" in sent["messages"][0]["content"]
    stored = json.loads((run / "score.json").read_text())
    assert stored["judge"]["verdict"] == "correct" and stored["grader"] == {"lexical": LEXICAL_VERSION, "judge": "judge-70b"}


@pytest.mark.parametrize(("rows", "message"), [
    ([CHURN, "{not json"], "line 2: not valid JSON"),
    ([{k: v for k, v in CHURN.items() if k != "must_facts"}], "line 1: missing key(s) must_facts"),
    ([{**CHURN, "type": "trivia"}], "line 1: type 'trivia' is not one of"),
    ([CHURN, SERIES_B, {**SERIES_B, "question": "again"}], "line 3: duplicate id 'n1' (first on line 2)"),
    ([{**CHURN, "must_facts": []}], "line 1: must_facts must be a non-empty list of strings"),
])
def test_a_bad_question_file_is_refused_with_its_line(tmp_path: Path, rows: list[Any], message: str) -> None:
    path = write_questions(tmp_path / "q.jsonl", rows)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_questions(path)


def test_the_cli_exits_2_on_a_bad_question_file_or_an_unknown_id(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", "Churn was 5.9%.")
    bad = write_questions(tmp_path / "bad.jsonl", [{**CHURN, "type": "trivia"}])
    result = score_cli(str(run), "--questions", str(bad), "--id", "c1")
    assert result.returncode == 2 and "line 1: type 'trivia'" in result.stderr
    good = write_questions(tmp_path / "good.jsonl", [CHURN])
    result = score_cli(str(run), "--questions", str(good), "--id", "zz")
    assert result.returncode == 2 and "no question with id 'zz'" in result.stderr
    assert not (run / "score.json").exists()
