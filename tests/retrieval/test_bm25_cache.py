"""BM25 indexes kept on disk (BM25_CACHE_MB): a room indexed before is loaded, not tokenized again; changed
texts are a miss; a damaged entry is rebuilt; the folder stays within its bound; a folder that cannot be
written only costs the reuse. Real bm25s indexes, real files."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

from conftest import make_engine

from searchbox.retrieval.bm25_cache import BM25Cache
from searchbox.settings import Settings


def room(n: int, salt: str = "") -> list[str]:
    words = ["lease", "auditor", "revenue", "laptop", "encryption", "holiday", "pension", "invoice"]
    return [f"{salt} chunk {i}: the {words[i % 8]} and the {words[(i * 3) % 8]} of unit {i}" for i in range(n)]


def entries(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir())


def test_a_second_index_of_the_same_texts_is_loaded_with_the_same_scores(tmp_path: Path) -> None:
    texts = room(200)
    first = BM25Cache(tmp_path / "bm25").index(texts)
    again = BM25Cache(tmp_path / "bm25")
    second = again.index(texts)
    assert (again.hits, again.misses) == (1, 0)
    for query in ("auditor of unit 7", "laptop encryption", "nothing matches zzz"):
        assert np.allclose(first.scores(query), second.scores(query))
    assert len(entries(tmp_path / "bm25")) == 1


def test_changed_texts_are_a_miss(tmp_path: Path) -> None:
    cache = BM25Cache(tmp_path / "bm25")
    cache.index(room(50))
    cache.index(room(50, salt="edited"))
    cache.index(room(50)[:-1])  # one chunk fewer
    assert (cache.hits, cache.misses) == (0, 3)
    assert len(entries(tmp_path / "bm25")) == 3


@pytest.mark.parametrize("damage", ["truncate", "garbage", "foreign"])
def test_a_damaged_entry_is_rebuilt(tmp_path: Path, damage: str) -> None:
    texts = room(100)
    expected = BM25Cache(tmp_path / "bm25").index(texts).scores("pension invoice")
    [entry] = entries(tmp_path / "bm25")
    if damage == "truncate":
        data = entry / "indices.csc.index.npy"
        data.write_bytes(data.read_bytes()[:100])
    elif damage == "garbage":
        (entry / "params.index.json").write_text("{not json", encoding="utf-8")
    else:  # a whole index, of other texts
        other = tmp_path / "other"
        BM25Cache(other).index(room(30, salt="other"))
        [foreign] = entries(other)
        for f in foreign.iterdir():
            os.replace(f, entry / f.name)
    cache = BM25Cache(tmp_path / "bm25")
    assert np.allclose(cache.index(texts).scores("pension invoice"), expected)
    assert (cache.hits, cache.misses) == (0, 1)
    assert BM25Cache(tmp_path / "bm25").index(texts).size == 100  # and the rebuilt entry is whole


def test_the_folder_stays_within_its_bound_least_recently_used_out(tmp_path: Path) -> None:
    folder = tmp_path / "bm25"
    BM25Cache(folder).index(room(300, salt="probe"))
    one = sum(f.stat().st_size for f in entries(folder)[0].iterdir())
    for entry in entries(folder):
        for f in entry.iterdir():
            f.unlink()
        entry.rmdir()
    cache = BM25Cache(folder, max_bytes=int(one * 2.5))  # room for two such indexes
    rooms = [room(300, salt=f"room {k}") for k in range(4)]
    cache.index(rooms[0])
    cache.index(rooms[1])
    os.utime(entries(folder)[0], (1, 1))  # make a known entry the oldest, then use room 0 again: it stays
    cache.index(rooms[0])
    cache.index(rooms[2])
    cache.index(rooms[3])
    held = sum(f.stat().st_size for e in entries(folder) for f in e.iterdir())
    assert held <= one * 2.5 and len(entries(folder)) == 2
    assert not [p for p in folder.iterdir() if p.name.startswith(".partial")]
    fresh = BM25Cache(folder, max_bytes=int(one * 2.5))
    fresh.index(rooms[3])
    assert fresh.hits == 1  # the newest is kept


def test_an_index_larger_than_the_bound_is_not_kept(tmp_path: Path) -> None:
    cache = BM25Cache(tmp_path / "bm25", max_bytes=1000)
    assert cache.index(room(300)).size == 300
    assert entries(tmp_path / "bm25") == []


def test_a_folder_that_cannot_be_written_only_costs_the_reuse(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the folder would be", encoding="utf-8")
    cache = BM25Cache(blocker / "bm25")
    assert cache.index(room(40)).scores("auditor").max() > 0
    assert cache.index(room(40)).size == 40 and cache.misses == 2


def test_engines_built_at_once_leave_one_whole_entry(tmp_path: Path) -> None:
    texts = room(2000)
    results: list[np.ndarray] = []
    workers = [threading.Thread(target=lambda: results.append(BM25Cache(tmp_path / "bm25").index(texts)
                                                               .scores("revenue of unit 12"))) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(results) == 4 and all(np.allclose(r, results[0]) for r in results)
    assert [p.name.startswith(".partial") for p in (tmp_path / "bm25").iterdir()] == [False]
    later = BM25Cache(tmp_path / "bm25")
    later.index(texts)
    assert later.hits == 1


def test_a_second_engine_over_a_room_loads_its_keyword_index(small_work: Path, packaged_settings: Settings,
                                                              minilm, tmp_path: Path) -> None:
    settings = packaged_settings.with_overrides(searchbox_cache_dir=str(tmp_path / "cache"))
    first = make_engine(small_work, settings, minilm)
    expected = first.keyword_search("Harbour Street lease", 3)
    second = make_engine(small_work, settings, minilm)
    assert second.keyword_search("Harbour Street lease", 3) == expected
    assert (first.bm25_cache.misses, second.bm25_cache.hits, second.bm25_cache.misses) == (1, 1, 0)
