"""A finished run's score against one question of a question set (design §4): every grader's verdict
(grader.py) in one record, what `score` writes to score.json and a sweep's results row is built from.

A score record holds must-fact recall (wording, word order and inflection tolerated, numbers exact:
fact_match.py), each fact with its status (present / contradicted / absent) and the passage of the
answer it rests on, the verdict they imply and the grader that gave them (lexical.py); citation
validity against the run's source ledger, each citation's check against its source (supported /
contradicted / unsupported / unchecked, as run_meta.json recorded it or, where that record no longer
holds, checked again: citation_scores.py), citation precision and recall against the question's gold
files; for a negative question whether the false premise was corrected; and, when a judge model is
given, the judge's verdict with its prompt and raw reply (answer_judge.py). All of it on the answer
without the text it only echoed from the harness's messages (records/echoes.py).
Ratios whose denominator is zero (no citations, no gold files) are None, not 0: nothing to measure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from searchbox.grading.answer_judge import AnswerJudge
from searchbox.grading.citation_scores import CitationGrader
from searchbox.grading.grader import Grader, Question, grader_of
from searchbox.grading.lexical import LexicalGrader
from searchbox.grading.recorded import RecordedRun
from searchbox.llm.types import ChatModel

# The score record's fields, in the order score.json and `score` have always written them.
SCORE_FIELDS = ("id", "type", "question", "run", "answer_found", "facts", "fact_recall", "verdict", "reason",
                "citations", "premise", "judge", "grader")


def score_run(job_dir: Path, question: Question, judge: ChatModel | None = None) -> dict[str, Any]:
    """The score of the run in `job_dir` (what its job folder recorded) against `question`."""
    run = RecordedRun.read(job_dir)
    graders: list[Grader] = [LexicalGrader(), CitationGrader()] + ([AnswerJudge(judge)] if judge is not None else [])
    fields: dict[str, Any] = {"id": question["id"], "type": question["type"], "question": question["question"],
                              "run": str(run.job_dir), "answer_found": run.answer_found, "judge": None,
                              "grader": grader_of(judge)}
    for grader in graders:
        fields |= grader.grade(run, question).record()
    return {name: fields[name] for name in SCORE_FIELDS}


def format_score(score: dict[str, Any]) -> str:
    """A few readable lines for the terminal."""
    lines = [f"question {score['id']} ({score['type']}): {score['question']}",
             f"verdict: {score['verdict']} ({score['reason']})"]
    for fact in score["facts"]:
        mark = {"present": "present", "contradicted": "CONTRADICTED"}.get(fact.get("status"), "MISSING")
        lines.append(f"  {mark:<12} {fact['kind']:<9} {fact['fact']}")
        if fact.get("explanation"):
            lines.append(f"{'':<15}{fact['explanation']}")
    c = score["citations"]
    lines.append(f"citations: {len(c['cited'])} cited, {len(c['valid'])} valid"
                 + (f", invalid: {', '.join(c['invalid'])}" if c["invalid"] else "")
                 + f"; precision {_ratio(c['precision'])}, recall {_ratio(c['recall'])} of gold files")
    if c["gold_missed"]:
        lines.append(f"  gold files not cited: {', '.join(c['gold_missed'])}")
    if c["checks"]:
        lines.append(f"checked against their sources: {c['supported']} supported, {c.get('contradicted', 0)} contradicted, "
                     f"{c['unsupported']} unsupported, "
                     f"{c['unchecked']} unchecked; supported rate {_ratio(c['supported_rate'])}")
        for check in c["checks"]:
            if check["verdict"] != "supported":
                lines.append(f"  {check['verdict']:<11} [{check['id']}] {check['sentence'][:90]}: {check['reason']}")
    if score["premise"] is not None:
        p = score["premise"]
        how = f" (rule: {p['rule']}{': ' + repr(p['phrase']) if p['phrase'] else ''})" if p["corrected"] else ""
        lines.append(f"false premise corrected: {'yes' if p['corrected'] else 'no'}{how}")
    if score["judge"] is not None:
        lines.append(f"judge ({score['judge']['model']}): {score['judge']['verdict']} - {score['judge']['reason']}")
    return "\n".join(lines)


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"
