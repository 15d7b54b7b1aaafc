"""Embedding an uploaded room while the visitor types: the upload preview starts a background indexer
(retrieval/indexer.py) whose vectors land in the disk cache, where the run over that upload finds them.

Bounded as uploads are: one indexer per client address (a new upload replaces the address's last one),
at most SEARCHBOX_PREVIEW_INDEXERS in the app at once (past that, a room is indexed when its run starts),
and each stops when its visitor's run starts (the run's own indexer takes over from the cache) or after
SEARCHBOX_UPLOAD_UNCLAIMED_SECONDS, when an upload no one ran is deleted anyway.
"""

from __future__ import annotations

import threading
import time

from searchbox.retrieval.engine import RetrievalEngine
from searchbox.retrieval.indexer import BackgroundIndexer

_STOP_WAIT_S = 2.0  # a run that starts waits this long at most for the preview's slice under way


class PreviewIndexing:
    def __init__(self, most: int, keep_s: float) -> None:
        self.most = most
        self.keep_s = keep_s
        self._by_address: dict[str, BackgroundIndexer] = {}
        self._lock = threading.Lock()

    def start(self, address: str, engine: RetrievalEngine) -> BackgroundIndexer | None:
        """Index this address's upload in the background; None when the app's share is taken."""
        with self._lock:
            self._drop_finished()
            old = self._by_address.pop(address, None)
            if old is not None:
                old.stop()
            if self.most <= 0 or len(self._by_address) >= self.most:
                return None
            indexer = BackgroundIndexer(lambda: engine, name="searchbox-preview-index").start()
            self._by_address[address] = indexer
            return indexer

    def stop(self, address: str) -> None:
        """The address's run starts: its preview indexer ends (what it embedded stays in the cache)."""
        with self._lock:
            indexer = self._by_address.pop(address, None)
        if indexer is not None:
            indexer.stop(wait_s=_STOP_WAIT_S)

    def status(self, address: str) -> tuple[str, bool]:
        """What the page shows of the address's indexing, and whether it is still under way."""
        with self._lock:
            self._drop_finished(keep=address)
            indexer = self._by_address.get(address)
        if indexer is None:
            return "", False
        progress = indexer.progress()
        if indexer.error is not None:
            return f"Indexing stopped ({indexer.error}); the run embeds what its searches need.", False
        if progress is None:
            return "Reading the documents for search…", indexer.running
        if progress.complete:
            return f"Ready for search: {progress.total:,} of {progress.total:,} chunks embedded.", False
        going = indexer.running
        share = f"{progress.embedded:,} of {progress.total:,} chunks embedded for search"
        return (f"Indexing: {share}; a run can start now (it searches what is embedded, and goes on embedding)."
                if going else f"Indexing paused at {share}; the run goes on from there."), going

    def _drop_finished(self, keep: str = "") -> None:
        """Stop those older than keep_s, and forget those done but `keep`'s (its page shows how it ended).
        Called with the lock held."""
        now = time.monotonic()
        for address, indexer in list(self._by_address.items()):
            if now - indexer.started > self.keep_s:
                indexer.stop()
            if not indexer.running and address != keep:
                del self._by_address[address]
