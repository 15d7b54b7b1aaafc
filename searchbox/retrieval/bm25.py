"""BM25 keyword ranking over a corpus's chunks (bm25s), with English stemming and stopwords."""

from __future__ import annotations

import numpy as np


def _stemmer():
    try:
        import Stemmer

        return Stemmer.Stemmer("english").stemWords
    except ImportError:  # stemming improves recall but is optional
        return None


class BM25Index:
    def __init__(self, texts: list[str]) -> None:
        import bm25s

        self._stem = _stemmer()
        self._bm25s = bm25s
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=self._stem, show_progress=False)
        self._retriever = bm25s.BM25()
        self._retriever.index(tokens, show_progress=False)
        self._vocab = tokens.vocab
        self.size = len(texts)

    def scores(self, query: str) -> np.ndarray:
        """A score for every indexed text (0 where no query term occurs)."""
        terms = self._bm25s.tokenize(
            [query], stopwords="en", stemmer=self._stem, return_ids=False, show_progress=False
        )[0]
        known = [t for t in terms if t in self._vocab]
        if not known or self.size == 0:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self._retriever.get_scores(known), dtype=np.float32)
