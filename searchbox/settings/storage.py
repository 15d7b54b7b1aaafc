"""Storage's knobs: the disk cache every job and process shares (embeddings, extracted text, models, prompt
prefixes) and where the app keeps its jobs, with the folders they name."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from searchbox.settings.knob import knob


@dataclass(frozen=True)
class StorageSettings:
    """The disk cache shared across jobs and processes, its bounds, and where the app keeps its jobs."""

    TITLE: ClassVar[str] = "Storage"

    searchbox_cache_dir: str = knob(
        "", "disk cache for embeddings and extracted text, shared across jobs (default: ~/.cache/searchbox; on a "
        "Hugging Face Space with persistent storage, /data/searchbox, which survives a restart)",
        deploy=True
    )
    # A dataroom at the upload limit (200 MB) of text-heavy documents holds some 50 MB of text: about 41,000
    # chunks of 1,400 characters, whose 1,024-dimension vectors (the default embedder's) take about 170 MB.
    extract_cache_mb: int = knob(
        512, "disk the extracted text of datarooms may fill in <cache dir>/extracted, shared by every job and "
        "process (about ten datarooms of 50 MB of text), so that a dataroom seen before is not parsed again; "
        "least recently used first out, so that what one visitor uploaded does not stay forever; 0 = no bound"
    )
    embed_cache_mb: int = knob(
        1024, "disk the embedding cache may fill in <cache dir>/embeddings.sqlite, shared by every job and "
        "process (the vectors of about six datarooms of 50 MB of text), so that a dataroom seen before is not "
        "embedded again; least recently used first out, so that what one visitor uploaded does not stay "
        "forever; the file keeps its size (SQLite reuses the space it frees); 0 = no bound"
    )
    bm25_cache_mb: int = knob(
        256, "disk the keyword (BM25) indexes of datarooms may fill in <cache dir>/bm25, shared by every job and "
        "process, so that a search over a room seen before does not tokenize it again; least recently used first "
        "out; 0 = no bound"
    )
    searchbox_jobs_dir: str = knob("", "where the app keeps its jobs (default: <cache dir>/jobs)", deploy=True)


    @property
    def cache_dir(self) -> str:
        return default_cache_dir(self.searchbox_cache_dir)

    @property
    def models_dir(self) -> str:
        """Where models assembled from PyPI packages are kept."""
        return os.path.join(self.cache_dir, "models")

    @property
    def prefixes_dir(self) -> str:
        """Where the built-in runtime keeps shared prompt prefixes (LLM_PREFIX_CACHE_MB)."""
        return os.path.join(self.cache_dir, "prefixes")

    @property
    def jobs_dir(self) -> str:
        return self.searchbox_jobs_dir or os.path.join(self.cache_dir, "jobs")


# Where a Hugging Face Space mounts its persistent storage, when the Space has it: the only disk of a Space
# that survives a restart (its home is rebuilt each time).
SPACE_STORAGE = "/data"


def default_cache_dir(configured: str = "") -> str:
    if configured:
        return configured
    storage = space_storage()
    return os.path.join(storage, "searchbox") if storage else os.path.join(os.path.expanduser("~"), ".cache", "searchbox")


def space_storage(env: Mapping[str, str] | None = None) -> str | None:
    """The Space's persistent storage folder: on a Hugging Face Space (SPACE_ID set) whose storage is mounted and
    writable; None anywhere else (a /data on another machine is not ours to fill)."""
    if (env if env is not None else os.environ).get("SPACE_ID") and os.path.isdir(SPACE_STORAGE) \
            and os.access(SPACE_STORAGE, os.W_OK):
        return SPACE_STORAGE
    return None
