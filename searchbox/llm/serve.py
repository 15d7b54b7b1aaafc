"""A ChatModel served as an OpenAI-compatible chat endpoint on 127.0.0.1, for a harness that speaks
only HTTP (HARNESS=pi with the built-in runtime): POST /v1/chat/completions, streamed (SSE) or whole,
and GET /v1/models. The model's own tool-call parsing (TOOL_CALL_PARSING) and limits apply, so Pi sees
the calls the native loop would. One request at a time: the runtime holds one model slot.
It also relays to an endpoint Pi cannot stream from (LLM_STREAM): the model is then the endpoint's client,
which makes plain requests; what the client has to say (a "notice") goes to `on_notice`.
A request's model call is cut (Cancelled, within a micro-batch of the prompt or a token) when its client goes
away (Pi aborted it) or the server closes, so an abandoned request never keeps the model busy for the next one.
THINKING comes in the forms an endpoint is sent it (`chat_template_kwargs.enable_thinking`, `reasoning_effort`)
and goes to the model as its level; a request that names none gets the server's `thinking`. The usage sent back
counts the reasoning tokens where OpenAI does (`completion_tokens_details.reasoning_tokens`).
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from searchbox.cancel import Cancelled, CancelToken
from searchbox.llm.dialects.call_objects import offered_names
from searchbox.llm.types import THINKING_LEVELS, ChatModel, ChatResponse, Message


class ModelServer:
    def __init__(self, model: ChatModel, *, max_tokens: int, seed: int | None = None, thinking: str = "auto",
                 on_notice: Callable[[str], None] | None = None,
                 on_unread: Callable[[str], None] | None = None) -> None:
        self.model = model
        self.on_notice = on_notice
        self.max_tokens = max_tokens  # the run's MAX_OUTPUT_TOKENS: the most any request may ask for
        self.seed = seed
        self.thinking = thinking  # the run's THINKING, for a request that names no level
        # Told each reply's output that was read as neither text nor a call: the harness is sent none of it
        # (an OpenAI reply has no place for it), so its owner keeps it beside the harness's own message.
        self.on_unread = on_unread
        self._lock = threading.Lock()
        self._requests: set[CancelToken] = set()  # those under way, cut when the server closes
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="model-server", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for cancel in self._requests.copy():  # a copy made under the GIL: handler threads add and discard
            cancel.request("cancelled")
        self._server.shutdown()
        self._server.server_close()

    @contextlib.contextmanager
    def request(self, client: socket.socket) -> Iterator[CancelToken]:
        """A token for one request's model call, cut when `client` closes its end or the server closes."""
        cancel, done = CancelToken(), threading.Event()
        self._requests.add(cancel)
        watcher = threading.Thread(target=_cut_when_gone, args=(client, cancel, done), name="model-server-client",
                                   daemon=True)
        watcher.start()
        try:
            yield cancel
        finally:
            done.set()
            self._requests.discard(cancel)

    def chunks(self, body: dict[str, Any], cancel: CancelToken | None = None) -> Iterator[dict[str, Any]]:
        """The stream's chunks for one request: text and reasoning deltas, then the tool calls, the
        finish reason and the usage."""
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:16]}"

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
            return {"id": completion_id, "object": "chat.completion.chunk", "created": int(time.time()),
                    "model": self.model.model_id, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                    **extra}

        text = HeldText(offered_names(body.get("tools")))
        with self._lock:
            for event in self._stream(body, cancel):
                if cancel is not None:  # an endpoint's client leaves it to its consumer
                    cancel.check()
                if event.kind == "text" and event.text and (shown := text.feed(event.text)):
                    yield chunk({"content": shown})
                elif event.kind == "reasoning" and event.text:
                    yield chunk({"reasoning_content": event.text})
                elif event.kind == "notice":
                    self._notice(event.text)
                elif event.kind == "done" and event.response is not None:
                    response = event.response
                    self._tell_unread(response)
                    if rest := text.rest(response.text):
                        yield chunk({"content": rest})
                    if response.tool_calls:
                        yield chunk({"tool_calls": _tool_call_parts(response)})
                    yield chunk({}, _finish_reason(response), usage=_usage(response), timings=response.timings)
                    return

    def completion(self, body: dict[str, Any], cancel: CancelToken | None = None) -> dict[str, Any]:
        with self._lock:
            response = None
            for event in self._stream(body, cancel):
                if cancel is not None:
                    cancel.check()
                if event.kind == "notice":
                    self._notice(event.text)
                elif event.kind == "done" and event.response is not None:
                    response = event.response
                    break
            if response is None:
                raise RuntimeError("the model's stream ended without a response")
        self._tell_unread(response)
        message: dict[str, Any] = {"role": "assistant", "content": response.text}
        if response.reasoning:
            message["reasoning_content"] = response.reasoning
        if response.tool_calls:
            message["tool_calls"] = _tool_call_parts(response)
        return {"id": f"chatcmpl-{uuid.uuid4().hex[:16]}", "object": "chat.completion", "created": int(time.time()),
                "model": self.model.model_id, "usage": _usage(response),
                "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(response)}]}

    def _notice(self, text: str) -> None:
        if self.on_notice is not None:
            self.on_notice(text)

    def _tell_unread(self, response: ChatResponse) -> None:
        if response.unread and self.on_unread is not None:
            self.on_unread(response.unread)

    def _stream(self, body: dict[str, Any], cancel: CancelToken | None) -> Iterator[Any]:
        asked = body.get("max_completion_tokens") or body.get("max_tokens") or self.max_tokens
        return self.model.stream([_plain(m) for m in body.get("messages") or []], body.get("tools") or None,
                                 max_tokens=min(int(asked), self.max_tokens),
                                 temperature=float(body.get("temperature", 0.6)),
                                 tool_choice=body.get("tool_choice") or "auto", seed=body.get("seed", self.seed),
                                 thinking=requested_thinking(body, self.thinking), cancel=cancel)


def _cut_when_gone(client: socket.socket, cancel: CancelToken, done: threading.Event) -> None:
    """Cut `cancel` once the client closes its end while its request is under way (a readable socket with
    nothing to read). A client that sends more (a pipelined request) is left alone."""
    while not done.is_set():
        try:
            readable, _, _ = select.select([client], [], [], 0.2)
            if readable:
                if not client.recv(1, socket.MSG_PEEK):
                    cancel.request("cancelled")
                return
        except (OSError, ValueError):  # the server closed the socket
            return


def requested_thinking(body: dict[str, Any], default: str) -> str:
    """The THINKING level a request asks for: its effort (top-level, or a chat template variable), off where it
    turns thinking off, else `default`."""
    kwargs = body.get("chat_template_kwargs")
    kwargs = kwargs if isinstance(kwargs, dict) else {}
    effort = body.get("reasoning_effort", kwargs.get("reasoning_effort"))
    if kwargs.get("enable_thinking") is False:
        return "off"
    if effort in THINKING_LEVELS and effort != "auto":
        return str(effort)
    return default


class HeldText:
    """The reply's text as the harness is sent it while it streams: lines go out as they come until one
    could start a call the model wrote as text (a fence, inline code, a JSON object or list, an offered
    tool's name); from there it is held until the whole reply is parsed, and what goes out then is the
    parsed text (the calls taken out), so a harness never shows or keeps a call's markup as answer text."""

    def __init__(self, offered: set[str]) -> None:
        self._starts = ("`", "{", "[", *(name.lower() for name in offered)) if offered else ()
        self._sent = ""
        self._line = ""  # the start of a line that could still begin a call: not sent yet
        self._prose = False  # the current line began as prose: the rest of it goes out as it comes
        self._held: str | None = None  # all the text from the first line that could begin a call

    def feed(self, delta: str) -> str:
        if not self._starts:
            self._sent += delta
            return delta
        out = []
        for piece in delta.splitlines(keepends=True):
            if self._held is not None:
                self._held += piece
                continue
            if self._prose:
                out.append(piece)
                self._prose = not piece.endswith("\n")
                continue
            self._line += piece
            start = self._line.lstrip().lower()
            if not start:  # indentation or a blank line: nothing decided yet
                if self._line.endswith("\n"):
                    out.append(self._line)
                    self._line = ""
            elif any(start.startswith(s) for s in self._starts):
                self._held, self._line = self._line, ""
            elif self._line.endswith("\n") or not any(s.startswith(start) for s in self._starts):
                out.append(self._line)
                self._prose = not self._line.endswith("\n")
                self._line = ""
        shown = "".join(out)
        self._sent += shown
        return shown

    def rest(self, parsed: str) -> str:
        """What is left to send once the reply is parsed (and stripped): the parsed text past what went
        out, or, where the parsed text does not go on from it, the text held back as it came."""
        sent = self._sent.strip()
        if not parsed.startswith(sent):
            return (self._held or "") + self._line
        rest = parsed[len(sent):]
        trailing = self._sent[len(self._sent.rstrip()):]  # whitespace that went out already
        return rest[len(trailing):] if rest.startswith(trailing) else rest.lstrip()


def _plain(message: Message) -> Message:
    """A message with its content as one string: the runtime's chat templates take no content parts, and an
    endpoint may refuse the null content Pi sends with an assistant's tool calls (llama_cpp.server does)."""
    content = message.get("content")
    if isinstance(content, list):
        text = "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        message = {**message, "content": text}
    elif content is None:
        message = {**message, "content": ""}
    return {key: value for key, value in message.items() if key != "reasoning_content"}


def _tool_call_parts(response: ChatResponse) -> list[dict[str, Any]]:
    return [{"index": i, **call.as_message_part()} for i, call in enumerate(response.tool_calls)]


def _finish_reason(response: ChatResponse) -> str:
    return "tool_calls" if response.tool_calls else (response.finish_reason or "stop")


def _usage(response: ChatResponse) -> dict[str, Any]:
    usage = response.usage
    return {"prompt_tokens": usage.input, "completion_tokens": usage.output, "total_tokens": usage.total,
            "prompt_tokens_details": {"cached_tokens": usage.cache_read},
            "completion_tokens_details": {"reasoning_tokens": usage.reasoning}}


def _handler_for(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # the run's feed says what matters
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._json(200, {"object": "list", "data": [{"id": server.model.model_id, "object": "model"}]})
            else:
                self._json(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(404, {"error": {"message": "not found"}})
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            except ValueError as exc:
                self._json(400, {"error": {"message": f"the request is not JSON: {exc}"}})
                return
            try:
                with server.request(self.connection) as cancel:
                    if body.get("stream"):
                        self._sse(server.chunks(body, cancel))
                    else:
                        self._json(200, server.completion(body, cancel))
            except (BrokenPipeError, ConnectionResetError, Cancelled):
                pass  # the harness aborted the request, or the run ended: the model's slot is free again
            except Exception as exc:  # the model failed: the harness gets an error it can report
                self._error(exc)

        def _sse(self, chunks: Iterator[dict[str, Any]]) -> None:
            first = next(chunks, None)  # the model's failure before any output is an HTTP error, not a broken stream
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            try:
                for item in [first, *chunks] if first is not None else []:
                    self.wfile.write(b"data: " + json.dumps(item).encode() + b"\n\n")
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError, Cancelled):
                raise
            except Exception as exc:  # after the headers: the stream itself says it failed
                error = {"error": {"message": f"{type(exc).__name__}: {exc}"[:2000]}}
                self.wfile.write(b"data: " + json.dumps(error).encode() + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

        def _error(self, exc: Exception) -> None:
            try:
                self._json(500, {"error": {"message": f"{type(exc).__name__}: {exc}"[:2000]}})
            except OSError:
                pass

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
