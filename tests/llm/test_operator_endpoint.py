"""No form of the operator's endpoint reaches a visitor (issue #32 item 3, issue #43 item 4): not the
bundle's records (Pi's models.json writes it as Pi needs it, `.../v1` with no /chat/completions;
pi-stderr.log names it), not the feed's "connecting to" line, not an endpoint's error (the client and the
pool name "the model server", "model server 1 of 2"), in any letter case; an operator still sees it."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import SMALL_DATAROOM, write_tree
from searchbox.agent.pi.config import PiPaths, base_url, write_agent_dir
from searchbox.agent.pi.install import pi_problem
from searchbox.agent.run import _loading_message, run_job
from searchbox.jobs.bundle import make_bundle
from searchbox.jobs.job import create_job
from searchbox.llm.errors import LLMUnavailable
from searchbox.llm.clients.openai_client import OpenAIClient
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings
from searchbox.ui.jobs_view import JobsView
from searchbox.ui.run_view import RunView
from testkit.scripted_endpoint import Fault, Reply, ScriptedEndpoint
from testkit.visitor_run import visitor_run
from searchbox.llm.disclosure import endpoint_name, hidden, operator_details

LLAMA_URL = "http://10.11.12.13:8081/v1/chat/completions/"
HOST = "10.11.12.13"
PASSWORD = "pw-0d1e2f"


def test_a_visitors_bundle_shows_no_form_of_the_operators_endpoint(tmp_path: Path) -> None:
    settings = Settings.resolve(env={"LLAMA_URL": LLAMA_URL, "MODEL_ID": "m"})
    job = tmp_path / "job"
    JobFolder(job).work.mkdir(parents=True)
    (job / "work" / "ANSWER.md").write_text("The lease ends in 2029.\n")
    paths = PiPaths(job / "pi")
    write_agent_dir(paths, base_url(settings.llama_url), "m", settings)  # what a HARNESS=pi run writes
    paths.stderr.write_text(f"Error: connect ECONNREFUSED {HOST}:8081 ({base_url(LLAMA_URL)})\n")
    (job / "events.jsonl").write_text(json.dumps({"type": "notice", "message": _loading_message(settings)}) + "\n")

    bundle = make_bundle(job, hide=operator_details(settings))

    with zipfile.ZipFile(bundle) as archive:
        texts = {name: archive.read(name).decode("utf-8", errors="replace") for name in archive.namelist()}
    assert {"pi/agent/models.json", "pi/pi-stderr.log", "events.jsonl"} <= set(texts)
    leaks = {name: text for name, text in texts.items() if HOST in text}
    assert not leaks, f"the operator's endpoint in a visitor's bundle: {leaks}"
    assert "The lease ends in 2029." in texts["work/ANSWER.md"]


def test_the_feed_names_the_endpoints_host_to_an_operator_only() -> None:
    visitor = Settings.resolve(env={"LLAMA_URL": LLAMA_URL, "MODEL_ID": "m"})
    operator = Settings.resolve(env={"LLAMA_URL": LLAMA_URL, "MODEL_ID": "m", "SEARCHBOX_OPERATOR": "1"})
    assert HOST not in _loading_message(visitor)
    assert HOST in _loading_message(operator)


# -- an endpoint's error, through a real run of the app's scheduler (issue #43 item 4) --------------------------


def test_an_endpoints_error_names_the_model_server_on_every_visitor_surface(tmp_path: Path) -> None:
    """A LLAMA_URL with capitals and credentials; the endpoint answers HTTP 400 with its own address in the
    body. The run fails naming "the model server"; no surface has any form of host:port, in any case."""
    with ScriptedEndpoint() as endpoint:
        port = _port(endpoint.url)
        url = f"http://alice:{PASSWORD}@LocalHost:{port}/V1/"
        endpoint.default = Fault.http(400, f"no such model at http://localhost:{port}/v1/chat/completions")
        found = _one_failed_run(tmp_path, {"LLAMA_URL": url})
    _assert_no_form_of(found, [f"localhost:{port}", f"127.0.0.1:{port}", PASSWORD])
    assert "the model server answered with HTTP 400" in found["events.jsonl"]


def test_a_pool_servers_error_names_its_number_and_shows_no_server(tmp_path: Path) -> None:
    """SEARCHBOX_ENDPOINTS with two servers, the first (where the run goes) answering HTTP 400."""
    with ScriptedEndpoint(default=Fault.http(400, "bad request")) as failing, \
            ScriptedEndpoint(default=Reply(text="The lease ends in 2029.")) as working:
        servers = [f"127.0.0.1:{_port(failing.url)}", f"LocalHost:{_port(working.url)}"]
        found = _one_failed_run(tmp_path, {"SEARCHBOX_ENDPOINTS": f"http://{servers[0]}/v1/=1,http://{servers[1]}/v1=1"})
        assert failing.requests and not working.requests
    _assert_no_form_of(found, servers)
    assert "model server 1 of 2 answered with HTTP 400" in found["events.jsonl"]


def test_an_operator_still_sees_the_endpoint_in_the_feed_and_the_log(tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    with ScriptedEndpoint(default=Fault.http(400, "bad request")) as endpoint:
        url = endpoint.url
        found = _one_failed_run(tmp_path, {"LLAMA_URL": url, "SEARCHBOX_OPERATOR": "1"})
    assert f"chat endpoint {url}/chat/completions answered with HTTP 400" in found["events.jsonl"]
    assert f"chat endpoint {url}/chat/completions answered with HTTP 400" in caplog.text


def test_a_visitors_run_logs_the_endpoint_for_the_operator(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with ScriptedEndpoint(default=Fault.http(400, "bad request")) as endpoint:
        url = endpoint.url
        _one_failed_run(tmp_path, {"LLAMA_URL": url})
    assert f"chat endpoint {url}/chat/completions answered with HTTP 400" in caplog.text


def test_an_unreachable_endpoints_retries_and_error_show_no_address() -> None:
    """Transport errors and a server's 5xx text reach the feed as retry notices and the final error."""
    with ScriptedEndpoint() as endpoint:
        port = _port(endpoint.url)
        endpoint.default = Fault.http(503, f"overloaded: http://LocalHost:{port}/v1")
        client = OpenAIClient(f"http://LocalHost:{port}/v1", "m", max_attempts=2, backoff_s=0.01)
        with pytest.raises(LLMUnavailable) as unavailable:
            client.complete([{"role": "user", "content": "hi"}], max_tokens=8)
    stopped = ScriptedEndpoint()
    url = stopped.start()
    stopped.stop()
    with pytest.raises(LLMUnavailable) as refused:
        OpenAIClient(url, max_attempts=1).complete([{"role": "user", "content": "hi"}], max_tokens=8)
    for error, gone in ((unavailable.value, port), (refused.value, _port(url))):
        assert str(error).startswith("the model server failed") and str(gone) not in str(error), error


