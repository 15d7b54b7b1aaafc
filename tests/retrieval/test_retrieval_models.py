"""Local retrieval models, model paths, the embedding cache and the Encoder, with real models.

Only models that ship inside PyPI packages are loaded (packaged:minilm, packaged:static) plus a tiny
random cross-encoder built in a temporary folder; the hub is switched to offline mode, so nothing is
downloaded.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from searchbox.retrieval.cache import EmbeddingCache
from searchbox.retrieval.encoder import Encoder
from searchbox.retrieval.model_paths import hub_repo_for, is_static_model, resolve_model_dir
from searchbox.retrieval.interfaces import Embedder, LoadReport, ModelLoadError
from searchbox.retrieval.models import CosineReranker, embedding_cache_name, load_embedder, load_reranker
from searchbox.settings import Settings

QUERY = "How much did revenue grow last year?"
RELEVANT = "Revenue increased by 12% compared with the previous fiscal year, driven by subscription sales."
UNRELATED = "The cat chased a small mouse across the garden before falling asleep in the sun."
PASSAGES = [
    RELEVANT,
    UNRELATED,
    "The supplier agreement may be terminated by either party with ninety days of written notice.",
    "Headcount in the Berlin office rose from 40 to 55 engineers during the second quarter.",
    "hello world",
]


def _go_offline(mp: pytest.MonkeyPatch) -> None:
    """HF_HUB_OFFLINE=1 for the hub and transformers. huggingface_hub reads the variable once, at
    import, so an already imported hub also gets its module flag set."""
    import huggingface_hub.constants

    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("TRANSFORMERS_OFFLINE", "1")
    mp.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture(scope="module")
def offline() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        _go_offline(mp)
        yield


@pytest.fixture(scope="module")
def minilm(offline: None) -> tuple[Embedder, LoadReport]:
    return load_embedder(Settings.resolve(env={}, embed_model="packaged:minilm"))


@pytest.fixture(scope="module")
def minilm_int8(offline: None) -> tuple[Embedder, LoadReport]:
    return load_embedder(Settings.resolve(env={}, embed_model="packaged:minilm", embed_dtype="int8"))


def unit_rows(vectors: np.ndarray) -> None:
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


# -- local embedders -------------------------------------------------------------------------


def test_packaged_minilm_gives_normalized_float32_rows_of_dim_384(minilm: tuple[Embedder, LoadReport]) -> None:
    embedder, report = minilm
    assert (report.model, report.backend, report.requested_device, report.device) == (
        "packaged:minilm",
        "sentence-transformers",
        "cpu",
        "cpu",
    )
    assert all("reused" in note for note in report.notes)  # no device notes: loaded here or earlier in the session
    assert embedder.name == "packaged:minilm"

    vectors = embedder.embed(PASSAGES, "passage")

    assert vectors.shape == (len(PASSAGES), 384) and vectors.dtype == np.float32
    unit_rows(vectors)
    assert embedder.embed([], "passage").shape == (0, 384)


def test_minilm_puts_a_query_closer_to_a_relevant_passage(minilm: tuple[Embedder, LoadReport]) -> None:
    embedder, _ = minilm
    q = embedder.embed([QUERY], "query")[0]
    relevant, unrelated = embedder.embed([RELEVANT, UNRELATED], "passage")
    assert q @ relevant > q @ unrelated + 0.2


@pytest.mark.skipif(
    __import__("torch").cuda.is_available(), reason="this host has a CUDA device: there is nothing to fall back from"
)
def test_cuda_without_a_gpu_falls_back_to_the_cpu_and_says_why(offline: None) -> None:
    settings = Settings.resolve(env={"EMBED_DEVICE": "cuda"}, embed_model="packaged:minilm")
    embedder, report = load_embedder(settings)
    assert (report.requested_device, report.device) == ("cuda", "cpu")
    assert any("no CUDA device" in note and "CPU" in note for note in report.notes), report.notes
    assert report.as_dict()["notes"] == report.notes
    unit_rows(embedder.embed(["still works"], "query"))


def test_int8_vectors_stay_close_to_float32_and_get_their_own_cache_namespace(
    minilm: tuple[Embedder, LoadReport], minilm_int8: tuple[Embedder, LoadReport]
) -> None:
    embedder, _ = minilm
    quantized, report = minilm_int8
    assert (report.backend, report.device) == ("sentence-transformers", "cpu")

    # chunk-sized texts and short ones in one batch, as a scope is embedded
    chunks = [" ".join(PASSAGES[i % 4] for i in range(k, k + 13)) for k in range(4)]
    texts = chunks + PASSAGES
    full = embedder.embed(texts, "passage")
    small = quantized.embed(texts, "passage")

    assert small.shape == full.shape and small.dtype == np.float32
    unit_rows(small)
    cosines = (full * small).sum(axis=1)
    assert cosines.min() > 0.9, cosines
    assert cosines.mean() > 0.95, cosines  # one weight scale per matrix gave ~0.92 here, per row ~0.97
    assert not np.allclose(full, small, atol=1e-4)  # really quantized
    f32 = Settings.resolve(env={}, embed_model="packaged:minilm")
    i8 = Settings.resolve(env={}, embed_model="packaged:minilm", embed_dtype="int8")
    assert embedding_cache_name(i8) != embedding_cache_name(f32)


def test_packaged_static_model_loads_with_model2vec(offline: None) -> None:
    embedder, report = load_embedder(Settings.resolve(env={}, embed_model="packaged:static"))
    assert (report.backend, report.device) == ("model2vec", "cpu")

    vectors = embedder.embed(PASSAGES, "passage")

    assert vectors.shape == (len(PASSAGES), 64) and vectors.dtype == np.float32
    unit_rows(vectors)
    assert embedder.embed([], "query").shape == (0, 64)
    assert is_static_model(resolve_model_dir("packaged:static"))
    assert not is_static_model(resolve_model_dir("packaged:minilm"))


def test_a_folder_without_a_model_is_a_load_error(offline: None, tmp_path: Path) -> None:
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    with pytest.raises(ModelLoadError, match="not-a-model"):
        load_embedder(Settings.resolve(env={}, embed_model=str(empty)))


# -- rerankers -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_cross_encoder(offline: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real (randomly initialised) BERT cross-encoder with one output, and MiniLM's tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    folder = tmp_path_factory.mktemp("models") / "tiny-ce"
    tokenizer = AutoTokenizer.from_pretrained(str(resolve_model_dir("packaged:minilm")))
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=1,
    )
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def test_a_local_cross_encoder_loads_through_the_production_path(tiny_cross_encoder: Path) -> None:
    settings = Settings.resolve(env={}, rerank_model=str(tiny_cross_encoder))
    reranker, report = load_reranker(settings, lambda texts, role: pytest.fail("a cross-encoder needs no embeddings"))
    assert (report.backend, report.device, report.model) == ("cross-encoder", "cpu", str(tiny_cross_encoder))

    scores = reranker.score(QUERY, PASSAGES)

    assert len(scores) == len(PASSAGES)
    assert all(isinstance(s, float) and np.isfinite(s) for s in scores)
    assert reranker.score(QUERY, [PASSAGES[0]]) == pytest.approx([scores[0]], abs=1e-5)  # per pair
    assert reranker.score(QUERY, []) == []


def test_rerank_model_none_ranks_by_cosine_through_the_cached_encoder(
    minilm: tuple[Embedder, LoadReport], tmp_path: Path
) -> None:
    encoder = Encoder("packaged:minilm", lambda: minilm, EmbeddingCache(tmp_path / "cache.sqlite"))
    settings = Settings.resolve(env={}, embed_model="packaged:minilm", rerank_model="none")

    reranker, report = load_reranker(settings, encoder.encode)

    assert isinstance(reranker, CosineReranker)
    assert (report.model, report.backend) == ("none", "cosine")
    relevant, unrelated = reranker.score(QUERY, [RELEVANT, UNRELATED])
    assert relevant > unrelated
    embedded = encoder.stats.texts_embedded
    assert embedded == 3
    assert reranker.score(QUERY, [UNRELATED, RELEVANT]) == pytest.approx([unrelated, relevant])
    assert encoder.stats.texts_embedded == embedded  # the second ranking came from the cache
    assert reranker.score(QUERY, []) == []


# -- model paths -----------------------------------------------------------------------------


def test_packaged_models_resolve_to_folders_on_disk() -> None:
    minilm = resolve_model_dir("packaged:minilm")
    assert minilm.is_dir() and (minilm / "config.json").exists()
    assert (resolve_model_dir("packaged:static") / "model.safetensors").exists()


def test_a_local_folder_resolves_to_itself(tmp_path: Path) -> None:
    assert resolve_model_dir(str(tmp_path)) == tmp_path


def test_jina_v5_base_ids_map_to_their_retrieval_repos() -> None:
    assert hub_repo_for("jinaai/jina-embeddings-v5-text-small") == "jinaai/jina-embeddings-v5-text-small-retrieval"
    assert hub_repo_for("jinaai/jina-embeddings-v5-text-nano") == "jinaai/jina-embeddings-v5-text-nano-retrieval"
    for unchanged in (
        "jinaai/jina-embeddings-v5-text-small-retrieval",
        "jinaai/jina-reranker-v3",
        "sentence-transformers/all-MiniLM-L6-v2",
    ):
        assert hub_repo_for(unchanged) == unchanged


def test_a_hub_model_that_is_not_cached_is_a_load_error_when_offline(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import huggingface_hub.constants

    _go_offline(monkeypatch)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))  # an empty cache
    with pytest.raises(ModelLoadError, match="not in the local cache and HF_HUB_OFFLINE is set") as info:
        resolve_model_dir("searchbox-tests/no-such-model")
    assert "searchbox-tests/no-such-model" in str(info.value)
    # the error names the repo actually fetched, which for jina v5 is the -retrieval one
    with pytest.raises(ModelLoadError, match="jina-embeddings-v5-text-nano-retrieval is not in the local cache"):
        resolve_model_dir("jinaai/jina-embeddings-v5-text-nano")
    # and the same error comes out of the loaders
    with pytest.raises(ModelLoadError, match="not in the local cache"):
        load_embedder(Settings.resolve(env={}, embed_model="searchbox-tests/no-such-model"))
    with pytest.raises(ModelLoadError, match="not in the local cache"):
        load_reranker(Settings.resolve(env={}, rerank_model="searchbox-tests/no-such-reranker"), lambda t, r: None)


def test_a_reference_that_is_neither_a_folder_nor_a_hub_id_is_a_load_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _go_offline(monkeypatch)
    with pytest.raises(ModelLoadError):
        resolve_model_dir("/no/such/folder/model")


# -- the embedding cache and the Encoder -----------------------------------------------------


class CountingLoad:
    """The Encoder's load callable: hands out the already loaded MiniLM and counts the loads."""

    def __init__(self, loaded: tuple[Embedder, LoadReport] | None) -> None:
        self.loaded = loaded
        self.calls = 0

    def __call__(self) -> tuple[Embedder, LoadReport]:
        self.calls += 1
        if self.loaded is None:
            raise AssertionError("the model was loaded although every vector was cached")
        return self.loaded


