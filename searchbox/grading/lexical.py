"""The lexical grader: each must-fact's verdict in the answer (fact_match.py), the answer's verdict they
imply, and for a negative question whether the answer corrected its false premise. It grades the answer
without what it only echoed from the harness's messages (recorded.py)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from searchbox.grading.fact_match import FactMatch, match_fact
from searchbox.grading.recorded import RecordedRun

# Wording that corrects a false premise ("It did not expire", "There is no such patent").
CORRECTION_PHRASES = ("did not", "didn't", "does not", "doesn't", "was not", "were not", "has not", "never",
                      "no record", "no evidence", "incorrect", "not correct", "actually", "there is no",
                      "there are no", "there was no", "contrary to")
_CORRECTION = re.compile(r"\b(" + "|".join(re.escape(p) for p in CORRECTION_PHRASES) + r")\b")


@dataclass(frozen=True)
class FactVerdict:
    fact: str
    kind: str  # must | computed
    match: FactMatch
    asked: bool  # the question itself states it: an answer that holds only such facts earns no credit

    @property
    def status(self) -> str:
        return self.match.status

    @property
    def present(self) -> bool:
        return self.match.present

    def as_dict(self) -> dict[str, Any]:
        """Its entry in a score: present, status, the passage it rests on, a line explaining it, and `asked`."""
        return {"fact": self.fact, "kind": self.kind, "present": self.present, **self.match.as_dict(),
                "explanation": self.match.explain(), "asked": self.asked}


@dataclass(frozen=True)
class PremiseCorrection:
    corrected: bool
    rule: str | None  # must_facts (every correcting must-fact present) | phrase (it says so in words)
    phrase: str | None


@dataclass(frozen=True)
class LexicalGrade:
    facts: list[FactVerdict]
    verdict: str  # correct | partial | wrong
    reason: str
    premise: PremiseCorrection | None  # a negative question's only

    @property
    def fact_recall(self) -> float | None:
        return sum(f.present for f in self.facts) / len(self.facts) if self.facts else None

    def record(self) -> dict[str, Any]:
        return {"facts": [f.as_dict() for f in self.facts], "fact_recall": self.fact_recall, "verdict": self.verdict,
                "reason": self.reason, "premise": asdict(self.premise) if self.premise is not None else None}


class LexicalGrader:
    def grade(self, run: RecordedRun, question: dict[str, Any]) -> LexicalGrade:
        text, asked = run.scored, question["question"]
        facts = [fact_verdict(f, "must", text, asked) for f in question["must_facts"]]
        facts += [fact_verdict(f, "computed", text, asked) for f in question.get("computed_facts", [])]
        verdict = answer_verdict([f.status for f in facts], [f.asked for f in facts])
        premise = premise_correction(text, facts) if question["type"] == "negative" else None
        return LexicalGrade(facts, verdict, _reason(run, facts), premise)


def _reason(run: RecordedRun, facts: list[FactVerdict]) -> str:
    if run.answer is None:
        return "the run has no work/ANSWER.md"
    if not run.answer.strip():
        return "work/ANSWER.md is empty"
    contradicted = sum(f.status == "contradicted" for f in facts)
    return (f"{sum(f.present for f in facts)} of {len(facts)} facts present"
            + (f", {contradicted} contradicted" if contradicted else ""))


def answer_verdict(statuses: list[str], asked: list[bool] | None = None) -> str:
    """correct when every fact is present; wrong when none is, or only facts the question itself states
    (`asked`: "ping" in "What is the default ping interval?"; an answer that repeats the question holds
    them), or when the answer states another figure or the opposite for one (a contradicted fact: a wrong
    figure earns no credit); partial otherwise."""
    present = [s == "present" for s in statuses]
    if statuses and all(present):
        return "correct"
    earned = any(p and not (asked and asked[i]) for i, p in enumerate(present))
    return "partial" if earned and "contradicted" not in statuses else "wrong"


def fact_verdict(fact: str, kind: str, answer: str, question: str = "") -> FactVerdict:
    return FactVerdict(fact, kind, match_fact(fact, answer, question), asked_by(fact, question))


def asked_by(fact: str, question: str) -> bool:
    """Whether the question itself states the fact: then it earns an answer no partial credit."""
    return bool(question) and match_fact(fact, question).present


def premise_correction(answer: str, facts: list[FactVerdict]) -> PremiseCorrection:
    """Heuristic: corrected when the answer holds every correcting must-fact, or says so in words."""
    if all(f.present for f in facts if f.kind == "must"):
        return PremiseCorrection(True, "must_facts", None)
    found = _CORRECTION.search(answer.lower().replace("\u2019", "'"))
    if found:
        return PremiseCorrection(True, "phrase", found[1])
    return PremiseCorrection(False, None, None)
