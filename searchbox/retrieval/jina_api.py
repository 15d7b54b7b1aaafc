"""The Jina HTTP API as an embedder and a reranker: batched, retried, with errors a person can act on."""

from __future__ import annotations

import re
import time
from typing import Any

import numpy as np

from searchbox.retrieval.interfaces import ModelLoadError, Role, normalize_rows

_TASKS: dict[Role, str] = {"query": "retrieval.query", "passage": "retrieval.passage"}
_RETRY_STATUS = {408, 429, 500, 502, 503, 504}
# The knobs hold hub ids (the local backend's); the API names the same models without the owner, and
# takes the task in the request, so v5's retrieval repo is the plain model there.
_HUB_OWNER = "jinaai/"
_V5_TASK_REPO = re.compile(r"^(jina-embeddings-v5-text-(?:small|nano))-retrieval$")


def api_model_name(model: str) -> str:
    """The Jina API's name for a model knob: jinaai/jina-embeddings-v5-text-small -> jina-embeddings-v5-text-small."""
    name = model.removeprefix(_HUB_OWNER)
    task_repo = _V5_TASK_REPO.match(name)
    return task_repo.group(1) if task_repo else name


class JinaApiClient:
    def __init__(self, api_key: str, base_url: str, *, retries: int = 4, backoff: float = 0.5, timeout: float = 60.0) -> None:
        if not api_key:
            raise ModelLoadError("the api backend needs JINA_API_KEY; set it, or use EMBED_BACKEND=local")
        import httpx

        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {api_key}", "Accept": "application/json"},
            timeout=timeout,
        )
        self._retries = retries
        self._backoff = backoff

    def post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        import httpx

        last_error = ""
        for attempt in range(self._retries + 1):
            if attempt:
                time.sleep(self._backoff * 2 ** (attempt - 1))
            try:
                response = self._http.post(path, json=payload)
            except httpx.HTTPError as exc:
                last_error = f"{type(exc).__name__}: {exc}"
                continue
            if response.status_code in (401, 403):
                raise ModelLoadError("the Jina API rejected JINA_API_KEY (HTTP %d); check the key" % response.status_code)
            if response.status_code in _RETRY_STATUS:
                last_error = f"HTTP {response.status_code}"
                continue
            if response.status_code >= 400:
                raise ModelLoadError(f"the Jina API refused the request (HTTP {response.status_code}): {response.text[:300]}")
            try:
                return response.json()
            except ValueError:
                raise ModelLoadError(
                    f"the Jina API answered HTTP {response.status_code} with a body that is not JSON "
                    f"(check JINA_API_URL): {response.text[:300]}"
                ) from None
        raise ModelLoadError(f"the Jina API did not answer after {self._retries + 1} tries ({last_error})")


class JinaApiEmbedder:
    batch_size = 128

    def __init__(self, model: str, api_key: str, base_url: str) -> None:
        self._model = api_model_name(model)
        self.name = f"api:{self._model}"
        self._client = JinaApiClient(api_key, base_url)

    def embed(self, texts: list[str], role: Role) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            body = self._client.post(
                "/embeddings", {"model": self._model, "input": batch, "task": _TASKS[role], "normalized": True}
            )
            data = sorted(body.get("data", []), key=lambda item: item["index"])
            if len(data) != len(batch):
                raise ModelLoadError(f"the Jina API returned {len(data)} embeddings for {len(batch)} texts")
            rows.extend(item["embedding"] for item in data)
        return normalize_rows(np.asarray(rows, dtype=np.float32)) if rows else np.zeros((0, 0), np.float32)


class JinaApiReranker:
    def __init__(self, model: str, api_key: str, base_url: str) -> None:
        self._model = api_model_name(model)
        self.name = f"api:{self._model}"
        self._client = JinaApiClient(api_key, base_url)

    def score(self, query: str, documents: list[str]) -> list[float]:
        if not documents:
            return []
        body = self._client.post(
            "/rerank",
            {"model": self._model, "query": query, "documents": documents, "top_n": len(documents), "return_documents": False},
        )
        scores = [float("-inf")] * len(documents)
        for item in body.get("results", []):
            scores[int(item["index"])] = float(item["relevance_score"])
        return scores
