"""A job's working folder: work/ holding a read-only dataroom/, and the corpus extracted from it."""

from __future__ import annotations

from pathlib import Path

from searchbox.dataroom.corpus import Corpus
from searchbox.dataroom.unpack import install_dataroom
from searchbox.settings import Settings


def prepare_work_dir(job_dir: Path, source: Path) -> Path:
    """Create <job>/work/dataroom from a zip or folder; returns the work folder."""
    work = job_dir / "work"
    work.mkdir(parents=True, exist_ok=True)
    install_dataroom(source, work / "dataroom")
    return work


def load_corpus(work_dir: Path, settings: Settings) -> Corpus:
    return Corpus.load(work_dir / "dataroom", settings.chunk_size, settings.chunk_overlap)
