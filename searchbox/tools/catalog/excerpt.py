"""The part of a passage that best matches a query, when the whole passage does not fit.

A small model's context takes only a few kilobytes of search results (TOOL_OUTPUT_BYTES); whole
1,400-character chunks meant two results per search, and the passage that answered was often the
third. Excerpts of every result, each a window around the query's rarer words, keep the ranking's
recall. bench/result_facts.py counts the answers' facts that the excerpts show.
"""

from __future__ import annotations

import math
import re

ELLIPSIS = "…"
_KEY_LETTERS = 5
# Layout that costs characters and says nothing in an excerpt: runs of spaces, blank lines, dot leaders.
_SPACES = re.compile(r"[ \t]*\n[ \t\n]*|[ \t]{2,}")
_LEADERS = re.compile(r" ?\.{3,} ?")
_WORD = re.compile(r"\w+")
# Words too common to place a window by.
_STOPWORDS = frozenset(
    "the and for are was were what which who whom whose when where why how does did has have had with from "
    "that this these those into onto than then its their there about under over per any all our your".split()
)


def word_key(word: str) -> str:
    """A word's first five letters: "expire" and "expiry", "accrue" and "accrual" place a window alike
    (a stemmer keeps those apart), and a rare false match only moves an excerpt."""
    return word.lower()[:_KEY_LETTERS]


def term_weights(query: str, texts: list[str]) -> dict[str, float]:
    """The query's words, each weighted by how few of `texts` hold it: a name every result shares
    (the one the search was for) says less about where the answer is than a rarer word."""
    terms = {word_key(w) for w in _WORD.findall(query) if len(w) > 2 and w.lower() not in _STOPWORDS}
    holding = [{word_key(w) for w in _WORD.findall(text)} for text in texts]
    return {term: math.log(1 + (len(texts) + 1) / (1 + sum(term in words for words in holding))) for term in terms}


def excerpt(text: str, weights: dict[str, float], length: int) -> str:
    """At most `length` characters of `text` (plus an ellipsis at each cut end), cut at word
    boundaries: the window whose distinct query words weigh most (then the one starting at the rarest
    word, then the earliest); the start of the text when no query word occurs."""
    if len(text) <= length:
        return text
    text = _LEADERS.sub(" ", _SPACES.sub(" ", text))
    if len(text) <= length:
        return text
    hits = [(m.start(), key) for m in _WORD.finditer(text) if (key := word_key(m.group())) in weights]
    best_start, best = 0, (0.0, 0.0)
    for start, anchor in hits:
        begin = max(0, min(start - length // 4, len(text) - length))  # some context before the anchor word
        score = sum(weights[term] for term in {term for position, term in hits if begin <= position < begin + length})
        if (score, weights[anchor]) > best:  # on a tie, the window that starts at the rarer word
            best_start, best = begin, (score, weights[anchor])
    begin, end = best_start, best_start + length
    if begin > 0:
        space = text.find(" ", begin, begin + 40)
        begin = space + 1 if space != -1 else begin
    if end < len(text):
        space = text.rfind(" ", end - 40, end)
        end = space if space > begin else end
    return (ELLIPSIS if begin > 0 else "") + text[begin:end].strip() + (ELLIPSIS if end < len(text) else "")
