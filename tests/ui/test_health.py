"""GET /health and the warm start (SEARCHBOX_WARM_START).

In the process: the warm start on the packaged models moving from preparing to ready, as /health and the page
say it; /health's 503 while the model server (LLAMA_URL) or every server of a pool is down and its 200 once
one answers again, against real HTTP servers on loopback; the route under a path prefix. On the real app in a
subprocess (python app.py): the JSON a client gets, 200 once warm, 503 with the reason (and no URL) with
LLAMA_URL at a closed port."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from testkit.app_server import PACKAGED_KNOBS, running_app, server_tracebacks, throwaway_home
from testkit.scripted_endpoint import ScriptedEndpoint
from searchbox.settings import Settings
from searchbox.ui.health import Health, HealthRoute
from searchbox.ui.services import Services
from searchbox.ui.warm_start import STEPS
from searchbox.ui.warm_view import build_warm_view, warm_markdown


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def packaged_settings(tmp_path: Path, **overrides: Any) -> Settings:
    knobs = {k.lower(): v for k, v in PACKAGED_KNOBS.items() if k != "HF_HUB_OFFLINE"}
    return Settings.resolve(env={}, searchbox_cache_dir=str(tmp_path / "cache"), **{**knobs, **overrides})


def page_refreshes(services: Services) -> list[Any]:
    """The warm line's handlers on a page (its load and its timer's tick), as Gradio calls them."""
    import gradio as gr

    with gr.Blocks() as page:
        build_warm_view(page, services.warm)
    fns = [f.fn for f in page.fns.values() if any(getattr(o, "elem_id", None) == "warm-start" for o in f.outputs)]
    assert len(fns) == 2
    return fns


def shown(refresh: Any) -> tuple[str | None, bool]:
    """What a refresh puts on the page: the line's text when visible, and whether the timer goes on."""
    line, timer = refresh()
    return (line["value"] if line.get("visible") else None), bool(timer.active)


def get(url: str, method: str = "GET") -> tuple[int, dict[str, Any] | str]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, body, kind = response.status, response.read().decode(), response.headers.get("content-type", "")
    except urllib.error.HTTPError as exc:
        status, body, kind = exc.code, exc.read().decode(), exc.headers.get("content-type", "")
    return status, json.loads(body) if "json" in kind and body else body  # a HEAD's answer has no body


@pytest.mark.real_model
def test_the_warm_start_prepares_the_first_run_and_health_says_how_far_it_got(tmp_path: Path) -> None:
    services = Services.start(packaged_settings(tmp_path))
    try:
        health = Health(services.settings, services.scheduler, services.warm)
        refreshes = page_refreshes(services)
        assert health.report().warm.state == "off"
        assert [shown(refresh) for refresh in refreshes] == [(None, False)] * 2  # off: nothing on the page
        assert services.warm.start() and not services.warm.start()  # once
        early = health.report()
        text, ticking = shown(refreshes[0])
        assert text is not None and text.startswith("⏳ **Getting ready for the first run**") and ticking
        # While it prepares the app can run a job (the run waits for what is not ready): 200, with the progress.
        assert early.ok and early.status == 200 and early.warm.state == "preparing"
        assert early.warm.steps[0].state in ("running", "done")
        assert warm_markdown(early.warm).startswith("⏳ **Getting ready for the first run**")
        seen = [early.warm.state]
        deadline = time.monotonic() + 600
        while (report := health.report()).warm.state == "preparing" and time.monotonic() < deadline:
            seen.append(report.warm.state)
            time.sleep(0.2)
        assert report.warm.state == "ready", report.warm.as_dict()
        assert [step.name for step in report.warm.steps] == list(STEPS)
        assert all(step.state == "done" and step.seconds is not None for step in report.warm.steps), report.body()
        model, retrieval, room = report.warm.steps
        assert "gemma-3-270m" in model.detail and "prompt prefix" in model.detail
        assert "embedder" in retrieval.detail
        assert room.detail.startswith("67 files")
        assert report.body() == {"ok": True, "model": "packaged:gemma3-270m", "slots": {"busy": 0, "free": 1},
                                 "queue": 0, "warm": report.warm.as_dict(), "reason": ""}
        assert warm_markdown(report.warm) == ""  # ready: the page's line is gone, its timer stops
        assert [shown(refresh) for refresh in refreshes] == [(None, False)] * 2
        # What it prepared is what a run reads: the model is loaded (the registry hands back the same one), and the
        # built-in room's chunks are in the embedding cache.
        from searchbox.llm.choice.connect import connect_for_run
        from searchbox.llm.llamacpp.model import _registry

        assert connect_for_run(services.settings).model in _registry.values()
        assert (tmp_path / "cache" / "embeddings.sqlite").is_file()
    finally:
        services.scheduler.stop(30)


