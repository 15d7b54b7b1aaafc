"""BM25 indexes kept on disk across runs, keyed by the texts they index.

Building a room's keyword index (tokenizing and stemming every chunk) is what a warm search over a large
room waited for; loading it is far quicker (docs/findings/2026-12-06-first-search.md). Every engine of a room (a run, the next run, the upload
preview's indexer, the CLI, a sweep's cells) asks here first. The key is a hash of the tokenizer and of
every text in order, so a changed chunking, CHUNK_CONTEXT or tokenizer is a miss, never a stale hit; an
entry that cannot be loaded, or indexes another number of texts, is a miss and is rebuilt. A folder that
cannot be written is simply not used.

The folder is bounded (`max_bytes`, BM25_CACHE_MB): a hit touches its entry, and a write that takes the
entries past the bound removes the least recently used, down to 90% of it; an index larger than the
bound is not kept. Entries are written beside the folder's and renamed into place whole, so another
process sees an entry entire or not at all.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import threading
from pathlib import Path

from searchbox.retrieval.bm25 import BM25Index, tokenizer_name

log = logging.getLogger(__name__)

_EVICT_TO = 0.9  # of max_bytes: the next eviction waits for a tenth of the bound to be written
_PARTIAL = ".partial-"  # an entry being written (or left by a process that died writing it)


class BM25Cache:
    def __init__(self, folder: Path, max_bytes: int = 0) -> None:
        self.folder = folder
        self.max_bytes = max_bytes  # 0: no bound
        self.hits = 0
        self.misses = 0

    def index(self, texts: list[str]) -> BM25Index:
        """The index of `texts`: from the disk when these texts were indexed before, else built and kept."""
        entry = self.folder / _key(texts)
        if entry.is_dir():
            try:
                found = BM25Index.load(entry, len(texts))
            except Exception as exc:  # a damaged or foreign entry: rebuilt below
                log.warning("BM25 index %s unusable (%s): rebuilt", entry, exc)
                shutil.rmtree(entry, ignore_errors=True)
            else:
                self.hits += 1
                with contextlib.suppress(OSError):
                    os.utime(entry)  # recently used: removed last
                return found
        self.misses += 1
        built = BM25Index.build(texts)
        self._put(entry, built)
        return built

    def _put(self, entry: Path, index: BM25Index) -> None:
        partial = self.folder / f"{_PARTIAL}{entry.name}-{os.getpid()}-{threading.get_ident()}"
        try:
            partial.mkdir(parents=True)
            index.save(partial)
            size = _size(partial)
            if self.max_bytes and size > self.max_bytes:
                return  # larger than the whole bound: keeping it would evict everything else
            os.rename(partial, entry)  # fails where another process put the same entry meanwhile: theirs stays
        except OSError as exc:
            if not entry.is_dir():
                log.warning("BM25 index not kept in %s: %s", self.folder, exc)
            return
        finally:
            shutil.rmtree(partial, ignore_errors=True)
        self._bound()

    def _bound(self) -> None:
        if self.max_bytes <= 0:
            return
        entries = []
        for path in self.folder.iterdir():
            if path.name.startswith(_PARTIAL) or not path.is_dir():
                continue
            with contextlib.suppress(OSError):
                entries.append((path.stat().st_mtime_ns, _size(path), path))
        held = sum(size for _, size, _ in entries)
        if held <= self.max_bytes:
            return
        for _, size, path in sorted(entries):
            if held <= self.max_bytes * _EVICT_TO:
                break
            shutil.rmtree(path, ignore_errors=True)
            held -= size


def _key(texts: list[str]) -> str:
    digest = hashlib.blake2b(tokenizer_name().encode(), digest_size=20)
    for text in texts:
        data = text.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
