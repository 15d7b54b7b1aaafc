"""Indexing a dataroom in the background: it fills what searches rank, yields to them without embedding
anything twice, stops with the run, and what it embedded is reused by the next run over the same room."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from conftest import make_engine

from searchbox.cancel import Cancelled, CancelToken
from searchbox.retrieval.cache import EmbeddingCache
from searchbox.retrieval.chunk_vectors import Coverage
from searchbox.retrieval.encoder import Encoder
from searchbox.retrieval.indexer import BackgroundIndexer
from searchbox.retrieval.models import embedding_cache_name
from searchbox.settings import Settings
from searchbox.workspace import Workspace
from testkit.small_room import SMALL_DATAROOM, write_tree


def test_a_filled_room_ranks_as_embedding_everything_does(small_work: Path, packaged_settings: Settings,
                                                             minilm) -> None:
    prefiltered = make_engine(small_work, packaged_settings.with_overrides(dense_prefilter=2), minilm)
    indexer = BackgroundIndexer(lambda: prefiltered).start()
    assert indexer.wait(120)
    assert indexer.error is None and indexer.progress() == Coverage(5, 5)
    full = make_engine(small_work, packaged_settings, minilm)
    for query in ("parental leave", "who is the landlord", "zzzz qqqq"):
        hits, coverage = prefiltered.dense_search(query, 5)
        assert coverage.complete
        assert hits == full.dense_search(query, 5)[0]


def test_a_search_during_indexing_goes_first_and_nothing_is_embedded_twice(
        small_work: Path, packaged_settings: Settings, minilm) -> None:
    engine = make_engine(small_work, packaged_settings.with_overrides(dense_prefilter=2), minilm)
    indexer = BackgroundIndexer(lambda: engine).start()
    hits, coverage = engine.dense_search("Harbour Street lease", 3)  # while the indexer runs, or after it
    assert engine.corpus.chunks[hits[0].chunk].path == "legal/lease.txt"
    assert 1 <= coverage.embedded <= 5
    assert indexer.wait(120)
    assert engine.encoder.stats.texts_embedded == 5 + 1  # every chunk once, and the query


def test_a_stopped_run_stops_its_indexer(small_work: Path, packaged_settings: Settings, minilm) -> None:
    token = CancelToken()
    token.request("cancelled")
    encoder = Encoder(embedding_cache_name(packaged_settings), lambda: minilm, EmbeddingCache(), token)
    from searchbox.dataroom.work_dir import load_corpus
    from searchbox.retrieval.engine import RetrievalEngine

    engine = RetrievalEngine(load_corpus(small_work, packaged_settings), packaged_settings, encoder)
    indexer = BackgroundIndexer(lambda: engine).start()
    assert indexer.wait(60)
    assert indexer.error is None and indexer.progress() == Coverage(0, 5)
    stopped = BackgroundIndexer(lambda: make_engine(small_work, packaged_settings, minilm))
    stopped.stop()
    stopped.start()
    assert stopped.wait(60) and stopped.progress() == Coverage(0, 5)


def test_the_next_run_over_the_room_reuses_what_the_indexer_embedded(tmp_path: Path, minilm) -> None:
    settings = Settings.resolve(env={}, retrieval_preset="packaged", dense_prefilter=2,
                                searchbox_cache_dir=str(tmp_path / "cache"))
    room = write_tree(tmp_path / "room", SMALL_DATAROOM)
    first = Workspace.create(tmp_path / "job-1", room, settings)
    indexer = first.start_indexing()
    assert first.start_indexing() is indexer  # one per run
    assert indexer.wait(120) and indexer.progress() == Coverage(5, 5)
    first.stop_indexing()
    first.encoder.cache.close()

    second = Workspace.create(tmp_path / "job-2", room, settings)
    hits, coverage = second.engine.dense_search("Staff holiday entitlement", 3)
    assert coverage.complete  # from the disk cache, though only two candidates were asked for
    assert second.encoder.stats.texts_embedded == 1  # the query alone
    assert second.engine.corpus.chunks[hits[0].chunk].path == "hr/handbook.md"


def test_the_engine_is_built_once_when_the_indexer_and_a_search_ask_together(tmp_path: Path, minilm) -> None:
    settings = Settings.resolve(env={}, retrieval_preset="packaged", searchbox_cache_dir=str(tmp_path / "cache"))
    workspace = Workspace.create(tmp_path / "job", write_tree(tmp_path / "room", SMALL_DATAROOM), settings)
    engines = []
    threads = [threading.Thread(target=lambda: engines.append(workspace.engine)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(engine) for engine in engines}) == 1


def test_a_tool_waiting_for_the_indexer_to_read_the_room_is_cut_by_a_stop(tmp_path: Path) -> None:
    settings = Settings.resolve(env={}, retrieval_preset="packaged", searchbox_cache_dir=str(tmp_path / "cache"))
    token = CancelToken()
    workspace = Workspace.create(tmp_path / "job", write_tree(tmp_path / "room", SMALL_DATAROOM), settings)
    workspace.cancel = token
    workspace._building.acquire()  # as the indexer's thread holds it while it reads a large room
    try:
        threading.Timer(0.2, token.request, ["paused"]).start()
        with pytest.raises(Cancelled):
            workspace.engine
    finally:
        workspace._building.release()


def test_a_tool_calls_time_limit_only_holds_the_indexer_until_it_is_cleared(small_work: Path,
                                                                              packaged_settings: Settings,
                                                                              minilm) -> None:
    import time

    from searchbox.dataroom.work_dir import load_corpus
    from searchbox.retrieval.engine import RetrievalEngine

    token = CancelToken()
    token.set_deadline(time.monotonic() - 1, "turn_timeout")  # a tool call ran out of time; the loop clears it
    encoder = Encoder(embedding_cache_name(packaged_settings), lambda: minilm, EmbeddingCache(), token)
    engine = RetrievalEngine(load_corpus(small_work, packaged_settings), packaged_settings, encoder)
    indexer = BackgroundIndexer(lambda: engine).start()
    threading.Timer(0.5, token.set_deadline, [None]).start()
    assert indexer.wait(120)
    assert indexer.error is None and indexer.progress() == Coverage(5, 5)