@pytest.mark.real_model
def test_a_failed_step_stays_said_on_the_page_and_a_failed_model_makes_health_503(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A GGUF that is not there: the model step fails, its reason names no folder of the operator's. The retrieval
    # is the default one, offline: its steps take the packaged models a run falls back to, as a run would.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    gguf = tmp_path / "secret-folder" / "missing.gguf"
    services = Services.start(Settings.resolve(env={}, searchbox_cache_dir=str(tmp_path / "cache"), llm_gguf=str(gguf),
                                               searchbox_operator=True))
    try:
        health = Health(services.settings, services.scheduler, services.warm)
        services.warm.start()
        deadline = time.monotonic() + 300
        while (report := health.report()).warm.state == "preparing" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert report.warm.state == "failed"
        model, retrieval, room = report.warm.steps
        assert model.state == "failed" and retrieval.state == "done" and room.state == "done"  # the others go on
        assert "packaged:minilm" in retrieval.detail, retrieval
        assert not report.ok and report.status == 503 and report.body()["slots"] == {"busy": 0, "free": 0}
        assert report.reason.startswith("the model could not be loaded at start-up: ")
        assert str(tmp_path) not in json.dumps(report.body()), report.body()
        assert "(the app's own)" in report.reason
        assert warm_markdown(report.warm).startswith("⚠️ **Not everything could be prepared at start-up**")
    finally:
        services.scheduler.stop(30)


def test_health_is_503_while_the_model_server_does_not_answer_and_200_once_it_does(tmp_path: Path) -> None:
    port = closed_port()
    url = f"http://127.0.0.1:{port}/v1"
    services = Services.start(Settings.resolve(env={}, searchbox_cache_dir=str(tmp_path / "cache"), llama_url=url,
                                               model_id="secret-model-name"))
    try:
        health = Health(services.settings, services.scheduler, services.warm, probe_ttl_s=0.0)
        down = health.report()
        assert down.body() == {"ok": False, "model": "an OpenAI-compatible endpoint", "slots": {"busy": 0, "free": 0},
                               "queue": 0, "warm": down.warm.as_dict(), "reason": "the model server does not answer"}
        assert down.status == 503 and str(port) not in json.dumps(down.body())
        with ScriptedEndpoint(port=port):
            up = health.report()
        assert up.ok and up.status == 200 and up.body()["slots"] == {"busy": 0, "free": 1}
    finally:
        services.scheduler.stop(30)


def test_health_is_503_only_while_no_server_of_the_pool_answers_and_asks_each_once_a_while(tmp_path: Path) -> None:
    ports = [closed_port(), closed_port()]
    pool = ",".join(f"http://127.0.0.1:{p}/v1=2" for p in ports)
    services = Services.start(Settings.resolve(env={}, searchbox_cache_dir=str(tmp_path / "cache"),
                                               searchbox_endpoints=pool))
    asked: list[str] = []

    def answers(url: str, timeout: float) -> bool:
        from searchbox.llm.endpoints import endpoint_answers

        asked.append(url)
        return endpoint_answers(url, timeout)

    try:
        health = Health(services.settings, services.scheduler, services.warm, answers=answers, probe_ttl_s=60.0)
        down = health.report()
        assert not down.ok and down.reason == "no model server of the pool answers (0 of 2)"
        assert all(str(p) not in json.dumps(down.body()) for p in ports)
        for _ in range(5):  # within the TTL the answer stands: a burst of checks asks no server again
            health.report()
        assert len(asked) == 2
        with ScriptedEndpoint(port=ports[1]):
            fresh = Health(services.settings, services.scheduler, services.warm, answers=answers, probe_ttl_s=60.0)
            up = fresh.report()
        assert up.ok and up.body()["slots"] == {"busy": 0, "free": 4}  # the scheduler's count: 2 servers x 2
    finally:
        services.scheduler.stop(30)


def test_the_route_answers_under_a_path_prefix_and_hands_on_everything_else(tmp_path: Path) -> None:
    services = Services.start(Settings.resolve(env={}, searchbox_cache_dir=str(tmp_path / "cache"),
                                               llama_url=f"http://127.0.0.1:{closed_port()}/v1"))
    try:
        health = Health(services.settings, services.scheduler, services.warm)
        inner = Starlette(routes=[Route("/{path:path}", lambda request: PlainTextResponse(f"app:{request.url.path}"))],
                          middleware=[Middleware(HealthRoute, health=health)])
        for root in ("", "/searchbox"):
            client = TestClient(inner, root_path=root)
            for path in ("/health", "/health/"):
                answer = client.get(path)
                assert answer.status_code == 503 and answer.json()["reason"] == "the model server does not answer"
                assert answer.headers["cache-control"] == "no-store"
            assert client.post("/health").status_code == 405
            assert client.get("/healthz").text.startswith("app:")
            assert client.get("/gradio_api/health").text.startswith("app:")
    finally:
        services.scheduler.stop(30)


@pytest.mark.real_model
@pytest.mark.slow
def test_the_apps_health_route_on_a_real_server() -> None:
    # Warm: 200 once ready, every step done, the fields a client reads.
    with throwaway_home("health") as home, running_app(home) as url:
        deadline = time.monotonic() + 600
        while True:
            status, body = get(url + "health")
            assert status == 200, body
            assert isinstance(body, dict) and body["warm"]["state"] in ("preparing", "ready"), body
            if body["warm"]["state"] == "ready" or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert body["warm"]["state"] == "ready" and body["model"] == "packaged:gemma3-270m", body
        assert body["slots"] == {"busy": 0, "free": 1} and body["queue"] == 0 and body["ok"] is True
        assert get(url + "health", "HEAD")[0] == 200
        assert get(url + "health", "POST")[0] == 405
        log = (home / "app.log").read_text()
        assert "searchbox: warm start: built-in dataroom ready in" in log
        assert not server_tracebacks(home), server_tracebacks(home)
    # No model server: 503, the reason, no URL; nothing warmed (SEARCHBOX_WARM_START=0).
    port = closed_port()
    with throwaway_home("health-down") as home, running_app(home, LLAMA_URL=f"http://127.0.0.1:{port}/v1",
                                                            SEARCHBOX_WARM_START="0") as url:
        status, body = get(url + "health")
        assert status == 503 and isinstance(body, dict), body
        assert body["reason"] == "the model server does not answer" and body["ok"] is False
        assert body["warm"]["state"] == "off" and str(port) not in json.dumps(body)
        assert "warm start" not in (home / "app.log").read_text()
