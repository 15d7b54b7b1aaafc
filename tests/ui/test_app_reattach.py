"""Following a run that is still going: a page opened again follows the visitor's unfinished run
live, and the Jobs tab redraws an opened run until it ends. The real app with a slow scripted
endpoint; one gradio_client session submits and goes away, another comes back."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gradio_client import Client

from testkit.app_server import live, running_app, unwrap
from testkit.scripted_endpoint import Reply, ScriptedEndpoint
from searchbox.ui.visitors import ENDPOINT_CHOICE

pytestmark = pytest.mark.slow  # the real app in a subprocess

OWNER = "visitor-who-reloads"
BUSY = "Keep the slot busy"
ANSWER = "The statements were audited by the firm in the audit report [s1]."


def slow_agent(body: dict[str, Any]) -> Reply:
    """Searches twice, a second apart, then answers: slow enough to leave and come back mid-run. A question
    that keeps the slot busy gets an answer that streams for about a minute (the test stops it)."""
    if BUSY in json.dumps(body.get("messages", [])):
        return Reply(text=ANSWER + " And so on." * 200, chunk_chars=2, delay_s=0.05)
    done = sum(1 for m in body.get("messages", []) if m.get("role") == "tool")
    if done >= 2:
        return Reply(text=ANSWER, chunk_chars=8, delay_s=0.05)
    return Reply(tool_calls=[{"name": "grep", "arguments": {"pattern": f"audit{'or' * done}"}}], delay_s=1.0)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    with ScriptedEndpoint(default=slow_agent) as endpoint:
        home = tmp_path_factory.mktemp("app")
        with running_app(home, LLAMA_URL=endpoint.url) as url:
            yield url, home


def search_args(question: str, owner: str = OWNER) -> tuple:
    # question, upload, budget, force, high tools, low tools, llm, endpoint, model id, retrieval preset,
    # embed backend, rerank backend, Jina key, owner
    return (question, None, 1, False, [], [], ENDPOINT_CHOICE, "", "", "packaged", "local", "local", "", owner)


def tool_titles(feed: list[dict]) -> list[str]:
    return [str((m.get("metadata") or {}).get("title") or "") for m in feed if "grep" in str(m.get("metadata") or {})]


def test_coming_back_follows_the_unfinished_run_from_its_records(app: tuple[str, Path]) -> None:
    url, _ = app
    leaving = Client(url, verbose=False)
    job = leaving.submit(*search_args("Who audited the statements?"), api_name="/search")
    deadline = time.monotonic() + 60
    while not any(tool_titles(update[1]) for update in job) and time.monotonic() < deadline:
        time.sleep(0.05)
    job.cancel()  # the page is closed mid-run; the run goes on in the scheduler

    back = Client(url, verbose=False)
    updates = list(back.submit(OWNER, api_name="/reattach"))
    status, feed, answer = updates[-1][0], updates[-1][1], updates[-1][2]
    assert "done" in status
    assert len(tool_titles(updates[0][1])) >= 1, "what ran before coming back is shown at once"
    assert len(tool_titles(feed)) == 2, "each tool call once: replayed ones are not repeated live"
    assert "audited by the firm" in answer
    assert Path(live(updates[-1])["bundle"]).name == "bundle.zip"


def test_nothing_changes_for_a_visitor_with_no_unfinished_run(app: tuple[str, Path]) -> None:
    url, _ = app
    result = Client(url, verbose=False).predict("a-visitor-with-no-runs", api_name="/reattach")
    assert all(isinstance(r, dict) and r.get("__type__") == "update" for r in result)  # every output left as it is


def test_the_jobs_tab_redraws_an_opened_run_until_it_ends(app: tuple[str, Path]) -> None:
    url, _ = app
    # The run is started from a client of its own: a client's event stream is shared by its calls, and a
    # redraw sent as the streamed search ended was cancelled with it (gradio_client, seen once under load).
    Client(url, verbose=False).submit(*search_args("Who signed the audit report?"), api_name="/search")
    client = Client(url, verbose=False)
    deadline = time.monotonic() + 60
    job_id = ""
    while not job_id and time.monotonic() < deadline:
        _, choices = client.predict(OWNER, api_name="/jobs")
        going = [value for label, value in choices["choices"] if "running" in label or "queued" in label]
        job_id = going[0] if going else ""
    heading, *_ = client.predict(job_id, OWNER, api_name="/open_job")
    assert "running" in heading or "queued" in heading
    draws = []
    while time.monotonic() < deadline:
        view = client.predict(OWNER, api_name="/redraw_job")  # the session remembers the opened run
        if not isinstance(view[0], str):  # nothing more to draw
            break
        draws.append(view)
        time.sleep(0.5)
    assert any("running" in d[0] for d in draws[:-1]) and "done" in draws[-1][0]
    assert Path(unwrap(draws[-1][-1])).name == "bundle.zip"  # the draw after the end brings the downloads
    view = Client(url, verbose=False).predict(OWNER, api_name="/redraw_job")
    assert all(isinstance(v, dict) and v.get("__type__") == "update" for v in view)  # a session that opened nothing


def job_of(home: Path, question: str, state: str, seconds: float = 60) -> str:
    """The id of the job that asks `question`, once it is in `state`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for path in (home / "jobs").glob("*/job.json"):
            record = json.loads(path.read_text(encoding="utf-8"))
            if record.get("question") == question and record.get("state") == state:
                return path.parent.name
        time.sleep(0.1)
    raise AssertionError(f"no job asking {question!r} reached {state}")


def test_a_run_paused_while_it_waits_in_line_ends_its_pages_stream(app: tuple[str, Path]) -> None:
    url, home = app
    busy_question = f"{BUSY}: who audited the statements?"
    holder = Client(url, verbose=False)
    holder.submit(*search_args(busy_question), api_name="/search")
    job_of(home, busy_question, "running")
    waiting_question = "Who signed the audit report, asked while another run holds the slot?"
    # Another visitor's: a visitor's own new run would take the slot from their older one.
    page = Client(url, verbose=False)
    waiting = page.submit(*search_args(waiting_question, "another-visitor"), api_name="/search")
    job_of(home, waiting_question, "queued")
    try:
        deadline = time.monotonic() + 30
        while not waiting.outputs() and time.monotonic() < deadline:  # the page knows its job once it is shown
            time.sleep(0.05)
        assert "held" in page.predict(api_name="/pause")  # the page's Pause: its own job, as it waited
        deadline = time.monotonic() + 30
        while not waiting.done() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert waiting.done(), "the page went on following a run that no longer waits for anything"
        assert "held" in str(live(waiting.outputs()[-1])["status"])
    finally:
        holder.predict(api_name="/stop")
        page.predict(api_name="/stop")