def test_a_second_encode_of_the_same_texts_embeds_nothing(minilm: tuple[Embedder, LoadReport], tmp_path: Path) -> None:
    load = CountingLoad(minilm)
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    encoder = Encoder("packaged:minilm", load, cache)

    first = encoder.encode(PASSAGES, "passage")
    assert encoder.stats.texts_embedded == len(PASSAGES) and load.calls == 1
    assert encoder.report is not None and encoder.report.backend == "sentence-transformers"
    second = encoder.encode(list(reversed(PASSAGES)), "passage")

    assert encoder.stats.texts_embedded == len(PASSAGES)
    np.testing.assert_array_equal(second, first[::-1])
    assert load.calls == 1
    # the role is part of the key: the same text as a query is new
    encoder.encode([PASSAGES[0]], "query")
    assert encoder.stats.texts_embedded == len(PASSAGES) + 1


def test_a_fresh_encoder_on_the_same_disk_cache_never_loads_the_model(
    minilm: tuple[Embedder, LoadReport], tmp_path: Path
) -> None:
    path = tmp_path / "cache.sqlite"
    first = Encoder("packaged:minilm", CountingLoad(minilm), EmbeddingCache(path)).encode(PASSAGES, "passage")

    load = CountingLoad(None)
    cache = EmbeddingCache(path)
    encoder = Encoder("packaged:minilm", load, cache)
    again = encoder.encode(PASSAGES, "passage")

    np.testing.assert_array_equal(again, first)
    assert load.calls == 0 and encoder._embedder is None and encoder.report is None
    assert encoder.stats.texts_embedded == 0
    assert (cache.hits, cache.misses) == (len(PASSAGES), 0)
    # another model name is another namespace: nothing is shared with it
    other = EmbeddingCache(path)
    assert other.get_many("packaged:minilm#int8", "passage", PASSAGES) == [None] * len(PASSAGES)


