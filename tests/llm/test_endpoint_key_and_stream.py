"""A hosted endpoint (issue 45 items 1 and 2): LLAMA_API_KEY reaches it from both harnesses and no visitor;
LLM_STREAM=off/auto serve a provider that refuses `stream` and `stream_options`, =on fails as before.

The endpoint is scripted (testkit/scripted_endpoint.py): it answers HTTP 401 without its key and HTTP 400 to
a streamed request, as hosted providers do; no small local server does either on demand.
"""

from __future__ import annotations

import threading
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest

from conftest import SMALL_DATAROOM, write_tree
from searchbox.agent.pi.config import KEY_VARIABLE
from searchbox.agent.pi.install import pi_problem
from searchbox.agent.run import run_job
from searchbox.jobs.job import create_job
from searchbox.jobs.store import JobRecord, JobStore
from searchbox.llm import LLMError, connect
from searchbox.llm.choice.connect import connect_for_run
from searchbox.llm.clients.openai_client import OpenAIClient, refused_streams
from searchbox.records.events import Notice, read_events
from searchbox.records.files import read_json
from searchbox.settings import Settings
from testkit.scripted_endpoint import Fault, Reply, ScriptedEndpoint
from testkit.visitor_run import visitor_run

KEY = "sk-hosted-5e4d3c2b1a09f8e7"
MESSAGES = [{"role": "user", "content": "When does the lease end?"}]
ANSWER = Reply(text="The office lease runs until 31 March 2029.")
needs_pi = pytest.mark.skipif(pi_problem() is not None, reason=f"{pi_problem()}")


# -- the key ---------------------------------------------------------------------------------------


def test_without_its_key_a_visitors_run_fails_saying_a_key_is_needed_and_no_url(tmp_path: Path) -> None:
    with ScriptedEndpoint(default=ANSWER, api_key=KEY) as endpoint:
        state, found = _app_run(tmp_path, {"LLAMA_URL": endpoint.url})
        port = endpoint.url.rsplit(":", 1)[1].split("/")[0]
    assert state == "failed"
    error = [e.message for e in read_events(Path(found["job"]) / "events.jsonl") if isinstance(e, Notice)
             and e.level == "error"]
    assert error and "the model server needs an API key" in error[-1] and "set LLAMA_API_KEY" in error[-1], error
    assert "Traceback" not in found["feed"] and "needs an API key" in found["feed"]
    # The job folder records LLAMA_URL for the operator; what a visitor is shown of it has none.
    assert not [name for name, text in found.items() if not name.startswith("job") and port in text]


def test_with_llama_api_key_the_run_succeeds_and_the_key_is_on_no_visitors_surface(tmp_path: Path) -> None:
    with ScriptedEndpoint(default=ANSWER, api_key=KEY) as endpoint:
        state, found = _app_run(tmp_path, {"LLAMA_URL": endpoint.url, "LLAMA_API_KEY": KEY})
        assert {r.headers["Authorization"] for r in endpoint.requests} == {f"Bearer {KEY}"}
    assert state == "done"
    assert read_json(Path(found["job"]) / "config.json", {})["LLAMA_API_KEY"] == "set"
    _assert_nowhere(KEY, found)


def test_openai_api_key_is_read_when_llama_api_key_is_unset_and_that_is_said_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(import_module("searchbox.llm.choice.connect"), "_said_borrowed_key", threading.Event())
    notes: list[str] = []
    with ScriptedEndpoint(default=Reply(text="ok"), api_key=KEY) as endpoint:
        settings = Settings.resolve(env={"OPENAI_API_KEY": KEY, "LLAMA_URL": endpoint.url})
        for _ in range(2):
            model = connect_for_run(settings, on_note=notes.append).model
            assert model.complete(MESSAGES, max_tokens=8).text == "ok"
            model.close()
    assert notes == ["LLAMA_API_KEY is unset: the key in OPENAI_API_KEY is sent to the endpoint"]
    assert settings.as_config()["LLAMA_API_KEY"] == "set"
    given = Settings.resolve(env={"OPENAI_API_KEY": KEY, "LLAMA_API_KEY": "sk-other", "LLAMA_URL": "http://x/v1"})
    assert given.llama_api_key == "sk-other"  # LLAMA_API_KEY wins, and nothing is said


def test_a_run_at_an_endpoint_it_names_itself_gets_no_key(tmp_path: Path) -> None:
    """A visitor's own endpoint (SEARCHBOX_VISITOR_ENDPOINTS) never gets the operator's key."""
    base = Settings.resolve(env={"LLAMA_URL": "http://10.0.0.1:8080/v1", "LLAMA_API_KEY": KEY})
    store = JobStore(tmp_path)
    own = store.settings_for(JobRecord("a", "o", "q", overrides={"llama_url": base.llama_url}), base)
    theirs = store.settings_for(JobRecord("b", "o", "q", overrides={"llama_url": "http://visitor.example/v1"}), base)
    assert own.llama_api_key == KEY and theirs.llama_api_key == ""


