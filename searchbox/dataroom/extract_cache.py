"""Extracted text kept on disk across runs, keyed by what a file holds.

A sweep runs the same dataroom dozens of times and the app's upload preview extracts the files the
run extracts again: parsing PDFs and workbooks each time is the slow part of ingestion. The key is a
hash of the extraction code, the file's suffix and its bytes, so a changed file or a changed
extractor is a miss, never a stale hit; a damaged entry is a miss too. A cache folder that cannot
be written is simply not used.

The folder is bounded (`max_bytes`, EXTRACT_CACHE_MB): a hit touches its entry's time, and a write that
takes the entries past the bound removes the least recently used, down to 90% of it. Each cache counts
the folder once, at its first write (a miss, which costs an extraction, far more than the count), then
adds what it writes; the bound is checked against a fresh count only when that sum passes it, so another
process's writes may take the folder past it by what they wrote since. An entry removed while another
process reads it is a miss there.
"""

from __future__ import annotations

import hashlib
import contextlib
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

from searchbox.dataroom import extract
from searchbox.dataroom.extract import ExtractedFile, Segment
from searchbox.records.files import write_text_atomic

log = logging.getLogger(__name__)

# Any edit to the extractors changes every key.
_CODE_VERSION = hashlib.sha256(Path(extract.__file__).read_bytes()).hexdigest()[:16]
_READ_BYTES = 1 << 20
_EVICT_TO = 0.9  # of max_bytes: the next eviction waits for a tenth of the bound to be written


class ExtractionCache:
    def __init__(self, folder: Path, max_bytes: int = 0) -> None:
        self.folder = folder
        self.max_bytes = max_bytes  # 0: no bound
        self.hits = 0
        self.misses = 0
        self._held: int | None = None  # what the entries hold, as last counted plus what this cache wrote since

    def extract(self, root: Path, relpath: str) -> ExtractedFile:
        """The file's extraction: from the cache when this content was extracted before."""
        path = Path(root) / relpath
        fn = extract.EXTRACTORS.get(path.suffix.lower())
        try:
            if fn is None or path.stat().st_size > extract.MAX_FILE_BYTES:  # skipped at once: nothing to save
                return extract.extract_file(root, relpath)
            key = _key(path, fn)
        except OSError:  # unreadable: extraction reports why
            return extract.extract_file(root, relpath)
        cached = self._get(key, relpath)
        if cached is not None:
            self.hits += 1
            return cached
        self.misses += 1
        result = extract.extract_file(root, relpath)
        if result.status != "error":  # an error may be passing (memory, a read failure): try again next time
            self._put(key, result)
        return result

    def _entry(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def _get(self, key: str, relpath: str) -> ExtractedFile | None:
        entry = self._entry(key)
        try:
            data = json.loads(entry.read_text(encoding="utf-8"))
            segments = [Segment(s["label"], s["text"]) for s in data["segments"]]
            found = ExtractedFile(relpath, data["status"], data["reason"], segments)
        except (OSError, ValueError, KeyError, TypeError):
            return None
        with contextlib.suppress(OSError):
            os.utime(entry)  # recently used: removed last
        return found

    def _put(self, key: str, result: ExtractedFile) -> None:
        entry = self._entry(key)
        data = {k: v for k, v in asdict(result).items() if k != "path"}  # the same bytes may sit at any path
        text = json.dumps(data, ensure_ascii=False)
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(entry, text)
        except OSError as exc:
            log.warning("extraction cache not written (%s): %s", self.folder, exc)
            return
        self._bound(len(text.encode()))

    def _bound(self, written: int) -> None:
        if self.max_bytes <= 0:
            return
        self._held = sum(size for _, size, _ in self._entries()) if self._held is None else self._held + written
        if self._held <= self.max_bytes:
            return
        entries = sorted(self._entries())  # counted again: other processes wrote and read meanwhile
        held = sum(size for _, size, _ in entries)
        for _, size, path in entries:
            if held <= self.max_bytes * _EVICT_TO:
                break
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
            held -= size
        self._held = held

    def _entries(self) -> Iterator[tuple[int, int, Path]]:
        """(last use, size, path) of each entry."""
        for path in self.folder.glob("??/*.json"):
            try:
                info = path.stat()
            except OSError:  # removed by another process meanwhile
                continue
            yield info.st_mtime_ns, info.st_size, path


def _key(path: Path, fn: extract.Extractor) -> str:
    # The extractor itself too: one registered from elsewhere is not covered by _CODE_VERSION.
    code = getattr(fn, "__code__", None)
    digest = hashlib.sha256(f"{_CODE_VERSION}\0{path.suffix.lower()}\0{fn.__module__}.{fn.__qualname__}\0".encode())
    digest.update(code.co_code if code is not None else b"")
    with path.open("rb") as handle:
        while block := handle.read(_READ_BYTES):
            digest.update(block)
    return digest.hexdigest()
