"""What a grader is: one interface for every grader of a finished run, and the name a score gives them.

A grader is given what a run recorded (recorded.py) and the question's expectations, and returns a typed
verdict that writes its own part of the score record (score.py). It reads the records only: it never
runs the agent again, and what the run checked itself (its citations) is checked again only when a newer
checker version must (citation_scores.py).

Every score names its grader: {"lexical": the must-fact matcher's version (fact_match.py), "judge": the
judge model's id or None}. Verdicts of different graders are different measurements, so the report and
the Compare tab never pool them: an entry whose runs were graded differently becomes one entry per
grader. A row recorded before scores named their grader was graded by the first matcher
(citations/facts.py alone): lexical 1, and the judge its row names, if any.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Protocol

from searchbox.grading.answer_judge import VERDICTS
from searchbox.grading.fact_match import LEXICAL_VERSION
from searchbox.grading.recorded import RecordedRun
from searchbox.llm.types import ChatModel

Question = dict[str, Any]  # a question set's row: id, question, answer, must_facts, gold_files, type
FIRST_LEXICAL_VERSION = 1


class Verdict(Protocol):
    def record(self) -> dict[str, Any]:
        """Its fields of the score record (score.json, and the results rows built from it)."""
        ...


class Grader(Protocol):
    def grade(self, run: RecordedRun, question: Question) -> Verdict: ...


def grader_of(judge: ChatModel | None) -> dict[str, Any]:
    return {"lexical": LEXICAL_VERSION, "judge": judge.model_id if judge is not None else None}


def row_grader(row: dict[str, Any]) -> dict[str, Any]:
    """The grader of a results row (or score record), older rows included."""
    recorded = (row.get("score") or {}).get("grader") or row.get("grader")
    if isinstance(recorded, dict):
        return {"lexical": recorded.get("lexical", FIRST_LEXICAL_VERSION), "judge": recorded.get("judge")}
    judge = row.get("judge")
    return {"lexical": FIRST_LEXICAL_VERSION, "judge": judge.get("model") if isinstance(judge, dict) else None}


def grader_label(grader: dict[str, Any]) -> str:
    """"lexical 2", or "lexical 2 + judge MODEL"."""
    judge = f" + judge {grader['judge']}" if grader.get("judge") else ""
    return f"lexical {grader.get('lexical', FIRST_LEXICAL_VERSION)}{judge}"


def judge_agreement(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """How often the judge's verdict equals the lexical one over the rows both graded, with the
    crosstab (lexical verdict -> judge verdict -> runs); None when no row has both."""
    pairs = [(r["score"]["verdict"], r["judge"]["verdict"]) for r in rows
             if (r.get("score") or {}).get("verdict") in VERDICTS and (r.get("judge") or {}).get("verdict") in VERDICTS]
    if not pairs:
        return None
    table: dict[str, Counter[str]] = {}
    for lexical, judged in pairs:
        table.setdefault(lexical, Counter())[judged] += 1
    agree = sum(lexical == judged for lexical, judged in pairs)
    return {"runs": len(pairs), "agree": agree, "rate": round(agree / len(pairs), 4),
            "crosstab": {lexical: dict(sorted(c.items())) for lexical, c in sorted(table.items())}}
