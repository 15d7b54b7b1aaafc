"""The part of a passage that best matches a query, when the whole passage does not fit.

A small model's context takes only a few kilobytes of search results (TOOL_OUTPUT_BYTES); whole
1,400-character chunks meant two results per search, and the passage that answered was often the
third. Excerpts of every result, each a window around the query's words, keep the ranking's recall.
"""

from __future__ import annotations

import re

ELLIPSIS = "…"
_WORD = re.compile(r"\w+")
# Words too common to place a window by.
_STOPWORDS = frozenset(
    "the and for are was were what which who whom whose when where why how does did has have had with from "
    "that this these those into onto than then its their there about under over per any all our your".split()
)


def query_terms(query: str) -> set[str]:
    return {w for w in (m.lower() for m in _WORD.findall(query)) if len(w) > 2 and w not in _STOPWORDS}


def excerpt(text: str, terms: set[str], length: int) -> str:
    """At most `length` characters of `text` (plus an ellipsis at each cut end), cut at word
    boundaries: the window holding the most distinct query terms, earliest on a tie; the start of
    the text when no term occurs."""
    if len(text) <= length:
        return text
    hits = [(m.start(), m.group().lower()) for m in _WORD.finditer(text) if m.group().lower() in terms]
    best_start, best_score = 0, 0
    for start, _ in hits:
        begin = max(0, min(start - length // 4, len(text) - length))  # some context before the first term
        score = len({term for position, term in hits if begin <= position < begin + length})
        if score > best_score:
            best_start, best_score = begin, score
    begin, end = best_start, best_start + length
    if begin > 0:
        space = text.find(" ", begin, begin + 40)
        begin = space + 1 if space != -1 else begin
    if end < len(text):
        space = text.rfind(" ", end - 40, end)
        end = space if space > begin else end
    return (ELLIPSIS if begin > 0 else "") + text[begin:end].strip() + (ELLIPSIS if end < len(text) else "")
