"""A stop cuts the model's call under way: the built-in runtime between two micro-batches of the prompt (a
long prompt on a CPU takes minutes to evaluate), the native loop ends the run with the stop's reason, and a
served model's call ends when its client goes away or the server closes, so an abandoned request never
keeps the model from the next one."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import SMALL_DATAROOM, write_tree
from testkit.fake_model import FakeChatModel, Said
from searchbox.agent.control import RunControl
from searchbox.agent.run import run_job
from searchbox.cancel import Cancelled, CancelToken
from searchbox.jobs.job import create_job
from searchbox.llm.llamacpp.model import LlamaCppModel
from searchbox.llm.serve import ModelServer
from searchbox.llm.weights.gguf import resolve_gguf
from searchbox.llm.weights.packaged import PACKAGED_QWEN_05B
from searchbox.records.files import read_json
from searchbox.settings import Settings

WAIT_S = 60.0  # how long a call that is never cut would block: far past any bound below
PROMPT = "Here are some notes.\n" + "\n".join(f"Note {n}: the archive box {n} holds ledgers from {1900 + n}."
                                               for n in range(120)) + "\nWhich box holds the ledgers from 1957?"


class _CutAtCheck(CancelToken):
    """Cut at its `at`-th look: where a piece of work looks at the token decides, not a clock."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at, self.looks = at, 0

    @property
    def cut(self) -> str | None:
        self.looks += 1
        if self.looks >= self.at:
            self.request("cancelled")
        return super().cut


def _reply(model: LlamaCppModel, cancel: CancelToken | None = None) -> str:
    return model.complete([{"role": "user", "content": PROMPT}], max_tokens=12, temperature=0.7, seed=7,
                          cancel=cancel).text


@pytest.mark.real_model
def test_a_cut_ends_a_long_prompt_after_one_micro_batch_and_the_next_call_is_as_a_cold_ones() -> None:
    path = resolve_gguf(PACKAGED_QWEN_05B)
    # One thread count for both: the prompt's thread count changes a seeded reply (both are recorded in
    # backends.llm_runtime), and with the count left to the load, two models loaded apart may differ.
    model, cold = LlamaCppModel(path, 4096, n_threads=2), LlamaCppModel(path, 4096, n_threads=2)
    try:
        prompt_tokens = len(model._llama.tokenize(PROMPT.encode()))
        micro_batch = model._llama.context_params.n_ubatch
        assert prompt_tokens > 2 * micro_batch, "the prompt must span micro-batches for the cut to land inside it"
        with pytest.raises(Cancelled):
            _reply(model, _CutAtCheck(at=2))  # the first micro-batch evaluated, cut before the second
        assert model._llama.n_tokens == micro_batch
        # The cache keeps what was evaluated; the next call evaluates the rest as a cold model does all of it.
        assert _reply(model, CancelToken()) == _reply(cold) == _reply(cold, CancelToken())
    finally:
        model.close()
        cold.close()


class _WaitsForItsCut(FakeChatModel):
    """A call that blocks (a prompt under evaluation) until its token is cut, and says whether it was."""

    def __init__(self) -> None:
        super().__init__([], default=Said(text="A reply."))
        self.started = threading.Event()
        self.cut: list[str | None] = []

    def stream(self, messages: list[Any], tools: Any, **kwargs: Any) -> Iterator[Any]:
        cancel: CancelToken | None = kwargs.get("cancel")
        if cancel is not None and not self.cut:
            self.started.set()
            self.cut.append(cancel.wait(WAIT_S))
            cancel.check()
        yield from super().stream(messages, tools, **{k: v for k, v in kwargs.items() if k != "cancel"})


def _post(server: ModelServer, stream: bool) -> socket.socket:
    body = json.dumps({"model": "m", "stream": stream, "messages": [{"role": "user", "content": "hi"}]}).encode()
    port = int(server.base_url.split(":")[2].split("/")[0])
    client = socket.create_connection(("127.0.0.1", port))
    client.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\n\r\n" % len(body) + body)
    return client


@pytest.mark.parametrize("stream", [True, False])
def test_a_served_call_is_cut_when_its_client_goes_away_and_the_next_request_is_answered(stream: bool) -> None:
    model = _WaitsForItsCut()
    with ModelServer(model, max_tokens=64) as server:
        client = _post(server, stream)
        assert model.started.wait(WAIT_S)
        client.close()  # Pi aborted the request
        next_one = _post(server, stream)
        next_one.settimeout(WAIT_S)
        reply = b""
        while b"A reply." not in reply and (part := next_one.recv(65536)):
            reply += part
        next_one.close()
    assert model.cut == ["cancelled"]
    assert b"A reply." in reply


def test_closing_the_server_cuts_the_call_under_way() -> None:
    model = _WaitsForItsCut()
    server = ModelServer(model, max_tokens=64).__enter__()
    client = _post(server, stream=True)
    assert model.started.wait(WAIT_S)
    server.close()  # the run ended while Pi waited on the model
    client.close()
    assert model.cut == ["cancelled"]


def test_a_stop_during_the_models_call_ends_the_run_with_the_stops_reason(tmp_path: Path) -> None:
    model = _WaitsForItsCut()
    settings = Settings.resolve(env={}, retrieval_preset="packaged", searchbox_cache_dir=str(tmp_path / "cache"),
                                searchbox_tools="", llm_attempts=1)
    job = tmp_path / "job"
    create_job(job, "When does the office lease end?", write_tree(tmp_path / "room", SMALL_DATAROOM), settings)
    control = RunControl()
    threading.Thread(target=lambda: model.started.wait(WAIT_S) and control.request("paused"), daemon=True).start()
    assert run_job(job, settings, model, [], control) == "paused"
    assert model.cut == ["paused"]
    assert read_json(job / "run_meta.json", {})["stop_reason"] == "paused"
