"""A job's work/ folder: a read-only dataroom/ installed in it, and the corpus extracted from it."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Any

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


def load_corpus(work_dir: Path, settings: Settings) -> Corpus:
    cache = ExtractionCache(Path(settings.cache_dir) / "extracted")
    return Corpus.load(work_dir / DATAROOM_NAME, settings.chunk_size, settings.chunk_overlap, cache)


def remove_job_folder(path: Path) -> None:
    """Remove a folder even when it holds a read-only dataroom."""
    def make_writable(func: Any, target: str, _exc: Any) -> None:
        os.chmod(os.path.dirname(target), stat.S_IRWXU)
        os.chmod(target, stat.S_IRWXU)
        func(target)

    if path.exists():
        shutil.rmtree(path, onerror=make_writable)
