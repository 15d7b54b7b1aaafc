"""A job's workspace: the job folder, work/ with its read-only dataroom, and the retrieval state
the catalog tools run against. The CLI and the app build tool contexts the same way, through here."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from searchbox.assets import BUILTIN_VECTORS
from searchbox.cancel import WATCH_S, CancelToken, cuttable
from searchbox.dataroom.corpus import Corpus
from searchbox.dataroom.extract import ExtractedFile, extract_file
from searchbox.dataroom.work_dir import load_corpus, prepare_work_dir
from searchbox.citations.check import (SourceText, UnreadableSource, answer_digest, check_answer,
                                              citation_record)
from searchbox.citations.markers import cited_ids
from searchbox.records.echoes import job_echoes
from searchbox.records.job_folder import JobFolder
from searchbox.retrieval.encoder import Encoder
from searchbox.retrieval.engine import RetrievalEngine, job_encoder
from searchbox.retrieval.indexer import BackgroundIndexer
from searchbox.retrieval.models import embedding_cache_name
from searchbox.settings import Settings
from searchbox.tools.paths import DATAROOM_DIR
from searchbox.tools.source_text import source_text
from searchbox.tools.tool import ToolContext, context_for
from searchbox.citations.judge import SupportJudge
from searchbox.citations.ledger import Source, SourceLedger

log = logging.getLogger(__name__)


@dataclass
class Workspace:
    job_dir: Path
    settings: Settings
    ledger: SourceLedger = field(default_factory=SourceLedger)
    cancel: CancelToken | None = None  # the run's: cuts the dataroom's extraction and embedding
    judge: SupportJudge | None = None  # CITATION_JUDGE's: reads the citations the checker's words leave open
    _corpus: Corpus | None = None
    _engine: RetrievalEngine | None = None
    _encoder: Encoder | None = None
    _support_error: str | None = None
    _indexer: BackgroundIndexer | None = None
    _building: threading.Lock = field(default_factory=threading.Lock)  # the indexer's thread builds the engine too
    _checked: tuple[tuple[Any, ...], dict[str, Any]] | None = None  # ((answer digest, ledger size, echoes), record)

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
        # The indexer's thread may be reading the dataroom: a tool waiting for it is cut as the reading would be.
        while not self._building.acquire(timeout=WATCH_S):
            if self.cancel is not None:
                self.cancel.check()
        try:
            if self._engine is None:
                self._engine = RetrievalEngine(self.corpus, self.settings, self.encoder)
            return self._engine
        finally:
            self._building.release()

    def start_indexing(self) -> BackgroundIndexer:
        """Read and embed the dataroom in the background (BACKGROUND_INDEX) while the run goes on."""
        if self._indexer is None:
            self._indexer = BackgroundIndexer(lambda: self.engine, name=f"searchbox-index-{self.job_dir.name}").start()
        return self._indexer

    def stop_indexing(self) -> None:
        if self._indexer is not None:
            self._indexer.stop(wait_s=5.0)

    @property
    def encoder(self) -> Encoder:
        """The run's embedder (loaded on first use), shared by retrieval and the citation checker."""
        if self._encoder is None:
            self._encoder = job_encoder(self.settings, seed_caches=[BUILTIN_VECTORS], cancel=self.cancel)
        return self._encoder

    def retrieval_loads(self) -> dict[str, Any]:
        """What the retrieval loaded (the embedder's and the reranker's load reports), only once a tool has
        used it: asking builds nothing."""
        loads: dict[str, Any] = {}
        if self._engine is not None and self._engine.encoder.report is not None:
            loads["embed"] = self._engine.encoder.report.as_dict()
        if self._engine is not None and self._engine.rerank_report is not None:
            loads["rerank"] = self._engine.rerank_report.as_dict()
        return loads

    def tool_context(self) -> ToolContext:
        """The context every tool runs in; the retrieval engine is built on a catalog tool's first call."""
        return context_for(self.settings, self.work_dir, self.ledger, lambda: self.engine, self.cancel)

    def save_ledger(self) -> None:
        self.folder.write_sources(self.ledger.rows())

    def check_citations(self, answer: str) -> dict[str, Any]:
        """What run_meta.json records under "citations": the answer's ids against the ledger, and each citation checked
        against its source's text (citations/check.py), all on the answer without the text it only echoed
        from the harness's messages (records/echoes.py), which earns nothing. Redone only when the answer, the
        ledger or those echoes changed."""
        sources = {s.id: s for s in self.ledger.sources()}
        echoes = job_echoes(answer, self.job_dir)
        key = (answer_digest(answer), len(sources), tuple(echoes.spans))
        if self._checked is not None and self._checked[0] == key:
            return self._checked[1]
        scored = echoes.scored
        ids = cited_ids(scored)
        # An answer that cites nothing (every turn's end until it does) has no source to read.
        checks = (check_answer(scored, set(sources), self._source_texts(sources), self._support, judge=self.judge)
                  if ids else [])
        own = echoes.occurrences()
        for check in checks:  # numbered as the answer's own markers, which the answer panel marks
            check.occurrence = own[check.id][check.occurrence]
        scored_by = embedding_cache_name(self.settings) if checks and self._support_error is None else None
        record = citation_record(answer, ids, [i for i in ids if i not in sources], checks, scored_by,
                                 self.judge.name if self.judge is not None and checks else None)
        record["harness_echoes"] = echoes.record()
        if self._support_error is not None:
            record["score_error"] = self._support_error
        self._checked = (key, record)
        return record

    def source_texts(self, ids: list[str]) -> dict[str, str]:
        """The texts of these ledger sources, in the order given; those that cannot be read are left out."""
        sources = {s.id: s for s in self.ledger.sources() if s.id in ids}
        text_of = self._source_texts(sources)
        texts = {}
        for source_id in (i for i in ids if i in sources):
            try:
                texts[source_id] = text_of(source_id)
            except UnreadableSource:
                continue
        return texts

    def _source_texts(self, sources: dict[str, Source]) -> SourceText:
        """Source id -> its text, each file extracted once (from the loaded corpus when there is one)."""
        extractions: dict[str, ExtractedFile] = {}

        def extracted(path: str) -> ExtractedFile:
            if path not in extractions:
                rel = path.removeprefix(DATAROOM_DIR + "/")
                loaded = self._corpus.file(rel) if self._corpus is not None else None
                extractions[path] = loaded or extract_file(self.work_dir / DATAROOM_DIR, rel)
            return extractions[path]

        return lambda source_id: source_text(self.work_dir, sources[source_id], extracted)

    def _support(self, sentence: str, passages: list[str]) -> list[float]:
        """Cosine of the sentence (as a query) with each passage; none once the embedder has failed."""
        if self._support_error is not None:
            return []
        try:
            query = self.encoder.encode([sentence], "query")[0]
            return [float(v) for v in self.encoder.encode(passages, "passage") @ query]
        except Exception as exc:  # no embedder here (an API without a key, weights missing): checks go on without scores
            log.warning("citation support scores are off: %s", exc)
            self._support_error = f"{type(exc).__name__}: {exc}"
            return []
