"""A dataroom's extracted files and their chunks: what retrieval searches and the UI lists."""

from __future__ import annotations

import posixpath
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from searchbox.dataroom.chunking import Chunk, chunk_file
from searchbox.dataroom.extract import ExtractedFile, extract_dataroom
from searchbox.dataroom.extract_cache import ExtractionCache


@dataclass
class Corpus:
    root: Path
    files: list[ExtractedFile]
    chunks: list[Chunk]
    _by_path: dict[str, ExtractedFile] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_path = {f.path: f for f in self.files}

    @classmethod
    def load(cls, root: Path, chunk_size: int, chunk_overlap: int, cache: ExtractionCache | None = None) -> Corpus:
        files = extract_dataroom(root, cache.extract if cache else None)
        chunks = [c for f in files if f.status == "ok" for c in chunk_file(f, chunk_size, chunk_overlap)]
        return cls(Path(root), files, chunks)

    def statuses(self) -> list[dict[str, Any]]:
        """One row per file for the ingestion table: path, status, reason, chars, chunks."""
        counts = Counter(c.path for c in self.chunks)
        return [
            {"path": f.path, "status": f.status, "reason": f.reason, "chars": len(f.text), "chunks": counts[f.path]}
            for f in self.files
        ]

    def chunks_for(self, paths: list[str] | None) -> list[int]:
        """Indices of the chunks of the given files, or of the files under the given folders."""
        if paths is None:
            return list(range(len(self.chunks)))
        wanted = {posixpath.normpath(p.strip()).rstrip("/") for p in paths}
        if "." in wanted:  # "." or "./" names the whole dataroom
            return list(range(len(self.chunks)))
        folders = tuple(p + "/" for p in wanted)
        return [i for i, c in enumerate(self.chunks) if c.path in wanted or c.path.startswith(folders)]

    def file(self, path: str) -> ExtractedFile | None:
        return self._by_path.get(path)
