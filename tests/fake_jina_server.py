"""A real local HTTP server that speaks the Jina API's embeddings and rerank formats, for tests.

    with FakeJinaServer(api_key="k") as server:
        settings = Settings.resolve(env={}, jina_api_url=server.url + "/v1", jina_api_key="k", ...)

`POST /v1/embeddings` answers with deterministic hashed bag-of-words vectors (texts that share words
point the same way) and `POST /v1/rerank` scores by word overlap. Every request is recorded
(`server.requests`); `fail_next(n, status)` makes the next n requests fail, e.g. with 503. A model
the API does not serve by that name (a hub id) is refused with HTTP 422, as the API refuses it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIM = 32
_WORD = re.compile(r"[a-z0-9]+")
# The names the API serves (its model list): hub ids such as jinaai/jina-embeddings-v5-text-small are
# not among them and are refused, as the API refuses them.
API_MODELS = {
    "jina-embeddings-v5-text-small", "jina-embeddings-v5-text-nano", "jina-embeddings-v4", "jina-embeddings-v3",
    "jina-clip-v2", "jina-reranker-v3", "jina-reranker-m0", "jina-reranker-v2-base-multilingual",
}


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def fake_embedding(text: str, dim: int = DIM) -> list[float]:
    """A hashed bag of words: each word adds +-1 to one coordinate. Not normalized."""
    vector = [0.0] * dim
    for word in words(text):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        vector[digest[0] % dim] += 1.0 if digest[1] & 1 else -1.0
    if not any(vector):
        vector[0] = 1.0  # an empty text still gets a usable direction
    return vector


def overlap_score(query: str, document: str) -> float:
    return float(len(set(words(query)) & set(words(document))))


@dataclass
class RecordedRequest:
    path: str
    body: Any
    headers: dict[str, str]


class FakeJinaServer:
    def __init__(self, api_key: str = "test-key", *, dim: int = DIM, honour_normalized: bool = True) -> None:
        self.api_key = api_key
        self.dim = dim
        # False: vectors come back unnormalized whatever the request says, so the client's own
        # normalization is what the test sees.
        self.honour_normalized = honour_normalized
        self.requests: list[RecordedRequest] = []
        self._failures: list[tuple[int, str]] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- control ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def fail_next(self, n: int, status: int = 503, body: str | None = None) -> None:
        """The next n requests (after the key check) answer `status` with `body` (a JSON error by default)."""
        text = body if body is not None else json.dumps({"detail": f"fake failure (HTTP {status})"})
        with self._lock:
            self._failures.extend([(status, text)] * n)

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()
            self._failures.clear()

    def paths(self) -> list[str]:
        with self._lock:
            return [r.path for r in self.requests]

    def start(self) -> FakeJinaServer:
        server = self

        class Handler(_Handler):
            fake = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-jina", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join(timeout=5)  # type: ignore[union-attr]
            self._httpd = None

    def __enter__(self) -> FakeJinaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- behaviour -------------------------------------------------------------------------

    def handle(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, str]:
        try:
            body: Any = json.loads(raw or b"null")
        except ValueError:
            body = None
        with self._lock:
            self.requests.append(RecordedRequest(path, body, headers))
            if headers.get("authorization") != f"Bearer {self.api_key}":
                return 401, json.dumps({"detail": "Unauthorized: invalid API key"})
            if self._failures:
                return self._failures.pop(0)
        if not isinstance(body, dict):
            return 400, json.dumps({"detail": "body must be a JSON object"})
        if "model" in body and body["model"] not in API_MODELS:
            return 422, json.dumps({"detail": f"Model {body['model']!r} is not available; use one of the API's model names"})
        if path == "/v1/embeddings":
            return self._embeddings(body)
        if path == "/v1/rerank":
            return self._rerank(body)
        return 404, json.dumps({"detail": f"no route {path}"})

    def _embeddings(self, body: dict[str, Any]) -> tuple[int, str]:
        texts = body.get("input")
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts) or "model" not in body:
            return 422, json.dumps({"detail": "input must be a list of strings, model is required"})
        data = []
        for i, text in enumerate(texts):
            vector = fake_embedding(text, self.dim)
            if body.get("normalized") and self.honour_normalized:
                norm = math.sqrt(sum(v * v for v in vector))
                vector = [v / norm for v in vector]
            data.append({"object": "embedding", "index": i, "embedding": vector})
        tokens = sum(len(words(t)) for t in texts)
        return 200, json.dumps({"model": body["model"], "object": "list", "data": data, "usage": {"total_tokens": tokens}})

    def _rerank(self, body: dict[str, Any]) -> tuple[int, str]:
        query, documents = body.get("query"), body.get("documents")
        if not isinstance(query, str) or not isinstance(documents, list) or "model" not in body:
            return 422, json.dumps({"detail": "query, documents and model are required"})
        results = []
        for i, doc in enumerate(documents):
            item: dict[str, Any] = {"index": i, "relevance_score": overlap_score(query, doc)}
            if body.get("return_documents"):
                item["document"] = {"text": doc}
            results.append(item)
        results.sort(key=lambda r: -r["relevance_score"])  # stable: ties keep input order
        top_n = body.get("top_n")
        if isinstance(top_n, int):
            results = results[:top_n]
        tokens = len(words(query)) + sum(len(words(d)) for d in documents)
        return 200, json.dumps({"model": body["model"], "results": results, "usage": {"total_tokens": tokens}})


class _Handler(BaseHTTPRequestHandler):
    fake: FakeJinaServer
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, text = self.fake.handle(self.path, headers, raw)
        payload = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass
