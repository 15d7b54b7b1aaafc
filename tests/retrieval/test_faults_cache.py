"""A damaged disk embedding cache (design §2.6): never trusted, rebuilt or bypassed with a notice, and
search gives the same results as over a clean cache.

Each case copies a clean cache built by a real engine over a real dataroom, damages the copy the way
disks and other programs do, then searches through a fresh engine on it with the real MiniLM model.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from conftest import make_engine
from searchbox.retrieval.cache import EmbeddingCache
from searchbox.retrieval.encoder import Encoder
from searchbox.retrieval.engine import RetrievalEngine
from searchbox.retrieval.models import embedding_cache_name
from searchbox.settings import Settings
from testkit.tally import report

QUERIES = ["parental leave", "encryption of laptops", "when does the lease end", "revenue growth"]


def _truncate(path: Path) -> Path:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # a copy or a disk that stopped half-way
    return path


def _overwrite_pages(path: Path) -> Path:
    with path.open("r+b") as handle:  # a bad sector: pages after the header replaced by noise
        handle.seek(4096)
        handle.write(os.urandom(8192))
    return path


def _wrong_schema(path: Path) -> Path:
    path.unlink()
    with sqlite3.connect(path) as conn:  # another program (or an old version) owns the name
        conn.execute("CREATE TABLE embeddings (id INTEGER PRIMARY KEY, text TEXT, vector TEXT)")
        conn.execute("INSERT INTO embeddings VALUES (1, 'parental leave', '[0.1, 0.2]')")
    conn.close()
    return path


def _garbage_vectors(path: Path) -> Path:
    with sqlite3.connect(path) as conn:  # the file is sound, the vectors in it are not
        conn.execute("UPDATE embeddings SET vec = randomblob(length(vec))")
    conn.close()
    return path


def _unwritable(path: Path) -> Path:
    shutil.rmtree(path.parent)
    path.parent.write_text("a file where the cache folder should be")  # fails for root too
    return path


DAMAGE: dict[str, Callable[[Path], Path]] = {
    "truncated": _truncate,
    "pages overwritten": _overwrite_pages,
    "wrong schema": _wrong_schema,
    "garbage vectors": _garbage_vectors,
    "unwritable location": _unwritable,
}


def _results(engine: RetrievalEngine) -> list[list[tuple[str, float]]]:
    out = []
    for query in QUERIES:
        hits, _ = engine.dense_search(query, 3)
        out.append([(engine.corpus.chunks[h.chunk].path, round(h.score, 4)) for h in hits])
    return out


def _must_not_load():
    raise AssertionError("the model was loaded although every vector should be cached")


def test_damaged_caches_are_rebuilt_or_bypassed_and_search_is_unchanged(
    small_work: Path, packaged_settings: Settings, minilm, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clean = tmp_path / "clean" / "cache.sqlite"
    clean.parent.mkdir()
    clean_cache = EmbeddingCache(clean)
    expected = _results(make_engine(small_work, packaged_settings, minilm, clean_cache))
    clean_cache.close()  # checkpointed: the file alone holds every vector
    name = embedding_cache_name(packaged_settings)

    problems: dict[str, str] = {}
    for case, damage in DAMAGE.items():
        folder = tmp_path / case.replace(" ", "-")
        folder.mkdir()
        path = damage(Path(shutil.copy(clean, folder / "cache.sqlite")))
        caplog.clear()
        try:
            with caplog.at_level(logging.WARNING, logger="searchbox.retrieval.cache"):
                cache = EmbeddingCache(path)
                got = _results(make_engine(small_work, packaged_settings, minilm, cache))
                cache.close()
        except Exception as exc:  # noqa: BLE001 - counted: a damaged cache must never break a search
            problems[case] = f"raised {type(exc).__name__}: {exc}"
            continue
        if got != expected:
            problems[case] = f"results differ: {got} != {expected}"
        elif case == "unwritable location":
            if "bypassed" not in caplog.text:
                problems[case] = "bypassed without a notice"
        else:
            # Rebuilt: a fresh engine on the same file finds every vector and never loads the model.
            encoder = Encoder(name, _must_not_load, EmbeddingCache(path))
            again = RetrievalEngine(make_engine(small_work, packaged_settings, minilm).corpus, packaged_settings, encoder)
            try:
                if _results(again) != expected:
                    problems[case] = "the rebuilt cache gives other results"
            except AssertionError as exc:
                problems[case] = f"not rebuilt: {exc}"
            cache_rows = EmbeddingCache(path).get_many(name, "passage", [again.index_text(i) for i in range(len(again.corpus.chunks))])
            if not all(v is not None and np.isfinite(v).all() for v in cache_rows):
                problems[case] = "the rebuilt cache misses vectors"

    injected = len(DAMAGE)
    report("faults cache", f"injected {injected}, survived {injected - len(problems)}, "
          f"wrong results {sum('differ' in p for p in problems.values())}")
    assert not problems, problems
