"""[sN] citations in an answer: the one grammar the recorder, the scorer and the UI read them with.

A marker holds one or more ids, [s1], [s2, s5], [s3; s4], and each id may carry a short verbatim
quote from its source, [s3 "the term ends on 31 March 2025"] (straight or curly quotes), which the
citation checker looks for in the source. The ledger, not the prose, is the authority on which ids exist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ITEM = r"""\s*s\d+(?:\s+["“”][^"“”\]\n]{1,400}["“”])?\s*"""
MARKER = re.compile(rf"\[({_ITEM}(?:[,;]{_ITEM})*)\]")
_ITEM_PARTS = re.compile(r"""(s\d+)(?:\s+["“”]([^"“”\]\n]{1,400})["“”])?""")

# A sentence ends at . ! ? followed by space and an upper-case letter, a marker or Markdown emphasis;
# not after a common abbreviation or an initial ("e.g. The", "Inc. The", "J. Smith").
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\[*_\"“(])")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|approx|no|inc|ltd|co|corp|mr|mrs|ms|dr|st|art|sec|cl|fig|para)"
                           r"|\b[A-Z])\.$", re.I)
_LIST_OR_HEADING = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*+]\s+|\d{1,3}[.)]\s+)")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_LEADING_MARKERS = re.compile(rf"^(?:\s*{MARKER.pattern}[\s.,;:]*)+")


@dataclass(frozen=True)
class Citation:
    id: str
    quote: str | None  # the verbatim words the answer says the source holds, when it gives them
    occurrence: int  # 0-based: this id's n-th citation in the answer, in reading order


@dataclass(frozen=True)
class CitingSentence:
    text: str  # the sentence without its markers: what the cited sources should support
    citations: tuple[Citation, ...]


def cited_ids(answer: str) -> list[str]:
    """Ids in citation markers, in first-seen order: [s1], [s2, s5], [s3; s4], [s6 "a quote"]."""
    return list(dict.fromkeys(c.id for c in _Occurrences().citations(answer)))


def marker_citations(marker: str) -> list[tuple[str, str | None]]:
    """(id, quote or None) of each item of one marker's inside."""
    return [(m[1], m[2].strip() if m[2] else None) for m in _ITEM_PARTS.finditer(marker)]


def citing_sentences(answer: str) -> list[CitingSentence]:
    """The answer's sentences that cite, each with its citations. A table row is one sentence; markers
    that open a sentence or stand on a line of their own belong to the sentence before ("... 2025. [s1]")."""
    counter = _Occurrences()
    sentences: list[tuple[str, list[Citation]]] = []
    for piece in _pieces(answer):
        leading = _LEADING_MARKERS.match(piece)
        if leading and sentences:
            sentences[-1][1].extend(counter.citations(leading[0]))
            piece = piece[leading.end():]
        found = counter.citations(piece)
        text = " ".join(MARKER.sub(" ", piece).split()).strip(" .,;:")
        if text or found:
            sentences.append((text, found))
    return [CitingSentence(text, tuple(cites)) for text, cites in sentences if cites and text]


def answer_sentences(answer: str) -> list[str]:
    """The answer's sentences and table rows (cells joined by " ; "), in reading order, without citation
    markers or Markdown marks: the passages a must-fact is looked for in (grading/fact_match.py)."""
    texts = (re.sub(r"\s+(?=[.,;:!?)])", "", " ".join(MARKER.sub(" ", piece).split())) for piece in _pieces(answer))
    return [text for text in texts if text.strip(" .,;:")]


class _Occurrences:
    """Numbers each id's citations in reading order, as the answer panel numbers the markers it links."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def citations(self, text: str) -> list[Citation]:
        found = []
        for marker in MARKER.finditer(text):
            for source_id, quote in marker_citations(marker[1]):
                found.append(Citation(source_id, quote, self.counts.get(source_id, 0)))
                self.counts[source_id] = self.counts.get(source_id, 0) + 1
        return found


def _pieces(answer: str) -> list[str]:
    """Sentences and table rows, in reading order, with Markdown list, heading and emphasis marks off."""
    pieces: list[str] = []
    for line in answer.splitlines():
        if not line.strip() or _TABLE_RULE.match(line):
            continue
        line = _LIST_OR_HEADING.sub("", line).replace("**", "").replace("__", "").replace("`", "")
        if line.lstrip().startswith("|"):
            pieces.append(" ; ".join(cell.strip() for cell in line.strip().strip("|").split("|")))
            continue
        pieces.extend(_split_sentences(line))
    return pieces


def _split_sentences(line: str) -> list[str]:
    parts: list[str] = []
    start = 0
    for end in _SENTENCE_END.finditer(line):
        head = line[start:end.start()]
        if _ABBREVIATION.search(head):
            continue
        parts.append(head)
        start = end.end()
    parts.append(line[start:])
    return [p for p in (p.strip() for p in parts) if p]
