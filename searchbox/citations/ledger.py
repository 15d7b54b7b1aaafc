"""The source ledger (design §2.5): every chunk a retrieval tool returns, every file range the agent
reads and every passage grep shows of the dataroom gets a stable id s1, s2, ... (a range read and
grepped is one source). The tools record sources, not the model, so the ledger is the authority on
what an answer may cite.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Source:
    id: str
    kind: str  # "chunk" or "range"
    path: str  # relative to the working folder, e.g. dataroom/02_financials/audit.pdf
    chunk: int | None = None
    start: int | None = None  # character offsets for chunks, 1-based lines for ranges
    end: int | None = None
    label: str | None = None
    preview: str = ""


class SourceLedger:
    def __init__(self) -> None:
        self._by_key: dict[tuple[Any, ...], Source] = {}
        self._lock = threading.Lock()

    def _add(self, key: tuple[Any, ...], **fields: Any) -> Source:
        with self._lock:
            if key not in self._by_key:
                self._by_key[key] = Source(id=f"s{len(self._by_key) + 1}", **fields)
            return self._by_key[key]

    def cite_chunk(self, path: str, chunk: int, start: int, end: int, label: str | None, text: str) -> Source:
        return self._add(("chunk", path, chunk, start, end), kind="chunk", path=path, chunk=chunk,
                         start=start, end=end, label=label, preview=text[:300])

    def cite_range(self, path: str, first_line: int, last_line: int, text: str) -> Source:
        return self._add(("range", path, first_line, last_line), kind="range", path=path,
                         start=first_line, end=last_line, preview=text[:300])

    def __len__(self) -> int:
        return len(self._by_key)

    def sources(self) -> list[Source]:
        with self._lock:
            return list(self._by_key.values())

    def ids(self) -> set[str]:
        return {s.id for s in self.sources()}

    def rows(self) -> list[dict[str, Any]]:
        """The ledger as sources.json holds it (records.job_folder writes it atomically)."""
        return [asdict(s) for s in self.sources()]

    @classmethod
    def from_rows(cls, rows: list[dict[str, Any]]) -> SourceLedger:
        ledger = cls()
        for raw in rows:
            source = Source(**raw)
            key = ("chunk", source.path, source.chunk, source.start, source.end) if source.kind == "chunk" \
                else ("range", source.path, source.start, source.end)
            ledger._by_key[key] = source
        return ledger