def test_a_refused_key_is_named(tmp_path: Path) -> None:
    with ScriptedEndpoint(default=ANSWER, api_key=KEY) as endpoint:
        with pytest.raises(LLMError, match="refused the API key .*check LLAMA_API_KEY") as info:
            OpenAIClient(endpoint.url, "m", api_key="sk-wrong-0000").complete(MESSAGES, max_tokens=8)
    assert "sk-wrong-0000" not in str(info.value)


# -- no streaming ----------------------------------------------------------------------------------


def test_stream_off_sends_one_plain_request_and_reads_the_whole_completion() -> None:
    reply = Reply(text="whole", reasoning="thought first", tool_calls=[{"name": "ls", "arguments": {"path": "."}}],
                  usage={"prompt_tokens": 40, "completion_tokens": 7})
    with ScriptedEndpoint([reply], refuses_stream=True) as endpoint:
        events = list(OpenAIClient(endpoint.url, "m", stream="off").stream(MESSAGES, None, max_tokens=8))
        body = endpoint.requests[0].body
    response = events[-1].response
    assert response is not None and len(endpoint.requests) == 1
    assert "stream" not in body and "stream_options" not in body
    assert (response.text, response.reasoning, [c.name for c in response.tool_calls]) == ("whole", "thought first", ["ls"])
    assert (response.usage.input, response.usage.output, response.finish_reason) == (40, 7, "tool_calls")
    assert "notice" not in {e.kind for e in events}


def test_stream_auto_falls_back_once_says_so_and_keeps_plain_requests_for_the_endpoint() -> None:
    with ScriptedEndpoint(default=Reply(text="ok"), refuses_stream=True) as endpoint:
        first = list(OpenAIClient(endpoint.url, "m").stream(MESSAGES, None, max_tokens=8))
        second = list(OpenAIClient(endpoint.url, "m").stream(MESSAGES, None, max_tokens=8))  # a later run's client
        streamed = ["stream" in r.body for r in endpoint.requests]
        url = endpoint.url
    notices = [e.text for e in [*first, *second] if e.kind == "notice"]
    assert streamed == [True, False, False]
    assert len(notices) == 1 and "refused a streamed request (HTTP 400" in notices[0] and url not in notices[0]
    assert first[-1].response and first[-1].response.text == "ok" and second[-1].response.text == "ok"
    assert refused_streams(url)


def test_stream_on_against_a_refusing_endpoint_fails_as_before() -> None:
    with ScriptedEndpoint(default=Reply(text="ok"), refuses_stream=True) as endpoint:
        with pytest.raises(LLMError, match="HTTP 400.*stream is not supported"):
            OpenAIClient(endpoint.url, "m", stream="on").complete(MESSAGES, max_tokens=8)
        assert len(endpoint.requests) == 1 and not refused_streams(endpoint.url)


@pytest.mark.parametrize("mode, stop, streamed", [("off", "first_turn_done", {False}),
                                                  ("auto", "first_turn_done", {True, False}),
                                                  ("on", "error_llm", {True})])
def test_a_native_run_against_an_endpoint_that_refuses_streams(tmp_path: Path, mode: str, stop: str,
                                                               streamed: set[bool]) -> None:
    with ScriptedEndpoint(default=ANSWER, refuses_stream=True) as endpoint:
        settings = _settings(tmp_path, llama_url=endpoint.url, llm_stream=mode)
        job = _job(tmp_path, settings)
        assert run_job(job, settings, connect(settings)) == stop
        assert {"stream" in r.body for r in endpoint.requests} == streamed
    said = [e.message for e in read_events(job / "events.jsonl") if isinstance(e, Notice) and "streamed" in e.message]
    assert len(said) == (mode == "auto"), said


def test_llm_stream_takes_only_its_three_values() -> None:
    with pytest.raises(ValueError, match="LLM_STREAM must be one of auto, on, off"):
        Settings.resolve(env={"LLM_STREAM": "sometimes"})


# -- under HARNESS=pi ------------------------------------------------------------------------------


