"""Who graded a sweep's runs, and each fact's verdict with the passage it rests on: the report's
"Graders" and "Fact verdicts" sections and the Compare tab's tables of the same.

Runs graded differently (another matcher version, another judge or none: grading/grader.py) are
never pooled: an entry whose runs had different graders becomes one entry per grader, named with it.
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from searchbox.grading.grader import grader_label, row_grader

GRADER_COLUMNS = ["entry", "grader", "runs", "facts present", "contradicted", "absent", "judged runs",
                  "judge agrees"]
FACT_COLUMNS = ["entry", "question", "repeat", "kind", "fact", "verdict", "why"]
GRADER_NOTE = ("The lexical grader reads each must-fact as its numbers (exact) and content words (stemmed, "
               "any order) within one passage of the answer; a fact with a different number in the same slot, "
               "or negated, is contradicted. 'judge agrees': runs whose judge verdict equals the lexical one. "
               "Runs graded by different graders are never pooled.")
_FACTS = "score.facts"


def keep_graders_apart(base: pd.DataFrame, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The rows' `grader` and `judge_verdict` columns; an entry graded by more than one grader is split."""
    base["grader"] = [grader_label(row_grader(row)) for row in rows]
    base["judge_verdict"] = [(row.get("judge") or {}).get("verdict") for row in rows]
    if not base.empty:
        mixed = base.groupby("entry")["grader"].transform("nunique") > 1
        base.loc[mixed, "entry"] = base.loc[mixed, "entry"] + " [" + base.loc[mixed, "grader"] + "]"
    return base


def grader_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per entry: its grader, and over its runs the facts found present, contradicted and absent, the
    runs a judge graded and how many of those it graded as the lexical matcher did."""
    rows = []
    for entry, runs in df.groupby("entry", sort=False):
        statuses = pd.Series([f.get("status") for facts in _facts(runs) for f in facts], dtype=object)
        judged = runs[runs["judge_verdict"].notna() & runs["score.verdict"].notna()] if "score.verdict" in runs else runs[:0]
        agree = int((judged["judge_verdict"] == judged["score.verdict"]).sum())
        rows.append([entry, ", ".join(dict.fromkeys(runs["grader"])), len(runs),
                     *(int((statuses == s).sum()) if len(statuses) else "–" for s in ("present", "contradicted", "absent")),
                     len(judged), f"{agree} of {len(judged)}" if len(judged) else "–"])
    return pd.DataFrame(rows, columns=GRADER_COLUMNS)


def fact_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per fact of each run: its verdict and why (the passage that holds it, or what is missing
    and the closest passage, or what contradicts it)."""
    rows = []
    for _, run in df.iterrows():
        for fact in run.get(_FACTS) if isinstance(run.get(_FACTS), list) else []:
            rows.append([run["entry"], run["question_id"], run["repeat"], fact.get("kind"), fact.get("fact"),
                         fact.get("status"), fact.get("explanation")])
    return pd.DataFrame(rows, columns=FACT_COLUMNS)


def graders_html(df: pd.DataFrame) -> str:
    """The report's Graders table and, folded, every fact's verdict."""
    if df.empty:
        return ""
    facts = fact_table(df)
    unrecorded = int(sum(not isinstance(f, list) for f in df.get(_FACTS, pd.Series([None] * len(df)))))
    note = (f" {unrecorded} runs were recorded before scores kept each fact's verdict: "
            "python -m searchbox score RUN_DIR --id ID grades one again." if unrecorded else "")
    out = (f"<h3>Graders</h3>{grader_table(df).to_html(index=False, border=0, classes='summary')}"
           f"<p class='note'>{html.escape(GRADER_NOTE + note)}</p>")
    if not facts.empty:
        out += (f"<details><summary>Fact verdicts ({len(facts)} facts of {df.shape[0]} runs)</summary>"
                f"{facts.to_html(index=False, border=0, classes='summary facts')}</details>")
    return out


def _facts(runs: pd.DataFrame) -> list[list[dict[str, Any]]]:
    return [f for f in runs.get(_FACTS, pd.Series(dtype=object)) if isinstance(f, list)]
