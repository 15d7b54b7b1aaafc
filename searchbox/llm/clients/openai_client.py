"""Any OpenAI-compatible chat endpoint (llama-server, vLLM, a cloud API) behind `ChatModel`.

Streams POST /chat/completions over SSE. Connection errors, timeouts and HTTP 429/5xx are retried
with exponential backoff, and so is a stream that breaks off mid-way (the request is idempotent;
a "retry" event tells the display to drop what it showed). When every attempt failed the error is
`LLMUnavailable`; a prompt the server says is too long is `ContextOverflow`. The API key goes into
the Authorization header only and is scrubbed from every message. Messages name the endpoint as the
caller says (`shown_as`, from llm.disclosure: `the model server` unless an operator reads them), with
every form of its URL hidden from what the server or the transport said; the log names the URL.

LLM_STREAM: `on` always streams; `off` sends one plain request per response (no `stream`, no
`stream_options`) and reads the completion whole; `auto` streams until the endpoint refuses a streamed
request, then sends it plain requests for the rest of the process and says so once (a "notice" event).
A refusal is an HTTP 400 or 422 whose body names stream, stream_options or streaming: that is how
providers reject a parameter they do not take (a 5xx is retried as a failure of the server, and a 200
with one JSON completion to a stream request is read whole already, so neither needs a fallback).

THINKING goes out in the forms servers read (`thinking_fields`): `chat_template_kwargs.enable_thinking`, which
llama-server, vLLM and SGLang hand to the chat template, and for a level `reasoning_effort` (OpenAI's field,
which llama-server also hands to templates that read it); auto sends neither.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any
import httpx

from searchbox.cancel import CancelToken
from searchbox.llm.clients.assemble import CHARS_PER_TOKEN, ResponseBuilder
from searchbox.llm.disclosure import MODEL_SERVER, hidden, url_forms
from searchbox.llm.errors import ContextOverflow, LLMError, LLMUnavailable
from searchbox.llm.types import THINKING_LEVELS, ChatModel, Message, StreamEvent, Tool, ToolChoice, Usage
from searchbox.settings.urls import without_userinfo

log = logging.getLogger(__name__)

_OVERFLOW = re.compile(
    r"exceed_context_size|exceeds the available context size|maximum context length|context length"
    r"|context window|context_length_exceeded|prompt is too long|too many tokens",
    re.I,
)
_RETRY_STATUS = {408, 429}  # timeout, rate limit: worth another try, like any 5xx
_KEY_STATUS = {401, 403}  # the endpoint wants a key, or another one
_STREAM_REFUSAL_STATUS = {400, 422}
_NAMES_STREAM = re.compile(r"\bstream(?:_options|ing)?\b", re.I)
_STREAM_FIELDS = {"stream": True, "stream_options": {"include_usage": True}}
STREAM_MODES = ("auto", "on", "off")

# Chat URLs that refused a streamed request under LLM_STREAM=auto: plain requests to them for the rest of
# the process, so that every later response (and run) does not pay for the refusal again.
_plain_only: set[str] = set()
_plain_only_lock = threading.Lock()


def refused_streams(url: str) -> bool:
    """Whether the endpoint at `url` (any form LLAMA_URL takes) refused a stream in this process."""
    with _plain_only_lock:
        return chat_completions_url(url) in _plain_only


def refuses_streams(url: str) -> None:
    """The endpoint at `url` refused a stream: plain requests to it under LLM_STREAM=auto from now on."""
    with _plain_only_lock:
        _plain_only.add(chat_completions_url(url))


def thinking_fields(thinking: str) -> dict[str, Any]:
    """The request fields that carry THINKING: none for auto (the server's default), enable_thinking false
    for off, enable_thinking true and the effort for low, medium and high."""
    if thinking not in THINKING_LEVELS:
        raise ValueError(f"THINKING must be one of {', '.join(THINKING_LEVELS)}, got {thinking!r}")
    if thinking == "auto":
        return {}
    if thinking == "off":
        return {"chat_template_kwargs": {"enable_thinking": False}}
    return {"chat_template_kwargs": {"enable_thinking": True}, "reasoning_effort": thinking}


def is_stream_refusal(status: int, text: str) -> bool:
    """Whether an error answer refuses the request for streaming (its `stream` or `stream_options`)."""
    return status in _STREAM_REFUSAL_STATUS and bool(_NAMES_STREAM.search(text))


class OpenAIClient(ChatModel):
    def __init__(
        self,
        base_url: str,
        model_id: str = "",
        *,
        api_key: str = "",
        stream: str = "auto",
        shown_as: str | None = MODEL_SERVER,
        read_timeout_s: float = 600.0,  # a long prompt can take minutes to prefill before the first byte
        connect_timeout_s: float = 10.0,
        max_attempts: int = 4,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
    ) -> None:
        self.model_id = model_id or "default"
        self.url = chat_completions_url(base_url)
        self._logged_url = without_userinfo(self.url)
        # None: the reader may see the URL (an operator's app, a bench); else it is hidden behind the name.
        self._name = f"chat endpoint {self._logged_url}" if shown_as is None else shown_as
        self._hide = () if shown_as is None else tuple(url_forms(base_url) | url_forms(self.url))
        if stream not in STREAM_MODES:
            raise ValueError(f"LLM_STREAM must be one of {', '.join(STREAM_MODES)}, got {stream!r}")
        self.stream_mode = stream
        self._secret = api_key
        headers = {"Authorization": f"Bearer {self._secret}"} if self._secret else {}
        timeout = httpx.Timeout(read_timeout_s, connect=connect_timeout_s)
        self._http = httpx.Client(headers=headers, timeout=timeout)
        self.max_attempts = max(1, max_attempts)
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s

    def stream(
        self,
        messages: list[Message],
        tools: list[Tool] | None,
        *,
        max_tokens: int,
        temperature: float = 0.6,
        tool_choice: ToolChoice = "auto",
        seed: int | None = None,
        thinking: str = "auto",
        cancel: CancelToken | None = None,  # its consumer checks it between two events
    ) -> Iterator[StreamEvent]:
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            **thinking_fields(thinking),
        }
        if seed is not None:  # llama-server and OpenAI both read it
            body["seed"] = seed
        if tools:
            body["tools"] = tools
            body["tool_choice"] = tool_choice
        problem = ""
        for attempt in range(1, self.max_attempts + 1):
            if attempt > 1:
                time.sleep(min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 2)))
            builder = ResponseBuilder(tools)
            try:
                problem = yield from self._attempt(body, builder)
            except httpx.TransportError as exc:
                problem = self._scrub(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
            if not problem:
                return
            if builder.has_output:
                yield StreamEvent("retry", text=problem)
        raise self._failure(LLMUnavailable, f"failed {self.max_attempts} time(s); last: {problem}")

    def close(self) -> None:
        self._http.close()

    def _attempt(self, body: dict[str, Any], builder: ResponseBuilder) -> Iterator[StreamEvent]:
        """Run one request, yielding its events. Returns "" when done, else why it should be retried."""
        streamed = self._streams()
        started = time.monotonic()
        first: float | None = None
        with self._http.stream("POST", self.url, json={**body, **_STREAM_FIELDS} if streamed else body) as response:
            if response.status_code != 200:
                text = response.read().decode("utf-8", "replace")
                if streamed and self._refuses_stream(response.status_code, text):
                    yield StreamEvent("notice", text=self._fall_back(response.status_code, text))
                    return (yield from self._attempt(body, builder))
                return self._http_problem(response.status_code, text)
            live = not response.headers.get("content-type", "").startswith("application/json")
            if live:
                chunks: Iterable[dict[str, Any]] = self._sse_chunks(response)
            else:  # a plain request's answer, or a server that ignores stream=True: one whole completion
                chunks = [self._json(response.read().decode("utf-8", "replace"))]
            for chunk in chunks:
                events = builder.add_chunk(chunk)
                if live and first is None and builder.has_output:  # a whole completion has no first token
                    first = time.monotonic()
                yield from events
        if builder.finish_reason is None:
            return "the stream ended before the response was complete"
        if builder.usage is None:
            usage = _estimated_usage(body, builder.output_deltas)
        else:
            usage = _usage(builder.usage, builder.server_timings)
        timings = _timings(builder.server_timings, usage, started, first, time.monotonic())
        yield from builder.finish(usage, timings)
        return ""

    def _streams(self) -> bool:
        if self.stream_mode == "auto":
            return not refused_streams(self.url)
        return self.stream_mode == "on"

    def _refuses_stream(self, status: int, text: str) -> bool:
        return self.stream_mode == "auto" and is_stream_refusal(status, text)

    def _fall_back(self, status: int, text: str) -> str:
        """Plain requests to this endpoint from now on; what the run's feed says of it."""
        refuses_streams(self.url)
        log.warning("chat endpoint %s refused a streamed request (HTTP %d: %s): plain requests from now on",
                    self._logged_url, status, self._without_secret(text[:300]))
        return (f"{self._name} refused a streamed request (HTTP {status}: {self._scrub(text[:200])}): it gets plain "
                "requests for the rest of this process (LLM_STREAM=auto; LLM_STREAM=off skips the refusal)")

    def _sse_chunks(self, response: httpx.Response) -> Iterator[dict[str, Any]]:
        for line in response.iter_lines():
            if not line.startswith("data:"):
                continue  # blank separators, comments, event names
            data = line[5:].strip()
            if data == "[DONE]":
                return
            yield self._json(data)

    def _json(self, data: str) -> dict[str, Any]:
        try:
            chunk = json.loads(data)
        except ValueError:
            chunk = None
        if not isinstance(chunk, dict):
            raise self._failure(LLMError, f"sent data that is not a JSON object: {data[:120]!r}")
        if "error" in chunk:
            raise self._error_from_body(json.dumps(chunk["error"]), "in the stream")
        return chunk

    def _http_problem(self, status: int, text: str) -> str:
        """A retryable status becomes the reason to retry; anything else is raised."""
        if (status >= 500 and not _OVERFLOW.search(text)) or status in _RETRY_STATUS:
            return self._scrub(f"HTTP {status}: {text[:200]}")
        if status in _KEY_STATUS:
            raise self._failure(LLMError, self._key_problem(status, text))
        raise self._error_from_body(text, f"with HTTP {status}")

    def _key_problem(self, status: int, text: str) -> str:
        """What an endpoint that refused the request for its key wants: the knob that gives one."""
        said = f"(HTTP {status}: {text[:200]})"
        if self._secret:
            return f"refused the API key {said}: check LLAMA_API_KEY"
        return f"needs an API key {said}: set LLAMA_API_KEY"

    def _error_from_body(self, text: str, how: str) -> LLMError:
        return self._failure(ContextOverflow if _OVERFLOW.search(text) else LLMError, f"answered {how}: {text[:500]}")

    def _failure(self, kind: type[LLMError], what: str) -> LLMError:
        """The error as anyone may read it; the app's log names the URL for the operator."""
        log.warning("chat endpoint %s %s", self._logged_url, self._without_secret(what))
        return kind(f"{self._name} {self._scrub(what)}")

    def _scrub(self, text: str) -> str:
        """`text` without the API key and, unless the reader may see it, any form of the endpoint's URL."""
        return hidden(self._without_secret(text), self._hide)

    def _without_secret(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text


def chat_completions_url(base_url: str) -> str:
    """Accepts http://host:port, http://host:port/v1 or the full .../chat/completions URL."""
    url = base_url.rstrip("/")
    if url.endswith("/chat/completions"):
        return url
    return url + ("/chat/completions" if url.endswith("/v1") else "/v1/chat/completions")


def _usage(raw: dict[str, Any], server_timings: dict[str, Any] | None) -> Usage:
    cached = (raw.get("prompt_tokens_details") or {}).get("cached_tokens")
    if cached is None and server_timings:
        cached = server_timings.get("cache_n")
    # OpenAI's place for it, and the top-level one some providers use; counted in completion_tokens already.
    reasoning = (raw.get("completion_tokens_details") or {}).get("reasoning_tokens", raw.get("reasoning_tokens"))
    return Usage(
        input=int(raw.get("prompt_tokens") or 0),
        output=int(raw.get("completion_tokens") or 0),
        cache_read=int(cached or 0),
        reasoning=int(reasoning or 0),
        reasoning_by="server" if reasoning is not None else "",
    )


def _estimated_usage(body: dict[str, Any], output_deltas: int) -> Usage:
    """Token counts for a server that sends none (llama-cpp-python's server never does in a stream,
    whatever stream_options says): the prompt estimated from its characters, the output counted as
    the streamed deltas. Marked estimated in the records, so nothing takes it for the server's count."""
    prompt = json.dumps(body["messages"], ensure_ascii=False) + json.dumps(body.get("tools") or [], ensure_ascii=False)
    return Usage(input=max(1, len(prompt) // CHARS_PER_TOKEN), output=output_deltas, estimated=True)


def _timings(
    server: dict[str, Any] | None, usage: Usage, started: float, first: float | None, ended: float
) -> dict[str, float]:
    """llama-server's own prefill/decode timings when it sent them, else wall-clock estimates."""
    timings: dict[str, float] = {"wall_ms": (ended - started) * 1000}
    if first is not None:
        timings["first_token_ms"] = (first - started) * 1000
    if server and "prompt_ms" in server and "predicted_ms" in server:
        timings.update(
            prefill_ms=float(server["prompt_ms"]),
            decode_ms=float(server["predicted_ms"]),
            prefill_tokens_per_s=float(server.get("prompt_per_second") or 0.0),
            decode_tokens_per_s=float(server.get("predicted_per_second") or 0.0),
        )
    elif first is not None:
        prefill_s, decode_s = first - started, ended - first
        timings.update(prefill_ms=prefill_s * 1000, decode_ms=decode_s * 1000)
        if prefill_s > 0 and usage.input:
            timings["prefill_tokens_per_s"] = (usage.input - usage.cache_read) / prefill_s
        if decode_s > 0 and usage.output > 1:
            timings["decode_tokens_per_s"] = (usage.output - 1) / decode_s
    return timings
