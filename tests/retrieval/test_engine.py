"""The retrieval engine: lazy scopes, one cached encode path, prefiltering, fusion."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import make_engine

from searchbox.retrieval.cache import EmbeddingCache
from searchbox.retrieval.chunk_vectors import Coverage
from searchbox.retrieval.encoder import Encoder
from searchbox.retrieval.engine import RetrievalEngine
from searchbox.retrieval.models import embedding_cache_name
from searchbox.dataroom.work_dir import load_corpus
from searchbox.settings import Settings


def test_nothing_is_embedded_until_the_first_search(small_work: Path, packaged_settings: Settings, minilm) -> None:
    engine = make_engine(small_work, packaged_settings, minilm)
    assert engine.encoder.stats.texts_embedded == 0
    engine.dense_search("parental leave", 2)
    chunks = len(engine.corpus.chunks)
    assert engine.encoder.stats.texts_embedded == chunks + 1  # the scope, then the query
    engine.dense_search("parental leave", 2)
    assert engine.encoder.stats.texts_embedded == chunks + 1  # all from the cache
    engine.dense_search("holiday entitlement", 2, paths=["hr"])
    assert engine.encoder.stats.texts_embedded == chunks + 2  # a sub-scope reuses its chunks' vectors


def test_a_second_engine_reads_the_disk_cache_and_never_loads_the_model(
    small_work: Path, packaged_settings: Settings, minilm, tmp_path: Path
) -> None:
    disk = tmp_path / "cache.sqlite"
    first = make_engine(small_work, packaged_settings, minilm, EmbeddingCache(disk))
    expected = first.dense_search("encryption of laptops", 3)[0]

    def must_not_load():
        raise AssertionError("the model was loaded although every vector was cached")

    encoder = Encoder(embedding_cache_name(packaged_settings), must_not_load, EmbeddingCache(disk))
    second = RetrievalEngine(load_corpus(small_work, packaged_settings), packaged_settings, encoder)
    assert second.dense_search("encryption of laptops", 3)[0] == expected
    assert encoder.report is None and encoder.cache.hits > 0


def test_prefilter_embeds_only_keyword_candidates(small_work: Path, packaged_settings: Settings, minilm) -> None:
    settings = packaged_settings.with_overrides(dense_prefilter=2)
    engine = make_engine(small_work, settings, minilm)
    assert len(engine.corpus.chunks) == 5
    nothing, coverage = engine.dense_search("zzzz qqqq", 3)  # no keyword candidate, nothing embedded yet
    assert nothing == [] and coverage == Coverage(0, 5)
    hits, coverage = engine.dense_search("Harbour Street lease", 3)
    candidates = [h.chunk for h in engine.keyword_search("Harbour Street lease", 2)]
    assert coverage == Coverage(len(candidates), 5) and not coverage.complete
    assert engine.encoder.stats.texts_embedded == len(candidates) + 2  # the candidates and the two queries
    assert engine.corpus.chunks[hits[0].chunk].path == "legal/lease.txt"
    # A later query ranks the earlier ones' candidates with its own, embedding only its own.
    more = [h.chunk for h in engine.keyword_search("full-disk encryption of laptops", 2)]
    hits, coverage = engine.dense_search("full-disk encryption of laptops", 5)
    assert coverage.embedded == len(set(candidates) | set(more))
    assert {h.chunk for h in hits} == set(candidates) | set(more)
    assert coverage.line() == f"dense: {coverage.embedded} of 5 chunks embedded"


def test_keyword_search_skips_chunks_without_any_query_term(small_work: Path, packaged_settings: Settings, minilm) -> None:
    engine = make_engine(small_work, packaged_settings, minilm)
    hits = engine.keyword_search("quarterly rent", 10)
    assert [engine.corpus.chunks[h.chunk].path for h in hits] == ["legal/lease.txt"]
    assert engine.encoder.stats.texts_embedded == 0  # BM25 needs no model


def test_hybrid_ranks_are_fused_and_bounded(small_work: Path, packaged_settings: Settings, minilm) -> None:
    engine = make_engine(small_work, packaged_settings, minilm)
    hits, _ = engine.hybrid_search("Frankfurt hosting costs", 2)
    assert len(hits) == 2 and hits[0].score >= hits[1].score
    assert engine.corpus.chunks[hits[0].chunk].path == "finance/costs.md"


def test_the_builtin_dataroom_ships_its_vectors(tmp_path: Path, packaged_settings: Settings, minilm) -> None:
    from searchbox.assets import BUILTIN_DATAROOM, BUILTIN_VECTORS
    from searchbox.dataroom.work_dir import prepare_work_dir

    work = prepare_work_dir(tmp_path / "job", BUILTIN_DATAROOM)
    engine = make_engine(work, packaged_settings, minilm, EmbeddingCache(None, [BUILTIN_VECTORS]))
    hits, _ = engine.dense_search("Who audited the financial statements?", 5)
    assert hits
    # Only the query was embedded; if this fails, rebuild the vectors as the README says.
    assert engine.encoder.stats.texts_embedded == 1


def test_search_finds_a_chunk_by_its_file_name_and_heading_only_with_chunk_context(
        tmp_path: Path, packaged_settings: Settings, minilm) -> None:
    from conftest import write_tree

    from searchbox.dataroom.work_dir import prepare_work_dir

    rows = "\n".join(f"{n} | 2025-0{n % 9 + 1}-01 | {1000 * n}" for n in range(1, 40))
    source = write_tree(tmp_path / "room", {"hr/option_grants_2025.csv": f"id | date | shares\n{rows}",
                                            "policies/handbook.md": "# Handbook\n\nStaff receive 28 days of leave."})
    work = prepare_work_dir(tmp_path / "job", source)
    for context, expected in ((True, "hr/option_grants_2025.csv"), (False, None)):
        engine = make_engine(work, packaged_settings.with_overrides(chunk_size=200, chunk_overlap=20, chunk_context=context), minilm)
        hits = engine.keyword_search("option grants", 1)  # neither word is in any CSV row
        assert (engine.corpus.chunks[hits[0].chunk].path if hits else None) == expected


def test_hybrid_fuses_only_the_configured_number_of_bm25_candidates(small_work: Path, packaged_settings: Settings, minilm) -> None:
    query = "revenue costs"  # BM25 ranks two finance chunks
    engine = make_engine(small_work, packaged_settings.with_overrides(hybrid_bm25_candidates=1), minilm)
    second = engine.keyword_search(query, 2)[1].chunk
    dense_rank = [h.chunk for h in engine.dense_search(query, 50)[0]].index(second)
    fused = {h.chunk: h.score for h in engine.hybrid_search(query, 10)[0]}
    assert fused[second] == pytest.approx(1 / (60 + dense_rank + 1))  # BM25's second candidate adds nothing
    both = {h.chunk: h.score for h in engine.hybrid_search(query, 10, keyword_candidates=2)[0]}
    assert both[second] == pytest.approx(1 / (60 + dense_rank + 1) + 1 / (60 + 2))
