"""A job's workspace: the job folder, work/ with its read-only dataroom, and the retrieval state
the catalog tools run against. The CLI and the app build tool contexts the same way, through here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from searchbox.builtin import BUILTIN_VECTORS
from searchbox.cancel import CancelToken, cuttable
from searchbox.dataroom.corpus import Corpus
from searchbox.dataroom.workspace import load_corpus, prepare_work_dir
from searchbox.records.job_folder import JobFolder
from searchbox.retrieval.engine import RetrievalEngine
from searchbox.settings import Settings
from searchbox.tools.retrieval_tools import ToolContext
from searchbox.tools.sources import SourceLedger


@dataclass
class Workspace:
    job_dir: Path
    settings: Settings
    ledger: SourceLedger = field(default_factory=SourceLedger)
    cancel: CancelToken | None = None  # the run's: cuts the dataroom's extraction and embedding
    _corpus: Corpus | None = None
    _engine: RetrievalEngine | None = None

    @classmethod
    def create(cls, job_dir: Path, source: Path, settings: Settings) -> Workspace:
        """Install the dataroom (refusing a bad one with DataroomError) into a new job folder."""
        prepare_work_dir(job_dir, source)
        return cls(job_dir, settings)

    @classmethod
    def open(cls, job_dir: Path, settings: Settings, cancel: CancelToken | None = None) -> Workspace:
        return cls(job_dir, settings, SourceLedger.from_rows(JobFolder(job_dir).read_sources()), cancel)

    @property
    def folder(self) -> JobFolder:
        return JobFolder(self.job_dir)

    @property
    def work_dir(self) -> Path:
        return self.folder.work

    @property
    def corpus(self) -> Corpus:
        if self._corpus is None:
            # Extracting a large dataroom takes minutes: a cut does not wait (what is extracted meanwhile
            # lands in the extraction cache, for the resumed run).
            self._corpus = cuttable(self.cancel, lambda: load_corpus(self.work_dir, self.settings))
        return self._corpus

    @property
    def engine(self) -> RetrievalEngine:
        if self._engine is None:
            self._engine = RetrievalEngine.for_corpus(self.corpus, self.settings, seed_caches=[BUILTIN_VECTORS],
                                                      cancel=self.cancel)
        return self._engine

    @property
    def loaded_engine(self) -> RetrievalEngine | None:
        """The engine if a tool has used it, without building one."""
        return self._engine

    def tool_context(self) -> ToolContext:
        return ToolContext(self.work_dir, self.engine, self.ledger, self.settings.tool_output_bytes)

    def save_ledger(self) -> None:
        self.folder.write_sources(self.ledger.rows())
