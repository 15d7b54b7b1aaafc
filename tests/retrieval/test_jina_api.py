"""The Jina API backends, end to end against a real local HTTP server that speaks the API's format."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from fake_jina_server import FakeJinaServer, fake_embedding

from searchbox.retrieval.cache import EmbeddingCache
from searchbox.retrieval.encoder import Encoder
from searchbox.retrieval.interfaces import ModelLoadError
from searchbox.retrieval.models import embedding_cache_name, load_embedder, load_reranker
from searchbox.settings import Settings

KEY = "jina_test_0123456789abcdef"


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    # httpx honours proxy variables; requests to the local server must go straight to it.
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeJinaServer]:
    with FakeJinaServer(api_key=KEY, honour_normalized=False) as s:
        yield s


@pytest.fixture
def fake(server: FakeJinaServer) -> FakeJinaServer:
    server.clear()
    return server


def api_settings(server: FakeJinaServer, key: str = KEY, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "embed_backend": "api",
        "rerank_backend": "api",
        "jina_api_key": key,
        "jina_api_url": server.url + "/v1",
        "rerank_model": "jina-reranker-v3",
        "embed_model": "jina-embeddings-v5-text-small",
    }
    values.update(overrides)
    return Settings.resolve(env={}, **values)


def fast_retries(component: object) -> None:
    """The client backs off 0.5 s, 1 s, 2 s...; the tests need the retries, not the waiting."""
    component._client._backoff = 0.0  # type: ignore[attr-defined]


def expected(text: str) -> np.ndarray:
    v = np.asarray(fake_embedding(text), dtype=np.float32)
    return v / np.linalg.norm(v)


# -- embeddings ------------------------------------------------------------------------------


def test_embeddings_are_normalized_in_input_order_with_the_role_task(fake: FakeJinaServer) -> None:
    embedder, report = load_embedder(api_settings(fake))
    assert (report.backend, report.device) == ("api", "api")
    assert embedder.name == "api:jina-embeddings-v5-text-small"
    texts = ["revenue grew in europe", "the supplier contract ends in march", "revenue fell in asia"]

    passages = embedder.embed(texts, "passage")
    query = embedder.embed(["how did revenue grow"], "query")

    assert passages.shape == (3, 32) and passages.dtype == np.float32
    # the server sent raw vectors: normalization is the client's own
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, rtol=1e-5)
    for row, text in zip(passages, texts):
        np.testing.assert_allclose(row, expected(text), rtol=1e-5, atol=1e-6)
    assert query.shape == (1, 32)

    assert [r.path for r in fake.requests] == ["/v1/embeddings", "/v1/embeddings"]
    first, second = (r.body for r in fake.requests)
    assert first == {"model": "jina-embeddings-v5-text-small", "input": texts, "task": "retrieval.passage", "normalized": True}
    assert second["task"] == "retrieval.query" and second["input"] == ["how did revenue grow"]
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in fake.requests)


def test_large_inputs_go_in_batches_of_at_most_128(fake: FakeJinaServer) -> None:
    embedder, _ = load_embedder(api_settings(fake))
    texts = [f"document number {i} about topic {i % 7}" for i in range(300)]

    vectors = embedder.embed(texts, "passage")

    assert vectors.shape == (300, 32)
    sizes = [len(r.body["input"]) for r in fake.requests]
    assert sizes == [128, 128, 44]
    sent = [t for r in fake.requests for t in r.body["input"]]
    assert sent == texts
    for i in (0, 127, 128, 255, 256, 299):  # rows line up with inputs across batch edges
        np.testing.assert_allclose(vectors[i], expected(texts[i]), rtol=1e-5, atol=1e-6)


def test_similar_texts_embed_closer_through_the_cached_encoder(fake: FakeJinaServer, tmp_path: Path) -> None:
    settings = api_settings(fake)
    name = embedding_cache_name(settings)
    assert name == "api:jina-embeddings-v5-text-small"
    encoder = Encoder(name, lambda: load_embedder(settings), EmbeddingCache(tmp_path / "cache.sqlite"))
    docs = ["quarterly revenue grew strongly", "the office cat sleeps all day"]

    d = encoder.encode(docs, "passage")
    q = encoder.encode(["revenue grew"], "query")[0]
    assert d[0] @ q > d[1] @ q

    calls = len(fake.requests)
    encoder.encode(docs, "passage")
    encoder.encode(["revenue grew"], "query")
    assert len(fake.requests) == calls  # all from the cache: no new API calls


def test_empty_input_makes_no_request(fake: FakeJinaServer) -> None:
    embedder, _ = load_embedder(api_settings(fake))
    assert embedder.embed([], "passage").shape[0] == 0
    reranker, _ = load_reranker(api_settings(fake), lambda texts, role: np.zeros((0, 0)))
    assert reranker.score("query", []) == []
    assert fake.requests == []


# -- keys and errors -------------------------------------------------------------------------


def test_missing_key_is_a_load_error_naming_the_variable(fake: FakeJinaServer) -> None:
    settings = api_settings(fake, key="")
    with pytest.raises(ModelLoadError, match="JINA_API_KEY"):
        load_embedder(settings)
    with pytest.raises(ModelLoadError, match="JINA_API_KEY"):
        load_reranker(settings, lambda texts, role: np.zeros((0, 0)))
    assert fake.requests == []


def test_wrong_key_is_rejected_without_retrying(fake: FakeJinaServer) -> None:
    embedder, _ = load_embedder(api_settings(fake, key="not-the-key"))
    fast_retries(embedder)
    with pytest.raises(ModelLoadError, match="rejected JINA_API_KEY") as info:
        embedder.embed(["hello"], "query")
    assert "401" in str(info.value) and "not-the-key" not in str(info.value)
    assert len(fake.requests) == 1


def test_two_503s_then_success_succeeds(fake: FakeJinaServer) -> None:
    embedder, _ = load_embedder(api_settings(fake))
    fast_retries(embedder)
    fake.fail_next(2, 503)

    vectors = embedder.embed(["alpha beta", "gamma"], "passage")

    assert vectors.shape == (2, 32)
    assert len(fake.requests) == 3
    assert all(r.body["input"] == ["alpha beta", "gamma"] for r in fake.requests)  # the same batch resent


def test_persistent_503_is_a_load_error_after_the_retries(fake: FakeJinaServer) -> None:
    embedder, _ = load_embedder(api_settings(fake))
    fast_retries(embedder)
    fake.fail_next(50, 503)

    with pytest.raises(ModelLoadError, match=r"did not answer after 5 tries \(HTTP 503\)"):
        embedder.embed(["alpha"], "passage")
    assert len(fake.requests) == 5  # 1 try + 4 retries


def test_429_is_retried_too(fake: FakeJinaServer) -> None:
    reranker, _ = load_reranker(api_settings(fake), lambda texts, role: np.zeros((0, 0)))
    fast_retries(reranker)
    fake.fail_next(1, 429)
    assert reranker.score("alpha", ["alpha", "beta"]) == [1.0, 0.0]
    assert len(fake.requests) == 2


def test_a_client_error_is_not_retried_and_quotes_the_server(fake: FakeJinaServer) -> None:
    embedder, _ = load_embedder(api_settings(fake))
    fast_retries(embedder)
    fake.fail_next(1, 400, '{"detail": "model jina-embeddings-v5-text-small does not support task"}')
    with pytest.raises(ModelLoadError, match=r"refused the request \(HTTP 400\).*does not support task"):
        embedder.embed(["alpha"], "passage")
    assert len(fake.requests) == 1


def test_a_body_that_is_not_json_is_a_load_error(fake: FakeJinaServer) -> None:
    embedder, _ = load_embedder(api_settings(fake))
    fake.fail_next(1, 200, "<html>captive portal</html>")
    with pytest.raises(ModelLoadError, match="not JSON.*JINA_API_URL"):
        embedder.embed(["alpha"], "passage")


def test_an_unreachable_api_is_a_load_error_after_the_retries() -> None:
    with FakeJinaServer(api_key=KEY) as gone:
        url = gone.url
    settings = Settings.resolve(env={}, embed_backend="api", jina_api_key=KEY, jina_api_url=url + "/v1")
    embedder, _ = load_embedder(settings)
    fast_retries(embedder)
    with pytest.raises(ModelLoadError, match="did not answer after 5 tries.*Connect"):
        embedder.embed(["alpha"], "passage")


def test_the_key_never_appears_in_the_recorded_config(fake: FakeJinaServer) -> None:
    settings = api_settings(fake)
    config = settings.as_config()
    assert config["JINA_API_KEY"] == "set"
    assert KEY not in repr(config)
    assert api_settings(fake, key="").as_config()["JINA_API_KEY"] == "unset"
    _, embed_report = load_embedder(settings)
    _, rerank_report = load_reranker(settings, lambda texts, role: np.zeros((0, 0)))
    assert KEY not in repr(embed_report.as_dict()) + repr(rerank_report.as_dict())


@pytest.mark.parametrize("preset", ["default", "nano"])
def test_the_presets_hub_ids_are_sent_as_the_apis_model_names(fake: FakeJinaServer, preset: str) -> None:
    # The presets' knobs hold hub ids (jinaai/...), which the API refuses.
    settings = Settings.resolve(env={}, retrieval_preset=preset, embed_backend="api", rerank_backend="api",
                                jina_api_key=KEY, jina_api_url=fake.url + "/v1")
    assert settings.embed_model.startswith("jinaai/") and settings.rerank_model.startswith("jinaai/")
    embedder, _ = load_embedder(settings)
    reranker, _ = load_reranker(settings, lambda texts, role: np.zeros((0, 0)))
    assert embedder.embed(["revenue grew"], "query").shape == (1, 32)
    assert reranker.score("revenue", ["revenue grew", "cats"])[0] == 1.0
    sent = [r.body["model"] for r in fake.requests]
    assert sent == [settings.embed_model.removeprefix("jinaai/"), settings.rerank_model.removeprefix("jinaai/")]
    assert embedder.name == f"api:{sent[0]}"


def test_v5s_retrieval_repo_is_the_plain_api_model(fake: FakeJinaServer) -> None:
    embedder, _ = load_embedder(api_settings(fake, embed_model="jinaai/jina-embeddings-v5-text-nano-retrieval"))
    embedder.embed(["alpha"], "passage")
    assert fake.requests[0].body["model"] == "jina-embeddings-v5-text-nano"


# -- reranking -------------------------------------------------------------------------------


def test_reranker_scores_line_up_with_the_input_documents(fake: FakeJinaServer) -> None:
    reranker, report = load_reranker(api_settings(fake), lambda texts, role: np.zeros((0, 0)))
    assert (report.model, report.backend) == ("jina-reranker-v3", "api")
    assert reranker.name == "api:jina-reranker-v3"
    docs = [
        "the cat sat on the mat",
        "quarterly revenue grew in europe",
        "revenue",
        "revenue grew in europe and asia this quarter",
    ]

    scores = reranker.score("did revenue grow in europe this quarter", docs)

    # the server answers sorted by score (indices 3, 1, 2, 0); the client puts them back in input order
    assert scores == [0.0, 3.0, 1.0, 5.0]
    (request,) = fake.requests
    assert request.path == "/v1/rerank"
    assert request.body == {
        "model": "jina-reranker-v3",
        "query": "did revenue grow in europe this quarter",
        "documents": docs,
        "top_n": 4,
        "return_documents": False,
    }


def test_rerank_model_none_never_calls_the_api(fake: FakeJinaServer) -> None:
    settings = api_settings(fake, rerank_model="none")
    encoded: list[tuple[tuple[str, ...], str]] = []

    def encode(texts: list[str], role: str) -> np.ndarray:
        encoded.append((tuple(texts), role))
        return np.stack([expected(t) for t in texts])

    reranker, report = load_reranker(settings, encode)
    assert report.backend == "cosine"
    scores = reranker.score("revenue grew", ["revenue grew fast", "cats"])
    assert scores[0] > scores[1]
    assert encoded == [(("revenue grew",), "query"), (("revenue grew fast", "cats"), "passage")]
    assert fake.requests == []
