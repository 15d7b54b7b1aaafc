"""Split an extracted file's text into overlapping character windows for retrieval (SPEC 2.6).

A window ends at the strongest boundary found in its last fifth (paragraph, line, sentence, word),
so chunks rarely cut words. Boundaries are found with `str.rfind` over that bounded tail, which
keeps chunking linear in the text and fast on large datarooms.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from searchbox.dataroom.extract import ExtractedFile

_TAIL = 0.2  # fraction of a window searched for a boundary
_SENTENCE_ENDS = (". ", "! ", "? ", "。")
_SPACE = re.compile(r"\s")
_NON_SPACE = re.compile(r"\S")


@dataclass(frozen=True)
class Chunk:
    path: str
    index: int  # 0-based, within the file
    start: int  # character offsets into the file's .text
    end: int
    text: str
    label: str | None  # the label of the segment the chunk starts in, e.g. "page 2"


def chunk_file(f: ExtractedFile, size: int, overlap: int) -> list[Chunk]:
    """Windows of at most `size` characters; neighbours share up to `overlap` characters."""
    if size < 1 or not 0 <= overlap < size:
        raise ValueError(f"need size >= 1 and 0 <= overlap < size, got size={size}, overlap={overlap}")
    text = f.text
    n = len(text)
    offsets, labels = _segment_offsets(f)
    chunks: list[Chunk] = []
    start = _next_non_space(text, 0)
    while start < n:
        end = n if start + size >= n else _boundary(text, start, size)
        end = start + len(text[start:end].rstrip())
        label = labels[bisect.bisect_right(offsets, start) - 1] if offsets else None
        chunks.append(Chunk(f.path, len(chunks), start, end, text[start:end], label))
        if _next_non_space(text, end) >= n:  # only whitespace is left
            break
        start = _next_non_space(text, _overlap_start(text, start, end, overlap))
    return chunks


def _boundary(text: str, start: int, size: int) -> int:
    """Where a window from `start` should end: the best break in its last fifth, else its limit."""
    limit = start + size
    low = limit - max(1, int(size * _TAIL))
    for breaker in ("\n\n", "\n"):
        i = text.rfind(breaker, low, limit)
        if i > start:
            return i
    i = max(text.rfind(mark, low, limit) for mark in _SENTENCE_ENDS)
    if i > start:
        return i + 1  # keep the full stop
    i = max(text.rfind(" ", low, limit), text.rfind("\t", low, limit))
    return i if i > start else limit


def _overlap_start(text: str, start: int, end: int, overlap: int) -> int:
    """Start of the next window: `overlap` characters back from `end`, moved to a word start."""
    begin = end - overlap
    if begin <= start:  # the chunk was shorter than the overlap (trailing space was trimmed)
        return end
    if not text[begin - 1].isspace():
        space = _SPACE.search(text, begin, end)
        begin = space.end() if space else begin
    return begin


def _next_non_space(text: str, pos: int) -> int:
    match = _NON_SPACE.search(text, pos)
    return match.start() if match else len(text)


def _segment_offsets(f: ExtractedFile) -> tuple[list[int], list[str | None]]:
    offsets, labels, pos = [], [], 0
    for segment in f.segments:
        offsets.append(pos)
        labels.append(segment.label)
        pos += len(segment.text) + 2  # the "\n\n" of ExtractedFile.text
    return offsets, labels