@needs_pi
@pytest.mark.slow
def test_pi_gets_the_key_through_its_environment_and_no_file_holds_it(tmp_path: Path) -> None:
    with ScriptedEndpoint(default=ANSWER, api_key=KEY) as endpoint:
        settings = _settings(tmp_path, harness="pi", llama_url=endpoint.url, llama_api_key=KEY)
        job = _job(tmp_path, settings)
        assert run_job(job, settings, connect(settings)) == "first_turn_done"
        assert endpoint.requests and {_authorization(r.headers) for r in endpoint.requests} == {f"Bearer {KEY}"}
        # The output cap in the field every server reads, as the native loop sends it (llama_cpp.server ignores
        # max_completion_tokens, Pi's choice for a host it does not know).
        assert all(r.body.get("max_tokens") == 256 and "max_completion_tokens" not in r.body for r in endpoint.requests)
    models = read_json(job / "pi" / "agent" / "models.json", {})
    assert models["providers"]["searchbox"]["apiKey"] == f"${KEY_VARIABLE}"  # Pi reads it from its environment
    leaks = [p for p in job.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert not leaks, leaks


@needs_pi
@pytest.mark.slow
def test_pi_without_the_key_ends_with_error_llm_naming_llama_api_key(tmp_path: Path) -> None:
    with ScriptedEndpoint(default=ANSWER, api_key=KEY) as endpoint:
        settings = _settings(tmp_path, harness="pi", llama_url=endpoint.url)
        job = _job(tmp_path, settings)
        assert run_job(job, settings, connect(settings)) == "error_llm"
        port = endpoint.url.rsplit(":", 1)[1].split("/")[0]
    errors = [e.message for e in read_events(job / "events.jsonl") if isinstance(e, Notice) and e.level == "error"]
    assert errors and "set LLAMA_API_KEY" in errors[-1] and port not in errors[-1], errors


@needs_pi
@pytest.mark.slow
def test_pi_with_stream_off_is_relayed_plain_requests(tmp_path: Path) -> None:
    with ScriptedEndpoint(default=ANSWER, refuses_stream=True, api_key=KEY) as endpoint:
        settings = _settings(tmp_path, harness="pi", llama_url=endpoint.url, llm_stream="off", llama_api_key=KEY)
        job = _job(tmp_path, settings)
        assert run_job(job, settings, connect(settings)) == "first_turn_done"
        assert endpoint.requests and not any("stream" in r.body for r in endpoint.requests)
    notices = [e.message for e in read_events(job / "events.jsonl") if isinstance(e, Notice)]
    assert any("in plain (unstreamed) requests to the endpoint" in n for n in notices), notices
    assert not [p for p in job.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]


@needs_pi
@pytest.mark.slow
def test_pi_under_auto_learns_the_refusal_and_its_next_run_is_relayed(tmp_path: Path) -> None:
    with ScriptedEndpoint(default=ANSWER, refuses_stream=True) as endpoint:
        settings = _settings(tmp_path, harness="pi", llama_url=endpoint.url)
        first = _job(tmp_path, settings, "first")
        assert run_job(first, settings, connect(settings)) == "error_llm"
        errors = [e.message for e in read_events(first / "events.jsonl") if isinstance(e, Notice) and e.level == "error"]
        assert "refuses streamed requests: the next run relays plain ones to Pi" in errors[-1], errors
        second = _job(tmp_path, settings, "second")
        assert run_job(second, settings, connect(settings)) == "first_turn_done"
        assert "stream" not in endpoint.requests[-1].body


# -- helpers ---------------------------------------------------------------------------------------


def _settings(tmp_path: Path, **knobs: Any) -> Settings:
    return Settings.resolve(env={}, **{"retrieval_preset": "packaged", "searchbox_cache_dir": str(tmp_path / "cache"),
                                       "searchbox_tools": "", "turn_budget": 1, "max_output_tokens": 256,
                                       "llm_attempts": 1, "model_id": "m", **knobs})


def _job(tmp_path: Path, settings: Settings, name: str = "job") -> Path:
    job = tmp_path / name
    create_job(job, "When does the office lease end?", write_tree(tmp_path / f"{name}-room", SMALL_DATAROOM), settings)
    return job


def _app_run(tmp_path: Path, env: dict[str, str]) -> tuple[str, dict[str, str]]:
    """One visitor's run through the app's scheduler; its state and every text a visitor or the job folder
    holds: the feed, each file of the job folder, each member of the bundle (and "job": the folder)."""
    with visitor_run(tmp_path, env) as run:
        found = {"job": str(run.job), "feed": run.feed(), "record": str(run.record.error)}
        found.update({f"job:{p.relative_to(run.job)}": p.read_text(errors="replace")
                      for p in run.job.rglob("*") if p.is_file()})
        found.update(run.downloads())
        return run.record.state, found


def _authorization(headers: dict[str, str]) -> str:
    """The header as Node writes it (lower case) or httpx (capitalised)."""
    return next((v for k, v in headers.items() if k.lower() == "authorization"), "")


def _assert_nowhere(secret: str, found: dict[str, str]) -> None:
    assert {"feed", "job:config.json", "job:run_meta.json", "bundle:events.jsonl"} <= set(found), sorted(found)
    leaks = [name for name, text in found.items() if secret in text]
    assert not leaks, f"the key on a visitor's surface: {leaks}"


@needs_pi
@pytest.mark.slow
@pytest.mark.parametrize("attempts", [1, 2])
def test_pi_tries_a_failing_endpoint_as_often_as_llm_attempts_says(tmp_path: Path, attempts: int) -> None:
    with ScriptedEndpoint(default=lambda body: Fault.http(503, "overloaded")) as endpoint:
        settings = _settings(tmp_path, harness="pi", llama_url=endpoint.url, llm_attempts=attempts,
                             llm_timeout_seconds=42)
        job = _job(tmp_path, settings)
        assert run_job(job, settings, connect(settings)) == "error_llm"
        assert len(endpoint.requests) == attempts
    pi = read_json(job / "pi" / "agent" / "settings.json", {})
    assert pi["httpIdleTimeoutMs"] == 42_000 and pi["retry"]["provider"]["timeoutMs"] == 42_000
