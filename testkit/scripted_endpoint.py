"""A scripted OpenAI-compatible chat endpoint on 127.0.0.1, for tests of anything that talks to an LLM.

It answers POST .../chat/completions (streamed SSE when the request says `stream: true`, else one
JSON completion) by playing a script, one item per request:

- `Reply(...)`: text (which may hold tool-call markup), reasoning, native tool calls, usage, timings;
- `Fault.refuse()`, `Fault.http(503)`, `Fault.hang(s)`, `Fault.drop(reply, after_chunks)`,
  `Fault.garbage()`, `Fault.overflow()`: the ways an endpoint fails;
- a callable taking the request body and returning either of the above (answer by what was sent).

When the script runs out, `default` answers (HTTP 500 when there is none). Every request is
recorded in `.requests`. Two ways a hosted provider differs, before any script item is used:
`api_key=` answers HTTP 401 to a request without `Authorization: Bearer <key>`, as OpenAI does;
`refuses_stream=True` answers HTTP 400 to one with `stream` or `stream_options`.

    with ScriptedEndpoint([Reply(text="hi")]) as endpoint:
        client = OpenAIClient(endpoint.url, "scripted")
        ...
        assert endpoint.requests[0].body["messages"][0]["role"] == "system"
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

LLAMA_SERVER_OVERFLOW = (
    "request ({n_prompt} tokens) exceeds the available context size ({n_ctx} tokens), try increasing it"
)


@dataclass
class Reply:
    text: str = ""
    reasoning: str = ""  # sent as `reasoning_content` deltas
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {"name", "arguments": dict | str, "id"?}
    usage: dict[str, Any] | None = field(default_factory=lambda: {"prompt_tokens": 12, "completion_tokens": 5})
    timings: dict[str, Any] | None = None  # llama-server's `timings` object, sent with the last chunk
    finish_reason: str | None = None  # default: "tool_calls" when there are tool calls, else "stop"
    chunk_chars: int = 3  # characters of text per streamed delta
    delay_s: float = 0.0  # pause between chunks
    whole: bool = False  # answer with one JSON completion even when the request asked for a stream


@dataclass
class Fault:
    kind: Literal["refuse", "status", "hang", "drop", "garbage", "overflow"]
    status: int = 503
    body: str = ""
    seconds: float = 0.0
    after_chunks: int = 2
    reply: Reply | None = None

    @classmethod
    def refuse(cls) -> Fault:
        """Close the connection without answering."""
        return cls("refuse")

    @classmethod
    def http(cls, status: int = 503, message: str = "Service Unavailable") -> Fault:
        return cls("status", status=status, body=json.dumps({"error": {"code": status, "message": message}}))

    @classmethod
    def hang(cls, seconds: float) -> Fault:
        """Say nothing for `seconds` (longer than the client's timeout), then close."""
        return cls("hang", seconds=seconds)

    @classmethod
    def drop(cls, reply: Reply | None = None, after_chunks: int = 2) -> Fault:
        """Start streaming `reply`, then close the connection mid-stream."""
        return cls("drop", reply=reply or Reply(text="partial answer that never ends"), after_chunks=after_chunks)

    @classmethod
    def garbage(cls) -> Fault:
        """A 200 stream whose data lines are not JSON."""
        return cls("garbage")

    @classmethod
    def overflow(cls, n_prompt: int = 9412, n_ctx: int = 8192) -> Fault:
        """llama-server's answer to a prompt longer than its context."""
        error = {
            "code": 400,
            "message": LLAMA_SERVER_OVERFLOW.format(n_prompt=n_prompt, n_ctx=n_ctx),
            "type": "exceed_context_size_error",
            "n_prompt_tokens": n_prompt,
            "n_ctx": n_ctx,
        }
        return cls("overflow", status=400, body=json.dumps({"error": error}))


ScriptItem = Reply | Fault | Callable[[dict[str, Any]], "Reply | Fault"]


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class ScriptedEndpoint:
    def __init__(self, script: Iterable[ScriptItem] = (), *, default: ScriptItem | None = None, model_id: str = "scripted",
                 port: int = 0, api_key: str = "", refuses_stream: bool = False) -> None:
        self.api_key = api_key
        self.refuses_stream = refuses_stream
        self._script: deque[ScriptItem] = deque(script)
        self.port = port  # 0: any free one; a given one lets a stopped endpoint come back at the same URL
        self.default = default
        self.model_id = model_id
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL ending in /v1, as LLAMA_URL would be set."""
        if self._server is None:
            raise RuntimeError("the endpoint is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> str:
        self._stopping.clear()
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler_for(self))
        self._server.daemon_threads = True
        # A short poll interval makes stop() quick.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), name="scripted-endpoint", daemon=True)
        self._thread.start()
        return self.url

    def stop(self) -> None:
        self._stopping.set()  # wakes hanging handlers
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def add(self, *items: ScriptItem) -> None:
        with self._lock:
            self._script.extend(items)

    def __enter__(self) -> ScriptedEndpoint:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _refusal(self, authorization: str, body: dict[str, Any]) -> tuple[int, bytes] | None:
        """The provider's answer to a request without its key, or asking for a stream it does not give."""
        if self.api_key and authorization != f"Bearer {self.api_key}":
            error = {"message": "Incorrect API key provided. You must provide a valid API key.",
                     "type": "invalid_request_error", "code": "invalid_api_key"}
            return 401, json.dumps({"error": error}).encode()
        if self.refuses_stream and ("stream" in body or "stream_options" in body):
            error = {"message": "stream is not supported by this endpoint", "type": "invalid_request_error",
                     "param": "stream"}
            return 400, json.dumps({"error": error}).encode()
        return None

    def _next(self, body: dict[str, Any]) -> Reply | Fault:
        with self._lock:
            item = self._script.popleft() if self._script else self.default
        if item is None:
            return Fault.http(500, "scripted endpoint: the script is exhausted")
        return item(body) if callable(item) else item


def _handler_for(endpoint: ScriptedEndpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"_unparsed": raw.decode("utf-8", "replace")}
            endpoint.requests.append(RecordedRequest(self.path, dict(self.headers.items()), body))
            self.close_connection = True
            if not self.path.rstrip("/").endswith("/chat/completions"):
                return self._send_json(404, {"error": {"code": 404, "message": f"no route {self.path}"}})
            if refused := endpoint._refusal(self.headers.get("Authorization", ""), body):
                return self._send_raw(*refused)
            item = endpoint._next(body)
            if isinstance(item, Reply):
                if body.get("stream") and not item.whole:
                    return self._stream(item)
                return self._send_json(200, _completion(item, endpoint.model_id))
            self._fault(item, bool(body.get("stream")))

        def _fault(self, fault: Fault, stream: bool) -> None:
            if fault.kind == "refuse":
                self._cut()
            elif fault.kind in ("status", "overflow"):
                self._send_raw(fault.status, fault.body.encode())
            elif fault.kind == "hang":
                endpoint._stopping.wait(fault.seconds)
                self._cut()
            elif fault.kind == "garbage":
                self._start_sse()
                self._chunk(b"data: <html>upstream proxy error</html>\n\n")
                self._chunk(b"data: [DONE]\n\n")
                self._chunk(b"")
            elif fault.kind == "drop":
                assert fault.reply is not None
                if stream:
                    self._start_sse()
                    for n, event in enumerate(_sse_events(fault.reply, endpoint.model_id)):
                        if n >= fault.after_chunks:
                            break
                        self._chunk(event)
                else:
                    data = json.dumps(_completion(fault.reply, endpoint.model_id)).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data[: len(data) // 2])
                self._cut()

        def _stream(self, reply: Reply) -> None:
            self._start_sse()
            for event in _sse_events(reply, endpoint.model_id):
                if reply.delay_s and endpoint._stopping.wait(reply.delay_s):
                    return
                self._chunk(event)
            self._chunk(b"")

        def _start_sse(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()

        def _chunk(self, data: bytes) -> None:
            """One HTTP chunk; an empty one ends the body."""
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def _send_json(self, status: int, payload: dict[str, Any]) -> None:
            self._send_raw(status, json.dumps(payload).encode())

        def _send_raw(self, status: int, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        def _cut(self) -> None:
            """Drop the connection at once, mid-response if one was started."""
            self.wfile.flush()
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    return Handler


def _tool_call_parts(reply: Reply) -> list[tuple[str, str, str]]:
    parts = []
    for n, call in enumerate(reply.tool_calls):
        arguments = call.get("arguments", {})
        parts.append((call.get("id", f"call_{n}"), call["name"], arguments if isinstance(arguments, str) else json.dumps(arguments)))
    return parts


def _finish_reason(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _sse_events(reply: Reply, model: str) -> Iterator[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        payload = {
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    size = max(1, reply.chunk_chars)
    yield chunk({"role": "assistant", "content": None})
    for i in range(0, len(reply.reasoning), size):
        yield chunk({"reasoning_content": reply.reasoning[i : i + size]})
    for i in range(0, len(reply.text), size):
        yield chunk({"content": reply.text[i : i + size]})
    for index, (call_id, name, arguments) in enumerate(_tool_call_parts(reply)):
        yield chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]})
        for i in range(0, len(arguments), size):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[i : i + size]}}]})
    yield chunk({}, _finish_reason(reply), **({"timings": reply.timings} if reply.timings else {}))
    if reply.usage is not None:
        usage = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "model": model, "choices": [], "usage": _usage(reply.usage)}
        yield b"data: " + json.dumps(usage).encode() + b"\n\n"
    yield b"data: [DONE]\n\n"


def _completion(reply: Reply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            for call_id, name, arguments in _tool_call_parts(reply)
        ]
    payload: dict[str, Any] = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(reply)}],
    }
    if reply.usage is not None:
        payload["usage"] = _usage(reply.usage)
    if reply.timings:
        payload["timings"] = reply.timings
    return payload


def _usage(usage: dict[str, Any]) -> dict[str, Any]:
    prompt, completion = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
    full = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    if "cached_tokens" in usage:
        full["prompt_tokens_details"] = {"cached_tokens": usage["cached_tokens"]}
    if "reasoning_tokens" in usage:  # OpenAI's place for them, part of completion_tokens
        full["completion_tokens_details"] = {"reasoning_tokens": usage["reasoning_tokens"]}
    return full
