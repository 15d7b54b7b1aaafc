"""The citations as graded: validity against the run's source ledger, precision and recall against the
question's gold files, and each citation's check against its source as the run made it.

The run checks its answer's citations itself (the workspace, citations/check.py, with CITATION_JUDGE's
support judge when one is on) and run_meta.json records the checks under "citations", with the checker's
version and the digest of the answer they were made on. That is the run's verdict and grading reads it.
It is made again, in a fresh workspace with the embedder the run used, only where the record cannot
stand for the answer as the current checker would check it: the run recorded no checks (before runs
checked citations), the answer changed since, or an older checker made them. Made again, no support
judge reads them: the checks are the words' alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from searchbox.citations.check import CHECKER_VERSION, VERDICTS, answer_digest
from searchbox.citations.markers import cited_ids
from searchbox.grading.recorded import RecordedRun
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings
from searchbox.workspace import Workspace

FIRST_CHECKER = 1  # a record that names no checker: checks were made before they named one
_EMBEDDER_KNOBS = ("EMBED_MODEL", "EMBED_BACKEND", "EMBED_DTYPE", "EMBED_DEVICE", "SEARCHBOX_CACHE_DIR")
_DATAROOM_PREFIX = "dataroom/"  # ledger paths are relative to the work folder, gold files to the dataroom


@dataclass(frozen=True)
class CitationGrade:
    cited: list[str]
    valid: list[str]
    invalid: list[str]
    ledger_size: int
    validity: float | None
    cited_files: list[str]
    precision: float | None
    recall: float | None
    gold_cited: list[str]
    gold_missed: list[str]
    verdicts: dict[str, int]  # per check verdict (citations/check.py's VERDICTS), the citations given it
    supported_rate: float | None  # supported of all checked
    checks: list[dict[str, Any]]  # each citation's check, as run_meta.json records it

    def record(self) -> dict[str, Any]:
        return {"citations": {
            "cited": self.cited, "valid": self.valid, "invalid": self.invalid, "ledger_size": self.ledger_size,
            "validity": self.validity, "cited_files": self.cited_files, "precision": self.precision,
            "recall": self.recall, "gold_cited": self.gold_cited, "gold_missed": self.gold_missed,
            **self.verdicts, "supported_rate": self.supported_rate, "checks": self.checks,
        }}


class CitationGrader:
    def grade(self, run: RecordedRun, question: dict[str, Any]) -> CitationGrade:
        return citation_grade(run.scored, run.ledger, question["gold_files"], checked_citations(run))


def checked_citations(run: RecordedRun) -> dict[str, Any]:
    """The run's citation checks: run_meta.json's when they still hold (recorded_checks_hold), else made
    now with the embedder the run used (its config.json); without that embedder, facts only."""
    answer = run.answer or ""
    if recorded_checks_hold(run.citations, answer):
        return run.citations
    config = JobFolder(run.job_dir).read_config()
    embedder = {k.lower(): config[k] for k in _EMBEDDER_KNOBS if k in config}
    return Workspace.open(run.job_dir, Settings.resolve(**embedder)).check_citations(answer)


def recorded_checks_hold(recorded: dict[str, Any], answer: str) -> bool:
    """Whether the checks run_meta.json recorded stand for `answer` now: made on this very answer, by this
    checker or a newer one."""
    return ("checks" in recorded and recorded.get("answer_sha256") == answer_digest(answer)
            and recorded.get("checker", FIRST_CHECKER) >= CHECKER_VERSION)


def citation_grade(answer: str, ledger: dict[str, str], gold_files: list[str],
                   checked: dict[str, Any]) -> CitationGrade:
    """Validity against the ledger, precision and recall against the gold files and, from the run's
    checks, how many citations their sources support."""
    cited = cited_ids(answer)
    valid = [i for i in cited if i in ledger]
    gold = set(gold_files)
    files = {i: ledger[i].removeprefix(_DATAROOM_PREFIX) for i in valid}
    gold_cited = [g for g in gold_files if g in files.values()]
    return CitationGrade(
        cited=cited,
        valid=valid,
        invalid=[i for i in cited if i not in ledger],
        ledger_size=len(ledger),
        validity=len(valid) / len(cited) if cited else None,
        cited_files=sorted(set(files.values())),
        precision=sum(f in gold for f in files.values()) / len(valid) if valid else None,
        recall=len(gold_cited) / len(gold) if gold else None,
        gold_cited=gold_cited,
        gold_missed=[g for g in gold_files if g not in gold_cited],
        verdicts={verdict: checked.get(verdict, 0) for verdict in VERDICTS},
        supported_rate=checked.get("supported_rate"),
        checks=checked.get("checks", []),
    )
