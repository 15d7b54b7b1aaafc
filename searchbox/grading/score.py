"""Scoring a finished run against one question of a question set (design §4).

The answer is scored without the text it only echoed from the harness's messages (records/echoes.py).
A score record holds must-fact recall (wording, word order and inflection tolerated, numbers exact:
grading/fact_match.py), each fact with its status (present / contradicted / absent) and the passage of
the answer it rests on, the verdict they imply and the grader that gave them (grading/grader.py);
citation validity against the run's source ledger, each citation's check against its source
(supported / unsupported / unchecked: citations/check.py, as run_meta.json recorded it or, for a
run recorded before checks or whose answer changed since, checked again), citation precision and
recall against the question's gold files, for a negative question whether the false premise was
corrected, and, when a judge model is given, the judge's verdict with its prompt and raw reply.
Ratios whose denominator is zero (no citations, no gold files) are None, not 0: nothing to measure.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from searchbox.grading.grader import grader_of
from searchbox.grading.answer_judge import judge_answer
from searchbox.llm.types import ChatModel
from searchbox.citations.check import CHECKER_VERSION, VERDICTS, answer_digest
from searchbox.citations.markers import cited_ids
from searchbox.records.echoes import job_echoes
from searchbox.grading.fact_match import fact_present, match_fact
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings
from searchbox.workspace import Workspace

__all__ = ["CORRECTION_PHRASES", "fact_present", "format_score", "score_run"]

# Wording that corrects a false premise ("It did not expire", "There is no such patent").
CORRECTION_PHRASES = ("did not", "didn't", "does not", "doesn't", "was not", "were not", "has not", "never",
                      "no record", "no evidence", "incorrect", "not correct", "actually", "there is no",
                      "there are no", "there was no", "contrary to")
_CORRECTION = re.compile(r"\b(" + "|".join(re.escape(p) for p in CORRECTION_PHRASES) + r")\b")
_EMBEDDER_KNOBS = ("EMBED_MODEL", "EMBED_BACKEND", "EMBED_DTYPE", "EMBED_DEVICE", "SEARCHBOX_CACHE_DIR")
_DATAROOM_PREFIX = "dataroom/"  # ledger paths are relative to the work folder, gold files to the dataroom


def score_run(job_dir: Path, question: dict[str, Any], judge: ChatModel | None = None) -> dict[str, Any]:
    """The score of the run in `job_dir` (work/ANSWER.md, sources.json) against `question`."""
    job_dir = Path(job_dir)
    folder = JobFolder(job_dir)
    read = folder.read_answer()  # a link or special file left at ANSWER.md is no answer
    answer = read.text if read.exists and read.problem is None else None
    ledger = {row["id"]: row.get("path", "") for row in folder.read_sources() if isinstance(row, dict) and "id" in row}
    score: dict[str, Any] = {"id": question["id"], "type": question["type"], "question": question["question"],
                             "run": str(job_dir), "answer_found": bool(answer and answer.strip())}
    # What the answer only echoed from the harness's own messages earns no fact and no citation.
    text = job_echoes(answer, job_dir).scored if answer else ""

    facts = [fact_verdict(f, "must", text, question["question"]) for f in question["must_facts"]]
    facts += [fact_verdict(f, "computed", text, question["question"]) for f in question.get("computed_facts", [])]
    present = sum(f["present"] for f in facts)
    contradicted = sum(f["status"] == "contradicted" for f in facts)
    score["facts"] = facts
    score["fact_recall"] = present / len(facts) if facts else None
    score["verdict"] = answer_verdict([f["status"] for f in facts], [f["asked"] for f in facts])
    if answer is None:
        score["reason"] = "the run has no work/ANSWER.md"
    elif not answer.strip():
        score["reason"] = "work/ANSWER.md is empty"
    else:
        score["reason"] = f"{present} of {len(facts)} facts present" + (f", {contradicted} contradicted"
                                                                         if contradicted else "")

    score["citations"] = citation_scores(text, ledger, question["gold_files"], checked_citations(job_dir, answer or ""))
    score["premise"] = premise_correction(text, facts) if question["type"] == "negative" else None
    score["judge"] = judge_answer(judge, question, text) if judge is not None and score["answer_found"] else None
    score["grader"] = grader_of(judge)
    return score


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


def fact_verdict(fact: str, kind: str, answer: str, question: str = "") -> dict[str, Any]:
    """One fact's entry in a score: present, status, the passage it rests on, a line explaining it, and
    whether the question itself states it (`asked`)."""
    match = match_fact(fact, answer, question)
    return {"fact": fact, "kind": kind, "present": match.present, **match.as_dict(), "explanation": match.explain(),
            "asked": asked_by(fact, question)}


def asked_by(fact: str, question: str) -> bool:
    """Whether the question itself states the fact: then it earns an answer no partial credit."""
    return bool(question) and match_fact(fact, question).present


def checked_citations(job_dir: Path, answer: str) -> dict[str, Any]:
    """The run's citation checks: run_meta.json's when they were made on this answer by this checker, else
    made now with the embedder the run used (its config.json); without that embedder, facts only."""
    folder = JobFolder(job_dir)
    recorded = folder.read_meta().get("citations") or {}
    if (recorded.get("answer_sha256") == answer_digest(answer) and "checks" in recorded
            and recorded.get("checker", 1) == CHECKER_VERSION):
        return recorded
    config = folder.read_config()
    embedder = {k.lower(): config[k] for k in _EMBEDDER_KNOBS if k in config}
    return Workspace.open(job_dir, Settings.resolve(**embedder)).check_citations(answer)


def citation_scores(answer: str, ledger: dict[str, str], gold_files: list[str],
                    checked: dict[str, Any] | None = None) -> dict[str, Any]:
    """Validity against the ledger, precision and recall against the gold files and, given the run's
    checks, how many citations their sources support (the rate: supported of all checked)."""
    cited = cited_ids(answer)
    valid = [i for i in cited if i in ledger]
    gold = set(gold_files)
    files = {i: ledger[i].removeprefix(_DATAROOM_PREFIX) for i in valid}
    gold_cited = [g for g in gold_files if g in files.values()]
    return {
        "cited": cited,
        "valid": valid,
        "invalid": [i for i in cited if i not in ledger],
        "ledger_size": len(ledger),
        "validity": len(valid) / len(cited) if cited else None,
        "cited_files": sorted(set(files.values())),
        "precision": sum(f in gold for f in files.values()) / len(valid) if valid else None,
        "recall": len(gold_cited) / len(gold) if gold else None,
        "gold_cited": gold_cited,
        "gold_missed": [g for g in gold_files if g not in gold_cited],
        **{verdict: (checked or {}).get(verdict, 0) for verdict in VERDICTS},
        "supported_rate": (checked or {}).get("supported_rate"),
        "checks": (checked or {}).get("checks", []),
    }


def premise_correction(answer: str, facts: list[dict[str, Any]]) -> dict[str, Any]:
    """Heuristic: corrected when the answer holds every correcting must-fact, or says so in words."""
    must = [f for f in facts if f["kind"] == "must"]
    if all(f["present"] for f in must):
        return {"corrected": True, "rule": "must_facts", "phrase": None}
    found = _CORRECTION.search(answer.lower().replace("\u2019", "'"))
    if found:
        return {"corrected": True, "rule": "phrase", "phrase": found[1]}
    return {"corrected": False, "rule": None, "phrase": None}


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