def _one_failed_run(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """One visitor's run through the app's services (the scheduler, the real run function), then what the
    visitor gets of it, by surface: the feed as the page draws it, the run's status line and jobs row, the
    job record, events.jsonl, the downloads the page offers (the bundle member by member)."""
    with visitor_run(tmp_path, {"LLM_ATTEMPTS": "2", **env}) as run:
        assert run.record.state == "failed", run.record
        rows, _, _ = JobsView(run.services).table("visitor")
        found = {"feed": run.feed(), "status": RunView(run.services)._status(run.record.id),
                 "jobs table": json.dumps(rows, default=str), "job record error": str(run.record.error),
                 "events.jsonl": (run.job / "events.jsonl").read_text()}
        found.update(run.downloads())
        return found


def _port(url: str) -> int:
    return urlsplit(url).port or 0


def _assert_no_form_of(found: dict[str, str], forms: list[str]) -> None:
    """Each form (a host:port, which every form of a URL holds, or a password) in any letter case."""
    assert {"feed", "events.jsonl", "bundle:job.json", "bundle:events.jsonl"} <= set(found), sorted(found)
    leaks = {(name, form) for name, text in found.items() for form in forms if form.lower() in text.lower()}
    assert not leaks, f"the operator's endpoint on a visitor's surface: {sorted(leaks)}"


def test_one_function_names_an_endpoint_and_hides_every_form_of_it() -> None:
    pool = "http://10.0.0.1:8080/v1=2,http://[fd00::7]:8080/v1"
    visitor = Settings.resolve(env={"SEARCHBOX_ENDPOINTS": pool, "LLAMA_URL": "http://u:p@LLM.Example.COM:9000/v1/"})
    operator = visitor.with_overrides(searchbox_operator=True)
    assert endpoint_name(visitor, "http://[fd00::7]:8080/v1") == "model server 2 of 2"
    assert endpoint_name(visitor, visitor.llama_url) == "the model server"
    assert endpoint_name(operator, visitor.llama_url) is None  # the operator reads it as it is
    text = ("GET HTTP://llm.example.com:9000/V1/chat/completions from llm.example.com, "
            "[FD00::7]:8080 and 10.0.0.1:8080/v1/ (u:p@LLM.EXAMPLE.COM:9000)")
    shown = hidden(text, operator_details(visitor))
    for form in ("example", "fd00", "10.0.0.1", "u:p"):
        assert form not in shown.lower(), shown
    assert operator_details(operator) == ()


@pytest.mark.skipif(pi_problem() is not None, reason=f"{pi_problem()}")
def test_pis_error_about_the_endpoint_reaches_the_feed_without_it(tmp_path: Path) -> None:
    """Under HARNESS=pi, Pi talks to LLAMA_URL itself; what it says of a failing endpoint is the feed's."""
    with ScriptedEndpoint() as endpoint:
        netloc = f"LocalHost:{_port(endpoint.url)}"
        endpoint.default = Fault.http(400, f"no such model at http://{netloc.lower()}/v1")
        settings = Settings.resolve(env={}, harness="pi", llama_url=f"http://{netloc}/v1", model_id="m",
                                    retrieval_preset="packaged", searchbox_tools="", llm_attempts=1, turn_budget=1,
                                    searchbox_cache_dir=str(tmp_path / "cache"))
        job = tmp_path / "job"
        create_job(job, "When does the lease end?", write_tree(tmp_path / "room", SMALL_DATAROOM), settings)
        run_job(job, settings, OpenAIClient(endpoint.url, "m", max_attempts=1))
        assert endpoint.requests  # Pi asked, and was answered with the error
    events = (job / "events.jsonl").read_text()
    assert netloc.lower() not in events.lower(), events
