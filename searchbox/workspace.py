"""A job's workspace: the job folder, work/ with its read-only dataroom, and the retrieval state
the catalog tools run against. The CLI and the app build tool contexts the same way, through here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from searchbox.builtin import BUILTIN_VECTORS
from searchbox.dataroom.corpus import Corpus
from searchbox.dataroom.workspace import load_corpus, prepare_work_dir
from searchbox.retrieval.engine import RetrievalEngine
from searchbox.settings import Settings
from searchbox.tools.tool import ToolContext, context_for
from searchbox.tools.sources import SourceLedger


def question_of(job_dir: Path) -> str:
    """The question jobs.job.create_job wrote; here, below the agent, so a run can read its own job."""
    return (job_dir / "query.txt").read_text(encoding="utf-8").strip()


@dataclass
class Workspace:
    job_dir: Path
    settings: Settings
    ledger: SourceLedger = field(default_factory=SourceLedger)
    _corpus: Corpus | None = None
    _engine: RetrievalEngine | None = None

    @classmethod
    def create(cls, job_dir: Path, source: Path, settings: Settings) -> Workspace:
        """Install the dataroom (refusing a bad one with DataroomError) into a new job folder."""
        prepare_work_dir(job_dir, source)
        return cls(job_dir, settings)

    @classmethod
    def open(cls, job_dir: Path, settings: Settings) -> Workspace:
        ledger_path = job_dir / "sources.json"
        ledger = SourceLedger.load(ledger_path) if ledger_path.exists() else SourceLedger()
        return cls(job_dir, settings, ledger)

    @property
    def work_dir(self) -> Path:
        return self.job_dir / "work"

    @property
    def corpus(self) -> Corpus:
        if self._corpus is None:
            self._corpus = load_corpus(self.work_dir, self.settings)
        return self._corpus

    @property
    def engine(self) -> RetrievalEngine:
        if self._engine is None:
            self._engine = RetrievalEngine.for_corpus(self.corpus, self.settings, seed_caches=[BUILTIN_VECTORS])
        return self._engine

    @property
    def loaded_engine(self) -> RetrievalEngine | None:
        """The engine if a tool has used it, without building one."""
        return self._engine

    def tool_context(self) -> ToolContext:
        """The context every tool runs in; the retrieval engine is built on a catalog tool's first call."""
        return context_for(self.settings, self.work_dir, self.ledger, lambda: self.engine)

    def save_ledger(self) -> None:
        self.ledger.save(self.job_dir / "sources.json")
