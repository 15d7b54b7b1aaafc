"""The hub check: quick, once per process, and model lookups go straight to the local cache without it."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import huggingface_hub.constants
import pytest

from searchbox import hub
from searchbox.llm.errors import GGUFUnavailable
from searchbox.llm.weights.gguf import resolve_gguf
from searchbox.retrieval.model_paths import resolve_model_dir
from searchbox.retrieval.interfaces import ModelLoadError


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """HF_HUB_OFFLINE off (conftest sets it), and a fresh probe cache before and after."""
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    hub._probe.cache_clear()
    yield
    hub._probe.cache_clear()


def closed_port_url() -> str:
    with socket.socket() as sock:  # bound then closed: nothing listens there
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


class Hub(BaseHTTPRequestHandler):
    status = 200
    heads = 0

    def do_HEAD(self) -> None:  # noqa: N802 (http.server's naming)
        type(self).heads += 1
        self.send_response(self.status)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch, online: None) -> Iterator[type[Hub]]:
    handler = type("FakeHub", (Hub,), {"heads": 0, "status": 200})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", f"http://127.0.0.1:{server.server_port}")
    yield handler
    server.shutdown()
    server.server_close()


def test_offline_mode_is_the_reason_and_nothing_is_probed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hub, "_probe", lambda endpoint: pytest.fail("probed while offline"))
    assert hub.hub_unavailable_reason() == "HF_HUB_OFFLINE is set" and not hub.hub_reachable()


def test_an_unreachable_hub_is_found_out_once_and_quickly(
    monkeypatch: pytest.MonkeyPatch, online: None, caplog: pytest.LogCaptureFixture
) -> None:
    url = closed_port_url()
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", url)
    started = time.monotonic()
    reason = hub.hub_unavailable_reason()
    assert reason is not None and reason.startswith("the hub cannot be reached") and url in reason
    assert time.monotonic() - started < hub.PROBE_TIMEOUT_S
    for _ in range(3):
        assert hub.hub_unavailable_reason() == reason
    assert hub._probe.cache_info().misses == 1
    assert len([r for r in caplog.records if r.name == "searchbox.hub"]) == 1  # reported in one line


def test_a_hub_that_answers_is_reachable_and_asked_once(fake_hub: type[Hub]) -> None:
    assert hub.hub_reachable() and hub.hub_reachable()
    assert fake_hub.heads == 1


def test_a_hub_with_server_errors_counts_as_unreachable(fake_hub: type[Hub]) -> None:
    fake_hub.status = 503
    assert "HTTP 503" in (hub.hub_unavailable_reason() or "")


def test_lookups_go_to_the_local_cache_only_when_the_hub_is_unreachable(
    monkeypatch: pytest.MonkeyPatch, online: None, tmp_path: Path
) -> None:
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", closed_port_url())
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    started = time.monotonic()
    with pytest.raises(GGUFUnavailable, match="not in the local Hugging Face cache and the hub cannot be reached"):
        resolve_gguf("searchbox-tests/never-cached-GGUF:model-Q4_K_M.gguf", cache_dir=tmp_path / "hub")
    with pytest.raises(ModelLoadError, match="not in the local cache and the hub cannot be reached"):
        resolve_model_dir("searchbox-tests/no-such-model")
    assert time.monotonic() - started < 5  # no retries with backoff against a dead network
