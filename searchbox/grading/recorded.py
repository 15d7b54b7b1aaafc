"""What a finished run recorded, as its graders read it: read once from its job folder, never by asking
the run again."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchbox.records.echoes import job_echoes
from searchbox.records.job_folder import JobFolder


@dataclass(frozen=True)
class RecordedRun:
    job_dir: Path
    answer: str | None  # work/ANSWER.md; None when there is none (a link or special file there is none)
    # The answer without what it only echoed from the harness's messages (records/echoes.py): what earns a score.
    scored: str
    ledger: dict[str, str]  # source id -> its path under work/ (sources.json)
    citations: dict[str, Any]  # run_meta.json's "citations": the run's own check of them ({} when none)

    @classmethod
    def read(cls, job_dir: Path) -> RecordedRun:
        job_dir = Path(job_dir)
        folder = JobFolder(job_dir)
        read = folder.read_answer()
        answer = read.text if read.exists and read.problem is None else None
        ledger = {row["id"]: row.get("path", "") for row in folder.read_sources()
                  if isinstance(row, dict) and "id" in row}
        scored = job_echoes(answer, job_dir).scored if answer else ""
        return cls(job_dir, answer, scored, ledger, folder.read_meta().get("citations") or {})

    @property
    def answer_found(self) -> bool:
        return bool(self.answer and self.answer.strip())
