"""A job's work/ folder: a read-only dataroom/ installed in it, and the corpus extracted from it."""

from __future__ import annotations

from pathlib import Path

from searchbox.dataroom.corpus import Corpus
from searchbox.dataroom.extract_cache import ExtractionCache
from searchbox.dataroom.unpack import install_dataroom
from searchbox.records.job_folder import DATAROOM_NAME, JobFolder
from searchbox.settings import Settings


def prepare_work_dir(job_dir: Path, source: Path) -> Path:
    """Create <job>/work/dataroom from a zip or folder; returns the work folder."""
    folder = JobFolder(job_dir)
    folder.work.mkdir(parents=True, exist_ok=True)
    install_dataroom(source, folder.dataroom)
    return folder.work


def extraction_cache(settings: Settings) -> ExtractionCache:
    """The documents' extracted text on disk, shared by every job (and process) with this cache dir."""
    return ExtractionCache(Path(settings.cache_dir) / "extracted", settings.extract_cache_mb * 2**20)


def load_corpus(work_dir: Path, settings: Settings) -> Corpus:
    return Corpus.load(work_dir / DATAROOM_NAME, settings.chunk_size, settings.chunk_overlap, extraction_cache(settings))