def test_duplicate_texts_in_one_call_are_embedded_once(minilm: tuple[Embedder, LoadReport], tmp_path: Path) -> None:
    encoder = Encoder("packaged:minilm", CountingLoad(minilm), EmbeddingCache(tmp_path / "cache.sqlite"))
    texts = ["alpha report", "beta memo", "alpha report", "alpha report", "beta memo"]

    vectors = encoder.encode(texts, "passage")

    assert encoder.stats.texts_embedded == 2
    assert vectors.shape == (5, 384) and vectors.dtype == np.float32
    np.testing.assert_array_equal(vectors[0], vectors[2])
    np.testing.assert_array_equal(vectors[0], vectors[3])
    np.testing.assert_array_equal(vectors[1], vectors[4])
    assert not np.array_equal(vectors[0], vectors[1])


def test_a_corrupt_cache_file_is_set_aside_and_rebuilt(minilm: tuple[Embedder, LoadReport], tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    garbage = os.urandom(8192)
    path.write_bytes(garbage)
    stale_wal = os.urandom(4096)
    (tmp_path / "cache.sqlite-wal").write_bytes(stale_wal)  # a stale journal beside it

    encoder = Encoder("packaged:minilm", CountingLoad(minilm), EmbeddingCache(path))
    vectors = encoder.encode(PASSAGES, "passage")

    unit_rows(vectors)
    assert (tmp_path / "cache.sqlite.corrupt").read_bytes() == garbage  # kept for inspection, not trusted
    wal = tmp_path / "cache.sqlite-wal"
    assert not wal.exists() or wal.read_bytes()[: len(stale_wal)] != stale_wal  # never replayed into the new file
    with sqlite3.connect(path) as conn:  # the rebuilt file is a real cache...
        assert conn.execute("SELECT count(*) FROM embeddings").fetchone() == (len(PASSAGES),)
    load = CountingLoad(None)  # ...that the next run reads
    again = Encoder("packaged:minilm", load, EmbeddingCache(path)).encode(PASSAGES, "passage")
    np.testing.assert_array_equal(again, vectors)
    assert load.calls == 0


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("folder", ["seeds", "seeds #1 ?v=2 100%"])
def test_seed_caches_are_read_but_never_written(
    minilm: tuple[Embedder, LoadReport], tmp_path: Path, folder: str
) -> None:
    seed = tmp_path / folder / "vectors.sqlite"
    seeded = PASSAGES[:3]
    fresh = PASSAGES[3:]
    builder = EmbeddingCache(seed)
    seeded_vectors = Encoder("packaged:minilm", CountingLoad(minilm), builder).encode(seeded, "passage")
    builder._disk.close()  # type: ignore[union-attr]
    before = _digest(seed)
    siblings = sorted(p.name for p in seed.parent.iterdir())

    load = CountingLoad(minilm)
    disk = tmp_path / "disk.sqlite"
    cache = EmbeddingCache(disk, seed_paths=[seed, tmp_path / "missing.sqlite"])
    encoder = Encoder("packaged:minilm", load, cache)

    np.testing.assert_array_equal(encoder.encode(seeded, "passage"), seeded_vectors)
    assert load.calls == 0 and encoder.stats.texts_embedded == 0  # the seed answered
    encoder.encode(PASSAGES, "passage")
    assert encoder.stats.texts_embedded == len(fresh) and load.calls == 1

    assert _digest(seed) == before
    assert sorted(p.name for p in seed.parent.iterdir()) == siblings  # not even a -wal or -shm file
    seed_only = EmbeddingCache(None, seed_paths=[seed])
    assert seed_only.get_many("packaged:minilm", "passage", fresh) == [None] * len(fresh)
    on_disk = EmbeddingCache(disk)
    assert all(v is not None for v in on_disk.get_many("packaged:minilm", "passage", fresh))


def test_a_listwise_reranker_puts_scores_back_in_document_order() -> None:
    from searchbox.retrieval.local_models import ListwiseReranker

    class OneListPass:  # the shape of jina-reranker-v3's `rerank`: best first, with each input's index
        def rerank(self, query: str, documents: list[str]) -> list[dict]:
            ranked = sorted(range(len(documents)), key=lambda i: -len(set(query.split()) & set(documents[i].split())))
            return [{"index": i, "relevance_score": 1.0 / (rank + 1)} for rank, i in enumerate(ranked)]

    reranker = ListwiseReranker(OneListPass(), "listwise")
    scores = reranker.score("office lease end", ["payroll", "the office lease will end in 2031", "lease"])
    assert scores == [pytest.approx(1 / 3), 1.0, 0.5] and reranker.score("q", []) == []


def test_a_local_model_loaded_once_is_reused_by_the_next_run(offline: None) -> None:
    settings = Settings.resolve(env={}, embed_model="packaged:minilm")
    first, _ = load_embedder(settings)
    again, report = load_embedder(settings)
    assert again is first and report.notes[-1] == "already loaded in this process: reused"
