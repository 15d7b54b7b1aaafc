"""BM25 keyword ranking over a corpus's chunks (bm25s), with English stemming and stopwords."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _stemmer():
    try:
        import Stemmer

        return Stemmer.Stemmer("english").stemWords
    except ImportError:  # stemming improves recall but is optional
        return None


def tokenizer_name() -> str:
    """What decides the index's terms besides the texts: an index built with another is another index."""
    import bm25s

    return f"bm25s {bm25s.__version__}, stopwords en, stemmer {'english' if _stemmer() else 'none'}"


class BM25Index:
    def __init__(self, retriever, size: int) -> None:
        import bm25s

        self._bm25s = bm25s
        self._stem = _stemmer()
        self._retriever = retriever
        self._vocab = retriever.vocab_dict or {}
        self.size = size

    @classmethod
    def build(cls, texts: list[str]) -> BM25Index:
        import bm25s

        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=_stemmer(), show_progress=False)
        retriever = bm25s.BM25()
        retriever.index(tokens, show_progress=False)
        return cls(retriever, len(texts))

    @classmethod
    def load(cls, folder: Path, size: int) -> BM25Index:
        """The index `save` wrote; ValueError when it is not one of `size` texts."""
        import bm25s

        retriever = bm25s.BM25.load(str(folder), mmap=True, show_progress=False, verbosity=0)
        matrix = retriever.scores
        data, indices, indptr = matrix["data"], matrix["indices"], matrix["indptr"]
        whole = int(matrix["num_docs"]) == size and len(data) == len(indices) and len(indptr) > 0 \
            and int(indptr[-1]) == len(data) and (len(indices) == 0 or int(indices.max()) < size)
        if not whole or not retriever.vocab_dict:
            raise ValueError(f"{folder} holds no whole index of {size} texts")
        return cls(retriever, size)

    def save(self, folder: Path) -> None:
        self._retriever.save(str(folder), show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        """A score for every indexed text (0 where no query term occurs)."""
        terms = self._bm25s.tokenize(
            [query], stopwords="en", stemmer=self._stem, return_ids=False, show_progress=False
        )[0]
        known = [t for t in terms if t in self._vocab]
        if not known or self.size == 0:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self._retriever.get_scores(known), dtype=np.float32)
