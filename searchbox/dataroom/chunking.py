"""Split an extracted file's text into overlapping character windows for retrieval (design §2.6).

A window ends at the strongest boundary found in its last fifth (paragraph, line, sentence, word),
so chunks rarely cut words. Boundaries are found with `str.rfind` over that bounded tail, which
keeps chunking linear in the text and fast on large datarooms.

Each chunk also carries its heading: the file's title and the section headings (Markdown or
reStructuredText) in force where it starts. A window from the middle of a file rarely names what it
is about; `indexed_text` puts the file's name and that heading in front of it for search.
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
# Underscores, dashes and dots join words in file names: "option_grants_2025.csv" is three words.
_NAME_SEPARATORS = re.compile(r"[/_\-.]+")
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+:.])\1{2,}\s*$")  # a Setext or reStructuredText underline
_MAX_HEADING = 120  # longer "headings" are prose lines above a rule
# Files whose "#" lines and underlined lines are headings; in code they are comments and rules.
_PROSE_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".text")


@dataclass(frozen=True)
class Chunk:
    path: str
    index: int  # 0-based, within the file
    start: int  # character offsets into the file's .text
    end: int
    text: str
    label: str | None  # the label of the segment the chunk starts in, e.g. "page 2"
    heading: str = ""  # title > section > subsection in force at `start`

    def indexed_text(self) -> str:
        """What search indexes: file name words, the segment label, the heading, then the text."""
        name = _NAME_SEPARATORS.sub(" ", self.path).strip()
        context = " | ".join(part for part in (name, self.label, self.heading) if part)
        return f"{context}\n{self.text}"


def chunk_file(f: ExtractedFile, size: int, overlap: int) -> list[Chunk]:
    """Windows of at most `size` characters; neighbours share up to `overlap` characters."""
    if size < 1 or not 0 <= overlap < size:
        raise ValueError(f"need size >= 1 and 0 <= overlap < size, got size={size}, overlap={overlap}")
    text = f.text
    n = len(text)
    offsets, labels = _segment_offsets(f)
    headings = heading_trail(text, f.path.lower().endswith(_PROSE_SUFFIXES))
    heading_starts = [h[0] for h in headings]
    chunks: list[Chunk] = []
    start = _next_non_space(text, 0)
    while start < n:
        end = n if start + size >= n else _boundary(text, start, size)
        end = start + len(text[start:end].rstrip())
        label = labels[bisect.bisect_right(offsets, start) - 1] if offsets else None
        at = bisect.bisect_right(heading_starts, start) - 1
        heading = headings[at][1] if at >= 0 else ""
        chunks.append(Chunk(f.path, len(chunks), start, end, text[start:end], label, heading))
        if _next_non_space(text, end) >= n:  # only whitespace is left
            break
        start = _next_non_space(text, _overlap_start(text, start, end, overlap))
    return chunks


def heading_trail(text: str, prose: bool = True) -> list[tuple[int, str]]:
    """(offset, "title > section > ...") at each heading of a Markdown or reStructuredText text, the
    title being its first heading, else its first line (the only one when not `prose`: a CSV's
    header row, a PDF's first line). Offsets are where each trail takes effect."""
    found = _headings(text) if prose else []
    first_line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    title = found[0][2] if found else first_line[:_MAX_HEADING]
    trail: list[tuple[int, str]] = [(0, title)] if title else []
    stack: list[tuple[int, str]] = []
    for offset, level, name in found:
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, name))
        names = [n for _, n in stack]
        if names[0] != title:
            names.insert(0, title)
        if not trail or trail[-1][1] != " > ".join(names):
            trail.append((offset, " > ".join(names)))
    return trail


def _headings(text: str) -> list[tuple[int, int, str]]:
    """(offset, level, name) of each heading outside fenced code: Markdown "#" lines, and a line
    underlined with a run of one punctuation character (levels in order of first use, as in rST)."""
    found: list[tuple[int, int, str]] = []
    underline_levels: dict[str, int] = {}
    offset, fenced, previous, previous_offset = 0, False, "", 0
    for line in text.split("\n"):
        # "~~~" under a line of text is a reStructuredText underline, not a Markdown fence
        fence = _FENCE.match(line) and not (line.lstrip().startswith("~") and previous.strip() and not fenced)
        fenced = fenced != bool(fence)
        if not fenced and not fence:
            atx = _ATX.match(line)
            under = _UNDERLINE.match(line)
            name = previous.strip()
            if atx:
                found.append((offset, len(atx.group(1)), atx.group(2).strip()))
            elif (under and name and not previous[:1].isspace() and len(name) <= _MAX_HEADING
                  and not _UNDERLINE.match(previous)):
                level = underline_levels.setdefault(under.group(1), len(underline_levels) + 1)
                found.append((previous_offset, level, name))
        previous, previous_offset = ("", offset) if fenced or fence else (line, offset)
        offset += len(line) + 1
    return found


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
